CREATE TABLE "limits" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"team" text,
	"token_id" bigint,
	"gpus" integer,
	"gpu_hours" double precision,
	"period" text,
	"queued" integer,
	"max_priority" integer,
	"max_hold_ttl_s" integer,
	"max_runtime_s" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "limits_one_scope" CHECK (("limits"."team" is null) <> ("limits"."token_id" is null)),
	CONSTRAINT "limits_budget_period" CHECK (("limits"."gpu_hours" is null) = ("limits"."period" is null))
);
--> statement-breakpoint
ALTER TABLE "limits" ADD CONSTRAINT "limits_team_teams_name_fk" FOREIGN KEY ("team") REFERENCES "public"."teams"("name") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
ALTER TABLE "limits" ADD CONSTRAINT "limits_token_id_tokens_id_fk" FOREIGN KEY ("token_id") REFERENCES "public"."tokens"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "limits_team_key" ON "limits" USING btree ("team");--> statement-breakpoint
CREATE UNIQUE INDEX "limits_token_key" ON "limits" USING btree ("token_id");
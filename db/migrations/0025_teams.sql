CREATE TABLE "teams" (
	"name" text PRIMARY KEY NOT NULL,
	"share" double precision DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
-- Every token is in a team; the one a token is in until an operator moves it.
INSERT INTO "teams" ("name") VALUES ('default');--> statement-breakpoint
ALTER TABLE "tokens" ADD COLUMN "team" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "tokens" ADD CONSTRAINT "tokens_team_teams_name_fk" FOREIGN KEY ("team") REFERENCES "public"."teams"("name") ON DELETE no action ON UPDATE cascade;--> statement-breakpoint
CREATE INDEX "tokens_team_idx" ON "tokens" USING btree ("team");
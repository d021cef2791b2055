CREATE TABLE "machines" (
	"id" text PRIMARY KEY NOT NULL,
	"account" text NOT NULL,
	"instance_name" text NOT NULL,
	"offer" jsonb NOT NULL,
	"price_per_hour" double precision NOT NULL,
	"spot" boolean NOT NULL,
	"simulated" boolean NOT NULL,
	"state" text DEFAULT 'provisioning' NOT NULL,
	"host_name" text NOT NULL,
	"terminated_why" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"launched_at" timestamp with time zone,
	"ready_at" timestamp with time zone,
	"terminated_at" timestamp with time zone,
	CONSTRAINT "machines_instance_name_unique" UNIQUE("instance_name")
);
--> statement-breakpoint
CREATE INDEX "machines_live_idx" ON "machines" USING btree ("account") WHERE state <> 'terminated';
ALTER TABLE "jobs" ADD COLUMN "kind" text DEFAULT 'run' NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "hold_ttl_s" integer;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "expires_at" timestamp with time zone;
ALTER TABLE "leases" ADD COLUMN "idle_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "leases" ADD COLUMN "idle_seen_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "leases" ADD COLUMN "idle_s" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "gpu_idle_timeout_s" integer;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "idle_warned_at" timestamp with time zone;

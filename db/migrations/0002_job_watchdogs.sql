ALTER TABLE "jobs" ADD COLUMN "max_runtime_s" integer;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "idle_timeout_s" integer;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "wait_timeout_s" integer;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "output_truncated" boolean DEFAULT false NOT NULL;
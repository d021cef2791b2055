ALTER TABLE "jobs" ADD COLUMN "placement" text DEFAULT 'any' NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "cloud" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "max_price_per_hour" double precision;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "spot" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "machine_min" jsonb;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "keep_s" integer;--> statement-breakpoint
ALTER TABLE "machines" ADD COLUMN "idle_until" timestamp with time zone;
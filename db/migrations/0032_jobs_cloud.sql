ALTER TABLE "jobs" ADD COLUMN "cloud_only" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "cloud" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "max_price_per_hour" double precision;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "spot" boolean DEFAULT false NOT NULL;
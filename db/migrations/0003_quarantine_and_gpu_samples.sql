CREATE TABLE "gpu_samples" (
	"host_name" text NOT NULL,
	"device_index" integer NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"mem_used_mib" integer NOT NULL,
	"mem_total_mib" integer NOT NULL,
	"util_pct" smallint
);
--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "unhealthy_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "unhealthy_reason" text;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "unhealthy_evidence" jsonb;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "gpu_sample" jsonb;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "sampled_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "gpu_samples_device_at_idx" ON "gpu_samples" USING btree ("host_name","device_index","at");
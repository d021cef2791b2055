CREATE TABLE "gpu_samples_coarse" (
	"host_name" text NOT NULL,
	"device_index" integer NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"util_sum" integer NOT NULL,
	"util_samples" integer NOT NULL,
	"util_pct" double precision GENERATED ALWAYS AS (util_sum::float8 / nullif(util_samples, 0)) STORED,
	"mem_used_mib" integer NOT NULL,
	"mem_total_mib" integer NOT NULL,
	"samples" integer NOT NULL,
	CONSTRAINT "gpu_samples_coarse_host_name_device_index_at_pk" PRIMARY KEY("host_name","device_index","at")
);
--> statement-breakpoint
CREATE INDEX "gpu_samples_coarse_at_idx" ON "gpu_samples_coarse" USING btree ("at");

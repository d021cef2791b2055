CREATE TABLE "job_arrays" (
	"id" text PRIMARY KEY NOT NULL,
	"spec" text NOT NULL,
	"size" integer NOT NULL,
	"max_running" integer,
	"name" text,
	"submitter" text NOT NULL,
	"token_id" bigint,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "job_deps" (
	"job_id" text NOT NULL,
	"after_id" text NOT NULL,
	"any" boolean DEFAULT false NOT NULL,
	CONSTRAINT "job_deps_job_id_after_id_pk" PRIMARY KEY("job_id","after_id")
);
--> statement-breakpoint
DROP INDEX "jobs_queued_idx";--> statement-breakpoint
DROP INDEX "jobs_queue_order_idx";--> statement-breakpoint
DROP INDEX "jobs_queue_token_idx";--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "waits" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "not_before" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "array_id" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "array_index" integer;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "retries" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "retry_delay_s" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "retried" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "job_deps" ADD CONSTRAINT "job_deps_job_id_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."jobs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "job_arrays_created_idx" ON "job_arrays" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "job_deps_after_idx" ON "job_deps" USING btree ("after_id");--> statement-breakpoint
CREATE INDEX "jobs_waiting_idx" ON "jobs" USING btree ("waits","not_before") WHERE state = 'queued' and waits is not null;--> statement-breakpoint
CREATE INDEX "jobs_array_idx" ON "jobs" USING btree ("array_id","array_index") WHERE array_id is not null;--> statement-breakpoint
CREATE INDEX "jobs_queued_idx" ON "jobs" USING btree ("priority","seq") WHERE state = 'queued' and waits is null;--> statement-breakpoint
CREATE INDEX "jobs_queue_order_idx" ON "jobs" USING btree ("priority" DESC,"requeued_at" NULLS LAST,"seq") WHERE state = 'queued' and waits is null;--> statement-breakpoint
CREATE INDEX "jobs_queue_token_idx" ON "jobs" USING btree (coalesce("token_id", 0),"priority" DESC,"requeued_at" NULLS LAST,"seq") WHERE state = 'queued' and waits is null;
ALTER TABLE "jobs" ADD COLUMN "attempt" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "restarts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "preemptible" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "retry_on_preempt" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "requeued_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "output_base" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "preempt_devices" jsonb;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "preempt_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "leases" ADD COLUMN "fence" bigint;--> statement-breakpoint
UPDATE "leases" SET "fence" = "jobs"."fence" FROM "jobs" WHERE "jobs"."id" = "leases"."job_id" AND "leases"."released_at" IS NULL;--> statement-breakpoint
CREATE TABLE "job_attempts" (
	"job_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"host_name" text,
	"devices" jsonb,
	"fence" bigint,
	"state" text NOT NULL,
	"end_cause" text NOT NULL,
	"exit_code" integer,
	"reason" text,
	"started_at" timestamp with time zone,
	"ended_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "job_attempts_job_id_attempt_pk" PRIMARY KEY("job_id","attempt")
);
--> statement-breakpoint
ALTER TABLE "job_attempts" ADD CONSTRAINT "job_attempts_job_id_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."jobs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "jobs_queue_order_idx" ON "jobs" USING btree ("priority" DESC,"requeued_at" NULLS LAST,"seq") WHERE state = 'queued';--> statement-breakpoint
CREATE INDEX "jobs_preemptible_running_idx" ON "jobs" USING btree ("host_name") WHERE state = 'running' and preemptible;

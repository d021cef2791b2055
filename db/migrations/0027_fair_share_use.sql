CREATE TABLE "token_use" (
	"token_key" bigint PRIMARY KEY NOT NULL,
	"use_s" double precision NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "leases" ADD COLUMN "charged" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX "jobs_queue_token_idx" ON "jobs" USING btree (coalesce("token_id", 0),"priority" DESC NULLS LAST,"requeued_at","seq") WHERE state = 'queued';--> statement-breakpoint
CREATE INDEX "leases_uncharged_idx" ON "leases" USING btree ("job_id") WHERE not charged;
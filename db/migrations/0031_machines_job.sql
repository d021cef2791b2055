ALTER TABLE "machines" ADD COLUMN "job_id" text;--> statement-breakpoint
CREATE UNIQUE INDEX "machines_job_live_idx" ON "machines" USING btree ("job_id") WHERE state <> 'terminated';
ALTER TABLE "audit" ADD COLUMN "origin" text;--> statement-breakpoint
CREATE INDEX "jobs_seq_idx" ON "jobs" USING btree ("seq");--> statement-breakpoint
CREATE INDEX "jobs_host_seq_idx" ON "jobs" USING btree ("host_name","seq") WHERE host_name is not null;
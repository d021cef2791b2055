ALTER TABLE "jobs" ADD COLUMN "name" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "env" jsonb;--> statement-breakpoint
CREATE INDEX "jobs_name_idx" ON "jobs" USING btree ("name","seq") WHERE name is not null;
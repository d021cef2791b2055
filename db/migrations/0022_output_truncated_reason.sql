ALTER TABLE "jobs" ADD COLUMN "output_truncated_reason" text;--> statement-breakpoint
-- Jobs truncated before this were truncated at the bound kept per job.
UPDATE "jobs" SET "output_truncated_reason" = 'output_limit' WHERE "output_truncated";

ALTER TABLE "jobs" ADD COLUMN "end_cause" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "kill_cause" text;--> statement-breakpoint
-- Jobs that ended before causes were stored get theirs from what their reasons have always said.
UPDATE "jobs" SET "end_cause" = CASE
  WHEN "state" = 'succeeded' THEN 'exit'
  WHEN "state" = 'failed' AND "kind" = 'cp' THEN 'copy_failed'
  WHEN "state" = 'failed' THEN 'exit'
  WHEN "state" = 'lost' THEN 'lost'
  WHEN "reason" LIKE 'max_runtime exceeded%' THEN 'max_runtime'
  WHEN "reason" LIKE 'idle: no output for%' THEN 'idle'
  WHEN "reason" LIKE 'hold expired%' THEN 'hold_expired'
  WHEN "reason" LIKE 'released by%' THEN 'released'
  WHEN "reason" LIKE 'closed: nobody was attached%' THEN 'unattended'
  WHEN "reason" LIKE '%could not be queued (--no-wait)' THEN 'no_wait'
  WHEN "reason" LIKE 'wait timeout:%' THEN 'wait_timeout'
  ELSE 'killed'
END WHERE "state" IN ('succeeded', 'failed', 'killed', 'lost', 'cancelled');--> statement-breakpoint
UPDATE "jobs" SET "kill_cause" = CASE
  WHEN "kill_requested_by" LIKE 'max_runtime exceeded%' THEN 'max_runtime'
  WHEN "kill_requested_by" LIKE 'idle: no output for%' THEN 'idle'
  WHEN "kill_requested_by" LIKE 'hold expired%' THEN 'hold_expired'
  WHEN "kill_requested_by" LIKE 'released by%' THEN 'released'
  WHEN "kill_requested_by" LIKE 'closed: nobody was attached%' THEN 'unattended'
  ELSE 'killed'
END WHERE "kill_requested_by" IS NOT NULL;

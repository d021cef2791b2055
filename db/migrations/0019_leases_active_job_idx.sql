-- A job's active leases, for its end (which releases them): without it the planner may AND the job's index with the whole active set.
CREATE INDEX "leases_active_job_idx" ON "leases" USING btree ("job_id") WHERE released_at IS NULL;

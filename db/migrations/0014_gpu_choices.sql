ALTER TABLE "jobs" ADD COLUMN "gpu_choices" jsonb;

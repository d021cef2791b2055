ALTER TABLE "jobs" ADD COLUMN "stdin" boolean DEFAULT false NOT NULL;

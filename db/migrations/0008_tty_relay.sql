CREATE TABLE "tty_output" (
	"job_id" text NOT NULL,
	"pos" bigint NOT NULL,
	"data" "bytea" NOT NULL,
	CONSTRAINT "tty_output_job_id_pos_pk" PRIMARY KEY("job_id","pos")
);
--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "tty_seen_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "tty_output" ADD CONSTRAINT "tty_output_job_id_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."jobs"("id") ON DELETE cascade ON UPDATE no action;
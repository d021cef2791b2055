CREATE TABLE "tty_viewers" (
	"job_id" text NOT NULL,
	"controller" text NOT NULL,
	"token_id" bigint NOT NULL,
	"who" text NOT NULL,
	"since" timestamp with time zone NOT NULL,
	"seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "tty_viewers_job_id_controller_pk" PRIMARY KEY("job_id","controller")
);
--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "worker_instance" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "worker_controller" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "worker_address" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "worker_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "tty_viewers" ADD CONSTRAINT "tty_viewers_job_id_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."jobs"("id") ON DELETE cascade ON UPDATE no action;
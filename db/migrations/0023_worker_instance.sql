ALTER TABLE "hosts" ADD COLUMN "worker_instance" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "worker_controller" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "worker_address" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "worker_since" timestamp with time zone;
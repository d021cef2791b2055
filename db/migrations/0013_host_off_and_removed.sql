ALTER TABLE "hosts" ADD COLUMN "off_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "off_by" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "off_reason" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "removed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "removed_by" text;

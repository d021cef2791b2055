CREATE TABLE "sheets" (
	"host_name" text NOT NULL,
	"device_index" integer NOT NULL,
	"body" text NOT NULL,
	"updated_by" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sheets_host_name_device_index_pk" PRIMARY KEY("host_name","device_index")
);
--> statement-breakpoint
ALTER TABLE "labels" ADD COLUMN "stale" text;--> statement-breakpoint
ALTER TABLE "sheets" ADD CONSTRAINT "sheets_host_name_hosts_name_fk" FOREIGN KEY ("host_name") REFERENCES "public"."hosts"("name") ON DELETE cascade ON UPDATE no action;
CREATE TABLE "worker_calls" (
	"id" text PRIMARY KEY NOT NULL,
	"host" text NOT NULL,
	"event" text NOT NULL,
	"op" jsonb NOT NULL,
	"op_data" "bytea",
	"reply" jsonb,
	"reply_data" "bytea",
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);

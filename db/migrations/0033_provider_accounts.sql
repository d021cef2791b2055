CREATE TABLE "provider_accounts" (
	"account" text PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"prefix" text NOT NULL,
	"image" text NOT NULL,
	"credential" text,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL
);

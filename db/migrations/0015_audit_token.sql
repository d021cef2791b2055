ALTER TABLE "audit" ADD COLUMN "token_id" bigint;

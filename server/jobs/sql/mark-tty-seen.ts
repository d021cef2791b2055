// These terminal jobs have a client attached now (the unattended-terminal rule counts from tty_seen_at).
import type { Sql } from '../../db';

export async function markTtySeen(sql: Sql, jobIds: readonly string[]): Promise<void> {
  await sql`update jobs set tty_seen_at = now() where id = any(${jobIds as string[]}::text[])`;
}

// Whether jobs of more than one token are queued: fair share can only change
// the queue's order then (server/jobs/fair-share.ts). Two probes of the queue's
// token index (jobs_queue_token_idx), however long the queue.
import type { Sql } from '../../db';

export async function severalTokensQueued(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ several: boolean | null }[]>`
    select min(coalesce(token_id, 0)) <> max(coalesce(token_id, 0)) as several from jobs where state = 'queued' and waits is null`;
  return row?.several === true;
}

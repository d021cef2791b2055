// A job claimed by another controller for a worker connected here is marked
// sent, unless it was put back in the queue meanwhile (requeue's undispatched
// case): one statement on dispatched_at, so exactly one of the two happens.
// `notify` (a pg_notify call, or null) is sent at the same commit.
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../db';
import type { JobRow } from '../job-view';

export async function markDispatched(sql: Sql, jobId: string, fence: number, notify: PendingQuery<Row[]>): Promise<JobRow | null> {
  const [row] = await sql<(JobRow & { told: unknown })[]>`
    update jobs set dispatched_at = now() where id = ${jobId} and fence = ${fence} and state = 'running' and dispatched_at is null
    returning *, ${notify} as told`;
  if (!row) return null;
  const { told: _, ...job } = row;
  return job;
}

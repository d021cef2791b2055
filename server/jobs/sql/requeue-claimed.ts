// Puts a claimed job back in the queue and lets go of that claim's leases, in
// one statement: its worker vanished between the decision and the dispatch,
// or (undispatchedOnly) no controller sent it in time. False when the job is
// no longer that claim (ended, sent, or claimed again).
import type { Sql } from '../../db';

export async function requeueClaimed(sql: Sql, jobId: string, fence: number, undispatchedOnly: boolean): Promise<boolean> {
  const [row] = await sql<{ n: number }[]>`
    with j as (
      update jobs set state = 'queued', started_at = null, host_name = null, devices = null, fence = null, dispatched_at = null
      where id = ${jobId} and state = 'running' and fence = ${fence} ${undispatchedOnly ? sql`and dispatched_at is null` : sql``}
      returning id
    ), l as (
      update leases set released_at = now() from j where leases.job_id = j.id and leases.fence = ${fence} and leases.released_at is null
    )
    select count(*)::int as n from j`;
  return (row?.n ?? 0) > 0;
}

// A stop asked of a running job (rc kill, a watchdog, an unattended terminal):
// the first reason and cause asked stay (coalesce), later asks only repeat the kill.
import type { StopCause } from '../../../core/job-state';
import type { Sql } from '../../db';
import type { JobRow } from '../job-view';

/** The job as it is now, or null when it is not running. */
export async function requestStop(sql: Sql, jobId: string, reason: string, cause: StopCause): Promise<JobRow | null> {
  const [row] = await sql<JobRow[]>`
    update jobs set kill_requested_by = coalesce(kill_requested_by, ${reason}), kill_cause = coalesce(kill_cause, ${cause})
    where id = ${jobId} and state = 'running'
    returning *`;
  return row ?? null;
}

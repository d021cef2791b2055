// The watchdog's backstop: the worker did not report a kill within the grace,
// so the controller ends the job itself, and this reason (and cause) is the one stored.
import type { StopCause } from '../../../core/job-state';
import type { Sql } from '../../db';

export async function forceStopReason(sql: Sql, jobId: string, reason: string, cause: StopCause): Promise<void> {
  await sql`update jobs set kill_requested_by = ${reason}, kill_cause = ${cause} where id = ${jobId} and state = 'running'`;
}

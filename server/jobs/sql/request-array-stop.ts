// A stop asked of every running task of an array (rc kill <array>): as
// request-stop.ts for each, in one statement; the first reason and cause stay.
import type { StopCause } from '../../../core/job-state';
import type { Sql } from '../../db';

/** The tasks running now, each with what its worker is told. */
export function requestArrayStop(sql: Sql, arrayId: string, reason: string, cause: StopCause) {
  return sql<{ id: string; hostName: string; fence: number; killRequestedBy: string }[]>`
    update jobs set kill_requested_by = coalesce(kill_requested_by, ${reason}), kill_cause = coalesce(kill_cause, ${cause})
    where array_id = ${arrayId} and state = 'running'
    returning id, host_name, fence, kill_requested_by`;
}

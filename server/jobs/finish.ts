// Ending a job: one statement sets its final state and frees its devices, so
// there is no moment where a finished job still holds a lease.
import type { Sql } from '../db';
import { rowToJob } from './job-row';
import type { JobRow } from './job-view';

export interface Outcome {
  state: 'succeeded' | 'failed' | 'killed' | 'lost' | 'cancelled';
  exitCode: number | null;
  reason: string | null;
}

/**
 * Ends a job that is in one of `fromStates`. With a fence, only the assignment
 * that fence names may end it (a stale worker's report changes nothing).
 * Returns null when there was nothing to end.
 */
export function finishJob(
  sql: Sql, jobId: string, fence: number | null, outcome: Outcome,
  fromStates: ('queued' | 'running')[] = ['queued', 'running'],
): Promise<JobRow | null> {
  return endJob(sql, jobId, fence, fromStates, outcome.state, outcome.exitCode, outcome.reason);
}

/**
 * Ends a running job from its worker's exit report. A kill asked for earlier
 * turns the outcome into `killed`, decided in the same statement so no race
 * between the kill and the exit can lose it.
 */
export function finishFromExit(sql: Sql, jobId: string, fence: number, exitCode: number | null, signal: string | null, killedFor: string | null = null): Promise<JobRow | null> {
  const code = exitCode ?? (signal ? 128 + signalNumber(signal) : null);
  if (killedFor) return endJob(sql, jobId, fence, ['running'], 'killed', code, killedFor);
  const reason = signal ? `terminated by ${signal}` : null;
  return endJob(sql, jobId, fence, ['running'], code === 0 ? 'succeeded' : 'failed', code, reason);
}

/** A kill asked for earlier wins over the reported outcome: `killed`, with the kill's reason. */
async function endJob(
  sql: Sql, jobId: string, fence: number | null, fromStates: string[], state: Outcome['state'], exitCode: number | null, reason: string | null,
): Promise<JobRow | null> {
  const rows = await sql<Record<string, unknown>[]>`
    with j as (
      update jobs set
        state = case when kill_requested_by is not null and ${state}::text in ('succeeded', 'failed') then 'killed' else ${state}::text end,
        exit_code = ${exitCode}::int,
        reason = coalesce(kill_requested_by, ${reason}::text),
        ended_at = now()
      where id = ${jobId} and state = any(${fromStates}::text[]) and (${fence}::bigint is null or fence = ${fence}::bigint)
      returning *
    ), released as (
      update leases set released_at = now() where job_id in (select id from j) and released_at is null
    )
    select * from j`;
  return rows[0] ? rowToJob(rows[0]) : null;
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGILL: 4, SIGTRAP: 5, SIGABRT: 6, SIGBUS: 7, SIGFPE: 8, SIGKILL: 9, SIGUSR1: 10, SIGSEGV: 11, SIGUSR2: 12, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15 };
function signalNumber(signal: string): number {
  return SIGNALS[signal] ?? 0;
}

// Ending a job: one statement sets its final state and frees its devices, so
// there is no moment where a finished job still holds a lease. The exception is
// a job whose processes may still run (its host stopped answering, or its
// worker did not report a kill): it ends, but keeps its leases until its
// worker says the processes are gone (its exit report, or a hello without it),
// so no other job is given the device meanwhile.
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
  sql: Sql,
  jobId: string,
  fence: number | null,
  outcome: Outcome,
  fromStates: ('queued' | 'running')[] = ['queued', 'running'],
  opts: { keepLeases?: boolean } = {},
): Promise<JobRow | null> {
  return endJob(sql, jobId, fence, null, fromStates, outcome.state, outcome.exitCode, outcome.reason, !opts.keepLeases);
}

/**
 * Ends a running job from its worker's exit report. A kill asked for earlier
 * turns the outcome into `killed`, decided in the same statement so no race
 * between the kill and the exit can lose it.
 */
export function finishFromExit(
  sql: Sql,
  jobId: string,
  fence: number,
  exitCode: number | null,
  signal: string | null,
  killedFor: string | null = null,
  hostName: string | null = null,
): Promise<JobRow | null> {
  const code = exitCode ?? (signal ? 128 + signalNumber(signal) : null);
  if (killedFor) return endJob(sql, jobId, fence, hostName, ['running'], 'killed', code, killedFor, true);
  const reason = signal ? `terminated by ${signal}` : null;
  return endJob(sql, jobId, fence, hostName, ['running'], code === 0 ? 'succeeded' : 'failed', code, reason, true);
}

/**
 * The exit report of a job that had already ended (lost, or ended by the
 * controller's watchdog): its processes are gone now, so its leases go.
 * `mine` is false when no such job ran on that host with that fence.
 */
export async function releaseEnded(sql: Sql, hostName: string, jobId: string, fence: number): Promise<{ mine: boolean; released: number }> {
  const [r] = await sql<{ mine: number; released: number }[]>`
    with j as (
      select id from jobs where id = ${jobId} and host_name = ${hostName} and fence = ${fence} and state not in ('queued', 'running')
    ), l as (
      update leases set released_at = now() where job_id in (select id from j) and released_at is null returning id
    )
    select (select count(*) from j)::int as mine, (select count(*) from l)::int as released`;
  return { mine: r!.mine > 0, released: r!.released };
}

/**
 * A worker's hello lists every job it still runs, and it has killed what its
 * previous run left behind: leases of ended jobs on that host that it does not
 * list are free now. Returns how many were released.
 */
export async function releaseLeftBehind(sql: Sql, hostName: string, stillRunning: readonly string[]): Promise<number> {
  const rows = await sql`
    update leases l set released_at = now() from jobs j
    where l.released_at is null and j.id = l.job_id and j.host_name = ${hostName}
      and j.state not in ('queued', 'running') and not (j.id = any(${stillRunning as string[]}::text[]))
    returning l.id`;
  return rows.length;
}

/** A kill asked for earlier wins over the reported outcome: `killed`, with the kill's reason. */
async function endJob(
  sql: Sql,
  jobId: string,
  fence: number | null,
  hostName: string | null,
  fromStates: string[],
  state: Outcome['state'],
  exitCode: number | null,
  reason: string | null,
  release: boolean,
): Promise<JobRow | null> {
  const rows = await sql<Record<string, unknown>[]>`
    with j as (
      update jobs set
        state = case when kill_requested_by is not null and ${state}::text in ('succeeded', 'failed') then 'killed' else ${state}::text end,
        exit_code = ${exitCode}::int,
        reason = coalesce(kill_requested_by, ${reason}::text),
        ended_at = now()
      where id = ${jobId} and state = any(${fromStates}::text[]) and (${fence}::bigint is null or fence = ${fence}::bigint)
        and (${hostName}::text is null or host_name = ${hostName}::text)
      returning *
    ), released as (
      update leases set released_at = now() where ${release} and job_id in (select id from j) and released_at is null
    )
    select * from j`;
  return rows[0] ? rowToJob(rows[0]) : null;
}

const SIGNALS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
};
function signalNumber(signal: string): number {
  return SIGNALS[signal] ?? 0;
}

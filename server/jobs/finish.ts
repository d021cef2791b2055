// Ending a job, the one way: endJob stores the end (state, exit code, cause,
// reason), wipes its rc run --env values (the names stay, for envKeys),
// frees the job's devices in the same statement, and tells whoever
// follows the job. There is no moment where a finished job still holds a
// lease, except for a job whose processes may still run (its host stopped
// answering, or its worker did not report a kill): it ends, but keeps its
// leases until its worker says the processes are gone (its exit report, or a
// hello without it), so no other job is given the device meanwhile.
import type { Ending } from '../../core/job-state';
import type { Sql } from '../db';
import type { JobEvents } from '../job-events';
import type { JobRow } from './job-view';

export interface EndDeps {
  sql: Sql;
  events: JobEvents;
}

export interface EndWhere {
  /** The states it may end from; anything else (already over, or not yet started) ends nothing. */
  from: readonly ('queued' | 'running')[];
  /** Only the assignment this fence names may end it (a stale worker's report changes nothing). */
  fence?: number | null;
  /** Only if it runs on this host (a report from its own worker). */
  host?: string | null;
  /** Its processes may still run: it ends, its leases stay (see above). */
  keepLeases?: boolean;
}

/**
 * Ends a job. A stop asked for earlier (rc kill, a watchdog: kill_requested_by
 * and kill_cause) wins over an exit report, decided in the same statement so
 * no race between the stop and the exit can lose it: the job is then `killed`
 * with the stop's cause and reason (core/job-state.ts outcome() says the same;
 * test/integration/leases.test.ts checks they agree). Returns the ended job,
 * or null when there was nothing to end.
 */
export async function endJob(deps: EndDeps, jobId: string, end: Ending, where: EndWhere): Promise<JobRow | null> {
  // An end that outcome() made (the command exited, or a stop the worker reports): a stop asked for earlier replaces it.
  const exited = end.state === 'succeeded' || end.state === 'failed' || end.state === 'killed';
  const [row] = await deps.sql<JobRow[]>`
    with j as (
      update jobs set
        state = case when kill_requested_by is not null and ${exited} then 'killed' else ${end.state}::text end,
        end_cause = case when kill_requested_by is not null and ${exited} then coalesce(kill_cause, 'killed') else ${end.cause}::text end,
        exit_code = ${end.exitCode}::int,
        reason = coalesce(kill_requested_by, ${end.reason}::text),
        ended_at = now(),
        -- rc run --env values may be secrets and an ended job needs none: only the keys stay (the view's envKeys).
        env = (select jsonb_object_agg(k, '') from jsonb_object_keys(env) as k)
      where id = ${jobId} and state = any(${where.from as string[]}::text[])
        and (${where.fence ?? null}::bigint is null or fence = ${where.fence ?? null}::bigint)
        and (${where.host ?? null}::text is null or host_name = ${where.host ?? null}::text)
      returning *
    ), released as (
      update leases set released_at = now() where ${!where.keepLeases} and job_id in (select id from j) and released_at is null
    )
    select * from j`;
  const ended = row ?? null;
  if (ended) {
    deps.events.event(ended.id, {
      type: 'exit',
      jobId: ended.id,
      state: ended.state,
      exitCode: ended.exitCode,
      reason: ended.reason,
      cause: ended.endCause,
      ...(where.keepLeases ? { leasesKept: true as const } : {}),
    });
  }
  return ended;
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

// Ending a job, the one way: endJob stores the end (state, exit code, cause,
// reason), wipes its rc run --env values (the names stay, for envKeys),
// frees the job's devices in the same statement, and tells whoever
// follows the job. There is no moment where a finished job still holds a
// lease, except for a job whose processes may still run (its host stopped
// answering, or its worker did not report a kill): it ends, but keeps its
// leases until its worker says the processes are gone (its exit report, or a
// hello without it), so no other job is given the device meanwhile.
import type { EndCause, Ending, JobState } from '../../core/job-state';
import { retryDeadlock, type Sql } from '../db';
import type { JobEvents } from '../job-events';
import { releaseArraySlots } from './array-slots';
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
 * Ends a job's attempt: the job ends, or, when core's runsAgain says so (a
 * lost attempt with --restarts left, a preempted one with
 * --retry-on-preempt), the attempt's end goes into job_attempts and the job
 * goes back to the queue, at the front of its priority, for its next attempt
 * (a new fence then, so the old worker's late reports are refused). A stop
 * asked for earlier (rc kill, a watchdog, a preemption: kill_requested_by and
 * kill_cause) wins over an exit report, decided in the same statement so no
 * race between the stop and the exit can lose it: the job is then `killed`
 * (`preempted` for a preemption) with the stop's cause and reason
 * (core/job-state.ts outcome() says the same; test/integration/leases.test.ts
 * checks they agree). The attempt's leases go (unless keepLeases), those of
 * an earlier attempt stay until its own worker lets them go. Returns the
 * job's row (queued again: `again`), or null when there was nothing to end.
 */
export async function endJob(deps: EndDeps, jobId: string, end: Ending, where: EndWhere): Promise<(JobRow & { again?: boolean }) | null> {
  const [row] = await endJobs(deps, [{ jobId, end, fence: where.fence ?? null, host: where.host ?? null }], where);
  return row ?? null;
}

/** One end of a batch: a job, its end, and who may end it (EndWhere's fence and host). */
export interface JobEnd {
  jobId: string;
  end: Ending;
  fence: number | null;
  host: string | null;
}

/**
 * endJob for many jobs in one statement (exit reports that arrived
 * together): each is ended exactly as endJob would, alone. Returns the rows
 * of those it ended, in no order.
 */
export async function endJobs(deps: EndDeps, ends: readonly JobEnd[], where: Pick<EndWhere, 'from' | 'keepLeases'>): Promise<(JobRow & { again?: boolean })[]> {
  if (!ends.length) return [];
  // An end that outcome() made (the command exited, or a stop the worker reports): a stop asked for earlier replaces it.
  const exited = ends.map((e) => e.end.state === 'succeeded' || e.end.state === 'failed' || e.end.state === 'killed' || e.end.state === 'preempted');
  // A deadlock's victim (another statement locked a lease, then asked for a job these hold) rolled back whole: run it again.
  const rows = await retryDeadlock(
    () => deps.sql<(JobRow & { again: boolean; attemptState: string; attemptCause: string; attemptReason: string | null })[]>`
    with x as (
      select * from unnest(
        ${ends.map((e) => e.jobId)}::text[], ${ends.map((e) => e.fence)}::bigint[], ${ends.map((e) => e.host)}::text[], ${exited.map((b) => (b ? 't' : 'f'))}::text[],
        ${ends.map((e) => e.end.state)}::text[], ${ends.map((e) => e.end.cause)}::text[], ${ends.map((e) => e.end.reason)}::text[],
        ${ends.map((e) => e.end.exitCode)}::int[]
      ) as x(id, fence, host, exited, state, cause, reason, exit_code)
    ), cur as (
      select jobs.id, jobs.fence, attempt, restarts, retry_on_preempt, kill_requested_by, kill_cause,
        (kill_requested_by is not null and x.exited::bool) as stopped, x.state as x_state, x.cause as x_cause, x.reason as x_reason, x.exit_code
      from jobs join x on x.id = jobs.id
      -- The ids again, as a condition on jobs: the planner then fetches these rows by key, where with the join alone it
      -- hashed every job in those states (10,000 running: 19 of an end's 30 ms).
      where jobs.id = any(${ends.map((e) => e.jobId)}::text[]) and jobs.state = any(${where.from as string[]}::text[])
        and (x.fence is null or jobs.fence = x.fence)
        and (x.host is null or jobs.host_name = x.host)
      -- Locked in one order, so two batches never wait on each other in a circle.
      order by jobs.id
      for update of jobs
    ), e as (
      select cur.*,
        case when stopped then (case when kill_cause = 'preempted' then 'preempted' else 'killed' end) else x_state end as f_state,
        case when stopped then coalesce(kill_cause, 'killed') else x_cause end as f_cause,
        coalesce(kill_requested_by, x_reason) as f_reason
      from cur
    ), r as (
      -- core/job-state.ts runsAgain
      select e.*, ((f_state = 'lost' and attempt <= restarts) or (f_state = 'preempted' and retry_on_preempt)) as again from e
    ), a as (
      insert into job_attempts (job_id, attempt, host_name, devices, fence, state, end_cause, exit_code, reason, started_at)
      select jobs.id, jobs.attempt, jobs.host_name, jobs.devices, jobs.fence, r.f_state, r.f_cause, r.exit_code, r.f_reason, jobs.started_at
      from jobs join r on r.id = jobs.id where r.again
    ), j as (
      update jobs set
        state = case when r.again then 'queued' else r.f_state end,
        end_cause = case when r.again then null else r.f_cause end,
        exit_code = case when r.again then null else r.exit_code end,
        reason = case when r.again then null else r.f_reason end,
        ended_at = case when r.again then null else now() end,
        -- rc run --env values may be secrets and an ended job needs none: only the keys stay (the view's envKeys).
        env = case when r.again then jobs.env else (select jsonb_object_agg(k, '') from jsonb_object_keys(jobs.env) as k) end,
        -- Its next attempt: at the front of its priority (requeued_at), with no assignment until it is claimed again.
        attempt = jobs.attempt + (case when r.again then 1 else 0 end),
        requeued_at = case when r.again then now() else jobs.requeued_at end,
        host_name = case when r.again then null else jobs.host_name end,
        devices = case when r.again then null else jobs.devices end,
        fence = case when r.again then null else jobs.fence end,
        started_at = case when r.again then null else jobs.started_at end,
        dispatched_at = case when r.again then null else jobs.dispatched_at end,
        kill_requested_by = case when r.again then null else jobs.kill_requested_by end,
        kill_cause = case when r.again then null else jobs.kill_cause end,
        output_base = case when r.again then (select coalesce(max(o.seq), 0) from job_output o where o.job_id = jobs.id) else jobs.output_base end
      from r where jobs.id = r.id
      returning jobs.*, r.again, r.f_state as attempt_state, r.f_cause as attempt_cause, r.f_reason as attempt_reason
    ), released as (
      update leases set released_at = now() from cur
      where ${!where.keepLeases} and leases.job_id = cur.id and leases.released_at is null and (leases.fence = cur.fence or leases.fence is null)
    )
    select * from j`,
  );
  // rc run --array: an ended task may make room under its array's %N cap (a statement of its own, after the end's commit).
  await releaseArraySlots(
    deps.sql,
    rows.filter((r) => !r.again).map((r) => r.arrayId),
  );
  return rows.map((row) => {
    const { attemptState, attemptCause, attemptReason, ...ended } = row;
    if (ended.again) {
      deps.events.event(ended.id, {
        type: 'requeued',
        jobId: ended.id,
        attempt: ended.attempt,
        state: attemptState as JobState,
        cause: attemptCause as EndCause,
        reason: attemptReason,
        ...(where.keepLeases ? { leasesKept: true as const } : {}),
      });
      return ended;
    }
    deps.events.event(ended.id, {
      type: 'exit',
      jobId: ended.id,
      state: ended.state,
      exitCode: ended.exitCode,
      reason: ended.reason,
      cause: ended.endCause,
      ...(where.keepLeases ? { leasesKept: true as const } : {}),
    });
    return ended;
  });
}

/**
 * The exit report of a job that had already ended (lost, or ended by the
 * controller's watchdog): its processes are gone now, so its leases go.
 * `mine` is false when no such job ran on that host with that fence.
 */
export async function releaseEnded(sql: Sql, hostName: string, jobId: string, fence: number): Promise<{ mine: boolean; released: number }> {
  // Its attempt is over when the job ended, or when it runs again under another fence (a restart): the leases that attempt took, on that host, go.
  const [r] = await sql<{ mine: number; released: number }[]>`
    with j as (
      select id from jobs where id = ${jobId} and host_name = ${hostName} and fence = ${fence} and state not in ('queued', 'running')
      union
      select job_id from job_attempts where job_id = ${jobId} and host_name = ${hostName} and fence = ${fence}
        and not exists (select 1 from jobs where id = ${jobId} and fence = ${fence} and state in ('queued', 'running'))
    ), l as (
      update leases set released_at = now() where job_id in (select id from j) and fence = ${fence} and released_at is null
        and device_id in (select id from devices where host_name = ${hostName})
      returning id
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
  // By the lease's own fence and device: an earlier attempt of a job that runs again elsewhere (a restart) has ended too.
  const rows = await sql`
    update leases l set released_at = now() from jobs j, devices d
    where l.released_at is null and j.id = l.job_id and d.id = l.device_id and d.host_name = ${hostName}
      and (j.state not in ('queued', 'running') or l.fence is distinct from j.fence) and not (j.id = any(${stillRunning as string[]}::text[]))
    returning l.id`;
  return rows.length;
}

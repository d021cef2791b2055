// The statement that stores jobs' ends (server/jobs/finish.ts endJobs is the
// one way to call it, and server/jobs/waits.ts for the dependents it
// cancels): each job's end, or its next attempt, its leases let go, and the
// event that tells its followers.
import type { EndCause, Ending, JobState } from '../../core/job-state';
import { retryDeadlock, type Sql } from '../db';
import type { JobEvents } from '../job-events';
import type { JobRow } from './job-view';

export interface EndDeps {
  sql: Sql;
  events: JobEvents;
  /** Jobs left their wait (a dependency met): every controller's pass should look (the scheduler's pokeAll); absent: the sweep finds them. */
  released?: () => void;
}

export interface EndWhere {
  /** The states it may end from; anything else (already over, or not yet started) ends nothing. */
  from: readonly ('queued' | 'running')[];
  /** Only the assignment this fence names may end it (a stale worker's report changes nothing). */
  fence?: number | null;
  /** Only if it runs on this host (a report from its own worker). */
  host?: string | null;
  /** Its processes may still run: it ends, its leases stay until its worker says they are gone (server/jobs/finish.ts). */
  keepLeases?: boolean;
}

/** One end of a batch: a job, its end, and who may end it (EndWhere's fence and host). */
export interface JobEnd {
  jobId: string;
  end: Ending;
  fence: number | null;
  host: string | null;
}

/**
 * Ends many jobs in one statement (exit reports that arrived together), each
 * exactly as endJob (server/jobs/finish.ts) says, alone. Returns the rows of
 * those it ended, in no order. What waited on them is settled by the caller
 * (finish.ts endJobs, server/jobs/waits.ts), in a statement of its own.
 */
export async function storeEnds(
  deps: EndDeps,
  ends: readonly JobEnd[],
  where: Pick<EndWhere, 'from' | 'keepLeases'>,
): Promise<(JobRow & { again?: boolean })[]> {
  if (!ends.length) return [];
  // An end that outcome() made (the command exited, or a stop the worker reports): a stop asked for earlier replaces it.
  const exited = ends.map((e) => e.end.state === 'succeeded' || e.end.state === 'failed' || e.end.state === 'killed' || e.end.state === 'preempted');
  // A deadlock's victim (another statement locked a lease, then asked for a job these hold) rolled back whole: run it again.
  const rows = await retryDeadlock(
    () => deps.sql<
      (JobRow & { again: boolean; retry: boolean; attemptExitCode: number | null; attemptState: string; attemptCause: string; attemptReason: string | null })[]
    >`
    with x as (
      select * from unnest(
        ${ends.map((e) => e.jobId)}::text[], ${ends.map((e) => e.fence)}::bigint[], ${ends.map((e) => e.host)}::text[], ${exited.map((b) => (b ? 't' : 'f'))}::text[],
        ${ends.map((e) => e.end.state)}::text[], ${ends.map((e) => e.end.cause)}::text[], ${ends.map((e) => e.end.reason)}::text[],
        ${ends.map((e) => e.end.exitCode)}::int[]
      ) as x(id, fence, host, exited, state, cause, reason, exit_code)
    ), cur as (
      select jobs.id, jobs.fence, attempt, restarts, retry_on_preempt, retries, retried, retry_delay_s, kill_requested_by, kill_cause,
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
    ), t as (
      -- core/job-state.ts isRetry: a non-zero exit with --retries left.
      select e.*, (f_state = 'failed' and f_cause = 'exit' and retried < retries) as retry from e
    ), r as (
      -- core/job-state.ts runsAgain
      select t.*, ((f_state = 'lost' and attempt - retried <= restarts) or (f_state = 'preempted' and (retry_on_preempt or (f_cause = 'spot' and attempt - retried <= restarts))) or retry) as again from t
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
        output_base = case when r.again then (select coalesce(max(o.seq), 0) from job_output o where o.job_id = jobs.id) else jobs.output_base end,
        -- rc run --retries: one more used; with --retry-delay it waits (waits 'retry') until not_before (server/jobs/waits.ts releaseRetries).
        retried = jobs.retried + (case when r.retry then 1 else 0 end),
        waits = case when r.retry and jobs.retry_delay_s > 0 then 'retry' end,
        not_before = case when r.retry and jobs.retry_delay_s > 0 then now() + make_interval(secs => jobs.retry_delay_s) end
      from r where jobs.id = r.id
      returning jobs.*, r.again, r.retry, r.exit_code as attempt_exit_code, r.f_state as attempt_state, r.f_cause as attempt_cause, r.f_reason as attempt_reason
    ), released as (
      update leases set released_at = now() from cur
      where ${!where.keepLeases} and leases.job_id = cur.id and leases.released_at is null and (leases.fence = cur.fence or leases.fence is null)
    )
    select * from j`,
  );
  return rows.map((row) => {
    const { attemptState, attemptCause, attemptReason, attemptExitCode, retry, ...ended } = row;
    if (ended.again) {
      deps.events.event(ended.id, {
        type: 'requeued',
        jobId: ended.id,
        attempt: ended.attempt,
        state: attemptState as JobState,
        cause: attemptCause as EndCause,
        reason: attemptReason,
        ...(where.keepLeases ? { leasesKept: true as const } : {}),
        ...(retry ? { retry: { n: ended.retried + 1, of: ended.retries + 1, delayS: ended.retryDelayS, exitCode: attemptExitCode } } : {}),
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

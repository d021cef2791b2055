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
import { releaseArraySlots } from './array-slots';
import { type EndDeps, type EndWhere, type JobEnd, storeEnds } from './end-store';
import type { JobRow } from './job-view';
import { settleDependents } from './waits';

export type { EndDeps, EndWhere, JobEnd };

/**
 * Ends a job's attempt: the job ends, or, when core's runsAgain says so (a
 * lost attempt with --restarts left, a preempted one with
 * --retry-on-preempt, a non-zero exit with --retries left), the attempt's end goes into job_attempts and the job
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

/**
 * endJob for many jobs in one statement (exit reports that arrived
 * together): each is ended exactly as endJob would, alone. Then, in a
 * statement of its own (its snapshot is taken after the end committed, so it
 * sees a dependent submitted while the end waited on its lock), the jobs that
 * wait on those that ended for good are settled (server/jobs/waits.ts).
 * Returns the rows of those it ended, in no order.
 */
export async function endJobs(deps: EndDeps, ends: readonly JobEnd[], where: Pick<EndWhere, 'from' | 'keepLeases'>): Promise<(JobRow & { again?: boolean })[]> {
  const rows = await storeEnds(deps, ends, where);
  const over = rows.filter((r) => !r.again);
  // The ends are stored whatever happens here: a settle that fails is done by the next sweep (JobEngine.settleWaits), seconds later.
  if (over.length)
    await settleDependents(
      deps,
      over.map((r) => r.id),
    ).catch(() => {});
  // rc run --array: an ended task may make room under its array's %N cap (a statement of its own, after the end's commit).
  await releaseArraySlots(
    deps.sql,
    over.map((r) => r.arrayId),
  );
  return rows;
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

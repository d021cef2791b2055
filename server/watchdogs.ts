// The controller's side of the time limits. Queued jobs past --timeout end
// `cancelled`. Running jobs past --max-runtime or --idle-timeout are killed by
// their worker; if the worker has not reported the kill a grace period later
// (it may be dead), the controller ends the job `killed` itself, so no runaway
// job stays counted as running. Its devices stay leased until the worker
// reports the kill (or comes back without the job): the processes may still run.
import { formatDuration } from '../core/duration';
import type { Sql } from './db';
import type { JobEvents } from './job-events';
import { ended as endingOf, type StopRequest } from '../core/job-state';
import { endJob } from './jobs/finish';
import type { WorkerHub } from './worker-hub';

export interface WatchdogDeps {
  sql: Sql;
  events: JobEvents;
  hub: WorkerHub;
  graceS: number;
}

export async function enforceLimits(deps: WatchdogDeps): Promise<number> {
  const { sql, hub, graceS } = deps;
  let ended = 0;
  const expired = await sql<{ id: string; wait_timeout_s: number }[]>`
    select id, wait_timeout_s from jobs
    where state = 'queued' and wait_timeout_s is not null and created_at + make_interval(secs => wait_timeout_s) < now()`;
  for (const j of expired) {
    const reason = `wait timeout: no device within ${formatDuration(j.wait_timeout_s)}`;
    if (await endJob(deps, j.id, endingOf('cancelled', 'wait_timeout', reason), { from: ['queued'] })) ended++;
  }

  const running = await sql<
    {
      id: string;
      fence: string;
      host_name: string;
      max_runtime_s: number | null;
      idle_timeout_s: number | null;
      run_s: number;
      hold_ttl_s: number | null;
      expired_s: number | null;
    }[]
  >`
    select id, fence, host_name, max_runtime_s, idle_timeout_s, hold_ttl_s, extract(epoch from now() - started_at)::float8 as run_s,
      extract(epoch from now() - expires_at)::float8 as expired_s from jobs
    where state = 'running' and (max_runtime_s is not null or idle_timeout_s is not null or expires_at is not null)`;
  for (const j of running) {
    // A hold's TTL is the controller's alone (rc hold extend moves it), so it gets no worker head start.
    if (j.expired_s !== null) {
      if (j.expired_s < 0) continue;
      const reason = `hold expired (TTL ${formatDuration(j.hold_ttl_s ?? 0)}${j.run_s - (j.hold_ttl_s ?? 0) > 1 ? ', extended' : ''})`;
      ended += await stop(j, { cause: 'hold_expired', reason }, j.expired_s + 1);
      continue;
    }
    const idleS = hub.idleSeconds(j.id);
    const past: (StopRequest & { over: number }) | null =
      j.max_runtime_s !== null && j.run_s > j.max_runtime_s
        ? { cause: 'max_runtime', reason: 'max_runtime exceeded', over: j.run_s - j.max_runtime_s }
        : j.idle_timeout_s !== null && idleS > j.idle_timeout_s
          ? { cause: 'idle', reason: `idle: no output for ${formatDuration(j.idle_timeout_s)}`, over: idleS - j.idle_timeout_s }
          : null;
    // The worker enforces the limit itself and gets the first second; this is the backstop for a worker that cannot.
    if (!past || past.over < 1) continue;
    ended += await stop(j, past, past.over);
  }
  return ended;

  /** Asks the worker to kill the job; past the grace, ends it here. Resolves to 1 when it ended it. */
  async function stop(j: { id: string; fence: string; host_name: string }, limit: StopRequest, over: number): Promise<number> {
    await sql`update jobs set kill_requested_by = coalesce(kill_requested_by, ${limit.reason}), kill_cause = coalesce(kill_cause, ${limit.cause})
      where id = ${j.id} and state = 'running'`;
    hub.killJob(j.host_name, { jobId: j.id, fence: Number(j.fence), reason: limit.reason });
    if (over < Math.max(graceS, 1)) return 0;
    const final = `${limit.reason} (ended by the controller: the worker did not report the kill)`;
    await sql`update jobs set kill_requested_by = ${final}, kill_cause = ${limit.cause} where id = ${j.id} and state = 'running'`;
    // Its processes may still run (the worker is gone or stuck): the job ends, its devices stay leased until the worker reports.
    const done = await endJob(deps, j.id, endingOf('killed', limit.cause, final), { from: ['running'], fence: Number(j.fence), keepLeases: true });
    return done ? 1 : 0;
  }
}

// The controller's side of the time limits. Queued jobs past --timeout end
// `cancelled`. Running jobs past --max-runtime or --idle-timeout are killed by
// their worker; if the worker has not reported the kill a grace period later
// (it may be dead), the controller ends the job `killed` itself, so no runaway
// job stays counted as running. Its devices stay leased until the worker
// reports the kill (or comes back without the job): the processes may still run.
import { formatDuration } from '../core/duration';
import type { Sql } from './db';
import type { JobEvents } from './job-events';
import { finishJob } from './jobs/finish';
import type { WorkerHub } from './worker-hub';

export interface WatchdogDeps {
  sql: Sql;
  events: JobEvents;
  hub: WorkerHub;
  graceS: number;
}

export async function enforceLimits(deps: WatchdogDeps): Promise<number> {
  const { sql, events, hub, graceS } = deps;
  let ended = 0;
  const expired = await sql<{ id: string; wait_timeout_s: number }[]>`
    select id, wait_timeout_s from jobs
    where state = 'queued' and wait_timeout_s is not null and created_at + make_interval(secs => wait_timeout_s) < now()`;
  for (const j of expired) {
    const reason = `wait timeout: no device within ${formatDuration(j.wait_timeout_s)}`;
    const done = await finishJob(sql, j.id, null, { state: 'cancelled', exitCode: null, reason }, ['queued']);
    if (done) {
      ended++;
      events.event(j.id, { type: 'exit', jobId: j.id, state: 'cancelled', exitCode: null, reason });
    }
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
      ended += await stop(j, reason, j.expired_s + 1);
      continue;
    }
    const idleS = hub.idleSeconds(j.id);
    const reason =
      j.max_runtime_s !== null && j.run_s > j.max_runtime_s
        ? 'max_runtime exceeded'
        : j.idle_timeout_s !== null && idleS > j.idle_timeout_s
          ? `idle: no output for ${formatDuration(j.idle_timeout_s)}`
          : null;
    if (!reason) continue;
    const over = reason === 'max_runtime exceeded' ? j.run_s - j.max_runtime_s! : idleS - j.idle_timeout_s!;
    // The worker enforces the limit itself and gets the first second; this is the backstop for a worker that cannot.
    if (over < 1) continue;
    ended += await stop(j, reason, over);
  }
  return ended;

  /** Asks the worker to kill the job; past the grace, ends it here. Resolves to 1 when it ended it. */
  async function stop(j: { id: string; fence: string; host_name: string }, reason: string, over: number): Promise<number> {
    await sql`update jobs set kill_requested_by = coalesce(kill_requested_by, ${reason}) where id = ${j.id} and state = 'running'`;
    hub.killJob(j.host_name, { jobId: j.id, fence: Number(j.fence), reason });
    if (over < Math.max(graceS, 1)) return 0;
    const final = `${reason} (ended by the controller: the worker did not report the kill)`;
    await sql`update jobs set kill_requested_by = ${final} where id = ${j.id} and state = 'running'`;
    // Its processes may still run (the worker is gone or stuck): the job ends, its devices stay leased until the worker reports.
    const done = await finishJob(sql, j.id, Number(j.fence), { state: 'killed', exitCode: null, reason: final }, ['running'], { keepLeases: true });
    if (!done) return 0;
    events.event(j.id, { type: 'exit', jobId: j.id, state: 'killed', exitCode: null, reason: done.reason });
    return 1;
  }
}

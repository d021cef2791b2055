// The controller's side of the time limits. Queued jobs past --timeout end
// `cancelled`. Running jobs past --max-runtime or --idle-timeout are killed by
// their worker; if the worker has not reported the kill a grace period later
// (it may be dead), the controller ends the job `killed` itself, so no runaway
// job stays counted as running. Its devices stay leased until the worker
// reports the kill (or comes back without the job): the processes may still run.
import { formatDuration } from '../core/duration';
import type { jobs } from '../db/schema';
import type { Sql } from './db';
import type { JobEvents } from './job-events';
import { ended as endingOf, type StopRequest } from '../core/job-state';
import type { JobEngine } from './jobs/engine';

export interface WatchdogDeps {
  sql: Sql;
  events: JobEvents;
  engine: Pick<JobEngine, 'end' | 'stopForLimit' | 'warnIdle' | 'releaseIdleHold'>;
  /** Seconds since a job last printed, as this controller saw (the worker hub's clock). */
  idleSeconds: (jobId: string) => number;
  graceS: number;
  /** RC_IDLE_HOLD_WARN, RC_IDLE_HOLD_RELEASE in seconds (null: off). */
  idleHoldWarnS?: number | null;
  idleHoldReleaseS?: number | null;
}

type Job = typeof jobs.$inferSelect;
/** A running job: it has a host and a fence. */
type Running = { id: string; fence: number; hostName: string };

export async function enforceLimits(deps: WatchdogDeps): Promise<number> {
  const { sql, engine, graceS } = deps;
  let ended = 0;
  const expired = await sql<{ id: string; waitTimeoutS: number }[]>`
    select id, wait_timeout_s from jobs
    where state = 'queued' and wait_timeout_s is not null and created_at + make_interval(secs => wait_timeout_s) < now()`;
  for (const j of expired) {
    const reason = `wait timeout: no device within ${formatDuration(j.waitTimeoutS)}`;
    if (await engine.end(j.id, endingOf('cancelled', 'wait_timeout', reason), { from: ['queued'] })) ended++;
  }

  const running = await sql<(Pick<Job, 'id' | 'maxRuntimeS' | 'idleTimeoutS' | 'holdTtlS'> & Running & { runS: number; expiredS: number | null })[]>`
    select id, fence, host_name, max_runtime_s, idle_timeout_s, hold_ttl_s, extract(epoch from now() - started_at)::float8 as run_s,
      extract(epoch from now() - expires_at)::float8 as expired_s from jobs
    where state = 'running' and (max_runtime_s is not null or idle_timeout_s is not null or expires_at is not null)`;
  for (const j of running) {
    // A hold's TTL is the controller's alone (rc hold extend moves it), so it gets no worker head start.
    if (j.expiredS !== null) {
      if (j.expiredS < 0) continue;
      const reason = `hold expired (TTL ${formatDuration(j.holdTtlS ?? 0)}${j.runS - (j.holdTtlS ?? 0) > 1 ? ', extended' : ''})`;
      ended += await stop(j, { cause: 'hold_expired', reason }, j.expiredS + 1);
      continue;
    }
    const idleS = deps.idleSeconds(j.id);
    const past: (StopRequest & { over: number }) | null =
      j.maxRuntimeS !== null && j.runS > j.maxRuntimeS
        ? { cause: 'max_runtime', reason: 'max_runtime exceeded', over: j.runS - j.maxRuntimeS }
        : j.idleTimeoutS !== null && idleS > j.idleTimeoutS
          ? { cause: 'idle', reason: `idle: no output for ${formatDuration(j.idleTimeoutS)}`, over: idleS - j.idleTimeoutS }
          : null;
    // The worker enforces the limit itself and gets the first second; this is the backstop for a worker that cannot.
    if (!past || past.over < 1) continue;
    ended += await stop(j, past, past.over);
  }
  ended += await idleLimits();
  return ended;

  /**
   * GPU idleness (core/idle.ts, kept per lease by each heartbeat): rc run --gpu-idle-timeout kills a job
   * whose devices have all been idle that long (gpu_idle); a hold idle RC_IDLE_HOLD_WARN is warned of on
   * its stream once per idle streak, and one idle RC_IDLE_HOLD_RELEASE is released (idle_hold, audited).
   */
  async function idleLimits(): Promise<number> {
    const warnS = deps.idleHoldWarnS ?? null;
    const releaseS = deps.idleHoldReleaseS ?? null;
    const holds = warnS !== null || releaseS !== null;
    let n = 0;
    const idle = await sql<(Running & { kind: Job['kind']; gpuIdleTimeoutS: number | null; idleS: number; idleFrom: Date; warned: boolean })[]>`
      select j.id, j.fence, j.host_name, j.kind, j.gpu_idle_timeout_s, extract(epoch from now() - max(l.idle_since))::float8 as idle_s,
        max(l.idle_since) as idle_from, coalesce(j.idle_warned_at >= max(l.idle_since), false) as warned
      from jobs j join leases l on l.job_id = j.id and l.released_at is null
      where j.state = 'running' and (j.gpu_idle_timeout_s is not null ${holds ? sql`or j.kind = 'hold'` : sql``})
      group by j.id
      having bool_and(l.idle_since is not null)`;
    for (const j of idle) {
      if (j.kind !== 'hold') {
        if (j.gpuIdleTimeoutS !== null && j.idleS >= j.gpuIdleTimeoutS)
          n += await stop(
            j,
            { cause: 'gpu_idle', reason: `gpu idle: its GPUs were idle for ${formatDuration(j.gpuIdleTimeoutS)}` },
            j.idleS - j.gpuIdleTimeoutS,
          );
        continue;
      }
      if (releaseS !== null && j.idleS >= releaseS) {
        const reason = `idle hold released: its GPUs were idle for ${formatDuration(releaseS)} (RC_IDLE_HOLD_RELEASE)`;
        // Ended here at once (a hold runs nothing to wait for); the first pass to ask writes the audit row.
        if (await engine.releaseIdleHold(j, reason, formatDuration(j.idleS), formatDuration(releaseS))) n++;
        continue;
      }
      if (warnS !== null && j.idleS >= warnS && !j.warned) {
        if (!(await engine.warnIdle(j.id, j.idleFrom))) continue;
        const then = releaseS !== null ? `; it is released once idle for ${formatDuration(releaseS)}` : '';
        deps.events.event(j.id, {
          type: 'notice',
          message: `hold ${j.id} has been idle for ${formatDuration(j.idleS)} (no GPU use on ${j.hostName}); rc release ${j.id} frees it for others${then}`,
        });
      }
    }
    return n;
  }

  /** Asks the worker to kill the job; past the grace, ends it here (the engine). Resolves to 1 when it ended it. */
  async function stop(j: Running, limit: StopRequest, over: number): Promise<number> {
    return (await engine.stopForLimit(j, limit, over, graceS)) ? 1 : 0;
  }
}

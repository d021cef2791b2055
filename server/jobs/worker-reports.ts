// What a worker reports about its jobs, as transitions of those jobs: its
// hello (reconciled against what the database runs there), its exits, and
// its coming back after it was counted offline. The worker hub
// (server/worker-hub.ts) checks who sent a report and calls one method here.
import { ended, outcome, type StopRequest } from '../../core/job-state';
import { reconcile as reconcileDecision } from '../../core/reconcile';
import type { Hello, JobExit, KillJobOrder, Quarantine } from '../../protocol/worker';
import type { Sql } from '../db';
import type { JobEvents } from '../job-events';
import { EndBatcher } from './end-batch';
import { endJob, releaseEnded, releaseLeftBehind } from './finish';
import type { RunningHere } from './running-here';
import { assignedToHost } from './sql/assigned-to-host';
import { endedStillLeased } from './sql/ended-still-leased';
import { resumePoints } from './sql/resume-points';
import { runningOnHost } from './sql/running-on-host';

export interface WorkerReportDeps {
  sql: Sql;
  events: JobEvents;
  running: RunningHere;
  /** The host's devices changed as the pages show them. */
  changed: (hostName: string) => void;
  /** Devices were freed: a pass may start what waits. */
  freed: () => void;
  /** Quarantines a device of the host (a report of the worker's). */
  quarantine: (hostName: string, q: Quarantine) => Promise<void>;
}

export class WorkerReports {
  /** Exit reports stored in batches. */
  private readonly ends: EndBatcher;

  constructor(private readonly deps: WorkerReportDeps) {
    this.ends = new EndBatcher(deps);
  }

  /**
   * A worker said hello: jobs the database runs there but the worker does not
   * know are lost; jobs the worker runs without a lease are stopped (their
   * leases, if they still hold some, go with their exit report). The worker
   * has killed what its previous run left behind before this hello, so the
   * leases of ended jobs it does not list are free. Returns what it must stop.
   */
  async hello(hostName: string, hello: Hello): Promise<KillJobOrder[]> {
    const { kept, lost, stop } = reconcileDecision(await runningOnHost(this.deps.sql, hostName), hello.running);
    for (const job of kept) this.deps.running.adopted(job.id, hostName, job.fence!);
    for (const job of lost)
      await endJob(this.deps, job.id, ended('lost', 'lost', 'the worker restarted and no longer had the job'), { from: ['running'], fence: job.fence });
    const freed = await releaseLeftBehind(
      this.deps.sql,
      hostName,
      hello.running.map((r) => r.jobId),
    );
    if (freed > 0) {
      this.deps.changed(hostName);
      this.deps.freed();
    }
    return stop;
  }

  /**
   * For each job the worker still has: the last chunk stored, so it resends
   * only what comes after. A controller that restarted also learns here how
   * much of each job's output is stored, so the bound holds across restarts.
   * Call it once the output handled so far is stored.
   */
  async resumePoints(hostName: string, hello: Hello): Promise<Record<string, number>> {
    const ids = hello.running.map((r) => r.jobId);
    if (!ids.length) return {};
    const running = this.deps.running;
    const out: Record<string, number> = {};
    for (const r of await resumePoints(this.deps.sql, hostName, ids)) {
      if (running.stored(r.id) === undefined) running.setStored(r.id, r.truncated ? Infinity : r.bytes);
      out[r.id] = Math.max(r.seq, running.handledUpTo(r.id));
      running.handled(r.id, out[r.id]!, hostName);
    }
    return out;
  }

  /**
   * A job's exit, from its host's worker, once its output so far is stored.
   * False when it is not that host's job with that fence (refused).
   */
  async exit(hostName: string, exit: JobExit): Promise<boolean> {
    const { sql, running } = this.deps;
    // Quarantined while the job still holds the device: no moment where another job could take it.
    if (exit.quarantine?.length && (await assignedToHost(sql, exit.jobId, exit.fence, hostName)))
      for (const q of exit.quarantine) await this.deps.quarantine(hostName, q);
    // The worker's own watchdog is a stop too; any stop asked for earlier still wins (endJob).
    const stop: StopRequest | null = exit.killedFor ? { cause: exit.killCause ?? 'killed', reason: exit.killedFor } : null;
    const done = await this.ends.end({ jobId: exit.jobId, end: outcome(exit.exitCode, exit.signal, stop), fence: exit.fence, host: hostName });
    if (done) {
      running.forget(exit.jobId);
      this.deps.freed();
      return true;
    }
    // Already over (lost, or ended by the controller's watchdog): its processes are gone now, and so are its leases.
    const late = await releaseEnded(sql, hostName, exit.jobId, exit.fence);
    if (!late.mine) return false;
    // An earlier attempt's report: what is kept here of the job may be its next attempt's by now.
    if (running.fenceOk(hostName, exit.jobId, exit.fence)) running.forget(exit.jobId);
    if (late.released) {
      // No event says this: the fleet views load the host again.
      this.deps.changed(hostName);
      this.deps.freed();
    }
    return true;
  }

  /**
   * A host heard from again after it was counted offline (a worker that was
   * stuck, or cut off, without losing its connection). Jobs ended meanwhile
   * that still hold its devices are to be stopped now; their exit reports free the devices.
   */
  async cameBack(hostName: string): Promise<KillJobOrder[]> {
    return (await endedStillLeased(this.deps.sql, hostName)).map((j) => ({
      jobId: j.id,
      fence: j.fence,
      reason: `ended by the controller meanwhile (${j.reason ?? 'no reason recorded'})`,
    }));
  }
}

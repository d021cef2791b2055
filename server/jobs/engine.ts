// The job engine: every change of a job's state, one method per transition.
// Each takes its decision from core/ (or from the statement's own condition,
// where only the database can decide), runs statements of this folder, and
// tells what happened (the job's event, the worker's order). The adapters
// around it (the routes, the worker and terminal hubs, the scheduler, the
// watchdogs, the reaper, rc cp) only parse, check who asks, and call one of
// these. docs/architecture.md lists where each transition lives.
import { ended, type Ending, outcome, type StopCause, type StopRequest, step } from '../../core/job-state';
import type { SubmitArray, SubmitJob } from '../../protocol/api';
import type { KillJobOrder, Quarantine, StdinOp, StdinReply } from '../../protocol/worker';
import type { Identity } from '../auth';
import { BUS_CHANNEL } from '../bus';
import type { Db, Sql } from '../db';
import type { JobEvents } from '../job-events';
import { type BatchClaimed, claimBatch, type PlannedClaim } from './claim';
import { type CopyDevice, takeCopyLease } from './copy-lease';
import { type EndWhere, endJob } from './finish';
import type { ArrayRow } from './find';
import { extendHold } from './hold';
import { killArray } from './kill-array';
import { type ArraySubmitted, submitArray } from './submit-array';
import type { JobRow } from './job-view';
import { killJob, stopJob } from './kill';
import { RunningHere } from './running-here';
import { dropRefusedCopy } from './sql/drop-refused-copy';
import { forceStopReason } from './sql/force-stop-reason';
import { holdForPreemption } from './sql/hold-for-preemption';
import { markDispatched } from './sql/mark-dispatched';
import { markIdleWarned } from './sql/mark-idle-warned';
import type { OutputTruncatedReason } from '../../core/output-truncated';
import { markOutputTruncated } from './sql/mark-output-truncated';
import { markTtySeen } from './sql/mark-tty-seen';
import { releaseIdleHold } from './sql/release-idle-hold';
import { requestStop } from './sql/request-stop';
import { requeueClaimed } from './sql/requeue-claimed';
import { runningOnHost } from './sql/running-on-host';
import { stopForPreemption } from './sql/stop-for-preemption';
import { type StartDeps, type Started, startJob } from './start';
import { type StdinPiece, writeJobStdin } from './stdin';
import { sweepWaits } from './waits';
import { WorkerReports } from './worker-reports';

export interface EngineDeps {
  db: Db;
  sql: Sql;
  events: JobEvents;
  /** The workers: a stop told to a job's worker wherever it is connected, and stdin through the one connected here. */
  hub: {
    killJob(hostName: string, order: KillJobOrder): void;
    holds(hostName: string): boolean;
    stdinCall(hostName: string, op: StdinOp): Promise<StdinReply | null>;
  };
  /** What a submit needs besides the engine's own (the fleet, the scheduler to wake: bound late, it takes the engine too). */
  start: () => Omit<StartDeps, 'sql' | 'events'>;
  /** A host's devices changed as the pages show them. */
  changed: (hostName: string) => void;
  /** Devices were freed: a pass may start what waits. */
  freed: () => void;
  /** Quarantines a device of a host (a report of its worker's). */
  quarantine: (hostName: string, q: Quarantine) => Promise<void>;
  /** Queued jobs left their wait (dependencies met, a retry delay over): every controller's pass should look. */
  released?: () => void;
}

export class JobEngine {
  /** What this controller keeps of the jobs running through it (fences, idle clocks, output handled). */
  readonly running = new RunningHere();
  /** A worker's reports about its jobs: its hello, its exits, its coming back. */
  readonly reports: WorkerReports;

  constructor(private readonly deps: EngineDeps) {
    this.reports = new WorkerReports({ ...deps, running: this.running });
  }

  // ---- asked for by people and agents

  /** Submit: stored, started at once on a free device or queued (server/jobs/start.ts). */
  submit(identity: Identity, body: SubmitJob, attach: (job: JobRow, position: number, notices: string[]) => void): Promise<Started> {
    return startJob({ ...this.deps.start(), sql: this.deps.sql, events: this.deps.events }, identity, body, attach);
  }

  /** rc run --array: the array and its tasks stored at once, all queued (server/jobs/submit-array.ts). */
  submitArray(identity: Identity, body: SubmitArray): Promise<ArraySubmitted> {
    return submitArray({ ...this.deps.start(), sql: this.deps.sql, events: this.deps.events }, identity, body);
  }

  /** rc kill <array>: every task, by the array's submitter or an admin, audited once. */
  killArray(identity: Identity, array: ArrayRow, submitter: string): Promise<number> {
    return killArray(this.deps, identity, array, submitter);
  }

  /** rc kill, rc release: by its submitter or an admin, audited. */
  kill(identity: Identity, jobId: string, submitter: string, verb: 'killed' | 'released' = 'killed'): Promise<JobRow> {
    return killJob(this.deps, identity, jobId, submitter, verb);
  }

  /** A stop with no owner check (an unattended terminal): the first stop asked wins. */
  stop(job: JobRow, reason: string, cause: StopCause): Promise<JobRow> {
    return stopJob(this.deps, job, reason, cause);
  }

  extendHold(identity: Identity, hold: JobRow, submitter: string, ttlS: number): Promise<JobRow> {
    return extendHold(this.deps, identity, hold, submitter, ttlS);
  }

  writeStdin(identity: Identity, ref: string, piece: StdinPiece): Promise<{ closed: boolean }> {
    return writeJobStdin(this.deps, identity, ref, piece);
  }

  // ---- the scheduler

  /** A pass's plan claimed in one statement: each job running with its leases, or left queued. */
  claimPass<D extends { id: number; name: string }>(plan: readonly PlannedClaim<D>[]): Promise<BatchClaimed<D>> {
    return claimBatch(this.deps.sql, plan);
  }

  /** Another controller's claim for a worker connected here, marked sent (null: put back meanwhile); `told` (a bus payload) goes out at its commit. */
  dispatched(jobId: string, fence: number, told: string | null): Promise<JobRow | null> {
    const sql = this.deps.sql;
    return markDispatched(sql, jobId, fence, told === null ? sql`null` : sql`pg_notify(${BUS_CHANNEL}, ${told})`);
  }

  /** A claim nobody sent goes back in the queue, its leases let go. */
  requeueClaimed(job: JobRow, undispatchedOnly: boolean): Promise<boolean> {
    return requeueClaimed(this.deps.sql, job.id, job.fence!, undispatchedOnly);
  }

  /** Devices a preemption frees, held for the queued job it is made for (false: another pass won). */
  holdForPreemption(jobId: string, deviceIds: readonly number[], holdS: number): Promise<boolean> {
    return holdForPreemption(this.deps.sql, jobId, deviceIds, holdS);
  }

  /** A --preemptible job asked to stop with notice; its worker is told. False when it is not such a job now. */
  async preempt(victim: string, reason: string, noticeS: number): Promise<boolean> {
    const row = await stopForPreemption(this.deps.sql, victim, reason);
    if (!row) return false;
    this.deps.hub.killJob(row.hostName, { jobId: victim, fence: row.fence, reason, noticeS });
    return true;
  }

  // ---- the watchdogs and the reaper

  /**
   * A limit passed (max runtime, idle, a hold's TTL, GPU idle): the worker is
   * asked to kill the job; `over` seconds past the limit and past the grace,
   * the controller ends it itself, keeping its leases until its worker
   * reports (its processes may still run). True when it ended it here.
   */
  async stopForLimit(j: { id: string; fence: number; hostName: string }, limit: StopRequest, over: number, graceS: number): Promise<boolean> {
    await requestStop(this.deps.sql, j.id, limit.reason, limit.cause);
    this.deps.hub.killJob(j.hostName, { jobId: j.id, fence: j.fence, reason: limit.reason });
    if (over < Math.max(graceS, 1)) return false;
    const final = `${limit.reason} (ended by the controller: the worker did not report the kill)`;
    await forceStopReason(this.deps.sql, j.id, final, limit.cause);
    // core's rule for a stop the controller carries out itself (step's backstop).
    const end = step({ state: 'running', stop: limit, ending: null }, { type: 'backstop', stop: { cause: limit.cause, reason: final } }).ending!;
    const done = await endJob(this.deps, j.id, end, { from: ['running'], fence: j.fence, keepLeases: true });
    return done !== null;
  }

  /**
   * An idle hold past RC_IDLE_HOLD_RELEASE: the stop asked and audited once,
   * and the hold ended here at once, killed with cause idle_hold, that reason
   * and no exit code (a hold runs no command: the SIGTERM its worker reports
   * is no code of its own, and there is no kill to wait for). Its leases stay
   * until the worker, told now, reports, and that report changes nothing else
   * (WorkerReports.exit). True when it ended it here.
   */
  async releaseIdleHold(j: { id: string; fence: number; hostName: string }, reason: string, idle: string, release: string): Promise<boolean> {
    await releaseIdleHold(this.deps.sql, j.id, reason, idle, release);
    const stop: StopRequest = { cause: 'idle_hold', reason };
    // core's rule for a stop the controller carries out itself; a stop asked before this one keeps its cause and reason (endJob).
    const end = step({ state: 'running', stop, ending: null }, { type: 'backstop', stop }).ending!;
    const done = await endJob(this.deps, j.id, end, { from: ['running'], fence: j.fence, keepLeases: true });
    this.deps.hub.killJob(j.hostName, { jobId: j.id, fence: j.fence, reason });
    return done !== null;
  }

  /** An idle hold past RC_IDLE_HOLD_WARN, once per idle streak: true for the one pass that warns. */
  warnIdle(jobId: string, idleFrom: Date): Promise<boolean> {
    return markIdleWarned(this.deps.sql, jobId, idleFrom);
  }

  /** A queued job ended without running (its --timeout), or any job ended with this end. */
  end(jobId: string, end: Ending, where: EndWhere): Promise<(JobRow & { again?: boolean }) | null> {
    return endJob(this.deps, jobId, end, where);
  }

  /**
   * The repair sweep of waiting jobs (server/jobs/waits.ts): dependencies an
   * end's own follow-up missed (its controller died), and --retry-delay waits
   * that are over. Returns when the next retry delay is over (ms; null: none).
   */
  async settleWaits(): Promise<number | null> {
    return (await sweepWaits(this.deps)).nextRetryMs;
  }

  /** A host stopped answering: its running jobs are lost (or queued again, --restarts), their leases kept. Returns how many. */
  async loseHostJobs(hostName: string): Promise<number> {
    let lost = 0;
    for (const job of await runningOnHost(this.deps.sql, hostName)) {
      const done = await endJob(this.deps, job.id, ended('lost', 'lost', `host ${hostName} stopped answering`), {
        from: ['running'],
        fence: job.fence,
        keepLeases: true,
      });
      if (done) lost++;
    }
    return lost;
  }

  /**
   * A provider machine went away under the jobs running on `hostName`: taken back (a spot machine: each attempt ends
   * preempted, cause spot) or deleted (rc machines rm: lost). Either way the job starts over on another machine while
   * --restarts has some left. The machine is gone: their leases go too.
   */
  async machineGone(hostName: string, machineId: string, how: 'taken back' | 'deleted'): Promise<number> {
    const end =
      how === 'taken back'
        ? ended('preempted', 'spot', `the provider took back the spot machine ${machineId} it ran on`)
        : ended('lost', 'lost', `its machine ${machineId} was deleted`);
    let done = 0;
    for (const job of await runningOnHost(this.deps.sql, hostName)) if (await endJob(this.deps, job.id, end, { from: ['running'], fence: job.fence })) done++;
    return done;
  }

  // ---- rc cp

  /** A short lease on a free device for one copy (a running `cp` job). */
  copyLease(identity: Identity, submitter: string, device: CopyDevice, argv: string[]): Promise<{ id: string; fence: number }> {
    return takeCopyLease(this.deps.sql, identity, submitter, device, argv);
  }

  /** The copy ended: succeeded, or failed for `failure` (its reason). */
  async copyEnded(job: { id: string; fence: number }, failure: string | null): Promise<void> {
    const end = failure === null ? outcome(0, null, null) : ended('failed', 'copy_failed', failure, 1);
    await endJob(this.deps, job.id, end, { from: ['running'], fence: job.fence });
  }

  /** The worker refused the copy: nothing was copied, so its job leaves no trace. */
  copyRefused(job: { id: string; fence: number }): Promise<void> {
    return dropRefusedCopy(this.deps.sql, job.id, job.fence);
  }

  // ---- what the hubs note

  /** These terminals have a client attached now. */
  ttySeen(jobIds: readonly string[]): Promise<void> {
    return markTtySeen(this.deps.sql, jobIds);
  }

  /** Part of the job's output is not stored: past the bound kept per job, or lost while the database could not store it. */
  outputTruncated(jobId: string, reason: OutputTruncatedReason): Promise<void> {
    return markOutputTruncated(this.deps.sql, jobId, reason);
  }
}

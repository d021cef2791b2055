// The jobs the worker runs: started on the controller's order (recorded in
// the state file first), killed on its order or by their watchdog, their
// output numbered and kept until acknowledged, and their exit reported (with
// the devices to quarantine: processes that would not die, a GPU still
// holding memory) until the controller has it, across reconnects.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { type JobExit, type KillJobOrder, type Quarantine, type StartJob, StdinOp } from '../protocol/worker';
import { zodMessage } from '../protocol/zod-message';
import { writeStdin } from './job-stdin';
import { WorkerEvent } from '../protocol/events';
import type { WorkerConfig } from './config';
import type { ControllerLink } from './controller-link';
import type { GpuMonitor } from './gpu-monitor';
import { holdLease } from './hold';
import type { JobPhases } from './job-phases';
import type { JobState } from './job-state';
import { OutputOutbox } from './outbox';
import type { DeviceProblem, JobCallbacks, RunningJob, Runtime } from './runtime';
import { Terminals, type TtyState } from './tty-flow';
import { Watchdog } from './watchdog';

export interface Job {
  order: StartJob;
  seq: number;
  run: RunningJob;
  watchdog: Watchdog | null;
  killedFor: string | null;
  killCause: 'max_runtime' | 'idle' | null;
  tty?: TtyState;
  /** Bytes of its standard input written so far (worker/job-stdin.ts). */
  stdinSent?: number;
}

/** The first wait before an exit report is sent again, doubled each time up to the most. */
const EXIT_RESEND_FIRST_MS = 1000;
const EXIT_RESEND_MAX_MS = 15_000;

export class JobRunner {
  readonly jobs = new Map<string, Job>();
  /** Exit reports not yet acknowledged by the controller; resent after a reconnect. */
  private readonly unreported = new Map<string, JobExit>();
  /** Exit reports to send again (the controller failed to store them, or did not answer). */
  private readonly resendTimers = new Map<string, NodeJS.Timeout>();
  private readonly outbox: OutputOutbox;
  /** Device index → the job that just ended there, until its GPU memory had time to settle. */
  private readonly ending = new Map<number, { jobId: string; until: number }>();
  readonly terminals: Terminals;

  constructor(
    private readonly config: WorkerConfig,
    private readonly runtime: Runtime,
    private readonly gpus: GpuMonitor,
    private readonly state: JobState,
    private readonly link: ControllerLink,
    /** A device the runtime cannot use (reported to the controller). */
    private readonly unusable: (problem: DeviceProblem) => void,
    private readonly log: (msg: string) => void,
    /** RC_JOB_PHASES: where each job's time goes, for benchmarks. */
    private readonly phases?: JobPhases,
  ) {
    this.terminals = new Terminals(link, this.jobs);
    this.outbox = new OutputOutbox(config.RC_OUTPUT_BUFFER_BYTES);
    const socket = link.socket;
    socket.on(WorkerEvent.jobStart, (order) => this.start(order));
    socket.on(WorkerEvent.jobAck, (a) => this.outbox.ack(a.jobId, a.seq));
    socket.on(WorkerEvent.jobKill, (order) => this.kill(order));
    socket.on(WorkerEvent.jobStdin, (raw, ack) => {
      if (typeof ack !== 'function') return;
      const op = StdinOp.safeParse(raw);
      if (!op.success) return ack({ ok: false, code: 'bad_request', message: `bad stdin piece: ${zodMessage(op.error)}` });
      const ended = () => this.jobs.get(op.data.jobId)?.order.fence !== op.data.fence;
      void writeStdin(this.jobs.get(op.data.jobId), op.data, ended).then(ack, (err: unknown) =>
        ack({ ok: false, code: 'bad_request', message: `cannot write the job's stdin: ${(err as Error).message}` }),
      );
    });
  }

  /** The jobs the hello names: running, or ended and not yet reported. */
  held(): { jobId: string; fence: number }[] {
    return [...this.jobs.values()]
      .map((j) => ({ jobId: j.order.jobId, fence: j.order.fence }))
      .concat([...this.unreported.values()].map((e) => ({ jobId: e.jobId, fence: e.fence })));
  }

  /** After the hello: output the controller does not have yet, then the exits that follow it. */
  resend(resume: Record<string, number> | undefined): void {
    for (const jobId of this.outbox.jobIds()) {
      for (const chunk of this.outbox.after(jobId, resume?.[jobId] ?? null)) this.link.socket.emit(WorkerEvent.jobOutput, chunk);
    }
    for (const exit of this.unreported.values()) this.sendExit(exit);
  }

  /** The job running on the device, or the one that just ended there (its GPU memory may not have settled yet). */
  jobOn(index: number, now: number): string | null {
    for (const j of this.jobs.values()) if (j.order.devices.some((d) => d.index === index)) return j.order.jobId;
    const e = this.ending.get(index);
    return e && e.until > now ? e.jobId : null;
  }

  /** Devices held by a hold job: people work on them directly. */
  heldDevices(): Set<number> {
    return new Set([...this.jobs.values()].filter((j) => j.order.kind === 'hold').flatMap((j) => j.order.devices.map((d) => d.index)));
  }

  private start(sent: StartJob): void {
    if (this.jobs.has(sent.jobId)) return;
    this.phases?.mark(sent.jobId, 'order');
    const order = sent.preemptible ? { ...sent, preemptFile: this.preemptFile(sent.jobId).job } : sent;
    if (sent.preemptible) rmSync(this.preemptFile(sent.jobId).host, { force: true });
    const job: Job = { order, seq: order.seqFrom ?? 0, run: { kill() {} }, watchdog: null, killedFor: null, killCause: null };
    this.jobs.set(order.jobId, job);
    // Known to the next run of the worker before it runs anything (a hold runs nothing).
    if (order.kind !== 'hold')
      this.state.started({ jobId: order.jobId, fence: order.fence, devices: order.devices.map((d) => d.index), cgroup: this.runtime.jobCgroup(order) });
    this.phases?.mark(order.jobId, 'recorded');
    job.watchdog = new Watchdog({ maxRuntimeS: order.maxRuntimeS ?? null, idleTimeoutS: order.idleTimeoutS ?? null }, (reason, cause) => {
      this.log(`job ${order.jobId}: ${reason}; killing it`);
      job.killedFor = reason;
      job.killCause = cause;
      job.run.kill(this.config.RC_KILL_GRACE_S);
    });
    const callbacks: JobCallbacks = {
      output: (stream, data) => {
        if (job.seq === (order.seqFrom ?? 0)) this.phases?.mark(order.jobId, 'firstByte');
        job.watchdog?.activity();
        job.seq += 1;
        const chunk = { jobId: order.jobId, fence: order.fence, seq: job.seq, stream, data };
        this.outbox.add(chunk);
        if (this.link.ready) this.link.socket.emit(WorkerEvent.jobOutput, chunk);
      },
      exited: () => this.phases?.mark(order.jobId, 'exited'),
      exit: (exitCode, signal, survivors = []) => {
        this.phases?.mark(order.jobId, 'ended');
        job.watchdog?.stop();
        if (order.preemptible) rmSync(this.preemptFile(order.jobId).host, { force: true });
        this.state.ended(order.jobId, survivors);
        const stuck = survivors.length ? this.stuck(order, survivors) : [];
        const until = Date.now() + this.config.RC_GPU_SETTLE_S * 1000 + 10_000;
        for (const d of order.devices) this.ending.set(d.index, { jobId: order.jobId, until });
        // A GPU still holding memory is quarantined in the same report that ends the job,
        // so no other job can be given it in between.
        // Its scratch is wiped before the end is reported, so the next job on the device never sees it.
        const wiped = order.kind === 'hold' ? Promise.resolve([]) : this.runtime.cleanUp(order).catch(() => [] as Quarantine[]);
        void Promise.all([this.gpus.afterJob(order.jobId, order.devices).catch(() => [] as Quarantine[]), wiped]).then(([found, unwiped]) => {
          this.jobs.delete(order.jobId);
          const quarantine = [...stuck, ...found, ...unwiped];
          const exit: JobExit = {
            jobId: order.jobId,
            fence: order.fence,
            exitCode,
            signal,
            lastSeq: job.seq,
            killedFor: job.killedFor,
            killCause: job.killCause,
            quarantine,
          };
          this.phases?.mark(order.jobId, 'cleaned');
          for (const q of quarantine) this.log(`job ${order.jobId}: quarantining gpu${q.index}: ${q.reason}`);
          this.unreported.set(order.jobId, exit);
          if (this.link.ready) this.sendExit(exit);
        });
      },
    };
    job.run =
      order.kind === 'hold'
        ? holdLease(callbacks)
        : order.kind === 'tty'
          ? this.terminals.start(job, this.runtime, callbacks.exit, this.unusable)
          : this.runtime.run(order, callbacks, this.unusable);
    this.phases?.mark(order.jobId, 'spawned');
  }

  /** Processes of an ended job still there after the kill: its devices are quarantined in its end report. */
  private stuck(order: StartJob, pids: number[]): Quarantine[] {
    const shown = pids.slice(0, 10).join(', ') + (pids.length > 10 ? ', …' : '');
    this.log(`job ${order.jobId}: ${pids.length} process(es) could not be killed (pid ${shown})`);
    return order.devices.map((d) => ({
      index: d.index,
      reason: `processes of job ${order.jobId} could not be killed (pid ${shown})`,
      evidence: { jobId: order.jobId, pids: pids.slice(0, 100) },
    }));
  }

  private sendExit(exit: JobExit, tries = 0): void {
    const again = this.resendTimers.get(exit.jobId);
    if (again) clearTimeout(again);
    this.resendTimers.delete(exit.jobId);
    this.link.socket
      .timeout(10_000)
      .emitWithAck(WorkerEvent.jobExit, exit)
      .then(
        (reply) => {
          // Acknowledged, or refused as stale: either way there is nothing left to report.
          if (reply.ok || reply.code === 'stale_lease') {
            this.phases?.mark(exit.jobId, 'reported');
            this.unreported.delete(exit.jobId);
            this.outbox.forget(exit.jobId);
          } else if (reply.code === 'internal') this.sendExitLater(exit, tries);
        },
        () => this.sendExitLater(exit, tries),
      );
  }

  /**
   * The controller could not store the exit (its database away: `internal`),
   * or did not answer: sent again after a while, on this connection, until it
   * is acknowledged (a hello sends it too). Without this, the job would stay
   * running, its devices leased, until the next reconnect.
   */
  private sendExitLater(exit: JobExit, tries: number): void {
    if (this.unreported.get(exit.jobId) !== exit || this.resendTimers.has(exit.jobId)) return;
    const ms = Math.min(EXIT_RESEND_MAX_MS, EXIT_RESEND_FIRST_MS * 2 ** tries);
    const timer = setTimeout(() => {
      this.resendTimers.delete(exit.jobId);
      if (this.unreported.get(exit.jobId) === exit && this.link.ready) this.sendExit(exit, tries + 1);
    }, ms);
    timer.unref();
    this.resendTimers.set(exit.jobId, timer);
  }

  private kill(order: KillJobOrder): void {
    const job = this.jobs.get(order.jobId);
    if (!job || job.order.fence !== order.fence) return;
    if (order.noticeS === undefined) return job.run.kill(this.config.RC_KILL_GRACE_S);
    // A preemption: the deadline appears in RC_PREEMPT_FILE before the SIGTERM, and SIGKILL comes at the deadline.
    const deadline = new Date(Date.now() + order.noticeS * 1000).toISOString();
    if (job.order.preemptible) {
      const { host } = this.preemptFile(order.jobId);
      try {
        mkdirSync(dirname(host), { recursive: true });
        writeFileSync(`${host}.tmp`, `${deadline}\n`);
        renameSync(`${host}.tmp`, host);
      } catch (err) {
        this.log(`job ${order.jobId}: cannot write its preemption notice ${host}: ${(err as Error).message}`);
      }
    }
    this.log(`job ${order.jobId}: preempted, SIGKILL at ${deadline}`);
    job.run.kill(order.noticeS);
  }

  /** A --preemptible job's RC_PREEMPT_FILE: in the workspace (where a container sees it too), one per job. */
  private preemptFile(jobId: string): { host: string; job: string } {
    const rel = `.rc-preempt/${jobId}`;
    return { host: join(this.config.RC_WORKSPACE, rel), job: posix.join(this.runtime.jobWorkspace ?? this.config.RC_WORKSPACE, rel) };
  }

  /** Kills every job, and waits (at most `ms`) until each has ended and its exit was reported. */
  async stopAll(graceS: number, ms: number): Promise<void> {
    for (const job of this.jobs.values()) job.run.kill(graceS);
    const deadline = Date.now() + ms;
    while ((this.jobs.size || this.unreported.size) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }
}

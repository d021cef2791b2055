// rc-worker: the daemon on each GPU host. It dials out to the controller
// (no inbound port), reports its devices and their labels, runs what it is
// assigned and streams output back with sequence numbers.
//
// Probes run at start (before hello), every RC_PROBE_INTERVAL_S and when the
// controller sends PROBE_NOW; after each run the worker sends 'inventory'.
//
// Before it connects, the worker kills whatever the jobs of its previous run
// left running (known from its state file, job-state.ts, and the runtime's own
// leftovers: job cgroups, containers), so that no device is leased again while
// its last job may still run.
import { mkdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { io, type Socket } from 'socket.io-client';
import { type ControllerToWorker, WORKER_NAMESPACE, WorkerEvent, type WorkerToController } from '../protocol/events';
import type { Inventory, JobExit, KillJobOrder, Quarantine, StartJob } from '../protocol/worker';
import { FileOp, type FileReply } from '../protocol/worker';
import { abortWrite, beginWrite, commitWrite, FileError, readPiece, writePiece } from './files';
import { loadWorkerConfig, type WorkerConfig } from './config';
import { DockerRuntime } from './docker-runtime';
import { doctor } from './doctor';
import { GpuMonitor } from './gpu-monitor';
import { HostRuntime } from './host-runtime';
import { holdLease } from './hold';
import { JobState } from './job-state';
import { JobSupervisor } from './job-supervisor';
import type { JobCallbacks, Reclaimed, RunningJob, RunningTty, Runtime } from './runtime';
import { TTY_WORKER_WINDOW, TtyAck, TtyInput, TtyJobRef, TtyResize } from '../protocol/tty';
import { Watchdog } from './watchdog';
import { OutputOutbox } from './outbox';
import { Prober } from './inventory';
import { readWorkerConfigFile } from './worker-config';
import { zodMessage } from '../protocol/zod-message';
import { controllerList, rotateControllers } from './controllers';

declare const RC_VERSION: string;
const log = (msg: string) => console.log(`[rc-worker] ${msg}`);

interface Job {
  order: StartJob;
  seq: number;
  run: RunningJob;
  watchdog: Watchdog | null;
  killedFor: string | null;
  killCause: 'max_runtime' | 'idle' | null;
  tty?: TtyState;
}

/** A terminal job's flow control: paused while disconnected, while the controller says so, or with a full send window. */
interface TtyState {
  run: RunningTty;
  inflight: number;
  held: boolean;
}

class Worker {
  private readonly jobs = new Map<string, Job>();
  /** Exit reports not yet acknowledged by the controller; resent after a reconnect. */
  private readonly unreported = new Map<string, JobExit>();
  /** Device reports held while not connected, sent in order once the controller has our hello. */
  private held: Quarantine[] = [];
  private readonly outbox = new OutputOutbox();
  private stopping = false;
  private ready = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly probeTimer: NodeJS.Timeout;
  /** The inventory the controller last got from us. */
  private sent: Inventory | null = null;
  private readonly socket: Socket<ControllerToWorker, WorkerToController>;
  private readonly controller: { current: () => string };

  /** Device index → the job that just ended there, until its GPU memory had time to settle. */
  private readonly ending = new Map<number, { jobId: string; until: number }>();

  constructor(
    private readonly config: WorkerConfig,
    private readonly prober: Prober,
    private readonly runtime: Runtime,
    private readonly gpus: GpuMonitor,
    private readonly state: JobState,
  ) {
    prober.onInventory = (inventory) => {
      if (this.ready) this.sendInventory(inventory);
    };
    this.probeTimer = setInterval(() => void prober.run(), config.RC_PROBE_INTERVAL_S * 1000);
    const urls = controllerList(config.RC_CONTROLLER);
    this.socket = io(urls[0]! + WORKER_NAMESPACE, {
      auth: { token: config.RC_HOST_TOKEN },
      transports: ['websocket'],
      reconnectionDelay: 200,
      reconnectionDelayMax: 2000,
    });
    this.socket.on('connect', () => void this.hello());
    this.socket.on('disconnect', (reason) => {
      this.ready = false;
      this.ttyFlowAll(false);
      this.stopHeartbeat();
      // socket.io does not retry after a server-side disconnect (a controller shutting down): we do.
      if (reason === 'io server disconnect' && !this.stopping) setTimeout(() => this.socket.connect(), 500);
    });
    this.controller = rotateControllers(this.socket as unknown as Socket, urls, WORKER_NAMESPACE, (url) => log(`trying the next controller, ${url}`));
    this.socket.on('connect_error', (err) => log(`cannot reach the controller at ${this.controller.current()}: ${err.message}; retrying`));
    this.socket.on(WorkerEvent.jobStart, (order) => this.start(order));
    this.socket.on(WorkerEvent.jobAck, (a) => this.outbox.ack(a.jobId, a.seq));
    this.socket.on(WorkerEvent.jobKill, (order) => this.kill(order));
    this.socket.on(WorkerEvent.probeNow, () => void prober.run());
    this.socket.on(WorkerEvent.fileRead, (raw, ack) =>
      this.file(raw, ack, (op) => readPiece(this.config.RC_WORKSPACE, op.path, op.offset ?? 0, op.length ?? 0)),
    );
    this.socket.on(WorkerEvent.fileBegin, (raw, ack) => this.file(raw, ack, (op) => ({ temp: beginWrite(this.config.RC_WORKSPACE, op.path) })));
    this.socket.on(WorkerEvent.fileWrite, (raw, ack) =>
      this.file(raw, ack, (op) => writePiece(this.config.RC_WORKSPACE, op.path, op.temp ?? '', op.offset ?? 0, op.data ?? Buffer.alloc(0))),
    );
    this.socket.on(WorkerEvent.fileCommit, (raw, ack) =>
      this.file(raw, ack, (op) => commitWrite(this.config.RC_WORKSPACE, op.path, op.temp ?? '', op.size ?? -1)),
    );
    this.socket.on(WorkerEvent.fileAbort, (raw, ack) => this.file(raw, ack, (op) => abortWrite(this.config.RC_WORKSPACE, op.path, op.temp ?? '')));
    this.socket.on(WorkerEvent.ttyInput, (raw) => {
      const m = TtyInput.safeParse(raw);
      if (m.success) this.ttyJob(m.data)?.tty?.run.write(m.data.data);
    });
    this.socket.on(WorkerEvent.ttyResize, (raw) => {
      const m = TtyResize.safeParse(raw);
      if (m.success) this.ttyJob(m.data)?.tty?.run.resize(m.data.cols, m.data.rows);
    });
    this.socket.on(WorkerEvent.ttyPause, (raw) => this.ttyHold(raw, true));
    this.socket.on(WorkerEvent.ttyResume, (raw) => this.ttyHold(raw, false));
    this.socket.on(WorkerEvent.ttyAck, (raw) => {
      const m = TtyAck.safeParse(raw);
      const job = m.success ? this.ttyJob(m.data) : null;
      if (!job || !m.success) return;
      job.tty!.inflight = Math.max(0, job.tty!.inflight - m.data.bytes);
      this.ttyFlow(job);
    });
  }

  /** Runs one rc cp step and answers with a FileReply; refusals carry a code and a sentence, never a stack. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a step answers with what it read, or nothing (a write).
  private file(raw: unknown, ack: unknown, fn: (op: FileOp) => object | void): void {
    if (typeof ack !== 'function') return;
    const op = FileOp.safeParse(raw);
    let reply: FileReply;
    if (!op.success) reply = { ok: false, code: 'bad_request', message: `bad file request: ${zodMessage(op.error)}` };
    else {
      try {
        reply = { ok: true, ...(fn(op.data) ?? {}) };
      } catch (err) {
        reply =
          err instanceof FileError
            ? { ok: false, code: err.code, message: err.message }
            : { ok: false, code: 'internal', message: `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${(err as Error).message}` };
      }
    }
    (ack as (r: FileReply) => void)(reply);
  }

  private sendInventory(inventory: Inventory): void {
    this.sent = inventory;
    this.socket.emit(WorkerEvent.inventory, inventory);
  }

  private async hello(): Promise<void> {
    const inventory = this.prober.latest ?? (await this.prober.run());
    const running = [...this.jobs.values()]
      .map((j) => ({ jobId: j.order.jobId, fence: j.order.fence }))
      .concat([...this.unreported.values()].map((e) => ({ jobId: e.jobId, fence: e.fence })));
    // Processes of the previous run's jobs that would not die: the controller quarantines their devices (an ended job's went in its exit).
    const unkillable = this.state.unkillable();
    const reply = await this.socket
      .timeout(10_000)
      .emitWithAck(WorkerEvent.hello, { version: RC_VERSION, ...inventory, running, ...(unkillable.length ? { unkillable } : {}) })
      .catch(() => null);
    if (!reply?.ok) {
      log(`the controller refused our hello (${reply?.code ?? 'no answer'}); reconnecting`);
      this.socket.disconnect().connect();
      return;
    }
    log(`connected to ${this.controller.current()} as ${this.config.RC_HOST_NAME} with ${inventory.devices.length} device(s)`);
    this.ready = true;
    // Output sent before the reconnect will never be acknowledged: the window starts again.
    this.ttyFlowAll(true);
    this.sent = inventory;
    // A probe run that ended while the hello was on its way.
    if (this.prober.latest && this.prober.latest !== this.sent) this.sendInventory(this.prober.latest);
    const held = this.held;
    this.held = [];
    for (const q of held) this.socket.emit(WorkerEvent.deviceUnhealthy, q);
    // Output the controller does not have yet, then the exits that follow it.
    for (const jobId of this.outbox.jobIds()) {
      for (const chunk of this.outbox.after(jobId, reply.resume?.[jobId] ?? 0)) this.socket.emit(WorkerEvent.jobOutput, chunk);
    }
    for (const exit of this.unreported.values()) this.sendExit(exit);
    this.stopHeartbeat();
    this.heartbeat = setInterval(() => this.beat(), reply.heartbeatMs ?? 5000);
  }

  /** A device must not be scheduled: told now, or once the controller has our hello. */
  private sendUnhealthy(q: Quarantine): void {
    if (this.ready) this.socket.emit(WorkerEvent.deviceUnhealthy, q);
    else this.held.push(q);
  }

  private start(order: StartJob): void {
    if (this.jobs.has(order.jobId)) return;
    const job: Job = { order, seq: 0, run: { kill() {} }, watchdog: null, killedFor: null, killCause: null };
    this.jobs.set(order.jobId, job);
    // Known to the next run of the worker before it runs anything (a hold runs nothing).
    if (order.kind !== 'hold')
      this.state.started({ jobId: order.jobId, devices: order.devices.map((d) => d.index), cgroup: this.runtime.jobCgroup(order.jobId) });
    job.watchdog = new Watchdog({ maxRuntimeS: order.maxRuntimeS ?? null, idleTimeoutS: order.idleTimeoutS ?? null }, (reason, cause) => {
      log(`job ${order.jobId}: ${reason}; killing it`);
      job.killedFor = reason;
      job.killCause = cause;
      job.run.kill(this.config.RC_KILL_GRACE_S);
    });
    const callbacks: JobCallbacks = {
      output: (stream, data) => {
        job.watchdog?.activity();
        job.seq += 1;
        const chunk = { jobId: order.jobId, fence: order.fence, seq: job.seq, stream, data };
        this.outbox.add(chunk);
        if (this.ready) this.socket.emit(WorkerEvent.jobOutput, chunk);
      },
      exit: (exitCode, signal, survivors = []) => {
        job.watchdog?.stop();
        this.state.ended(order.jobId, survivors);
        const stuck = survivors.length ? this.stuck(order, survivors) : [];
        const until = Date.now() + this.config.RC_GPU_SETTLE_S * 1000 + 10_000;
        for (const d of order.devices) this.ending.set(d.index, { jobId: order.jobId, until });
        // A GPU still holding memory is quarantined in the same report that ends the job,
        // so no other job can be given it in between.
        void this.gpus
          .afterJob(order.jobId, order.devices)
          .catch(() => [] as Quarantine[])
          .then((found) => {
            this.jobs.delete(order.jobId);
            const quarantine = [...stuck, ...found];
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
            for (const q of quarantine) log(`job ${order.jobId}: quarantining gpu${q.index}: ${q.reason}`);
            this.unreported.set(order.jobId, exit);
            if (this.ready) this.sendExit(exit);
          });
      },
    };
    job.run =
      order.kind === 'hold'
        ? holdLease(callbacks)
        : order.kind === 'tty'
          ? this.startTty(job, callbacks)
          : this.runtime.run(order, callbacks, (problem) => this.unusable(problem));
  }

  /** Processes of an ended job still there after the kill: its devices are quarantined in its end report. */
  private stuck(order: StartJob, pids: number[]): Quarantine[] {
    const shown = pids.slice(0, 10).join(', ') + (pids.length > 10 ? ', …' : '');
    log(`job ${order.jobId}: ${pids.length} process(es) could not be killed (pid ${shown})`);
    return order.devices.map((d) => ({
      index: d.index,
      reason: `processes of job ${order.jobId} could not be killed (pid ${shown})`,
      evidence: { jobId: order.jobId, pids: pids.slice(0, 100) },
    }));
  }

  /** A terminal job: its output is live only (not numbered, not kept), sent within a window the controller acknowledges. */
  private startTty(job: Job, callbacks: JobCallbacks): RunningTty {
    const { jobId, fence } = job.order;
    const run = this.runtime.runTty(
      job.order,
      {
        output: (data) => {
          job.watchdog?.activity();
          if (!job.tty) return;
          job.tty.inflight += data.length;
          // While disconnected socket.io keeps it; the terminal is paused meanwhile, so that is bounded.
          this.socket.emit(WorkerEvent.ttyOutput, { jobId, fence, data });
          this.ttyFlow(job);
        },
        exit: callbacks.exit,
      },
      (problem) => this.unusable(problem),
    );
    job.tty = { run, inflight: 0, held: false };
    this.ttyFlow(job);
    return run;
  }

  private ttyJob(ref: TtyJobRef): Job | null {
    const job = this.jobs.get(ref.jobId);
    return job?.tty && job.order.fence === ref.fence ? job : null;
  }

  private ttyHold(raw: unknown, held: boolean): void {
    const m = TtyJobRef.safeParse(raw);
    const job = m.success ? this.ttyJob(m.data) : null;
    if (!job) return;
    job.tty!.held = held;
    this.ttyFlow(job);
  }

  private ttyFlow(job: Job): void {
    const t = job.tty;
    if (!t) return;
    if (!this.ready || t.held || t.inflight >= TTY_WORKER_WINDOW) t.run.pause();
    else t.run.resume();
  }

  private ttyFlowAll(resetWindow: boolean): void {
    for (const job of this.jobs.values()) {
      if (!job.tty) continue;
      // A controller that restarted has forgotten its pause; it pauses again when it must.
      if (resetWindow) {
        job.tty.inflight = 0;
        job.tty.held = false;
      }
      this.ttyFlow(job);
    }
  }

  /** The heartbeat carries the last GPU sample; the next is taken meanwhile, and with it the check for processes rc did not start. */
  private beat(): void {
    this.socket.emit(WorkerEvent.heartbeat, { gpus: this.gpus.latest });
    // People work on a held device directly (that is what a hold is for): their processes are not foreign.
    const held = new Set([...this.jobs.values()].filter((j) => j.order.kind === 'hold').flatMap((j) => j.order.devices.map((d) => d.index)));
    const devices = (this.prober.latest?.devices ?? []).map((d) => ({ index: d.index, uuid: d.uuid ?? null }));
    const now = Date.now();
    const jobOn = (index: number): string | null => {
      for (const j of this.jobs.values()) if (j.order.devices.some((d) => d.index === index)) return j.order.jobId;
      const e = this.ending.get(index);
      return e && e.until > now ? e.jobId : null;
    };
    void this.gpus.tick(devices, jobOn, held).then(
      (found) => {
        for (const q of found) {
          log(`quarantining gpu${q.index}: ${q.reason}`);
          this.sendUnhealthy(q);
        }
      },
      (err: unknown) => log(`GPU check failed: ${String(err)}`),
    );
  }

  /** A device the runtime cannot use: the controller quarantines it. */
  unusable(problem: Quarantine): void {
    log(`gpu${problem.index} is unusable: ${problem.reason}`);
    this.sendUnhealthy(problem);
  }

  private sendExit(exit: JobExit): void {
    this.socket
      .timeout(10_000)
      .emitWithAck(WorkerEvent.jobExit, exit)
      .then(
        (reply) => {
          // Acknowledged, or refused as stale: either way there is nothing left to report.
          if (reply.ok || reply.code === 'stale_lease') {
            this.unreported.delete(exit.jobId);
            this.outbox.forget(exit.jobId);
          }
        },
        () => {
          /* no answer: resent after the next hello */
        },
      );
  }

  private kill(order: KillJobOrder): void {
    const job = this.jobs.get(order.jobId);
    if (job && job.order.fence === order.fence) job.run.kill(this.config.RC_KILL_GRACE_S);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /** Stops every job (nothing is left behind on the host), reports what it can, then disconnects. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    for (const job of this.jobs.values()) job.run.kill(2);
    const deadline = Date.now() + 4000;
    while ((this.jobs.size || this.unreported.size) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    this.stopHeartbeat();
    clearInterval(this.probeTimer);
    this.socket.disconnect();
    this.runtime.close();
    this.state.release();
  }
}

async function main(): Promise<void> {
  if (process.argv[2] === 'doctor') process.exit(await doctor(process.env, (line) => process.stdout.write(`${line}\n`)));
  if (process.argv[2] && process.argv[2] !== 'run') {
    console.error(`rc-worker: unknown command ${process.argv[2]}; usage: rc-worker [doctor]`);
    process.exit(2);
  }
  let config: WorkerConfig;
  try {
    config = loadWorkerConfig();
    // A config file that cannot be used stops the worker here, with a plain message.
    if (config.RC_WORKER_CONFIG) readWorkerConfigFile(config.RC_WORKER_CONFIG);
    mkdirSync(config.RC_WORKSPACE, { recursive: true });
  } catch (err) {
    // Environment and config file problems, or a workspace that cannot be made: one line, no stack.
    console.error(`rc-worker: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  }
  const state = new JobState(config.RC_STATE_DIR, log);
  let previous: ReturnType<JobState['open']>;
  try {
    previous = state.open();
  } catch (err) {
    console.error(`rc-worker: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  }
  let runtime: Runtime;
  if (config.RC_RUNTIME === 'docker') {
    runtime = new DockerRuntime({ host: config.RC_HOST_NAME, image: config.RC_DOCKER_IMAGE, workspace: config.RC_WORKSPACE, docker: config.RC_DOCKER, log });
  } else {
    const supervisor = JobSupervisor.start({ host: config.RC_HOST_NAME, stateDir: config.RC_STATE_DIR, cgroups: config.RC_CGROUPS, log });
    log(supervisor.describe());
    runtime = new HostRuntime(config.RC_WORKSPACE, supervisor);
  }
  // Before the hello: what the previous run's jobs left must be gone before the controller leases their devices again.
  await reclaim(runtime, state, previous);
  const prober = new Prober({
    runtimeLabels: runtime.labels,
    workspace: config.RC_WORKSPACE,
    fakeDevices: config.RC_FAKE_DEVICES,
    configFile: config.RC_WORKER_CONFIG ?? null,
    probesDir: config.RC_PROBES_DIR ?? null,
    log,
  });
  const first = await prober.run();
  log(`probed: ${first.devices.length} device(s), ${first.hostLabels.length} host label(s)`);
  const gpus = new GpuMonitor({
    command: 'nvidia-smi',
    env: process.env,
    thresholdMiB: config.RC_GPU_MEM_THRESHOLD_MIB,
    settleMs: config.RC_GPU_SETTLE_S * 1000,
    log,
  });
  const worker = new Worker(config, prober, runtime, gpus, state);
  // Containers are made (or adopted) while the worker is already connected; a device whose
  // container cannot be made is quarantined, with docker's words as the evidence.
  void runtime.prepare(first.devices.map((d) => ({ index: d.index, uuid: d.uuid ?? null }))).then(
    (problems) => {
      for (const p of problems) worker.unusable(p);
    },
    (err: unknown) => log(`preparing the ${runtime.name} runtime failed: ${String(err)}`),
  );
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void worker.shutdown().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

/** Kills what the previous run of the worker left (its jobs' processes) and says how many and how long it took. */
async function reclaim(runtime: Runtime, state: JobState, previous: ReturnType<JobState['open']>): Promise<void> {
  const t0 = performance.now();
  const r: Reclaimed = await runtime.reclaim([...previous.jobs, ...previous.leftover]).catch((err: unknown) => {
    log(`cleaning up after the previous run failed: ${String(err)}`);
    return { killed: 0, jobs: 0, unkillable: [] };
  });
  const ms = Math.round(performance.now() - t0);
  if (r.jobs || r.unkillable.length) log(`killed ${r.killed} process(es) of ${r.jobs} job(s) left by the previous run in ${ms} ms`);
  for (const u of r.unkillable) {
    log(
      `could not kill ${u.pids.length} process(es) of job ${u.jobId} (pid ${u.pids.join(', ')}); the controller quarantines ${u.devices.map((d) => `gpu${d}`).join(', ') || 'no device'}`,
    );
  }
  state.reset(r.unkillable);
}

void main();

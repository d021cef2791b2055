// One simulated GPU host: a socket to /worker signed in with the host's
// credential, exactly as worker/controller-link.ts dials, saying hello with
// its inventory, heartbeating GPU samples when the fleet's clock says so, and
// running what it is given through the real worker's JobRunner (numbered
// output kept until acknowledged, exits with their fence resent until the
// controller has them, kills with a grace, watchdogs, terminals' flow) on a
// runtime of its own (runtime.ts). rc cp's file steps are answered by the
// real worker's code too, in a workspace folder of the host.
import { mkdirSync } from 'node:fs';
import { io, type Socket } from 'socket.io-client';
import { type ControllerToWorker, type HelloReply, WORKER_NAMESPACE, WorkerEvent, type WorkerToController } from '../../protocol/events';
import type { Inventory, Quarantine } from '../../protocol/worker';
import type { WorkerConfig } from '../../worker/config';
import type { ControllerLink } from '../../worker/controller-link';
import { answerFileRequests } from '../../worker/file-requests';
import { foreignProcesses } from '../../worker/gpu-health';
import type { GpuMonitor } from '../../worker/gpu-monitor';
import { JobRunner } from '../../worker/job-runner';
import type { JobState } from '../../worker/job-state';
import { GPU_MODELS } from './catalog';
import { simInventory } from './inventory';
import { type SimJobMode, SimRuntime } from './runtime';
import { type DeviceActivity, initialWalk, processesOn, step, toSample, type WalkState } from './samples';
import type { SimHostSpec } from './spec';

declare const RC_VERSION: string;
/** What the dashboard shows as the worker's version: rc's, marked as the simulator's. */
export const SIM_VERSION = `${typeof RC_VERSION === 'string' ? RC_VERSION : 'dev'}+sim`;

export interface SimHostOptions {
  /** The controller, e.g. http://127.0.0.1:8080. */
  url: string;
  credential: string;
  /** Where the host's jobs get their temporary folders, and its rc cp workspace. */
  dir: string;
  /** TERM to KILL, as RC_KILL_GRACE_S. */
  killGraceS: number;
  /** Heartbeat period; null: the one the controller's hello answer gives. */
  heartbeatMs: number | null;
  /** Spawn each job's argv (the default), or answer it without a process (runtime.ts). */
  jobs?: SimJobMode;
  log: (msg: string) => void;
  random?: () => number;
}

/** Memory a simulated foreign process holds on a quarantined device, and who it is. */
const FOREIGN = { name: 'python3', usedMiB: 10_240 };

export class SimHost {
  readonly socket: Socket<ControllerToWorker, WorkerToController>;
  /** The controller has our hello (the real link's `ready`): events may be sent. */
  ready = false;
  /** When the next heartbeat is due (the fleet's clock sends it). */
  nextBeatAt = Number.POSITIVE_INFINITY;
  /** Heartbeats and hellos so far, for the fleet's figures. */
  beats = 0;
  private periodMs = 5000;
  private beatsSinceHello = 0;
  private stopping = false;
  private unreachable = false;
  private readonly jobs: JobRunner;
  private readonly runtime: SimRuntime;
  /** The host died (die()): nothing more is sent, nothing reconnects. */
  dead = false;
  /** When set, each heartbeat's send time (ms since the epoch) is pushed here: the benchmark's handling-time figure. */
  beatLog: number[] | null = null;
  private readonly walks: WalkState[];
  private readonly random: () => number;
  private inventory: Inventory;
  private welcomed: (() => void) | null = null;
  /** Resolves at the first hello the controller took. */
  readonly online: Promise<void>;

  constructor(
    readonly spec: SimHostSpec,
    private readonly opts: SimHostOptions,
  ) {
    this.random = opts.random ?? Math.random;
    this.walks = spec.devices.map(() => initialWalk(this.random));
    this.inventory = simInventory(spec, new Date());
    this.online = new Promise((resolve) => {
      this.welcomed = resolve;
    });
    this.socket = io(opts.url + WORKER_NAMESPACE, {
      auth: { token: opts.credential },
      transports: ['websocket'],
      // One connection per host, as each real worker has: never a shared Manager.
      forceNew: true,
      autoConnect: false,
      reconnectionDelay: 200,
      reconnectionDelayMax: 2000,
    });
    this.socket.on('connect', () => void this.hello());
    this.socket.on('disconnect', (reason) => {
      this.ready = false;
      this.nextBeatAt = Number.POSITIVE_INFINITY;
      this.jobs.terminals.flowAll(false);
      // socket.io does not retry after a server-side disconnect (a controller shutting down): the real worker does.
      if (reason === 'io server disconnect' && !this.stopping && !this.dead) setTimeout(() => this.socket.connect(), 500);
    });
    // Said once per outage: a fleet of a thousand would otherwise say it a thousand times a second.
    this.socket.on('connect_error', (err) => {
      if (!this.stopping && !this.unreachable) this.opts.log(`${spec.name}: cannot reach the controller at ${opts.url}: ${err.message}; retrying`);
      this.unreachable = true;
    });
    this.socket.on(WorkerEvent.probeNow, () => {
      this.inventory = simInventory(spec, new Date());
      if (this.ready) this.socket.emit(WorkerEvent.inventory, this.inventory);
    });
    const workspace = `${opts.dir}/workspace`;
    mkdirSync(workspace, { recursive: true });
    answerFileRequests(this.socket, workspace);
    this.runtime = new SimRuntime(opts.dir, opts.jobs ?? 'spawn');
    this.jobs = new JobRunner(
      { RC_KILL_GRACE_S: opts.killGraceS, RC_GPU_SETTLE_S: 0 } as WorkerConfig,
      this.runtime,
      // Simulated GPUs let go of a job's memory at once: nothing to quarantine after a job.
      { afterJob: () => Promise.resolve([]) } as unknown as GpuMonitor,
      // No state file: a simulated host's jobs die with the simulator, and its next hello says so.
      { started() {}, ended() {} } as unknown as JobState,
      // JobRunner needs of the link only its socket and whether the hello was taken.
      this as unknown as ControllerLink,
      (problem) => this.report(problem),
      (msg) => this.opts.log(`${spec.name}: ${msg}`),
    );
  }

  connect(): void {
    this.socket.connect();
  }

  /** The hello the real link sends, and on its answer what it held back. */
  private async hello(): Promise<void> {
    const reply: HelloReply | null = await this.socket
      .timeout(10_000)
      .emitWithAck(WorkerEvent.hello, { version: SIM_VERSION, ...this.inventory, running: this.jobs.held() })
      .catch(() => null);
    if (!reply?.ok) {
      this.opts.log(`${this.spec.name}: the controller refused our hello (${reply?.code ?? 'no answer'}); reconnecting`);
      this.socket.disconnect().connect();
      return;
    }
    this.ready = true;
    this.unreachable = false;
    this.beats += 1;
    this.beatsSinceHello = 0;
    this.jobs.terminals.flowAll(true);
    this.jobs.resend(reply.resume);
    this.periodMs = this.opts.heartbeatMs ?? reply.heartbeatMs ?? 5000;
    // Spread over the period, so a fleet that connected at once does not beat at once.
    this.nextBeatAt = Date.now() + this.random() * this.periodMs;
    this.welcomed?.();
    this.welcomed = null;
  }

  /** One heartbeat with this moment's samples; the first after a hello also reports the foreign processes (the real worker does on its second sighting, one heartbeat later). */
  beat(now: number): void {
    if (!this.ready || this.dead) return;
    this.nextBeatAt = now + this.periodMs;
    this.beats += 1;
    this.beatsSinceHello += 1;
    const held = this.jobs.heldDevices();
    const gpus = this.spec.devices.map((d, index) => {
      const model = GPU_MODELS[d.model];
      const activity: DeviceActivity = held.has(index) ? 'hold' : this.jobs.jobOn(index, now) ? 'job' : 'idle';
      const foreign = d.quarantine ? FOREIGN.usedMiB : 0;
      const walk = step(this.walks[index]!, model, activity, foreign, this.random);
      this.walks[index] = walk;
      return toSample(index, model, walk, processesOn(activity, walk, foreign));
    });
    this.socket.emit(WorkerEvent.heartbeat, { gpus });
    this.beatLog?.push(Date.now());
    if (this.beatsSinceHello === 1) for (const q of this.foreign(now)) this.report(q);
  }

  /** The devices with a process rc did not start, in the real worker's words (worker/gpu-health.ts). */
  private foreign(now: number): Quarantine[] {
    const devices = this.inventory.devices.map((d) => ({ index: d.index, uuid: d.uuid ?? null }));
    const processes = devices
      .filter((d) => this.spec.devices[d.index]?.quarantine)
      .map((d) => ({ gpuUuid: d.uuid!, pid: 40_000 + ((d.index * 7919) % 20_000), name: FOREIGN.name, usedMiB: FOREIGN.usedMiB }));
    return foreignProcesses(
      devices,
      processes,
      (index) => this.jobs.jobOn(index, now),
      () => null,
    );
  }

  private report(q: Quarantine): void {
    this.opts.log(`${this.spec.name}: quarantining gpu${q.index}: ${q.reason}`);
    if (this.ready) this.socket.emit(WorkerEvent.deviceUnhealthy, q);
  }

  /** From now on beats every `ms` (the next one within `ms`, spread as after a hello); the next hello keeps it. */
  setHeartbeatMs(ms: number): void {
    this.opts.heartbeatMs = ms;
    this.periodMs = ms;
    if (this.ready) this.nextBeatAt = Date.now() + this.random() * ms;
  }

  /** Ends every held job (`sim:hold`, answer mode) with exit 0; how many there were. */
  releaseHeld(): number {
    return this.runtime.releaseHeld();
  }

  /**
   * The host dies: its connection is cut without a goodbye (the TCP socket
   * destroyed, as a crashed machine's would be), no exit is reported, no
   * heartbeat follows, and it never reconnects. Its answered jobs are forgotten.
   */
  die(): void {
    this.dead = true;
    this.ready = false;
    this.nextBeatAt = Number.POSITIVE_INFINITY;
    this.runtime.abandonAll();
    this.socket.io.reconnection(false);
    // The websocket under engine.io: terminate() destroys the TCP socket, no close frame.
    const ws = (this.socket.io.engine?.transport as unknown as { ws?: { terminate?: () => void } } | undefined)?.ws;
    if (ws?.terminate) ws.terminate();
    else this.socket.io.engine?.close();
  }

  /** Kills every job, waits (at most `ms`) until each exit was reported, then disconnects: the real worker's shutdown. */
  async stop(graceS = 2, ms = 4000): Promise<void> {
    this.stopping = true;
    if (this.dead) {
      this.socket.disconnect();
      return;
    }
    await this.jobs.stopAll(graceS, ms);
    this.ready = false;
    this.socket.disconnect();
  }

  /** Jobs running here now. */
  get running(): number {
    return this.jobs.jobs.size;
  }
}

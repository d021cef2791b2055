// What the worker needs from a runtime: the place where jobs' commands run.
// `host` runs them directly on the host (worker/host-runtime.ts); `docker` in
// one long-lived container per device (worker/docker-runtime.ts).
import type { Writable } from 'node:stream';
import type { StartJob } from '../protocol/worker';

export type RuntimeName = 'host' | 'docker';

export interface JobCallbacks {
  output(stream: 1 | 2, data: Buffer): void;
  /**
   * Called once, after the command and everything it started are gone, or
   * with `survivors`: the pids still there after the kill and a bounded wait
   * (stuck in the kernel); the worker quarantines the job's devices then.
   */
  exit(exitCode: number | null, signal: NodeJS.Signals | null, survivors?: number[]): void;
  /** The main process exited (its tree's reap and its output's drain come before exit()): for RC_JOB_PHASES. */
  exited?(): void;
}

/** Every process of one job, as a runtime signals it (the host's supervisor, a container's RC_JOB_ID sweep). */
export interface ProcessTree {
  /** TERM: every process, held still first so no shell sees its children die and exits 0 before its own TERM lands. KILL: every process. */
  signal(sig: 'TERM' | 'KILL'): Promise<void>;
  /** After the job's main process exited: kills what is left, waits (bounded) until it is gone; resolves to the pids still there. */
  reap(): Promise<number[]>;
}

/** A job of the worker's previous run, from its state file: its processes may still run. */
export interface PreviousJob {
  jobId: string;
  /** Its attempt's fence (RC_FENCE in its processes); null in a state file from before the worker recorded it. */
  fence?: number | null;
  devices: number[];
  /** Its cgroup (host runtime with cgroups). */
  cgroup: string | null;
}

/** Processes of a job that were killed and are still there (stuck in the kernel): their devices must not be leased. */
export interface Unkillable {
  jobId: string;
  fence?: number | null;
  devices: number[];
  pids: number[];
}

/** What the clean-up of a previous run's jobs did. */
export interface Reclaimed {
  /** Processes killed, and the jobs they belonged to. */
  killed: number;
  jobs: number;
  unkillable: Unkillable[];
}

export interface RunningJob {
  /** SIGTERM to every process of the job, then SIGKILL after the grace period. */
  kill(graceS: number): void;
  /** The command's standard input, when the order asked for one (StartJob.stdin) and the command runs; else absent. */
  readonly stdin?: Writable | null;
}

/** A job under a pseudo-terminal (kind tty): output is the terminal's, and it takes input. */
export interface RunningTty extends RunningJob {
  write(data: string | Buffer): void;
  resize(cols: number, rows: number): void;
  /** Stops reading the terminal: the program blocks once the terminal's buffer is full. */
  pause(): void;
  resume(): void;
}

export interface TtyCallbacks {
  output(data: Buffer): void;
  /** Called once, after the program and everything it started are gone (or with the survivors, as JobCallbacks.exit). */
  exit(exitCode: number | null, signal: NodeJS.Signals | null, survivors?: number[]): void;
}

/** A device the runtime could not make usable (e.g. its container cannot be created): the worker quarantines it. */
export interface DeviceProblem {
  index: number;
  reason: string;
  evidence: Record<string, unknown>;
}

export interface RuntimeDevice {
  index: number;
  uuid: string | null;
}

export interface Runtime {
  readonly name: RuntimeName;
  /** Labels the host gets from its runtime (runtime=..., image=..., and with Docker what the image says it holds); complete once reclaim has run. */
  readonly labels: { key: string; value: string }[];
  /** Where a job sees the worker's RC_WORKSPACE (a container's /workspace); absent: at the same path. */
  readonly jobWorkspace?: string;
  /**
   * Before the worker says hello: kills whatever the jobs of a previous run of
   * the worker left running (`previous`, from its state file, and what the
   * runtime finds of its own: job cgroups, one-off containers, tagged
   * processes in the device containers) and waits until it is gone.
   */
  reclaim(previous: PreviousJob[]): Promise<Reclaimed>;
  /**
   * Makes the devices usable, adopting what a previous run of the worker left
   * (containers). Resolves to the devices it could not prepare.
   */
  prepare(devices: RuntimeDevice[]): Promise<DeviceProblem[]>;
  /** The cgroup a job will run in, recorded in the state file before it starts; null where there is none. */
  jobCgroup(order: StartJob): string | null;
  /**
   * After a job's processes are gone, before its end is reported: its scratch
   * is wiped (worker/job-mounts.ts). Never rejects; resolves to the devices
   * whose scratch could not be wiped (the next job there would see it), to
   * be quarantined in the job's end report.
   */
  cleanUp(order: StartJob): Promise<DeviceProblem[]>;
  /** The worker stops: what the runtime made for itself and no longer needs goes. */
  close(): void | Promise<void>;
  /** Starts a job. A device problem found on the way (a container that cannot be recreated) is reported through `problem`. */
  run(order: StartJob, cb: JobCallbacks, problem: (p: DeviceProblem) => void): RunningJob;
  /** Starts a job under a pseudo-terminal (node-pty) of `order.tty`'s size; an empty argv runs a login shell. */
  runTty(order: StartJob, cb: TtyCallbacks, problem: (p: DeviceProblem) => void): RunningTty;
}

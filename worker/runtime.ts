// What the worker needs from a runtime: the place where jobs' commands run.
// `host` runs them directly on the host (worker/host-runtime.ts); `docker` in
// one long-lived container per device (worker/docker-runtime.ts).
import type { StartJob } from '../protocol/worker';

export type RuntimeName = 'host' | 'docker';

export interface JobCallbacks {
  output(stream: 1 | 2, data: Buffer): void;
  /** Called once, after the command and everything it started are gone. */
  exit(exitCode: number | null, signal: NodeJS.Signals | null): void;
}

export interface RunningJob {
  /** SIGTERM to every process of the job, then SIGKILL after the grace period. */
  kill(graceS: number): void;
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
  /** Called once, after the program and everything it started are gone. */
  exit(exitCode: number | null, signal: NodeJS.Signals | null): void;
}

/** A device the runtime could not make usable (e.g. its container cannot be created): the worker quarantines it. */
export interface DeviceProblem {
  index: number;
  reason: string;
  evidence: Record<string, unknown>;
}

export interface RuntimeDevice { index: number; uuid: string | null }

export interface Runtime {
  readonly name: RuntimeName;
  /** Labels the host gets from its runtime (runtime=..., image=...). */
  readonly labels: { key: string; value: string }[];
  /**
   * Makes the devices usable, adopting what a previous run of the worker left
   * (containers) and killing any job process left over from it. Resolves to the
   * devices it could not prepare.
   */
  prepare(devices: RuntimeDevice[]): Promise<DeviceProblem[]>;
  /** Starts a job. A device problem found on the way (a container that cannot be recreated) is reported through `problem`. */
  run(order: StartJob, cb: JobCallbacks, problem: (p: DeviceProblem) => void): RunningJob;
  /** Starts a job under a pseudo-terminal (node-pty) of `order.tty`'s size; an empty argv runs a login shell. */
  runTty(order: StartJob, cb: TtyCallbacks, problem: (p: DeviceProblem) => void): RunningTty;
}

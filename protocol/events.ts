// The socket.io contract: the two namespaces, the names of their events, and
// the typed event maps that the controller's Namespace and Socket, the
// worker's socket.io-client Socket, rc run --tty's and the dashboard's take as
// generics, so an event's name and its payload are checked on both sides. No
// zod at run time (the payloads' types come type-only from protocol/worker.ts
// and protocol/tty.ts, whose schemas validate them), so the terminal clients
// import it freely. docs/api.md, "The worker socket" and "The terminal socket".
import type { FileOp, FileReply, Heartbeat, Hello, Inventory, JobExit, JobOutput, KillJobOrder, Quarantine, StartJob, StdinOp, StdinReply } from './worker';
import type { TtyAck, TtyInput, TtyJobRef, TtyOutput, TtyResize, TtySize } from './tty';
import type { TtyError, TtyExit, TtyOpenMessage, TtyQueued, TtyStarted } from './wire';

export const WORKER_NAMESPACE = '/worker';
export const TTY_NAMESPACE = '/tty';
/** The dashboard's live view: told what changed, so its pages fetch again (or patch) what they show. */
export const LIVE_NAMESPACE = '/';

/** The events of /worker, between the controller and a host's worker. */
export const WorkerEvent = {
  // worker → controller
  /** Its version, inventory and the jobs it still has; answered with the heartbeat period and what output to resend. */
  hello: 'hello',
  /** The whole inventory again, after each probe run. */
  inventory: 'inventory',
  heartbeat: 'heartbeat',
  /** A device must not be scheduled. */
  deviceUnhealthy: 'device:unhealthy',
  jobOutput: 'job:output',
  jobExit: 'job:exit',
  /** Terminal output: not stored, not numbered, live only. */
  ttyOutput: 'tty:output',
  // controller → worker
  jobStart: 'job:start',
  jobKill: 'job:kill',
  /** The output stored so far: the worker may let go of it. */
  jobAck: 'job:ack',
  /** Run every probe now and send the inventory. */
  probeNow: 'probe:run',
  /** rc cp, each with an ack: a file in the workspace read or written a piece at a time (protocol/worker.ts, FileOp). */
  fileRead: 'file:read',
  fileBegin: 'file:begin',
  fileWrite: 'file:write',
  fileCommit: 'file:commit',
  fileAbort: 'file:abort',
  /** The next piece of a job's standard input (rc run with a pipe), with an ack (protocol/worker.ts StdinOp). */
  jobStdin: 'job:stdin',
  /** Keystrokes for a job's terminal. */
  ttyInput: 'tty:input',
  /** The window changed size. */
  ttyResize: 'tty:resize',
  /** Stop reading the terminal (a client is behind). */
  ttyPause: 'tty:pause',
  /** Read the terminal again. */
  ttyResume: 'tty:resume',
  /** The controller has taken `bytes` more of the job's output (the worker's send window). */
  ttyAck: 'tty:ack',
} as const;

/** The events of /tty, between a terminal client (rc run --tty, the dashboard) and the controller. */
export const TtyEvent = {
  // client → controller
  /** A new terminal, or `jobId` to re-attach to one. */
  open: 'open',
  input: 'input',
  resize: 'resize',
  /** Bytes of output the client has written: the flow control. */
  ack: 'ack',
  // controller → client
  queued: 'queued',
  started: 'started',
  output: 'output',
  exit: 'exit',
  error: 'error',
} as const;

/** The answer to hello. */
export interface HelloReply {
  ok: boolean;
  code?: string;
  heartbeatMs?: number;
  /** The worker leaves for another controller when a heartbeat is not acknowledged within this (ms); absent: a controller that acknowledges none. */
  heartbeatAckMs?: number;
  /** Per job the worker still has: the last output sequence number stored; it resends what follows. */
  resume?: Record<string, number>;
}

/** The answer to a report that takes one (job:exit, device:unhealthy): `stale_lease` when the job is not the host's now. */
export interface ReportReply {
  ok: boolean;
  code?: string;
}

/** Controller → worker: the output of a job stored up to `seq`. */
export interface JobAck {
  jobId: string;
  seq: number;
}

export type FileEvent = (typeof WorkerEvent)['fileRead' | 'fileBegin' | 'fileWrite' | 'fileCommit' | 'fileAbort'];

/** What a worker sends. */
export interface WorkerToController {
  [WorkerEvent.hello]: (hello: Hello, ack: (reply: HelloReply) => void) => void;
  [WorkerEvent.inventory]: (inventory: Inventory) => void;
  [WorkerEvent.heartbeat]: (beat: Heartbeat, ack?: (reply: { ok: boolean }) => void) => void;
  [WorkerEvent.deviceUnhealthy]: (q: Quarantine, ack?: (reply: ReportReply) => void) => void;
  [WorkerEvent.jobOutput]: (chunk: JobOutput) => void;
  [WorkerEvent.jobExit]: (exit: JobExit, ack: (reply: ReportReply) => void) => void;
  [WorkerEvent.ttyOutput]: (out: TtyOutput) => void;
}

/** What the controller sends a worker. */
export type ControllerToWorker = {
  [WorkerEvent.jobStart]: (order: StartJob) => void;
  [WorkerEvent.jobKill]: (order: KillJobOrder) => void;
  [WorkerEvent.jobAck]: (ack: JobAck) => void;
  [WorkerEvent.jobStdin]: (op: StdinOp, ack: (reply: StdinReply) => void) => void;
  [WorkerEvent.probeNow]: () => void;
  [WorkerEvent.ttyInput]: (m: TtyInput) => void;
  [WorkerEvent.ttyResize]: (m: TtyResize) => void;
  [WorkerEvent.ttyPause]: (m: TtyJobRef) => void;
  [WorkerEvent.ttyResume]: (m: TtyJobRef) => void;
  [WorkerEvent.ttyAck]: (m: TtyAck) => void;
} & { [E in FileEvent]: (op: FileOp, ack: (reply: FileReply) => void) => void };

/** What a terminal client sends. */
export interface TtyClientToController {
  [TtyEvent.open]: (open: TtyOpenMessage) => void;
  [TtyEvent.input]: (data: string | Uint8Array) => void;
  [TtyEvent.resize]: (size: TtySize) => void;
  [TtyEvent.ack]: (bytes: number) => void;
}

/** What the controller sends a terminal client. Output is a Buffer in Node, an ArrayBuffer in a browser. */
export interface TtyControllerToClient {
  [TtyEvent.queued]: (e: TtyQueued) => void;
  [TtyEvent.started]: (e: TtyStarted) => void;
  [TtyEvent.output]: (data: Uint8Array | ArrayBuffer) => void;
  [TtyEvent.exit]: (e: TtyExit) => void;
  [TtyEvent.error]: (e: TtyError) => void;
}

/** The events of the live view (controller → browser). */
export const LiveEvent = {
  /** Something the pages show changed, on any controller: which kind, and where when known. */
  changed: 'changed',
} as const;

/**
 * What changed: devices (a lease, a host's state, labels, a quarantine), jobs
 * (queued, started, ended), a host's usage sheet or a device's note, new GPU
 * samples (told at most every few seconds, fleet-wide), the audit log, or
 * this controller's notices (GET /api/notices: its database out of disk space).
 */
export interface LiveChange {
  what: 'devices' | 'jobs' | 'sheet' | 'samples' | 'audit' | 'notices';
  host?: string;
  jobId?: string;
}

export interface LiveControllerToClient {
  [LiveEvent.changed]: (c: LiveChange) => void;
}

/**
 * The same events as the controller hears them: each payload not yet
 * validated (another machine sent it), so it is `unknown` until its schema
 * has checked it. Acknowledgement callbacks keep their types.
 */
export type Unchecked<E> = { [K in keyof E]: E[K] extends (payload: never, ...rest: infer R) => void ? (payload: unknown, ...rest: R) => void : E[K] };

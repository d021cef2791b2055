// Messages between the controller and a worker over socket.io (namespace
// /worker): their schemas and types. Their names and event maps are in
// protocol/events.ts.
import { z } from 'zod';

const labelKey = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/);
export const ReportedLabel = z.object({
  key: labelKey,
  value: z.string().max(1000),
  source: z.enum(['declared', 'detected']),
  /** Which probe found it (detected labels): nvidia-smi, host, or a site probe's file name. */
  probe: z.string().max(100).nullish(),
  /** When the value was last confirmed (ISO 8601); a stale label keeps its old time. */
  seenAt: z.string().datetime().nullish(),
  /** Why the value could not be refreshed (its probe failed or printed garbage); null when fresh. */
  stale: z.string().max(500).nullish(),
});
export type ReportedLabel = z.infer<typeof ReportedLabel>;

/** The most one socket.io message between a worker and the controller may carry (the server's maxHttpBufferSize): a bigger one cuts the connection. */
/** The worker's exit status when its host was removed (EX_CONFIG): whoever supervises it (systemd's RestartPreventExitStatus=78, npm start) must not start it again. */
export const EXIT_HOST_REMOVED = 78;
/** The worker's exit status when another worker holds its host (EX_TEMPFAIL): its credential is used twice, which a person must sort out, so it is not started again either. */
export const EXIT_HOST_CONNECTED = 75;

export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** The most a worker's inventory may take, as JSON: what a hello carries besides it (its jobs) fits in the rest. */
export const MAX_INVENTORY_BYTES = MAX_MESSAGE_BYTES - 512 * 1024;

/** A host's whole inventory: sent in hello, and again after every probe run. */
export const Inventory = z.object({
  hostLabels: z.array(ReportedLabel).max(1000),
  devices: z
    .array(
      z.object({
        index: z.number().int().min(0).max(999),
        uuid: z.string().max(200).nullish(),
        labels: z.array(ReportedLabel).max(1000),
      }),
    )
    .max(64),
});
export type Inventory = z.infer<typeof Inventory>;

export const Hello = Inventory.extend({
  version: z.string().max(50),
  /** Jobs the worker is still running (or has finished but not yet reported). */
  running: z.array(z.object({ jobId: z.string().max(64), fence: z.number().int() })).max(1000),
  /**
   * Processes the worker killed and that are still there (stuck in the kernel): of its previous
   * run's jobs, found at start-up, or of jobs that ended. Their devices are quarantined.
   */
  unkillable: z
    .array(
      z.object({
        jobId: z.string().max(64),
        devices: z.array(z.number().int().min(0).max(999)).max(64),
        pids: z.array(z.number().int()).max(10_000),
      }),
    )
    .max(1000)
    .optional(),
});
export type Hello = z.infer<typeof Hello>;

export const JobOutput = z.object({
  jobId: z.string().max(64),
  fence: z.number().int(),
  seq: z.number().int().min(1),
  stream: z.union([z.literal(1), z.literal(2)]),
  data: z.instanceof(Buffer),
  /**
   * Chunks lostFrom..seq-1 are gone: the worker let go of them, unacknowledged, when
   * its buffer (RC_OUTPUT_BUFFER_BYTES) was full. Set on the first chunk it resends after them.
   */
  lostFrom: z.number().int().min(1).optional(),
});
export type JobOutput = z.infer<typeof JobOutput>;

/** Why a device must not be scheduled, and what showed it (a memory figure, a process). */
export const Quarantine = z.object({
  index: z.number().int().min(0).max(999),
  reason: z.string().min(1).max(500),
  evidence: z.record(z.string(), z.unknown()),
});
export type Quarantine = z.infer<typeof Quarantine>;

/** One GPU as nvidia-smi saw it at a heartbeat. */
export const GpuSample = z.object({
  index: z.number().int().min(0).max(999),
  name: z.string().max(200),
  memTotalMiB: z.number().min(0),
  memUsedMiB: z.number().min(0),
  utilPct: z.number().min(0).max(100).nullable(),
  /** Compute processes on it (nvidia-smi --query-compute-apps); null or absent when unknown (that query failed, or an older worker). */
  procs: z.number().int().min(0).max(100_000).nullish(),
});
export type GpuSample = z.infer<typeof GpuSample>;

/** Worker → controller every heartbeat; `gpus` is empty on a host without nvidia-smi. */
export const Heartbeat = z.object({ gpus: z.array(GpuSample).max(64) });
export type Heartbeat = z.infer<typeof Heartbeat>;

export const JobExit = z.object({
  jobId: z.string().max(64),
  fence: z.number().int(),
  exitCode: z.number().int().nullable(),
  signal: z.string().max(20).nullable(),
  /** Last output sequence number sent, so the controller knows when it has all of it. */
  lastSeq: z.number().int().min(0),
  /** Set when the worker's own watchdog killed it: `max_runtime exceeded`, `idle: no output for 10m`, and which (killCause). */
  killedFor: z.string().max(200).nullish(),
  killCause: z.enum(['max_runtime', 'idle']).nullish(),
  /** Devices of the job found unusable as it ended (GPU memory still held): quarantined as the job ends. */
  quarantine: z.array(Quarantine).max(64).nullish(),
});
export type JobExit = z.infer<typeof JobExit>;

/** Controller → worker. */
export interface StartJob {
  jobId: string;
  /** run and cp: a command; tty: a command under a pseudo-terminal; hold: no command, the worker only keeps the lease. */
  kind: 'run' | 'tty' | 'hold' | 'cp';
  /** The terminal size of a tty job at its start. */
  tty?: { cols: number; rows: number } | null;
  fence: number;
  argv: string[];
  /** rc run --env: set in the job's environment (below what rc sets itself, which it may not name). */
  env: Record<string, string>;
  cwd: string | null;
  devices: { index: number; name: string; uuid: string | null }[];
  /** Watchdogs in seconds, enforced by the worker (and, as a backstop, the controller). */
  maxRuntimeS: number | null;
  idleTimeoutS: number | null;
  /** The seq after which its output is numbered (a later attempt follows the earlier ones'); absent: 0. */
  seqFrom?: number;
  /** rc run --preemptible: the job's environment names RC_PREEMPT_FILE, where a preemption's notice appears. */
  preemptible?: boolean;
  /** A task of an array (rc run --array): set as RC_ARRAY_ID and RC_ARRAY_INDEX in its environment. */
  array?: { id: string; index: number };
  /** Set by the worker itself for its runtime, never sent: RC_PREEMPT_FILE's path as the job sees it. */
  preemptFile?: string;
  /** rc run with a piped standard input: the command's stdin is a pipe that job:stdin writes (else /dev/null). */
  stdin?: boolean;
}

/** The most bytes of a job's standard input in one job:stdin. */
export const STDIN_CHUNK_BYTES = 1024 * 1024;

/**
 * Controller → worker, with an ack: the next piece of a job's standard input
 * (`offset`: the bytes sent before it; a piece out of order is refused), and
 * with `eof` its end. The ack comes once the piece is in the pipe (or the
 * pipe is full and drained), so a slow reader holds the sender back.
 */
export const StdinOp = z.object({
  jobId: z.string().max(64),
  fence: z.number().int(),
  offset: z.number().int().min(0),
  data: z.instanceof(Buffer).refine((b) => b.length <= STDIN_CHUNK_BYTES, `at most ${STDIN_CHUNK_BYTES} bytes`),
  eof: z.boolean(),
});
export type StdinOp = z.infer<typeof StdinOp>;

/** `closed`: the command closed its standard input (or ended): send no more. */
export type StdinReply = { ok: true; closed: boolean } | { ok: false; code: 'not_found' | 'conflict' | 'bad_request'; message: string };

export interface KillJobOrder {
  jobId: string;
  fence: number;
  reason: string;
  /**
   * A preemption: the worker writes the deadline (ISO 8601) into the job's
   * RC_PREEMPT_FILE, sends SIGTERM, and SIGKILL after this many seconds
   * (instead of its own RC_KILL_GRACE_S).
   */
  noticeS?: number;
}

/**
 * rc cp, controller → worker, each with an ack: a file in the workspace read
 * or written a piece at a time. Replies are FileReply.
 *   file:read   { path, offset, length }        → { ok, data, size, mtimeMs }
 *   file:begin  { path }                        → { ok, temp }
 *   file:write  { path, temp, offset, data }    → { ok }
 *   file:commit { path, temp, size }            → { ok }
 *   file:abort  { path, temp }                  → { ok }
 */
export const FileOp = z.object({
  path: z.string().max(4096),
  temp: z.string().max(100).optional(),
  offset: z.number().int().min(0).optional(),
  length: z
    .number()
    .int()
    .min(0)
    .max(4 * 1024 * 1024)
    .optional(),
  size: z.number().int().min(0).optional(),
  data: z.instanceof(Buffer).optional(),
});
export type FileOp = z.infer<typeof FileOp>;

export type FileReply =
  | { ok: true; data?: Buffer; size?: number; mtimeMs?: number; temp?: string }
  | { ok: false; code: 'not_found' | 'bad_request' | 'payload_too_large' | 'internal'; message: string };

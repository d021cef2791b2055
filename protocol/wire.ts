// The shapes that cross the wire: every REST request and answer, the frame
// stream's events, and the terminal socket's messages. Types only: the CLI and
// the dashboard import them with `import type`, so nothing here reaches a
// bundle. The server builds them (server/jobs/job-view.ts, server/fleet.ts,
// server/describe.ts, server/auth.ts); the route table (protocol/routes.ts)
// says which route answers which. docs/api.md documents them.
//
// Request bodies are the zod schemas' input types (protocol/api.ts): one
// definition, checked by the controller, typed for the callers.
import type { z } from 'zod';
import type {
  ClearQuarantine,
  CreateTeam,
  CreateToken,
  Explain,
  ExtendHold,
  KillJob,
  RegisterHost,
  ReleaseHold,
  SetLimits,
  SetTeam,
  SetToken,
  SignIn,
  SubmitArray,
  SubmitJob,
  TurnHostOff,
  WriteSheet,
} from './api';
import type { EndCause, JobState } from '../core/job-state';
import type { FitOffer, MachineMin } from '../core/machine-fit';
import type { OutputTruncatedReason } from '../core/output-truncated';
import type { TtyOpen } from './tty';

// ---- jobs -----------------------------------------------------------------

/** run: a command with stored output; tty: an interactive terminal; hold: a lease with a TTL and no command; cp: the short lease of one file copy. */
export type JobKind = 'run' | 'tty' | 'hold' | 'cp';
/** The states and causes are core's (core/job-state.ts: the state machine). */
export type { EndCause, JobState };

/** A job as every answer shows it (server/jobs/job-view.ts builds it). Times are ISO 8601. */
export interface JobView {
  id: string;
  /** rc run --name; not unique (a name stands for an id where it picks one job). */
  name: string | null;
  /** rc run --comment: a note for people. */
  comment: string | null;
  kind: JobKind;
  state: JobState;
  submitter: string;
  argv: string[];
  /** The names of the variables set with rc run --env, sorted. Never their values: they may be secrets. */
  envKeys: string[];
  cwd: string | null;
  selector: string;
  /** The device asked for (-d), if any. */
  device: string | null;
  gpus: number;
  /** rc run --gpu as the controller read it (`A100:2,H100`): the models it may run on, in order of preference; null without. */
  gpuChoices: string | null;
  priority: number;
  /** Where it may run (rc run): `any` (a free joined host first, else a provider machine), `reserved` (--reserved-only: joined hosts only), `cloud` (--cloud-only, --cloud: provider machines only). */
  placement: 'any' | 'reserved' | 'cloud';
  /** What it asks of a provider machine (rc run --cloud, --max-price, --spot, --keep, --cpus, --ram, --disk, --cuda); null when it asked none and its placement is not cloud. */
  machine: JobMachineAsk | null;
  host: string | null;
  /** The devices it runs on, fixed when it starts. */
  devices: string[] | null;
  exitCode: number | null;
  /** Why it ended, as data (core/job-state.ts END_CAUSES); null while it runs or waits. */
  cause: EndCause | null;
  reason: string | null;
  maxRuntimeS: number | null;
  idleTimeoutS: number | null;
  /** rc run --gpu-idle-timeout: killed (cause gpu_idle) once its GPUs have been idle this long. */
  gpuIdleTimeoutS: number | null;
  /**
   * A running job's GPUs: seconds idle (utilisation at most 1% and no compute process, core/idle.ts) in the
   * current streak, the shortest of its devices'; 0 while busy. null: no GPU signal (a CPU slot, no sample yet),
   * never idle; also null for jobs not running, and in the answers that do not load it (submit, kill).
   */
  idleS: number | null;
  /** Idle seconds in all, over its leases (for usage accounting); null without any GPU signal. */
  idleTotalS: number | null;
  /** A hold idle for RC_IDLE_HOLD_WARN: its holder was warned in this idle streak. */
  idleWarned: boolean;
  waitTimeoutS: number | null;
  outputTruncated: boolean;
  /** Why its stored output is not all of it (core/output-truncated.ts): output_limit, disk_full, store_behind; null when it is all there. */
  outputTruncatedReason: OutputTruncatedReason | null;
  /** Which run of the job this is (1: the first); `GET /api/jobs/:id`'s attempts say how the earlier ones ended. */
  attempt: number;
  /** rc run --restarts: how many times it is queued again after its host is lost. */
  restarts: number;
  /** rc run --preemptible, --retry-on-preempt. */
  preemptible: boolean;
  retryOnPreempt: boolean;
  /** A task of an array (rc run --array): the array's id and its index (RC_ARRAY_INDEX); null for other jobs. */
  array: { id: string; index: number } | null;
  /** rc run --retries: how many times a non-zero exit is run again; `retried`: how many of them are used; --retry-delay in seconds. */
  retries: number;
  retried: number;
  retryDelayS: number;
  /**
   * What a queued job waits on besides a device (null: nothing): `after` (the jobs of `after`), `retry` (its
   * --retry-delay, until `notBefore`), `array` (a place under its array's cap). Such a job has no place in the queue yet
   * (its position is null).
   */
  waiting: 'after' | 'array' | 'retry' | null;
  notBefore: string | null;
  /** rc run --after / --after-any: the jobs it runs after and their states now (GET /api/jobs/:id; absent elsewhere and without any). */
  after?: DependencyView[];
  /** The earlier attempts, oldest first, of a job run more than once (GET /api/jobs and GET /api/jobs/:id; absent elsewhere and for a first attempt). */
  attempts?: AttemptView[];
  /** The provider machine its host is (the one it runs or ran on, as that machine is now): GET /api/jobs/:id only; absent elsewhere and for a job of a joined host or none. */
  ranOn?: JobMachineView;
  /** A running hold's end (start + TTL, moved by extend); null for other jobs. */
  expiresAt: string | null;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
}

/** A job's machine flags as stored (rc run); each null or false where not asked. */
export interface JobMachineAsk {
  /** --cloud: a provider (`local`) or an account (`runpod/lab-b`); null: any configured. */
  cloud: string | null;
  /** --max-price: US dollars an hour at most. */
  maxPrice: number | null;
  /** --spot: spot offers compete with on-demand ones on price. */
  spot: boolean;
  /** --keep: seconds its machine idles for the next job once it ends; null: the default (5m). */
  keepS: number | null;
  /** --cpus, --ram, --disk (GiB), --cuda: what the machine must have at least; null: nothing asked. */
  min: MachineMin | null;
}

/** The provider machine a job's host is (GET /api/jobs/:id's `ranOn`), as it is now: its price and shape as rc machines shows them. */
export type JobMachineView = Pick<MachineView, 'id' | 'account' | 'state' | 'gpuModel' | 'gpuCount' | 'pricePerHour' | 'spot' | 'simulated' | 'terminatedWhy'>;

/** A job another runs after (rc run --after, --after-any), as it stands now. */
export interface DependencyView {
  id: string;
  /** --after-any: any end will do; else only succeeded. */
  any: boolean;
  state: JobState;
  exitCode: number | null;
}

/** An earlier attempt of a job queued again: where it ran and how it ended. */
export interface AttemptView {
  attempt: number;
  host: string | null;
  devices: string[] | null;
  state: JobState;
  cause: EndCause;
  exitCode: number | null;
  reason: string | null;
  startedAt: string | null;
  endedAt: string;
}

/** An array's tasks by state; `waiting` counts the queued ones its %N cap (or another wait) holds back, `queued` the others. */
export type ArrayCounts = Record<JobState, number> & { waiting: number };

/** rc run --array: one submit of many tasks (jobs with `array`), at most `maxRunning` running at once. */
export interface ArrayView {
  /** `a` and 10 base32 digits. */
  id: string;
  /** As submitted: `0-99%8`. */
  spec: string;
  size: number;
  /** The %N cap; null: as many as fit. */
  maxRunning: number | null;
  name: string | null;
  submitter: string;
  /** The command each task runs. */
  argv: string[];
  createdAt: string;
  counts: ArrayCounts;
  /** Every task has ended. */
  done: boolean;
  /** The lowest-index task that ended other than succeeded (rc run --array and rc wait exit as it did); null: none. */
  firstFailure: { jobId: string; index: number; state: JobState; exitCode: number | null; cause: EndCause | null; reason: string | null } | null;
}

/** A line of rc ps: running jobs, then queued ones in the order they will be considered. */
export interface PsEntry extends JobView {
  /** Queued jobs: how many are ahead of it (0: next); in GET /api/ps without tasks=1, arrays' tasks are not counted. Running jobs: null. */
  position: number | null;
  /**
   * A queued job its --gpus limit holds back: `quota: team vision holds 4 of its 4 GPUs …`; one that waits on
   * something besides a device (JobView's waiting): `after j123 (running)`, `retry in 25s (attempt 2 of 3)` (absent otherwise).
   */
  waits?: string;
  /** Queued jobs: until when at the latest, as GET /api/queue's freesBy (null: no bound is known); absent on running jobs. */
  freesBy?: string | null;
}

/** The events of a job's frame stream (core/frames.ts encodes them). */
export type JobEvent =
  /** waits: it waits on something besides a device (JobView's waits), and `position` means nothing yet. */
  | { type: 'queued'; jobId: string; position: number; waits?: 'after' | 'array' | 'retry' }
  /** kind and submitter: for the fleet views of every controller (server/inventory.ts); absent from controllers before them. */
  | { type: 'started'; jobId: string; host: string; devices: string[]; kind?: JobKind; submitter?: string }
  | JobExitEvent
  | JobRequeuedEvent
  /** End of a snapshot (rc logs without -f) of a job that is still queued or running. */
  | { type: 'end'; jobId: string; state: JobState }
  /** Something the reader should know, printed on stderr (e.g. that stored output was truncated). */
  | { type: 'notice'; message: string }
  /**
   * Sent first when the request asked for a `tail`: the byte offsets in stdout and stderr at which the output that
   * follows begins, and `after`, the chunk it follows (a stream resumed later asks for what comes after the last chunk it has, or after this).
   */
  | { type: 'offsets'; stdout: number; stderr: number; after: number }
  | { type: 'error'; code: string; message: string };

/**
 * An attempt ended and the job is queued again for its next one (rc run
 * --restarts after a lost host, --retry-on-preempt after a preemption): a
 * follower keeps following; `started` comes again when the next attempt starts.
 */
export interface JobRequeuedEvent {
  type: 'requeued';
  jobId: string;
  /** The attempt that comes next (2 for the first restart). */
  attempt: number;
  /** How the attempt that ended, ended. */
  state: JobState;
  cause: EndCause;
  reason: string | null;
  /** The ended attempt's processes may still run: its devices stay leased until its worker says they are gone. */
  leasesKept?: true;
  /**
   * rc run --retries: the attempt that ended exited non-zero (exitCode), and the next is run `n` of at most `of`
   * (`attempt 2 of 3 after exit 1`), in delayS seconds.
   */
  retry?: { n: number; of: number; delayS: number; exitCode: number | null };
}

/** The last event of a job's stream: its final state. */
export interface JobExitEvent {
  type: 'exit';
  jobId: string;
  state: JobState;
  exitCode: number | null;
  reason: string | null;
  /** Why, as data (core/job-state.ts); `reason` says it in words. */
  cause: EndCause | null;
  /** Its processes may still run, so its devices stay leased until its worker says they are gone. */
  leasesKept?: true;
}

// ---- the fleet ------------------------------------------------------------

/**
 * off: its host was turned off (rc admin host off), takes no new jobs; a device still held there is busy (shown "off (busy)").
 * removed: its host was removed (listed only with ?all=1). reserved: free, but held back for a queued job (`reservedFor`):
 * no other job starts on it, the job it is held for takes it when enough of its devices are free.
 */
export type DeviceState = 'free' | 'busy' | 'reserved' | 'off' | 'offline' | 'unhealthy' | 'removed';
/** A device's state as the fleet's records give it: `reserved` is worked out from the queue on top of `free` (server/reservations.ts). */
export type RecordedDeviceState = Exclude<DeviceState, 'reserved'>;
/** online: its worker is connected; away: disconnected, within the host timeout; offline: past it. */
export type HostStatus = 'online' | 'away' | 'offline';

export interface LabelView {
  key: string;
  value: string;
  source: 'declared' | 'detected';
  /** Which probe found it (detected labels). */
  probe: string | null;
  seenAt: string;
  /** Why its probe could not refresh it; null when fresh. */
  stale: string | null;
  /** true when it is set on the host and applies to all its devices. */
  hostWide: boolean;
  /** true when this entry is the value selectors see (server/fleet.ts, markEffective). */
  effective: boolean;
}

/** Who holds a device now. */
export interface Holder {
  jobId: string;
  /** A hold (rc hold) keeps a device without a command; run, tty and cp jobs use it. */
  kind: JobKind;
  submitter: string;
  since: string;
  /** The lease's idle streak in seconds as of the device's last GPU sample (core/idle.ts); 0 busy; null: no GPU signal. Absent: not known here. */
  idleS?: number | null;
}

/**
 * The queued job a free device is held back for: a multi-GPU job that waited
 * past RC_RESERVE_AFTER_S for enough devices on one host (core/schedule.ts
 * reservationFor), or one that preemption is freeing devices for.
 */
export interface ReservedFor {
  jobId: string;
  submitter: string;
  /** How many devices on one host it waits for. */
  gpus: number;
  /** multi_gpu: a multi-GPU job waiting for enough devices on this host; preemption: its devices are being freed for it. */
  why: 'multi_gpu' | 'preemption';
}

/** The last GPU sample from its worker's heartbeat. */
export interface GpuView {
  name: string;
  memTotalMiB: number;
  memUsedMiB: number;
  utilPct: number | null;
  /** Compute processes on it; null or absent when unknown. */
  procs?: number | null;
  at: string;
}

/** A device as the fleet view lists it (GET /api/fleet): a DeviceRow without its labels' details. */
export interface DeviceSummary {
  id: number;
  /** `<host>:gpu<index>` */
  name: string;
  hostName: string;
  index: number;
  uuid: string | null;
  hostStatus: HostStatus;
  state: DeviceState;
  /** Its host is turned off (rc admin host off): no new jobs; busy here means "off (busy)", its job finishing. */
  hostOff: boolean;
  holder: Holder | null;
  /** Set while state is `reserved`: the queued job it is held back for. */
  reservedFor: ReservedFor | null;
  /** The merged view selectors match against. */
  labels: Record<string, string>;
  /** Set while quarantined (state unhealthy): why, since when, and what showed it. */
  unhealthy: { since: string; reason: string; evidence: Record<string, unknown> } | null;
  /** The last GPU sample; null on a CPU slot or before the first heartbeat. */
  gpu: GpuView | null;
}

/** A device as GET /api/devices lists it (server/fleet.ts builds it): with every label's source, age and staleness. */
export interface DeviceRow extends DeviceSummary {
  labelDetails: LabelView[];
}

/** GET /api/fleet: the fleet page's data, one host's part of it with ?host=. */
export interface Fleet {
  hosts: HostRow[];
  devices: DeviceSummary[];
  /** Jobs waiting in the queue (the whole queue, also with ?host=). */
  queued: number;
}

/** GET /api/hosts/:name: one host in full (the host page). */
export interface HostDescription {
  host: HostRow;
  devices: DeviceRow[];
  /** The host's usage sheet, if its operator wrote one. */
  sheet: SheetView | null;
  /** The last jobs that ran on any of its devices, newest first. */
  recentJobs: JobView[];
}

/** How far back GET /api/samples looks: the fleet page's sparklines (10m), a device's charts (1h, 1d, 7d, 90d). */
export type SampleWindow = '10m' | '1h' | '1d' | '7d' | '90d';

/**
 * One device's GPU samples, oldest first, as parallel arrays (compact for
 * thousands of devices): 10m is every heartbeat's sample, 1h averages 30 s
 * buckets, 1d 10 min buckets, 7d 1 h buckets, 90d 6 h buckets (utilisation
 * averaged, memory at its peak).
 */
export interface DeviceSamples {
  device: string;
  /** Seconds since the epoch. */
  at: number[];
  utilPct: (number | null)[];
  memUsedMiB: number[];
  /** The newest sample's total memory. */
  memTotalMiB: number;
}

/** GET /api/samples: `hosts` (comma-separated, at most 500) or `device`, and the window. */
export interface SamplesQuery {
  hosts?: string;
  device?: string;
  window?: SampleWindow;
}

/** Why a queued job waits: its selector's --explain answer, counted. */
export interface WaitReason {
  /** Devices its selector (and -d) match at all. */
  matching: number;
  /** Of those: free now, busy (leased), off (on a host turned off), unhealthy (quarantined), offline. */
  free: number;
  busy: number;
  off: number;
  unhealthy: number;
  offline: number;
  /** A multi-GPU job waiting past RC_RESERVE_AFTER_S holds back these devices for itself (core/schedule.ts reservationFor); null when none. */
  reserved: string[] | null;
  /** The same in one sentence, as an operator would say it. */
  text: string;
}

/** GET /api/queue: a queued job, its place in line, and why it waits. */
export interface QueueEntry extends PsEntry {
  /** null: it waits on something besides a device (JobView's waits; PsEntry's waits says what), so it has no place in line yet. */
  position: number | null;
  why: WaitReason;
  /** Until when at the latest, if nothing else changes (core/untilOf): the time enough matching devices are free, each busy one by its job's start + --max-runtime or its hold's expiry; null: no bound is known. */
  freesBy: string | null;
}

/** An audit row: who did what, to what, when, and from where. */
export interface AuditEntry {
  id: number;
  at: string;
  /** The actor as recorded: `admin:<token name>`, or `<submitter> (token <id> <name>)`. */
  actor: string;
  /** What: `job.kill`, `hold.release`, `sheet.write`, `device.clear`, `token.create`, … */
  action: string;
  target: string | null;
  detail: Record<string, unknown> | null;
  /** Where the request came from: the client's address and whether by the dashboard or a token (`127.0.0.1, dashboard`); null for the controller's own acts. */
  origin: string | null;
  /** The id of the token the request came with (rc admin tokens lists them); null for the controller's own acts. */
  tokenId: number | null;
}

/** GET /api/audit: filters, each optional; newest first, `before` an entry's id to page back. */
export interface AuditQuery {
  /** Only entries this recent: 30m, 12h, 7d (a number and s, m, h or d). */
  since?: string;
  actor?: string;
  action?: string;
  target?: string;
  before?: string;
  limit?: string;
}

export interface HostRow {
  name: string;
  status: HostStatus;
  lastSeenAt: string | null;
  workerVersion: string | null;
  /** Set while turned off (rc admin host off): since when, by whom, and why (the reason may be empty). */
  off: { since: string; by: string; reason: string | null } | null;
  /** Set once removed (rc admin host rm): listed only with ?all=1. */
  removed: { at: string; by: string } | null;
}

/** A host's usage sheet or a device's note (Markdown). */
export interface SheetView {
  body: string;
  updatedBy: string;
  updatedAt: string;
}

/** GET /api/devices/:name: one device in full (rc describe). */
export interface DeviceDescription {
  device: DeviceRow;
  /** Its host: whether it is turned off, by whom and why. */
  host: HostRow;
  /** The host's usage sheet, if its operator wrote one. */
  sheet: SheetView | null;
  /** This device's own note, if any. */
  note: SheetView | null;
  recentJobs: JobView[];
}

/** POST /api/explain: what a selector (and -d) would match, and why the rest does not (rc run --explain). */
export interface Explanation {
  selector: string;
  device: string | null;
  matching: { name: string; state: DeviceState; holder: Holder | null; reservedFor: ReservedFor | null }[];
  free: number;
  /** Queued jobs that could take one of the matching devices: how long the line is. */
  queued: number;
  notMatching: { name: string; reasons: string[] }[];
  /** The hosts of matching devices that take no new job now: drained (rc admin host off) or not connected (core/hosts-off.ts). */
  hostsOff: HostOff[];
  /** What to write instead where the selector names a family as a model (`gpu_model=A100`: did you mean gpu_family=A100?). */
  hint?: string;
  /** Until when at the latest a job of this selector (and --gpus, or its --gpu choices) would wait, if nothing else changes: as GET /api/queue's freesBy. */
  freesBy: string | null;
  /** With --gpu: each choice in order, what it matches (the selector and its family or model), how much is free, and its queue. */
  choices?: ChoiceExplanation[];
}

/** A host whose matching devices take no new job now, and why. */
export interface HostOff {
  host: string;
  /** How many of the matching devices are on it. */
  devices: number;
  /** off: drained (rc admin host off); away: its worker disconnected, within the host timeout; offline: past it. */
  status: 'off' | 'away' | 'offline';
  /** Why it was drained, as the operator said; null when not said or not drained. */
  reason: string | null;
}

/** One --gpu choice in rc run --explain. */
export interface ChoiceExplanation {
  /** As --gpu writes it: `A100:2`. */
  choice: string;
  /** GPUs it needs on one host. */
  count: number;
  /** family: any model of it (`A100`: A100-40GB and A100-80GB); model: that exact model only (`A100-80GB`). */
  by: 'family' | 'model';
  /** The label term it adds to the selector: `gpu_family=A100`, `gpu_model=A100-80GB`. */
  term: string;
  /** Each matching device, with its exact model (gpu_model; null without one). */
  matching: { name: string; state: DeviceState; holder: Holder | null; reservedFor: ReservedFor | null; gpuModel: string | null }[];
  free: number;
  /** The most free matching devices on one host: the choice can start now when this is at least `count`. */
  freeOnOneHost: number;
  /** The most matching devices on one host that are not quarantined: below `count`, the choice can never start. */
  onOneHost: number;
  /** Queued jobs that could take one of its matching devices. */
  queued: number;
  /** The hosts of its matching devices that take no new job now, as in Explanation. */
  hostsOff: HostOff[];
}

/** A quarantine cleared by an operator: the device, and why it had been quarantined. */
export interface Cleared {
  cleared: string;
  was: { reason: string; since: string };
}

/** rc cp up: the bytes written and the lease they were written under. */
export interface Copied {
  bytes: number;
  lease: string;
}

// ---- tokens and hosts -----------------------------------------------------

export type TokenKind = 'client' | 'admin' | 'host';

/** A token as rc admin tokens lists it: never its secret or its hash. */
export interface TokenView {
  id: number;
  name: string;
  kind: TokenKind;
  hostName: string | null;
  /** The binding: the name, or the prefix ending in /, it may act as; null: any name. */
  submitter: string | null;
  /** The team its use is charged to (`default` unless set). */
  team: string;
  createdAt: string;
  revokedAt: string | null;
}

/** A team (rc admin team list): its fair-share weight, its live client and admin tokens, its limits in a line. */
export interface TeamView {
  name: string;
  share: number;
  members: number;
  createdAt: string;
  /** `gpus 4, 200 GPU-hours/week, ...`, or `none`. */
  limits: string;
}

/** One scope's limits (rc admin limit show): null is no limit. */
export interface LimitView {
  /** `team:vision` or `token:agent-a`. */
  scope: string;
  gpus: number | null;
  gpuHours: number | null;
  period: 'day' | 'week' | null;
  queued: number | null;
  maxPriority: number | null;
  maxHoldTtlS: number | null;
  maxRuntimeS: number | null;
}

/** Where a token stands against one scope's limits (rc whoami). */
export interface Standing {
  limits: LimitView;
  gpusInUse: number;
  /** Device-seconds leased in the budget's window (idle ones included), and the idle part; 0 without a budget. */
  usedS: number;
  idleS: number;
  /** Its jobs waiting now. */
  queued: number;
  /** `gpus 3 of 4 in use; 41.5 of 200 GPU-hours this week, 12.0 of them idle`. */
  text: string;
}

/** A new client or admin token: its secret is shown here once. */
export interface CreatedToken {
  id: number;
  name: string;
  kind: 'client' | 'admin';
  submitter: string | null;
  team: string;
  token: string;
  note: string;
}

export interface RevokedToken {
  revoked: TokenView;
  /** It was revoked before: nothing changed. */
  already: boolean;
}

/** A registered host: its worker credential is shown here once. */
export interface RegisteredHost {
  host: string;
  credential: string;
  /**
   * The one command to run on the new host (as root): it installs and starts
   * the worker with this credential. It runs the install script only if its
   * SHA-256 is the one pinned in it, and pins the worker package (RC_SHA256).
   */
  command: string;
  /** Set when the controller's URL is plain HTTP to another machine: what that risks, and what to do (HTTPS). */
  warning: string | null;
  note: string;
}

/** Something a controller wants people to know now (GET /api/notices): disk_full, its database out of disk space. */
export interface Notice {
  code: 'disk_full';
  message: string;
  /** When it began. */
  since: string;
}

export interface Whoami {
  /** The token's id: what rc admin tokens lists, and the audit log records with each act. */
  tokenId: number;
  kind: TokenKind;
  name: string;
  submitter: string | null;
  /** The team its use is charged to. */
  team: string;
  /** The limits that bind it (its own and its team's; the stricter wins), each with where it stands; empty: none. */
  limits: Standing[];
}

// ---- request bodies and queries --------------------------------------------

export type SubmitJobBody = z.input<typeof SubmitJob>;
export type SubmitArrayBody = z.input<typeof SubmitArray>;
export type KillJobBody = z.input<typeof KillJob>;
export type ReleaseHoldBody = z.input<typeof ReleaseHold>;
export type ExtendHoldBody = z.input<typeof ExtendHold>;
export type RegisterHostBody = z.input<typeof RegisterHost>;
export type TurnHostOffBody = z.input<typeof TurnHostOff>;
export type ClearQuarantineBody = z.input<typeof ClearQuarantine>;
export type CreateTokenBody = z.input<typeof CreateToken>;
export type CreateTeamBody = z.input<typeof CreateTeam>;
export type SetTeamBody = z.input<typeof SetTeam>;
export type SetTokenBody = z.input<typeof SetToken>;
export type SetLimitsBody = z.input<typeof SetLimits>;
export type WriteSheetBody = z.input<typeof WriteSheet>;
export type ExplainBody = z.input<typeof Explain>;
export type SignInBody = z.input<typeof SignIn>;

/** GET /api/jobs: filters, each optional (states and kinds comma-separated); newest first, `before` a job's id to page back. */
export interface JobsQuery {
  state?: string;
  kind?: string;
  device?: string;
  submitter?: string;
  name?: string;
  /** Jobs created since: a duration back from now (2h, 7d) or an ISO time (core/since.ts). */
  since?: string;
  /** `1`: only the jobs submitted with the caller's own token. */
  mine?: '1';
  /** An array's id (rc jobs --array): its tasks only, by index (`before` is then the task to go on after). */
  array?: string;
  before?: string;
  limit?: string;
}

/** GET /api/ps: `limit` jobs at most (1 to 5000; 500), after the cursor `after` (the `next` of the page before). */
export interface PsQuery {
  limit?: string;
  after?: string;
  /** 1: an array's tasks are listed as jobs too (rc ps --tasks); without it, each array is one line of `arrays`. */
  tasks?: '1';
}

/** A page of GET /api/ps: its jobs, how many run and wait in all, and the cursor of the next page (null: this is the last). */
export interface PsPage {
  /** Without tasks=1, jobs that are no array's task; each array with a task queued or running is a line of `arrays` instead. */
  jobs: PsEntry[];
  /** The arrays with a task queued or running (absent from an older controller). */
  arrays?: ArrayView[];
  counts: { running: number; queued: number };
  next: string | null;
}

/**
 * GET /api/jobs/:id/stream: `follow=1` keeps streaming until the job ends; `after` resumes after that output chunk;
 * `tail` starts at the last `tail` lines of the stored output (0 to 100000; not with `after`), told by an `offsets` event first.
 */
export interface StreamQuery {
  follow?: '1';
  after?: number;
  tail?: number;
}

/** GET /api/usage: how leased device time is grouped. */
export type UsageBy = 'submitter' | 'token' | 'team' | 'host' | 'model';

export interface UsageQuery {
  /** A duration (7d, 12h); default 7d. */
  since?: string;
  by?: UsageBy;
  /** The drill-down: the leases of one key of `by`. */
  key?: string;
}

/** Device-seconds leased in the window, by kind, and how many of them were idle (server/usage.ts). */
export interface UsageRow {
  key: string;
  leasedS: number;
  jobsS: number;
  terminalsS: number;
  holdsS: number;
  /** Idle seconds among the leased ones that had a GPU signal. */
  idleS: number;
  /** Leased seconds with no GPU signal (CPU slots, and GPUs that sent none): neither idle nor busy. */
  noSignalS: number;
  /** Of those, the seconds on CPU slots (devices without a GPU UUID); 0 on a fleet that has none. */
  cpuSlotS: number;
}

/** One lease behind a usage row (the drill-down). */
export interface UsageLease {
  jobId: string;
  kind: 'run' | 'tty' | 'hold';
  submitter: string;
  device: string;
  from: string;
  to: string | null;
  /** Seconds inside the window. */
  leasedS: number;
  /** null: no GPU signal. */
  idleS: number | null;
  /** Its device is a CPU slot (no GPU UUID). */
  cpuSlot: boolean;
}

export interface UsageReport {
  sinceS: number;
  by: UsageBy;
  rows: UsageRow[];
  total: UsageRow;
  /** With `key`: its leases, the longest first (at most 200). */
  leases?: UsageLease[];
}

/** GET /api/usage/series: the window and grouping of GET /api/usage; nothing else is taken. */
export interface UsageSeriesQuery {
  since?: string;
  by?: UsageBy;
}

/** One key's (or the rest's) device-seconds per bucket, and the idle part of them. */
export interface UsageSeriesLine {
  leasedS: number[];
  idleS: number[];
}

/** Leased device time over the window in buckets (core/usage-series.ts), for a chart. */
export interface UsageSeries {
  sinceS: number;
  by: UsageBy;
  /** Each bucket's length: the shortest of 1m, 5m, 15m, 1h, 3h, 6h, 12h, 1d and 7d that makes at most 90 of them. */
  stepS: number;
  /** Each bucket's start, epoch seconds, oldest first; aligned to the step in UTC, so only the first's part inside the window counts, and the last runs to now. */
  at: number[];
  /** The 7 keys that leased the most in the window, the most first. */
  series: (UsageSeriesLine & { key: string })[];
  /** Every other key summed (`keys` of them), or null when there are none. */
  others: (UsageSeriesLine & { keys: number }) | null;
}

/** GET /api/usage/teams: the last `days` whole UTC days and today (1 to 90; 14). */
export interface TeamsUsageQuery {
  days?: string;
}

/** One UTC day of a team's use: device-seconds leased that day, the idle part apart (busyS counts CPU slots' time too). */
export interface TeamDay {
  /** `2026-12-07`. */
  day: string;
  busyS: number;
  idleS: number;
}

/** A team as the dashboard's Teams page shows it (GET /api/usage/teams). */
export interface TeamUse {
  name: string;
  share: number;
  /** Its live client and admin tokens: names only, never a secret. */
  members: { id: number; name: string; kind: 'client' | 'admin'; submitter: string | null }[];
  /** Its own limits (scope `team:<name>`): null is no limit. */
  limits: LimitView;
  gpusInUse: number;
  /** Its jobs waiting now. */
  queued: number;
  /** With a GPU-hours budget: device-seconds leased in the budget's rolling window, and the idle part; null without one. */
  budget: { usedS: number; idleS: number } | null;
  /**
   * Fair share (core/fair-share.ts): its decayed use (device-seconds), its part of all active teams' use and of their
   * shares, and its standing (use part over share part: below 1 it is below its share and its jobs go first). A team
   * with neither use nor jobs queued is not active and divides nothing.
   */
  fairShare: { use: number; active: boolean; usePart: number; sharePart: number; standing: number };
  /** Its use per UTC day, oldest first: `days` + 1 entries, today's last. */
  daily: TeamDay[];
}

export interface TeamsUsage {
  days: number;
  /** RC_FAIRSHARE_HALF_LIFE, seconds: how fast use is forgotten. */
  halfLifeS: number;
  teams: TeamUse[];
}

/** POST /api/jobs/:id/stdin: who writes, the bytes sent before this piece, and whether it ends the input. */
export interface StdinQuery {
  submitter: string;
  offset: number;
  eof?: '1';
}

/** /api/devices/:name/files (rc cp): the file on the device, and who copies. */
export interface CopyQuery {
  path: string;
  submitter: string;
}

// ---- the terminal socket (/tty) --------------------------------------------

/** Client → controller `open`: a new terminal, or `jobId` to re-attach (protocol/tty.ts validates it). */
export type TtyOpenMessage = z.input<typeof TtyOpen>;

export interface TtyQueued {
  jobId: string;
  /** Jobs ahead of it; null on a re-attach to a terminal still queued. */
  position: number | null;
}

export interface TtyStarted {
  jobId: string;
  host: string;
  devices: string[];
  /** Where in the terminal's output the bytes that follow start (a re-attach gets a replay from here). */
  offset: number;
}

/** The terminal's job ended (or had ended, on a re-attach): a JobExitEvent without its type. */
export type TtyExit = Omit<JobExitEvent, 'type'>;

/** A refusal or a failure; `detached` when another client took the terminal over. */
export interface TtyError {
  code: string;
  message: string;
}

/** GET /api/offers: the cheapest offers that fit, across the configured provider accounts (rc offers). */
export interface OffersQuery {
  /** Comma-separated GPU choices: `H100`, `A100:2` (a model and at least that many). */
  gpu?: string;
  cpus?: string;
  /** GiB. */
  ram?: string;
  disk?: string;
  spot?: '1' | '0';
  /** `local`, `runpod`, `runpod/lab-b`: only that provider, or that one account. */
  cloud?: string;
  'max-price'?: string;
  cuda?: string;
  /** 1 to 200; 20. */
  limit?: string;
}

/** One priced machine shape an account offers now (server/providers/provider.ts Offer), as rc offers prints it: what a fit reads (core/machine-fit.ts), and these. */
export interface OfferView extends FitOffer {
  /** The provider's own name for the shape (what launch() gets back in its spec). */
  offerId: string;
  region: string | null;
  /** The price is not a real one (the local provider's table): every view that shows it says so. */
  simulated: boolean;
}

/** The cheapest offers; `warnings`: each account that failed to answer, and why (not a failure of the call). */
export interface OffersView {
  offers: OfferView[];
  warnings: string[];
}

/** A machine rented from a provider (rc machines, the Machines page). */
export interface MachineView {
  id: string;
  account: string;
  instanceName: string;
  hostName: string;
  state: 'provisioning' | 'booting' | 'idle' | 'busy' | 'offline' | 'terminating' | 'terminated';
  gpuModel: string | null;
  gpuCount: number;
  pricePerHour: number;
  spot: boolean;
  simulated: boolean;
  createdAt: string;
  terminatedAt: string | null;
  terminatedWhy: string | null;
  /** US dollars: the price × the hours from its creation until it was terminated, or now. */
  costSoFar: number;
  /** The job it is for now (launched for it, or given to it idle), or null. */
  jobId: string | null;
  /** An idle machine is deleted then (its last job's --keep after it ended); null while busy or booting and once terminating. */
  idleUntil: string | null;
}

/** US dollars, full precision (views round to cents); `simulated`: some of it is at a simulated price. */
export interface CostView {
  cost: number;
  simulated: boolean;
}

/**
 * What the machines cost so far, every machine ever launched (terminated ones too): each job's part is its machine's
 * price × the time each of its attempts ran there; the rest of a machine's time is `idle`, no team's.
 */
export interface MachineCosts {
  /** Every team whose jobs ran on a machine (a job's team is its token's; no token: `default`), dearest first. */
  byTeam: (CostView & { team: string })[];
  /** The 20 dearest jobs. */
  byJob: (CostView & { jobId: string; name: string | null; team: string })[];
  /** Machine time no job ran in (booting, idle, kept). */
  idle: CostView;
  /** Every machine's cost: the teams' and idle together. */
  total: CostView;
}

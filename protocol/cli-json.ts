// What `rc <command> --json` prints, as zod schemas: the API's answers where a
// command prints one (rc jobs, rc describe, rc kill, ...), and the CLI's own
// objects (a followed job's lines, rc cp's copy, rc wait's exit, the error and
// notice objects on stderr). docs/cli.md ("JSON output") lists which command
// prints which; test/e2e/json-output.test.ts parses each command's output with
// them. Every object is .strict(): a field that is not written here fails that
// test, so the docs and these schemas cannot fall behind the output.
//
// Each API schema is checked against its type in protocol/wire.ts (the
// `Same<…>` lines at the end): change one and the other fails to compile.
// The CLI imports this file's types only (`import type`): zod stays out of it.
import { z } from 'zod';
import { END_CAUSES, JOB_STATES, type JobState } from '../core/job-state';
import { OUTPUT_TRUNCATED_REASONS } from '../core/output-truncated';
import type {
  ArrayView,
  AttemptView,
  ChoiceExplanation,
  DeviceDescription,
  DeviceRow,
  DeviceSummary,
  Explanation,
  GpuView,
  Holder,
  HostRow,
  JobMachineAsk,
  JobMachineView,
  JobView,
  LabelView,
  LimitView,
  MachineCosts,
  MachineView,
  PsEntry,
  PsPage,
  ReservedFor,
  SheetView,
  Standing,
  UsageLease,
  UsageReport,
  UsageRow,
  Whoami,
} from './wire';

const time = z.string();
const jobState = z.enum(JOB_STATES);
const endCause = z.enum(END_CAUSES);
const jobKind = z.enum(['run', 'tty', 'hold', 'cp']);

// ---- jobs ---------------------------------------------------------------------

export const AttemptViewSchema = z
  .object({
    attempt: z.number(),
    host: z.string().nullable(),
    devices: z.array(z.string()).nullable(),
    state: jobState,
    cause: endCause,
    exitCode: z.number().nullable(),
    reason: z.string().nullable(),
    startedAt: time.nullable(),
    endedAt: time,
  })
  .strict();

/** A job's machine flags (rc run --cloud, --max-price, --spot, --keep, --cpus, --ram, --disk, --cuda). */
export const JobMachineAskSchema = z
  .object({
    cloud: z.string().nullable(),
    maxPrice: z.number().nullable(),
    spot: z.boolean(),
    keepS: z.number().nullable(),
    min: z
      .object({ cpus: z.number().optional(), ramGiB: z.number().optional(), diskGiB: z.number().optional(), cuda: z.string().optional() })
      .strict()
      .nullable(),
  })
  .strict();

const machineState = z.enum(['provisioning', 'booting', 'idle', 'busy', 'offline', 'terminating', 'terminated']);

/** The provider machine a job's host is (rc describe <job> --json's `ranOn`). */
export const JobMachineViewSchema = z
  .object({
    id: z.string(),
    account: z.string(),
    state: machineState,
    gpuModel: z.string().nullable(),
    gpuCount: z.number(),
    pricePerHour: z.number(),
    spot: z.boolean(),
    simulated: z.boolean(),
    terminatedWhy: z.string().nullable(),
  })
  .strict();

const JOB_VIEW = {
  id: z.string(),
  name: z.string().nullable(),
  comment: z.string().nullable(),
  kind: jobKind,
  state: jobState,
  submitter: z.string(),
  argv: z.array(z.string()),
  envKeys: z.array(z.string()),
  cwd: z.string().nullable(),
  selector: z.string(),
  device: z.string().nullable(),
  gpus: z.number(),
  gpuChoices: z.string().nullable(),
  priority: z.number(),
  placement: z.enum(['any', 'reserved', 'cloud']),
  machine: JobMachineAskSchema.nullable(),
  host: z.string().nullable(),
  devices: z.array(z.string()).nullable(),
  exitCode: z.number().nullable(),
  cause: endCause.nullable(),
  reason: z.string().nullable(),
  maxRuntimeS: z.number().nullable(),
  idleTimeoutS: z.number().nullable(),
  gpuIdleTimeoutS: z.number().nullable(),
  idleS: z.number().nullable(),
  idleTotalS: z.number().nullable(),
  idleWarned: z.boolean(),
  waitTimeoutS: z.number().nullable(),
  outputTruncated: z.boolean(),
  outputTruncatedReason: z.enum(OUTPUT_TRUNCATED_REASONS).nullable(),
  attempt: z.number(),
  restarts: z.number(),
  preemptible: z.boolean(),
  retryOnPreempt: z.boolean(),
  retries: z.number(),
  retried: z.number(),
  retryDelayS: z.number(),
  waiting: z.enum(['after', 'array', 'retry']).nullable(),
  notBefore: time.nullable(),
  after: z.array(z.object({ id: z.string(), any: z.boolean(), state: jobState, exitCode: z.number().nullable() }).strict()).optional(),
  array: z.object({ id: z.string(), index: z.number() }).strict().nullable(),
  attempts: z.array(AttemptViewSchema).optional(),
  ranOn: JobMachineViewSchema.optional(),
  expiresAt: time.nullable(),
  createdAt: time,
  startedAt: time.nullable(),
  endedAt: time.nullable(),
};

export const JobViewSchema = z.object(JOB_VIEW).strict();

export const PsEntrySchema = z
  .object({ ...JOB_VIEW, position: z.number().nullable(), waits: z.string().optional(), freesBy: time.nullable().optional() })
  .strict();

/** rc describe <array> --json, and each array of rc ps --json. */
export const ArrayViewSchema = z
  .object({
    id: z.string(),
    spec: z.string(),
    size: z.number(),
    maxRunning: z.number().nullable(),
    name: z.string().nullable(),
    submitter: z.string(),
    argv: z.array(z.string()),
    createdAt: time,
    counts: z
      .object({ ...Object.fromEntries(JOB_STATES.map((s) => [s, z.number()])), waiting: z.number() } as Record<JobState | 'waiting', z.ZodNumber>)
      .strict(),
    done: z.boolean(),
    firstFailure: z
      .object({
        jobId: z.string(),
        index: z.number(),
        state: jobState,
        exitCode: z.number().nullable(),
        cause: endCause.nullable(),
        reason: z.string().nullable(),
      })
      .strict()
      .nullable(),
  })
  .strict();

/** rc run --array --detach --json: the array as submitted (the API's answer). */
export const ArraySubmittedSchema = z.object({ array: ArrayViewSchema, notices: z.array(z.string()).optional() }).strict();

/** rc describe <array> --json, rc kill <array> --json: the array as it is now. */
export const OneArraySchema = z.object({ array: ArrayViewSchema }).strict();

/** rc run --array --json (followed) and rc wait <array> --json: the array as it ended, and the code rc exits with. */
export const JsonArrayExitSchema = z.object({ type: z.literal('array-exit'), array: ArrayViewSchema, exitCode: z.number() }).strict();

/** rc ps --json. */
export const PsPageSchema = z
  .object({
    jobs: z.array(PsEntrySchema),
    counts: z.object({ running: z.number(), queued: z.number() }).strict(),
    next: z.string().nullable(),
    arrays: z.array(ArrayViewSchema).optional(),
  })
  .strict();

/** rc jobs --json. */
export const JobListSchema = z.object({ jobs: z.array(JobViewSchema) }).strict();

/** rc describe <job> --json, rc kill --json, rc release --json, rc hold extend --json: the job as it is now. */
export const OneJobSchema = z.object({ job: JobViewSchema }).strict();

/** rc run --detach --json: the job as submitted, and what the controller tells its submitter once (a default --max-runtime applied). */
export const SubmittedSchema = z.object({ job: JobViewSchema, notices: z.array(z.string()).optional() }).strict();

// ---- devices ------------------------------------------------------------------

const deviceState = z.enum(['free', 'busy', 'reserved', 'off', 'offline', 'unhealthy', 'removed']);
const hostStatus = z.enum(['online', 'away', 'offline']);

export const HolderSchema = z
  .object({ jobId: z.string(), kind: jobKind, submitter: z.string(), since: time, idleS: z.number().nullable().optional() })
  .strict();

export const ReservedForSchema = z.object({ jobId: z.string(), submitter: z.string(), gpus: z.number(), why: z.enum(['multi_gpu', 'preemption']) }).strict();

export const GpuViewSchema = z
  .object({
    name: z.string(),
    memTotalMiB: z.number(),
    memUsedMiB: z.number(),
    utilPct: z.number().nullable(),
    procs: z.number().nullable().optional(),
    at: time,
  })
  .strict();

export const LabelViewSchema = z
  .object({
    key: z.string(),
    value: z.string(),
    source: z.enum(['declared', 'detected']),
    probe: z.string().nullable(),
    seenAt: time,
    stale: z.string().nullable(),
    hostWide: z.boolean(),
    effective: z.boolean(),
  })
  .strict();

const DEVICE_SUMMARY = {
  id: z.number(),
  name: z.string(),
  hostName: z.string(),
  index: z.number(),
  uuid: z.string().nullable(),
  hostStatus,
  state: deviceState,
  hostOff: z.boolean(),
  holder: HolderSchema.nullable(),
  reservedFor: ReservedForSchema.nullable(),
  labels: z.record(z.string(), z.string()),
  unhealthy: z
    .object({ since: time, reason: z.string(), evidence: z.record(z.string(), z.unknown()) })
    .strict()
    .nullable(),
  gpu: GpuViewSchema.nullable(),
};

export const DeviceSummarySchema = z.object(DEVICE_SUMMARY).strict();
export const DeviceRowSchema = z.object({ ...DEVICE_SUMMARY, labelDetails: z.array(LabelViewSchema) }).strict();

/** rc devices --json. */
export const DeviceListSchema = z.object({ devices: z.array(DeviceSummarySchema) }).strict();

export const HostRowSchema = z
  .object({
    name: z.string(),
    status: hostStatus,
    lastSeenAt: time.nullable(),
    workerVersion: z.string().nullable(),
    off: z.object({ since: time, by: z.string(), reason: z.string().nullable() }).strict().nullable(),
    removed: z.object({ at: time, by: z.string() }).strict().nullable(),
  })
  .strict();

export const SheetViewSchema = z.object({ body: z.string(), updatedBy: z.string(), updatedAt: time }).strict();

/** rc describe <host:gpuN> --json. */
export const DeviceDescriptionSchema = z
  .object({
    device: DeviceRowSchema,
    host: HostRowSchema,
    sheet: SheetViewSchema.nullable(),
    note: SheetViewSchema.nullable(),
    recentJobs: z.array(JobViewSchema),
  })
  .strict();

const MatchSchema = z.object({ name: z.string(), state: deviceState, holder: HolderSchema.nullable(), reservedFor: ReservedForSchema.nullable() }).strict();

const HostOffSchema = z.object({ host: z.string(), devices: z.number(), status: z.enum(['off', 'away', 'offline']), reason: z.string().nullable() }).strict();

export const ChoiceExplanationSchema = z
  .object({
    choice: z.string(),
    count: z.number(),
    by: z.enum(['family', 'model']),
    term: z.string(),
    matching: z.array(MatchSchema.extend({ gpuModel: z.string().nullable() }).strict()),
    free: z.number(),
    freeOnOneHost: z.number(),
    onOneHost: z.number(),
    queued: z.number(),
    hostsOff: z.array(HostOffSchema),
  })
  .strict();

/** rc run --explain --json. */
export const ExplanationSchema = z
  .object({
    selector: z.string(),
    device: z.string().nullable(),
    matching: z.array(MatchSchema),
    free: z.number(),
    queued: z.number(),
    notMatching: z.array(z.object({ name: z.string(), reasons: z.array(z.string()) }).strict()),
    hostsOff: z.array(HostOffSchema),
    hint: z.string().optional(),
    freesBy: time.nullable(),
    choices: z.array(ChoiceExplanationSchema).optional(),
  })
  .strict();

// ---- usage and tokens -----------------------------------------------------------

const usageBy = z.enum(['submitter', 'token', 'team', 'host', 'model']);

export const UsageRowSchema = z
  .object({
    key: z.string(),
    leasedS: z.number(),
    jobsS: z.number(),
    terminalsS: z.number(),
    holdsS: z.number(),
    idleS: z.number(),
    noSignalS: z.number(),
    cpuSlotS: z.number(),
  })
  .strict();

export const UsageLeaseSchema = z
  .object({
    jobId: z.string(),
    kind: z.enum(['run', 'tty', 'hold']),
    submitter: z.string(),
    device: z.string(),
    cpuSlot: z.boolean(),
    from: time,
    to: time.nullable(),
    leasedS: z.number(),
    idleS: z.number().nullable(),
  })
  .strict();

/** rc usage --json. */
export const UsageReportSchema = z
  .object({ sinceS: z.number(), by: usageBy, rows: z.array(UsageRowSchema), total: UsageRowSchema, leases: z.array(UsageLeaseSchema).optional() })
  .strict();

export const LimitViewSchema = z
  .object({
    scope: z.string(),
    gpus: z.number().nullable(),
    gpuHours: z.number().nullable(),
    period: z.enum(['day', 'week']).nullable(),
    queued: z.number().nullable(),
    maxPriority: z.number().nullable(),
    maxHoldTtlS: z.number().nullable(),
    maxRuntimeS: z.number().nullable(),
  })
  .strict();

export const StandingSchema = z
  .object({ limits: LimitViewSchema, gpusInUse: z.number(), usedS: z.number(), idleS: z.number(), queued: z.number(), text: z.string() })
  .strict();

/** rc whoami --json. */
export const WhoamiSchema = z
  .object({
    tokenId: z.number(),
    kind: z.enum(['client', 'admin', 'host']),
    name: z.string(),
    submitter: z.string().nullable(),
    team: z.string(),
    limits: z.array(StandingSchema),
  })
  .strict();

// ---- machines from providers -----------------------------------------------------

/** A machine (rc machines --json's `machines`): GET /api/machines' view. */
export const MachineViewSchema = z
  .object({
    id: z.string(),
    account: z.string(),
    instanceName: z.string(),
    hostName: z.string(),
    state: machineState,
    gpuModel: z.string().nullable(),
    gpuCount: z.number(),
    pricePerHour: z.number(),
    spot: z.boolean(),
    simulated: z.boolean(),
    createdAt: time,
    terminatedAt: time.nullable(),
    terminatedWhy: z.string().nullable(),
    costSoFar: z.number(),
    jobId: z.string().nullable(),
    idleUntil: time.nullable(),
  })
  .strict();
const costView = { cost: z.number(), simulated: z.boolean() };
/** What every machine cost so far: by team, the 20 dearest jobs, idle, and the total (US dollars, full precision). */
export const MachineCostsSchema = z
  .object({
    byTeam: z.array(z.object({ team: z.string(), ...costView }).strict()),
    byJob: z.array(z.object({ jobId: z.string(), name: z.string().nullable(), team: z.string(), ...costView }).strict()),
    idle: z.object(costView).strict(),
    total: z.object(costView).strict(),
  })
  .strict();
/** rc machines --json. */
export const MachineListSchema = z.object({ machines: z.array(MachineViewSchema), costs: MachineCostsSchema }).strict();

// ---- the CLI's own objects ------------------------------------------------------

/** rc cp --json: what was copied where (`host:gpuN:/path` on the device side), and how many bytes. */
export const CopiedFileSchema = z.object({ from: z.string(), to: z.string(), bytes: z.number().int().min(0) }).strict();
export type CopiedFile = z.infer<typeof CopiedFileSchema>;

/**
 * A followed job's lines (rc run, rc hold, rc logs, rc attach with --json), one object a line, in the order they
 * happen. `output`: a chunk of the job's output as it was read, `offset` the bytes of its stream before it, `data`
 * the chunk as UTF-8 text (a character split between two chunks comes whole in the later one). `exit` is the last
 * line of a job that has ended; `end` the last of rc logs (no -f) on a job still queued or running.
 */
/** `waits`: it waits on something besides a device first (its --after jobs, its array's cap, a retry delay): `position` is then 0. */
export const JsonQueuedSchema = z
  .object({ type: z.literal('queued'), job: z.string(), position: z.number(), waits: z.enum(['after', 'array', 'retry']).optional() })
  .strict();
export const JsonStartedSchema = z.object({ type: z.literal('started'), job: z.string(), host: z.string(), devices: z.array(z.string()) }).strict();
export const JsonOutputSchema = z
  .object({ type: z.literal('output'), stream: z.enum(['stdout', 'stderr']), offset: z.number().int().min(0), data: z.string() })
  .strict();
export const JsonNoticeEventSchema = z.object({ type: z.literal('notice'), message: z.string() }).strict();
export const JsonRequeuedSchema = z
  .object({
    type: z.literal('requeued'),
    job: z.string(),
    attempt: z.number(),
    state: jobState,
    cause: endCause,
    reason: z.string().nullable(),
    /** --retries: the retry this attempt is (n of `of`), after its exit code, in delayS seconds. */
    retry: z.object({ n: z.number(), of: z.number(), delayS: z.number(), exitCode: z.number().nullable() }).strict().optional(),
  })
  .strict();
export const JsonEndSchema = z.object({ type: z.literal('end'), job: z.string(), state: jobState }).strict();
/** The job's end: `exitCode` is the command's own (null when it never ran or was lost); rc exits as rc run would (docs/cli.md, exit codes). */
export const JsonExitSchema = z
  .object({
    type: z.literal('exit'),
    job: z.string(),
    state: jobState,
    exitCode: z.number().nullable(),
    cause: endCause.nullable(),
    reason: z.string().nullable(),
  })
  .strict();

export const JsonStreamLineSchema = z.discriminatedUnion('type', [
  JsonQueuedSchema,
  JsonStartedSchema,
  JsonOutputSchema,
  JsonNoticeEventSchema,
  JsonRequeuedSchema,
  JsonEndSchema,
  JsonExitSchema,
]);
export type JsonStreamLine = z.infer<typeof JsonStreamLineSchema>;
export type JsonExit = z.infer<typeof JsonExitSchema>;

/** rc hold --json: a hold's lines are a followed job's, and its start says until when it holds (`expiresAt`). */
export const JsonHeldSchema = z
  .object({ type: z.literal('started'), job: z.string(), host: z.string(), devices: z.array(z.string()), expiresAt: time.nullable() })
  .strict();
export type JsonHeld = z.infer<typeof JsonHeldSchema>;
export const JsonHoldLineSchema = z.discriminatedUnion('type', [JsonQueuedSchema, JsonHeldSchema, JsonNoticeEventSchema, JsonExitSchema]);

/** Under --json, the error that ends rc, on stderr (its exit code is the one it has without --json); a usage error's code is `usage`. */
export const JsonErrorSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }).strict() }).strict();
/** Under --json, anything else rc says on stderr (waiting, reconnecting). */
export const JsonNoticeSchema = z.object({ notice: z.object({ message: z.string() }).strict() }).strict();

// ---- each API schema is its wire type -----------------------------------------

/** true when A and B are the same type (each assignable to the other). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Checks = [
  Same<z.infer<typeof AttemptViewSchema>, AttemptView>,
  Same<z.infer<typeof JobMachineAskSchema>, JobMachineAsk>,
  Same<z.infer<typeof JobMachineViewSchema>, JobMachineView>,
  Same<z.infer<typeof JobViewSchema>, JobView>,
  Same<z.infer<typeof PsEntrySchema>, PsEntry>,
  Same<z.infer<typeof PsPageSchema>, PsPage>,
  Same<z.infer<typeof ArrayViewSchema>, ArrayView>,
  Same<z.infer<typeof HolderSchema>, Holder>,
  Same<z.infer<typeof ReservedForSchema>, ReservedFor>,
  Same<z.infer<typeof GpuViewSchema>, GpuView>,
  Same<z.infer<typeof LabelViewSchema>, LabelView>,
  Same<z.infer<typeof DeviceSummarySchema>, DeviceSummary>,
  Same<z.infer<typeof DeviceRowSchema>, DeviceRow>,
  Same<z.infer<typeof HostRowSchema>, HostRow>,
  Same<z.infer<typeof SheetViewSchema>, SheetView>,
  Same<z.infer<typeof DeviceDescriptionSchema>, DeviceDescription>,
  Same<z.infer<typeof ChoiceExplanationSchema>, ChoiceExplanation>,
  Same<z.infer<typeof ExplanationSchema>, Explanation>,
  Same<z.infer<typeof UsageRowSchema>, UsageRow>,
  Same<z.infer<typeof UsageLeaseSchema>, UsageLease>,
  Same<z.infer<typeof UsageReportSchema>, UsageReport>,
  Same<z.infer<typeof LimitViewSchema>, LimitView>,
  Same<z.infer<typeof StandingSchema>, Standing>,
  Same<z.infer<typeof WhoamiSchema>, Whoami>,
  Same<z.infer<typeof MachineViewSchema>, MachineView>,
  Same<z.infer<typeof MachineCostsSchema>, MachineCosts>,
];
/** Fails to compile when a schema above and its wire type part. */
export const SCHEMAS_MATCH_WIRE: Checks = [
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
];

// The whole of rc's state. Postgres is the single source of truth: nothing a
// controller holds in memory survives a restart, and nothing needs to.
import { sql } from 'drizzle-orm';
import type { GpuChoice } from '../core/gpu-choices';
import { END_CAUSES, JOB_STATES, type JobState } from '../core/job-state';
import {
  bigint,
  bigserial,
  boolean,
  check,
  doublePrecision,
  customType,
  index,
  integer,
  jsonb,
  pgSequence,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

const bytea = customType<{ data: Buffer }>({ dataType: () => 'bytea' });
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/**
 * Who shares the fleet (issue 32): every client token is in one team, `default` unless an
 * operator put it elsewhere. Limits and usage are charged to the token and its team, never
 * to the submitter name a job claims. `share` weighs the team in fair share (core/fair-share.ts).
 */
export const teams = pgTable('teams', {
  name: text('name').primaryKey(),
  share: doublePrecision('share').notNull().default(1),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/**
 * Fair share's record of use (core/fair-share.ts): per token (tokens.id; 0 for jobs with no token), the
 * device-seconds of its ended leases, decayed to `at`; read as use_s * 2^(-(t - at) / half-life).
 * Leases are added when charged (server/jobs/sql/charge-use.ts); the ones not yet are read from leases.
 */
export const tokenUse = pgTable('token_use', {
  tokenKey: bigint('token_key', { mode: 'number' }).primaryKey(),
  useS: doublePrecision('use_s').notNull(),
  at: ts('at').notNull(),
});

/** Credentials. Only the SHA-256 of a secret is stored; the secret is shown once. */
export const tokens = pgTable(
  'tokens',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    kind: text('kind', { enum: ['client', 'admin', 'host'] }).notNull(),
    name: text('name').notNull(),
    hash: text('hash').notNull(),
    hostName: text('host_name'),
    /** A client token's binding: the only submitter it may act as (a name), or the names under
     *  it (a value ending in /). Null: any name, the cooperative rule (server/auth.ts, actsAs). */
    submitter: text('submitter'),
    /** The team its use is charged to (teams.name); `default` unless set. */
    team: text('team')
      .notNull()
      .default('default')
      .references(() => teams.name, { onUpdate: 'cascade' }),
    createdAt: ts('created_at').notNull().defaultNow(),
    revokedAt: ts('revoked_at'),
  },
  (t) => [uniqueIndex('tokens_hash_key').on(t.hash), index('tokens_team_idx').on(t.team)],
);

/**
 * Limits on a team's or a token's use (issue 32; core/limits.ts decides with them). One row per
 * scope: exactly one of `team` and `tokenId` is set. A null column is no limit. A token's and its
 * team's limits both apply; the stricter wins. No row: no limit, and no check costs anything.
 */
export const limits = pgTable(
  'limits',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    team: text('team').references(() => teams.name, { onUpdate: 'cascade', onDelete: 'cascade' }),
    tokenId: bigint('token_id', { mode: 'number' }).references(() => tokens.id, { onDelete: 'cascade' }),
    /** Devices leased at once (jobs, terminals, holds together). */
    gpus: integer('gpus'),
    /** A rolling budget of device-hours over `period`. */
    gpuHours: doublePrecision('gpu_hours'),
    period: text('period', { enum: ['day', 'week'] }),
    /** Jobs waiting at once. */
    queued: integer('queued'),
    maxPriority: integer('max_priority'),
    maxHoldTtlS: integer('max_hold_ttl_s'),
    maxRuntimeS: integer('max_runtime_s'),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('limits_team_key').on(t.team),
    uniqueIndex('limits_token_key').on(t.tokenId),
    check('limits_one_scope', sql`(${t.team} is null) <> (${t.tokenId} is null)`),
    check('limits_budget_period', sql`(${t.gpuHours} is null) = (${t.period} is null)`),
  ],
);

/**
 * The dashboard's sign-ins (server/sessions.ts): the cookie carries a session's id and
 * secret, never the token. Only the SHA-256 of the secret is stored. A session stands
 * for its token while neither is revoked and it has not expired (idle, or at its cap).
 */
export const sessions = pgTable(
  'sessions',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    tokenId: bigint('token_id', { mode: 'number' })
      .notNull()
      .references(() => tokens.id, { onDelete: 'cascade' }),
    secretHash: text('secret_hash').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    lastSeenAt: ts('last_seen_at').notNull().defaultNow(),
    expiresAt: ts('expires_at').notNull(),
    revokedAt: ts('revoked_at'),
  },
  (t) => [index('sessions_token_idx').on(t.tokenId), index('sessions_expires_idx').on(t.expiresAt)],
);

export const hosts = pgTable('hosts', {
  name: text('name').primaryKey(),
  /** online: a worker is connected; away: its connection dropped, jobs keep running
   *  until the offline timeout; offline: gone, its jobs were marked lost. */
  status: text('status', { enum: ['online', 'away', 'offline'] })
    .notNull()
    .default('offline'),
  lastSeenAt: ts('last_seen_at'),
  workerVersion: text('worker_version'),
  createdAt: ts('created_at').notNull().defaultNow(),
  /** rc admin host off: takes no new jobs (the running ones finish) until `on`; who turned it off, and why. */
  offSince: ts('off_since'),
  offBy: text('off_by'),
  offReason: text('off_reason'),
  /** rc admin host rm: its credentials revoked, its devices no longer listed or scheduled; kept for the record (listed with --all). */
  removedAt: ts('removed_at'),
  removedBy: text('removed_by'),
  /** The worker process that holds the host (an id it makes at start), the controller it is connected to (its bus id),
   *  its address and since when: a second worker with the same credential is refused while this one is heard from
   *  (server/worker-claim.ts). Cleared when its connection closes; null for an older worker that sends no id. */
  workerInstance: text('worker_instance'),
  workerController: text('worker_controller'),
  workerAddress: text('worker_address'),
  workerSince: ts('worker_since'),
});

export const devices = pgTable(
  'devices',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    hostName: text('host_name')
      .notNull()
      .references(() => hosts.name, { onDelete: 'cascade' }),
    /** Index as the host numbers it (gpuN); the device's name is host:gpuN. */
    index: integer('index').notNull(),
    uuid: text('uuid'),
    /** false when the host stopped reporting it. */
    present: boolean('present').notNull().default(true),
    createdAt: ts('created_at').notNull().defaultNow(),
    /** Quarantine: set when something went wrong on the device; never scheduled until an admin clears it. */
    unhealthySince: ts('unhealthy_since'),
    unhealthyReason: text('unhealthy_reason'),
    /** What showed it: a memory figure, a process, a probe's value, docker's error. */
    unhealthyEvidence: jsonb('unhealthy_evidence').$type<Record<string, unknown>>(),
    /** The last GPU sample of its worker's heartbeat (name, memory, utilisation); null on a CPU slot. */
    gpuSample: jsonb('gpu_sample').$type<{ name: string; memTotalMiB: number; memUsedMiB: number; utilPct: number | null; procs?: number | null }>(),
    sampledAt: ts('sampled_at'),
  },
  (t) => [uniqueIndex('devices_host_index_key').on(t.hostName, t.index)],
);

/** GPU samples over time, for charts; rolled up into gpu_samples_coarse after a day (server/sample-retention.ts). */
export const gpuSamples = pgTable(
  'gpu_samples',
  {
    hostName: text('host_name').notNull(),
    deviceIndex: integer('device_index').notNull(),
    at: ts('at').notNull().defaultNow(),
    memUsedMiB: integer('mem_used_mib').notNull(),
    memTotalMiB: integer('mem_total_mib').notNull(),
    utilPct: smallint('util_pct'),
  },
  (t) => [index('gpu_samples_device_at_idx').on(t.hostName, t.deviceIndex, t.at)],
);

/**
 * GPU samples older than a day, one row per device and 10 minutes (`at`: the
 * bucket's start); kept 90 days. The utilisation is kept as a sum and a count,
 * so that samples rolled into a bucket in two goes add up exactly.
 */
export const gpuSamplesCoarse = pgTable(
  'gpu_samples_coarse',
  {
    hostName: text('host_name').notNull(),
    deviceIndex: integer('device_index').notNull(),
    at: ts('at').notNull(),
    /** The bucket's utilisation samples (whole percents) added up, and how many there were (null utilisation is not counted). */
    utilSum: integer('util_sum').notNull(),
    utilSamples: integer('util_samples').notNull(),
    /** Their average; null when none reported utilisation. */
    utilPct: doublePrecision('util_pct').generatedAlwaysAs(sql`util_sum::float8 / nullif(util_samples, 0)`),
    /** The peak of the memory used, and the largest total. */
    memUsedMiB: integer('mem_used_mib').notNull(),
    memTotalMiB: integer('mem_total_mib').notNull(),
    /** Raw samples in the bucket. */
    samples: integer('samples').notNull(),
  },
  (t) => [primaryKey({ columns: [t.hostName, t.deviceIndex, t.at] }), index('gpu_samples_coarse_at_idx').on(t.at)],
);

/** Labels per host (deviceIndex -1) or per device, with where they came from. */
export const labels = pgTable(
  'labels',
  {
    hostName: text('host_name')
      .notNull()
      .references(() => hosts.name, { onDelete: 'cascade' }),
    deviceIndex: integer('device_index').notNull(),
    key: text('key').notNull(),
    value: text('value').notNull(),
    source: text('source', { enum: ['declared', 'detected'] }).notNull(),
    probe: text('probe'),
    seenAt: ts('seen_at').notNull().defaultNow(),
    /** Why the value could not be refreshed; null while its probe works. */
    stale: text('stale'),
  },
  (t) => [primaryKey({ columns: [t.hostName, t.deviceIndex, t.key, t.source] })],
);

/** A host's Markdown usage sheet (deviceIndex -1) or a device's note, with who changed it and when. */
export const sheets = pgTable(
  'sheets',
  {
    hostName: text('host_name')
      .notNull()
      .references(() => hosts.name, { onDelete: 'cascade' }),
    deviceIndex: integer('device_index').notNull(),
    body: text('body').notNull(),
    updatedBy: text('updated_by').notNull(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.hostName, t.deviceIndex] })],
);

/** Fencing numbers: every assignment of a job to a worker takes the next one. */
export const fenceSeq = pgSequence('fence_seq');

// The states and causes are core's (core/job-state.ts): the schema stores them.
export { JOB_STATES, type JobState };

export const JOB_KINDS = ['run', 'tty', 'hold', 'cp'] as const;
export type JobKind = (typeof JOB_KINDS)[number];

export const jobs = pgTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    /** run: a command with stored output; tty: an interactive terminal (output not stored);
     *  hold: a lease with a TTL and no command; cp: the short lease of one file copy. */
    kind: text('kind', { enum: JOB_KINDS }).notNull().default('run'),
    /** Submission order; ties on priority are broken by it. */
    seq: bigserial('seq', { mode: 'number' }).notNull(),
    submitter: text('submitter').notNull(),
    tokenId: bigint('token_id', { mode: 'number' }),
    argv: jsonb('argv').$type<string[]>().notNull(),
    /** rc run --name: not unique; a name stands for a job id where it picks one job (server/jobs/find.ts). */
    name: text('name'),
    /** rc run --comment: a note for people, shown by rc describe and the job's page. */
    comment: text('comment'),
    /** The submit's idempotency key (POST /api/jobs `idempotencyKey`; rc makes one per invocation): a retried submit with the same key and token gets this job back instead of a second one. */
    idempotencyKey: text('idempotency_key'),
    /** rc run --env: the variables set for its process. The values may be secrets: no view shows them, only the keys; they are wiped when the job ends (server/jobs/finish.ts endJob: the keys stay, with empty values). */
    env: jsonb('env').$type<Record<string, string>>(),
    cwd: text('cwd'),
    selector: text('selector').notNull().default(''),
    deviceName: text('device_name'),
    gpus: integer('gpus').notNull().default(1),
    /** rc run --gpu: the models (and counts) it may run on, in order of preference; null: --select and --gpus alone. `gpus` is then the first choice's until it starts, and what it got after. */
    gpuChoices: jsonb('gpu_choices').$type<GpuChoice[]>(),
    priority: integer('priority').notNull().default(0),
    state: text('state', { enum: JOB_STATES }).notNull().default('queued'),
    hostName: text('host_name'),
    /** Device names the job runs on, fixed when it starts. */
    devices: jsonb('devices').$type<string[]>(),
    /** Fencing number of the current assignment; a worker report carrying another is refused. */
    fence: bigint('fence', { mode: 'number' }),
    exitCode: integer('exit_code'),
    reason: text('reason'),
    /** Why it ended, as data (core/job-state.ts END_CAUSES); the reason is the same in words. */
    endCause: text('end_cause', { enum: END_CAUSES }),
    /** A stop asked of it before it ended: its reason, and its cause (STOP_CAUSES); the first one asked wins. */
    killRequestedBy: text('kill_requested_by'),
    killCause: text('kill_cause', { enum: END_CAUSES }),
    /** Watchdogs, in seconds; null means none. */
    maxRuntimeS: integer('max_runtime_s'),
    idleTimeoutS: integer('idle_timeout_s'),
    /** rc run --gpu-idle-timeout: killed (cause gpu_idle) once its GPUs have been idle (core/idle.ts) this long. */
    gpuIdleTimeoutS: integer('gpu_idle_timeout_s'),
    /** When the controller last warned that the hold had been idle RC_IDLE_HOLD_WARN (once per idle streak). */
    idleWarnedAt: ts('idle_warned_at'),
    /** How long it may wait in the queue before it ends `cancelled`. */
    waitTimeoutS: integer('wait_timeout_s'),
    /** A hold's time to live, asked for at submit; its clock starts when it starts. */
    holdTtlS: integer('hold_ttl_s'),
    /** When a running hold ends by itself (start + TTL, moved by `rc hold extend`). */
    expiresAt: ts('expires_at'),
    /** Set once its stored output reached the bound; later output was streamed, not kept. */
    outputTruncated: boolean('output_truncated').notNull().default(false),
    /** Why: 'output_limit' (the bound), 'disk_full' or 'store_behind' (output lost while it could not be stored: core/output-truncated.ts). */
    outputTruncatedReason: text('output_truncated_reason'),
    /** When the controller holding its worker sent a job claimed on another controller (null until then: that one may still put it back). */
    dispatchedAt: ts('dispatched_at'),
    /** A terminal's client was attached this recently, on some controller (each refreshes its own): the unattended grace counts from it. */
    ttySeenAt: ts('tty_seen_at'),
    /** Which run of the job this is (1 first); earlier runs' ends are in job_attempts. */
    attempt: integer('attempt').notNull().default(1),
    /** rc run --restarts: how many times a job whose host is lost is queued again. */
    restarts: integer('restarts').notNull().default(0),
    /** rc run --preemptible: may be stopped (with notice) for a job that can start nowhere else. */
    preemptible: boolean('preemptible').notNull().default(false),
    /** rc run --retry-on-preempt: a preempted run is queued again instead of ending the job. */
    retryOnPreempt: boolean('retry_on_preempt').notNull().default(false),
    /** rc run with a piped standard input: its first attempt's stdin is a pipe that POST /api/jobs/:id/stdin writes. */
    stdin: boolean('stdin').notNull().default(false),
    /**
     * Where it may run (seed 002 "How rrun picks"): `any` takes a free joined host first, else a provider machine
     * (an idle one, else one launched for it); `reserved` only joined hosts; `cloud` only provider machines.
     */
    placement: text('placement', { enum: ['any', 'reserved', 'cloud'] })
      .notNull()
      .default('any'),
    /** rc run --cloud: the provider (`local`) or account (`runpod/lab-b`) its machine comes from; null: any configured. */
    cloud: text('cloud'),
    /** rc run --max-price: US dollars an hour its machine may cost at most; null: no bound. */
    maxPricePerHour: doublePrecision('max_price_per_hour'),
    /** rc run --spot: spot offers compete with on-demand ones on price. */
    spot: boolean('spot').notNull().default(false),
    /** rc run --cpus, --ram, --disk (GiB), --cuda: what its machine must have at least (an offer's shape; joined hosts are not asked). */
    machineMin: jsonb('machine_min').$type<{ cpus?: number; ramGiB?: number; diskGiB?: number; cuda?: string }>(),
    /** rc run --keep: seconds the machine it ran on stays idle for the next job once it ends; null: 300. */
    keepS: integer('keep_s'),
    /** Set when an attempt ended and the job was queued again: it goes before the jobs of its priority that were not (core/schedule.ts queueOrder). */
    requeuedAt: ts('requeued_at'),
    /** Output seqs of earlier attempts: this attempt's worker numbers its chunks after them. */
    outputBase: integer('output_base').notNull().default(0),
    /** Devices (ids) being freed for this queued job by preemption, held back from other jobs until preempt_until. */
    preemptDevices: jsonb('preempt_devices').$type<number[]>(),
    preemptUntil: ts('preempt_until'),
    /** What a queued job waits on besides a device (null: nothing, it may start): `after` (jobs it depends on,
     *  job_deps), `array` (a free place under its array's --array %N cap), `retry` (its --retry-delay, until
     *  not_before). Only jobs with none are in the queue's indexes, so waiting ones never fill a pass's head. */
    waits: text('waits', { enum: ['after', 'array', 'retry'] }),
    /** A `retry` wait lasts until then. */
    notBefore: ts('not_before'),
    /** rc run --array: the array it is a task of (job_arrays.id), and its index there (RC_ARRAY_INDEX). */
    arrayId: text('array_id'),
    arrayIndex: integer('array_index'),
    /** rc run --retries: how many times a run that exits non-zero is queued again; `retried` counts those used. */
    retries: integer('retries').notNull().default(0),
    retryDelayS: integer('retry_delay_s').notNull().default(0),
    retried: integer('retried').notNull().default(0),
    createdAt: ts('created_at').notNull().defaultNow(),
    startedAt: ts('started_at'),
    endedAt: ts('ended_at'),
  },
  (t) => [
    index('jobs_queued_idx').on(t.priority, t.seq).where(sql`state = 'queued' and waits is null`),
    index('jobs_running_host_idx').on(t.hostName).where(sql`state = 'running'`),
    index('jobs_created_idx').on(t.createdAt),
    index('jobs_name_idx').on(t.name, t.seq).where(sql`name is not null`),
    /** rc jobs --mine: one token's jobs, newest first. */
    index('jobs_token_idx').on(t.tokenId, t.seq).where(sql`token_id is not null`),
    // GET /api/jobs pages newest first by seq (?before=), and a host's recent jobs (GET /api/hosts/:name).
    index('jobs_seq_idx').on(t.seq),
    index('jobs_host_seq_idx').on(t.hostName, t.seq).where(sql`host_name is not null`),
    index('jobs_queue_order_idx').on(t.priority.desc(), t.requeuedAt.asc().nullsLast(), t.seq).where(sql`state = 'queued' and waits is null`),
    // Fair share (server/jobs/sql/queue-order.ts): one token's queued jobs in the queue's order, and which tokens have jobs queued.
    index('jobs_queue_token_idx')
      .on(sql`coalesce(${t.tokenId}, 0)`, t.priority.desc(), t.requeuedAt.asc().nullsLast(), t.seq)
      .where(sql`state = 'queued' and waits is null`),
    // Queued jobs that wait on something else (server/jobs/ waits): found when that may be over.
    index('jobs_waiting_idx').on(t.waits, t.notBefore).where(sql`state = 'queued' and waits is not null`),
    index('jobs_array_idx').on(t.arrayId, t.arrayIndex).where(sql`array_id is not null`),
    index('jobs_preemptible_running_idx').on(t.hostName).where(sql`state = 'running' and preemptible`),
    uniqueIndex('jobs_token_idempotency_key').on(t.tokenId, t.idempotencyKey).where(sql`idempotency_key is not null`),
  ],
);

/** The earlier attempts of a job queued again (rc run --restarts, --retry-on-preempt): where each ran and how it ended. */
/** rc run --after / --after-any: a job starts only once each job it names has succeeded (`any`: ended however). */
export const jobDeps = pgTable(
  'job_deps',
  {
    jobId: text('job_id')
      .notNull()
      .references(() => jobs.id, { onDelete: 'cascade' }),
    afterId: text('after_id').notNull(),
    any: boolean('any').notNull().default(false),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.afterId] }), index('job_deps_after_idx').on(t.afterId)],
);

/** rc run --array: one submit of many tasks (jobs with array_id), at most max_running of them running at once. */
export const jobArrays = pgTable(
  'job_arrays',
  {
    id: text('id').primaryKey(),
    /** The indexes as given (`0-99`, `1,5,7`, `0-20:2`), without the %N cap. */
    spec: text('spec').notNull(),
    size: integer('size').notNull(),
    /** The %N cap; null: no cap. */
    maxRunning: integer('max_running'),
    name: text('name'),
    submitter: text('submitter').notNull(),
    tokenId: bigint('token_id', { mode: 'number' }),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('job_arrays_created_idx').on(t.createdAt)],
);

export const jobAttempts = pgTable(
  'job_attempts',
  {
    jobId: text('job_id')
      .notNull()
      .references(() => jobs.id, { onDelete: 'cascade' }),
    attempt: integer('attempt').notNull(),
    hostName: text('host_name'),
    devices: jsonb('devices').$type<string[]>(),
    fence: bigint('fence', { mode: 'number' }),
    state: text('state', { enum: JOB_STATES }).notNull(),
    endCause: text('end_cause', { enum: END_CAUSES }).notNull(),
    exitCode: integer('exit_code'),
    reason: text('reason'),
    startedAt: ts('started_at'),
    endedAt: ts('ended_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.attempt] })],
);

/** A lease is the only way to a device. The job's fence (from fence_seq) names its current assignment. */
export const leases = pgTable(
  'leases',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    deviceId: bigint('device_id', { mode: 'number' })
      .notNull()
      .references(() => devices.id, { onDelete: 'cascade' }),
    jobId: text('job_id')
      .notNull()
      .references(() => jobs.id, { onDelete: 'cascade' }),
    /** The fence of the assignment that took it: a restarted job's earlier attempt keeps its leases, by its own fence, until its worker says it is gone. */
    fence: bigint('fence', { mode: 'number' }),
    acquiredAt: ts('acquired_at').notNull().defaultNow(),
    releasedAt: ts('released_at'),
    /** Idle tracking from heartbeats (core/idle.ts): the current idle streak's start (null: busy at the last sample), */
    idleSince: ts('idle_since'),
    /** the last sample with a GPU signal (null: never one, e.g. a CPU slot: idleness unknown), */
    idleSeenAt: ts('idle_seen_at'),
    /** and the idle seconds in all (between samples both idle), for usage accounting. */
    idleS: doublePrecision('idle_s').notNull().default(0),
    /** Its device-seconds were added to its token's token_use (fair share: server/jobs/sql/charge-use.ts); until then they are read from here. */
    charged: boolean('charged').notNull().default(false),
  },
  (t) => [
    // The database, not only the code, guarantees one active lease per device.
    uniqueIndex('leases_one_active_per_device').on(t.deviceId).where(sql`released_at IS NULL`),
    index('leases_job_idx').on(t.jobId),
    // A job's active leases (its end releases them): without it the planner may AND the job's index with the whole active set.
    index('leases_active_job_idx').on(t.jobId).where(sql`released_at IS NULL`),
    // What fair share reads of the leases (the running ones, and those ended since the last charge): few, however long the history.
    index('leases_uncharged_idx').on(t.jobId).where(sql`not charged`),
  ],
);

export const jobOutput = pgTable(
  'job_output',
  {
    jobId: text('job_id')
      .notNull()
      .references(() => jobs.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    /** 1 stdout, 2 stderr */
    stream: smallint('stream').notNull(),
    data: bytea('data').notNull(),
    at: ts('at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.seq] })],
);

/**
 * A terminal's recent output, as it went by: how it reaches a client attached
 * to another controller than the worker's, and what a re-attach replays (on
 * any controller, after any restart). Only the last RC_TTY_REPLAY_BYTES or so
 * of each terminal are kept, and nothing of one that has ended.
 */
export const ttyOutput = pgTable(
  'tty_output',
  {
    jobId: text('job_id')
      .notNull()
      .references(() => jobs.id, { onDelete: 'cascade' }),
    /** Where the chunk starts in the terminal's stream, in bytes. */
    pos: bigint('pos', { mode: 'number' }).notNull(),
    data: bytea('data').notNull(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.pos] })],
);

/**
 * Who is attached to a terminal, one row per controller with clients of it:
 * every client of a terminal signed in with one token (server/tty-viewers.ts),
 * so another token's client is refused while these rows are fresh. A row is
 * refreshed while its clients stay and deleted when the last one leaves; one
 * whose controller died goes stale.
 */
export const ttyViewers = pgTable(
  'tty_viewers',
  {
    jobId: text('job_id')
      .notNull()
      .references(() => jobs.id, { onDelete: 'cascade' }),
    /** The controller the clients are attached to (its bus id). */
    controller: text('controller').notNull(),
    tokenId: bigint('token_id', { mode: 'number' }).notNull(),
    /** Who they are, for a refusal: client token "alice" through rc. */
    who: text('who').notNull(),
    since: ts('since').notNull(),
    seenAt: ts('seen_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.controller] })],
);

/**
 * A file step of rc cp (protocol/worker.ts FileOp) asked through one
 * controller of a worker connected to another: the request and its reply,
 * bytes included, wait here while the bus tells each side (server/remote-calls.ts).
 * A row lives for one call.
 */
export const workerCalls = pgTable('worker_calls', {
  id: text('id').primaryKey(),
  host: text('host').notNull(),
  event: text('event').notNull(),
  /** The request without its bytes, and its bytes. */
  op: jsonb('op').$type<Record<string, unknown>>().notNull(),
  opData: bytea('op_data'),
  /** The worker's reply without its bytes, and its bytes; null until answered. */
  reply: jsonb('reply').$type<Record<string, unknown>>(),
  replyData: bytea('reply_data'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const audit = pgTable('audit', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  at: ts('at').notNull().defaultNow(),
  actor: text('actor').notNull(),
  action: text('action').notNull(),
  target: text('target'),
  detail: jsonb('detail').$type<Record<string, unknown>>(),
  /** Where the request that did it came from: `<client address>, dashboard|token`; null for the controller's own acts (server/request-scope.ts). */
  origin: text('origin'),
  /** The token of the request that did it (server/request-scope.ts); null for the controller's own acts. */
  tokenId: bigint('token_id', { mode: 'number' }),
});

/** A machine's life (server/machines/): recorded (provisioning) before the provider is asked, booting once it took the request,
 *  idle or busy once its worker joined, terminating while the provider deletes it, terminated for good. offline: a reserved one, later. */
export const MACHINE_STATES = ['provisioning', 'booting', 'idle', 'busy', 'offline', 'terminating', 'terminated'] as const;

/**
 * A machine rented from a provider account (issue 34). The row, with the instance
 * name it will carry, is inserted before launch() is called, so an instance the
 * controller lost track of (a kill -9 mid-launch) is found by describe() or, having
 * no live row, deleted by the sweeper.
 */
export const machines = pgTable(
  'machines',
  {
    /** `m` and 10 base32 digits, like a job's id. */
    id: text('id').primaryKey(),
    /** The provider account (`local`, `runpod/lab-b`). */
    account: text('account').notNull(),
    /** `<prefix>-<id>`: the provider's name for it, and the sweeper's handle. */
    instanceName: text('instance_name').notNull().unique(),
    /** The offer it was launched from, whole (server/providers/provider.ts Offer). */
    offer: jsonb('offer').$type<Record<string, unknown>>().notNull(),
    pricePerHour: doublePrecision('price_per_hour').notNull(),
    spot: boolean('spot').notNull(),
    /** Its price is not real (the local provider's table): every view that shows it says so. */
    simulated: boolean('simulated').notNull(),
    state: text('state', { enum: MACHINE_STATES }).notNull().default('provisioning'),
    /** The rc host its worker joins as (registered with the machine; its credential is the instance's join key). */
    hostName: text('host_name').notNull(),
    /** Why it was terminated: `launch failed: …`, `rm`, `sweeper`, `gone: …`. */
    terminatedWhy: text('terminated_why'),
    createdAt: ts('created_at').notNull().defaultNow(),
    launchedAt: ts('launched_at'),
    readyAt: ts('ready_at'),
    terminatedAt: ts('terminated_at'),
    /** The job it was launched for (placement); at most one live machine per job, so two controllers never launch twice for one. */
    jobId: text('job_id'),
    /** An idle machine is deleted at this time (its last job's --keep after it ended); null while busy or booting. */
    idleUntil: ts('idle_until'),
  },
  (t) => [
    index('machines_live_idx').on(t.account).where(sql`state <> 'terminated'`),
    uniqueIndex('machines_job_live_idx').on(t.jobId).where(sql`state <> 'terminated'`),
  ],
);

/**
 * The provider accounts the controller's settings configured when it last
 * started (server/providers/accounts.ts): what a start compares its settings
 * with, to audit an account added, changed or removed. Never a credential:
 * a fingerprint of it.
 */
export const providerAccounts = pgTable('provider_accounts', {
  /** `local`, `runpod/lab-b`. */
  account: text('account').primaryKey(),
  provider: text('provider').notNull(),
  prefix: text('prefix').notNull(),
  image: text('image').notNull(),
  /** `sha256:` and 12 hex digits of the key's SHA-256; null for an account without one. */
  credential: text('credential'),
  recordedAt: ts('recorded_at').notNull().defaultNow(),
});

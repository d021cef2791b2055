// REST bodies, validated by the controller. A schema and its type share a name;
// protocol/wire.ts names their input types for the callers. The CLI never
// imports this file (zod stays out of its bundle).
import { z } from 'zod';
import { parseArraySpec } from '../core/array-spec';
import { envProblem, jobNameProblem, MAX_KEEP_S, MAX_RESTARTS } from '../core/job-options';
import { MAX_DEPENDENCIES, MAX_RETRIES, MAX_RETRY_DELAY_S } from '../core/dependencies';
import { HOST_NAME } from '../core/schedule';
import { parseGpuChoices } from '../core/gpu-choices';
import type { MachineMin } from '../core/machine-fit';
import { LIMIT_FLAGS, type LimitField, parseLimitTexts, TEAM_NAME, TEAM_NAME_RULE } from '../core/limits';

/**
 * Names shown on other people's terminals (submitters, and token names, which
 * the dashboard's terminals take as their submitter) hold nothing a terminal
 * would obey: no C0 controls, DEL, C1 controls, or bidi controls (which
 * reorder a line: U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069);
 * and nothing that hides in a name or breaks its line: zero-width characters
 * (U+200B–U+200D, U+2060, U+FEFF: `alice` and `ali\u200bce` look alike) and
 * the line and paragraph separators (U+2028, U+2029).
 */
const shownName = /^[^\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]*$/;
const SHOWN_NAME_RULE =
  'must be printable text, without control characters (C0, DEL, C1), bidi controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), invisible characters (U+200B-U+200D, U+2060, U+FEFF) or line separators (U+2028, U+2029)';

/** Who a job is for: every request that takes a submitter (jobs, kills, holds, rc cp, the terminal socket) checks it with this. */
export const Submitter = z
  .string()
  .trim()
  .min(1, 'submitter is required (1-200 characters)')
  .max(200, 'submitter is at most 200 characters')
  .regex(shownName, `submitter ${SHOWN_NAME_RULE}: it is shown on other people's terminals (rc ps, rc describe)`);

/** Where and how long a job (or a terminal, protocol/tty.ts) may run: the fields both share. */
export const JOB_PLACEMENT = {
  selector: z.string().max(4096).default(''),
  device: z.string().max(300).nullish(),
  cwd: z.string().max(4096).startsWith('/', 'cwd must be an absolute path on the device host').nullish(),
  gpus: z.number().int().min(1).max(8).default(1),
  /** rc run --gpu: GPU families or models and counts, any one of them in order of preference (`A100:2,H100`; core/gpu-choices.ts has the grammar). */
  gpu: z.string().max(1000).nullish(),
  priority: z.number().int().min(-10).max(10).default(0),
  /** false: fail with `busy` instead of queueing. */
  wait: z.boolean().default(true),
  /** Seconds in the queue before giving up (`cancelled`); null waits for ever. */
  waitTimeoutS: z
    .number()
    .int()
    .min(1)
    .max(30 * 86400)
    .nullish(),
  /** Watchdogs in seconds: the job is killed past them. idleTimeoutS 0 or null disables it. */
  maxRuntimeS: z
    .number()
    .int()
    .min(1)
    .max(30 * 86400)
    .nullish(),
  idleTimeoutS: z
    .number()
    .int()
    .min(0)
    .max(30 * 86400)
    .nullish(),
  /** rc run --gpu-idle-timeout: killed (cause gpu_idle) once its GPUs have been idle (core/idle.ts) this long; 1s to 30d. */
  gpuIdleTimeoutS: z
    .number({ error: 'gpuIdleTimeoutS must be a number of seconds' })
    .int('gpuIdleTimeoutS must be whole seconds')
    .min(1, 'gpuIdleTimeoutS must be at least 1 second (leave it out for none)')
    .max(30 * 86400, 'gpuIdleTimeoutS must be at most 30 days (2592000 seconds)')
    .nullish(),
};

const whole = (what: string, min: number, max: number) =>
  z
    .number({ error: `${what} must be a number` })
    .int(`${what} must be a whole number`)
    .min(min, `${what} must be at least ${min}`)
    .max(max, `${what} must be at most ${max}`)
    .nullish();

/**
 * Where a job may run and what a provider machine for it must be (issue 34, seed 002 "How rrun picks"). A job's
 * fields only (not a terminal's or a hold's): checkMachine refuses them there, and where they contradict.
 */
export const JOB_MACHINE = {
  /** `any` (the default): a free joined host first, else a provider machine; `reserved`: joined hosts only; `cloud`: provider machines only. */
  placement: z.enum(['any', 'reserved', 'cloud'], { error: 'placement is any, reserved (--reserved-only) or cloud (--cloud-only)' }).optional(),
  /** A provider (`local`, `runpod`) or one account (`runpod/lab-b`); which are configured is the controller's to say. Implies placement cloud. */
  cloud: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,39}(\/[A-Za-z0-9][A-Za-z0-9_.-]{0,63})?$/, 'cloud is a provider (local, runpod) or a provider/account (runpod/lab-b)')
    .nullish(),
  /** US dollars an hour the machine may cost at most. */
  maxPrice: z
    .number({ error: 'maxPrice must be a number of US dollars an hour' })
    .min(0.01, 'maxPrice must be at least 0.01 US dollars an hour')
    .max(10_000, 'maxPrice must be at most 10000 US dollars an hour')
    .nullish(),
  /** Spot offers compete with on-demand ones on price. */
  spot: z.boolean().optional(),
  /** What the machine must have at least: CPUs, GiB of RAM and of disk, a CUDA version (an offer's shape). */
  cpus: whole('cpus', 1, 1024),
  ramGiB: whole('ramGiB', 1, 65_536),
  diskGiB: whole('diskGiB', 1, 1_000_000),
  cuda: z
    .string()
    .regex(/^\d{1,2}\.\d{1,2}$/, 'cuda is a CUDA version such as 12.4')
    .nullish(),
  /** Seconds its machine stays idle for the next job once it ends (0: deleted at once). */
  keepS: whole('keepS', 0, MAX_KEEP_S),
};

/** A job's placement as stored: --cloud never takes a joined host (seed 002), so it makes an `any` job a `cloud` one. */
export function placementOf(j: { placement?: 'any' | 'reserved' | 'cloud'; cloud?: string | null }): 'any' | 'reserved' | 'cloud' {
  return j.placement ?? (j.cloud != null ? 'cloud' : 'any');
}

/** What a job's machine must have at least, as stored (jobs.machine_min); null: nothing asked. */
export function machineMinOf(j: { cpus?: number | null; ramGiB?: number | null; diskGiB?: number | null; cuda?: string | null }): MachineMin | null {
  const min: MachineMin = {
    ...(j.cpus != null ? { cpus: j.cpus } : {}),
    ...(j.ramGiB != null ? { ramGiB: j.ramGiB } : {}),
    ...(j.diskGiB != null ? { diskGiB: j.diskGiB } : {}),
    ...(j.cuda != null ? { cuda: j.cuda } : {}),
  };
  return Object.keys(min).length ? min : null;
}

/** Adds the issues of JOB_MACHINE's fields: a provider machine is for rc run with a command on no named device, and never for --reserved-only. */
export function checkMachine(
  j: {
    placement?: string;
    cloud?: string | null;
    maxPrice?: number | null;
    spot?: boolean;
    cpus?: number | null;
    ramGiB?: number | null;
    diskGiB?: number | null;
    cuda?: string | null;
    keepS?: number | null;
    kind: string;
    device?: string | null;
  },
  ctx: z.RefinementCtx,
): void {
  const say = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message, params: { code: 'bad_cloud' } });
  const flags: [string, string, boolean][] = [
    ['cloud', '--cloud', j.cloud != null],
    ['maxPrice', '--max-price', j.maxPrice != null],
    ['spot', '--spot', j.spot === true],
    ['cpus', '--cpus', j.cpus != null],
    ['ramGiB', '--ram', j.ramGiB != null],
    ['diskGiB', '--disk', j.diskGiB != null],
    ['cuda', '--cuda', j.cuda != null],
    ['keepS', '--keep', j.keepS != null],
  ];
  const given = flags.filter(([, , on]) => on);
  if (j.placement === 'cloud' || given.length) {
    const what = j.placement === 'cloud' ? '--cloud-only' : given[0]![1];
    if (j.kind !== 'run')
      say(j.placement === 'cloud' ? 'placement' : given[0]![0], `${what} is for rc run with a command: a provider machine runs jobs, not holds or terminals`);
    if (j.device != null) say('device', `-d names a device of a joined host, and ${what} is for a provider machine: give one or the other`);
  }
  if (j.placement === 'reserved')
    for (const [path, flag] of given) say(path, `${flag} is for a provider machine, and --reserved-only never launches one: drop one of them`);
}

/**
 * What a job (or a terminal, protocol/tty.ts) is called and what it gets in
 * its environment (core/job-options.ts has the rules; checkJobOptions tells
 * them). An issue carries its error code in `params.code` (bad_name, bad_env,
 * reserved_env): protocol/zod-message.ts's zodCode reads it.
 */
export const JOB_OPTIONS = {
  name: z.string().max(200).nullish(),
  /** rc run --comment: a note for people (why it runs, a ticket), shown by rc describe and the job's page; one line of at most 500 characters. */
  comment: z.string().max(500, 'a comment is at most 500 characters').regex(shownName, `a comment is one line of text: it ${SHOWN_NAME_RULE}`).nullish(),
  env: z.record(z.string().max(1000), z.string()).nullish(),
};

/** Adds the issues of a job's name and environment (JOB_OPTIONS) to `ctx`. */
export function checkJobOptions(j: { name?: string | null; env?: Record<string, string> | null }, ctx: z.RefinementCtx): void {
  const nameProblem = j.name == null ? null : jobNameProblem(j.name);
  if (nameProblem) ctx.addIssue({ code: 'custom', path: ['name'], message: nameProblem, params: { code: 'bad_name' } });
  const env = j.env == null ? null : envProblem(j.env);
  if (env) ctx.addIssue({ code: 'custom', path: env.key === null ? ['env'] : ['env', env.key], message: env.message, params: { code: env.code } });
}

/** Adds the issues of where a job may run (JOB_PLACEMENT): --gpu's grammar, and --gpu beside --gpus or -d. Their code is bad_gpu. */
export function checkPlacement(j: { gpu?: string | null; gpus: number; device?: string | null }, ctx: z.RefinementCtx): void {
  if (j.gpu == null) return;
  const say = (message: string) => ctx.addIssue({ code: 'custom', path: ['gpu'], message, params: { code: 'bad_gpu' } });
  const parsed = parseGpuChoices(j.gpu);
  if (!parsed.ok) say(parsed.message);
  else if (j.gpus !== 1) say('--gpu gives the count of each choice (A100:2); drop --gpus');
  else if (j.device != null) say('-d names one device and --gpu a choice of models: give one or the other');
}

/** The longest a hold may last, from its start or from an extend (documented in docs/cli.md, "Holds"). */
export const HOLD_MAX_TTL_S = 24 * 3600;

const holdTtl = z
  .number()
  .int()
  .min(1)
  .max(HOLD_MAX_TTL_S, `a hold's TTL is at most ${HOLD_MAX_TTL_S / 3600}h; extend it later with rc hold extend`);

/** rc run --after / --after-any: 1 to MAX_DEPENDENCIES job ids or names, each given once. */
function dependencyList(field: 'after' | 'afterAny') {
  return z
    .array(z.string().trim().min(1, `${field}: a job id or name may not be empty`).max(200, `${field}: a job id or name is at most 200 characters`))
    .min(1, `${field}: name at least one job (an id or a name), or leave it out`)
    .max(MAX_DEPENDENCIES, `${field}: at most ${MAX_DEPENDENCIES} jobs`);
}

/** A submit's fields, unchecked as a whole (SubmitJob adds the rules across fields): the MCP tools pick theirs from it. */
export const SubmitJobFields = z
  .object({
    /** run: a command; hold: a lease with a TTL and no command (tty: see the terminal socket). */
    kind: z.enum(['run', 'tty', 'hold']).default('run'),
    argv: z
      .array(z.string().max(128 * 1024))
      .max(4096)
      .default([]),
    /** Required for a hold, refused otherwise. */
    ttlS: holdTtl.nullish(),
    submitter: Submitter,
    /** rc run --restarts: a job whose host is lost is queued again (at the front of its priority) up to this many times. */
    restarts: z
      .number()
      .int()
      .min(0)
      .max(MAX_RESTARTS, `at most ${MAX_RESTARTS} restarts; a job lost that often needs a person to look at its hosts`)
      .optional(),
    /** rc run --after: jobs (ids or names) that must each have succeeded before this one starts. */
    after: dependencyList('after').optional(),
    /** rc run --after-any: jobs (ids or names) that must each have ended, however, before this one starts. */
    afterAny: dependencyList('afterAny').optional(),
    /** rc run --retries: a run whose command exits non-zero is queued again (at the front of its priority) up to this many times. */
    retries: z
      .number()
      .int('retries must be a whole number')
      .min(0, 'retries must be 0 or more')
      .max(MAX_RETRIES, `at most ${MAX_RETRIES} retries; a command that fails that often needs a person to look at it`)
      .optional(),
    /** rc run --retry-delay: seconds between a failed attempt and its retry (default 0). */
    retryDelayS: z
      .number()
      .int('retryDelayS must be whole seconds')
      .min(0, 'retryDelayS must be 0 or more')
      .max(MAX_RETRY_DELAY_S, `retryDelayS is at most ${MAX_RETRY_DELAY_S / 3600}h`)
      .optional(),
    /** rc run --preemptible: may be stopped, with notice, for a job that can start nowhere else. */
    preemptible: z.boolean().optional(),
    /** rc run --retry-on-preempt: queued again (at the front of its priority) each time it is preempted. */
    retryOnPreempt: z.boolean().optional(),
    /** rc run with a piped standard input: the command's stdin is a pipe that POST /api/jobs/:id/stdin writes (else /dev/null). */
    stdin: z.boolean().optional(),
    /**
     * Makes a retried submit safe: a submit with a key this token already used gets that job back (200, the stream
     * of that job) instead of a second job. rc makes one per invocation; any client may send one (a UUID, say).
     */
    idempotencyKey: z
      .string()
      .min(8, 'idempotencyKey must be 8 to 128 characters')
      .max(128, 'idempotencyKey must be 8 to 128 characters')
      .regex(/^[A-Za-z0-9._:-]+$/, 'idempotencyKey may hold only letters, digits and . _ : -')
      .optional(),
    ...JOB_PLACEMENT,
    ...JOB_MACHINE,
    ...JOB_OPTIONS,
  })
  .strict();

export const SubmitJob = SubmitJobFields.superRefine((j, ctx) => {
  checkJobOptions(j, ctx);
  checkPlacement(j, ctx);
  checkMachine(j, ctx);
  if (j.retryOnPreempt && !j.preemptible)
    ctx.addIssue({
      code: 'custom',
      path: ['retryOnPreempt'],
      message: 'only a --preemptible job is preempted: add --preemptible, or drop --retry-on-preempt',
    });
  if (j.kind !== 'run' && (j.restarts ?? 0) > 0)
    ctx.addIssue({
      code: 'custom',
      path: ['restarts'],
      message: `a ${j.kind === 'hold' ? 'hold' : 'terminal'} is not started over: --restarts is for rc run with a command`,
    });
  if (j.kind !== 'run' && (j.after?.length || j.afterAny?.length))
    ctx.addIssue({ code: 'custom', path: ['after'], message: '--after and --after-any are for rc run with a command' });
  if (j.wait === false && (j.after?.length || j.afterAny?.length))
    ctx.addIssue({ code: 'custom', path: ['wait'], message: 'wait: false starts now or never, and after waits for other jobs: give one or the other' });
  if (j.kind !== 'run' && ((j.retries ?? 0) > 0 || (j.retryDelayS ?? 0) > 0))
    ctx.addIssue({ code: 'custom', path: ['retries'], message: '--retries and --retry-delay are for rc run with a command' });
  if ((j.retryDelayS ?? 0) > 0 && !j.retries)
    ctx.addIssue({ code: 'custom', path: ['retryDelayS'], message: '--retry-delay needs --retries: without retries there is nothing to delay' });
  if (j.kind !== 'run' && j.stdin)
    ctx.addIssue({
      code: 'custom',
      path: ['stdin'],
      message: `a ${j.kind === 'hold' ? 'hold runs no command' : 'terminal takes its input as keys'}: stdin is for rc run`,
    });
  if (j.kind === 'hold' && j.preemptible)
    ctx.addIssue({ code: 'custom', path: ['preemptible'], message: 'a hold is never preempted: --preemptible is for rc run' });
  const say = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  if (j.kind === 'hold') {
    if (j.ttlS == null) say('ttlS', 'a hold needs a TTL (--ttl 2h); it ends by itself when the TTL runs out');
    if (j.argv.length) say('argv', 'a hold runs no command: drop the command, or use rc run');
    if (j.maxRuntimeS != null || j.idleTimeoutS) say('maxRuntimeS', 'a hold has a TTL instead of --max-runtime and --idle-timeout');
    if (j.gpuIdleTimeoutS != null)
      say('gpuIdleTimeoutS', 'a hold has no --gpu-idle-timeout: the fleet releases idle holds by its own setting (RC_IDLE_HOLD_RELEASE)');
    if (j.env != null && Object.keys(j.env).length) say('env', 'a hold runs no command, so it has no environment to set: drop --env');
  } else {
    if (j.kind === 'run' && j.argv.length === 0) say('argv', 'a command is required');
    if (j.ttlS != null) say('ttlS', 'only a hold has a TTL; bound a job with --max-runtime');
  }
});
export type SubmitJob = z.infer<typeof SubmitJob>;

/**
 * rc run --array: one submit of many tasks, each a run of `job` (its flags, its command) with
 * RC_ARRAY_ID and RC_ARRAY_INDEX set. `array` is the spec (core/array-spec.ts: `0-99%8`).
 * Its issues carry the code bad_array.
 */
export const SubmitArray = z
  .object({
    array: z.string().max(1000, 'an array spec is at most 1000 characters'),
    job: SubmitJob,
  })
  .strict()
  .superRefine((a, ctx) => {
    const say = (path: string[], message: string) => ctx.addIssue({ code: 'custom', path, message, params: { code: 'bad_array' } });
    const spec = parseArraySpec(a.array);
    if (!spec.ok) say(['array'], spec.message);
    if (a.job.kind !== 'run') say(['job', 'kind'], "an array's tasks are runs of a command: a hold or a terminal is not an array task");
    if (!a.job.wait) say(['job', 'wait'], 'an array always queues its tasks: drop --no-wait');
    if (a.job.stdin) say(['job', 'stdin'], "an array's tasks read no stdin: give --no-stdin, or --detach");
    if (a.job.idempotencyKey !== undefined) say(['job', 'idempotencyKey'], 'an array is submitted once: drop idempotencyKey');
  });
export type SubmitArray = z.infer<typeof SubmitArray>;

/** Releasing a hold (its holder, or an admin). */
export const ReleaseHold = z.object({ submitter: Submitter }).strict();

/** Extending a running hold: it then ends ttlS from now. */
export const ExtendHold = z.object({ submitter: Submitter, ttlS: holdTtl }).strict();

export const KillJob = z
  .object({
    submitter: Submitter,
    reason: z.string().max(500).optional(),
  })
  .strict();
export type KillJob = z.infer<typeof KillJob>;

const hostNameRule = z.string().min(1).max(63).regex(HOST_NAME, 'host names are letters, digits, . _ - and start with a letter or digit');

export const RegisterHost = z.object({ name: hostNameRule }).strict();
export type RegisterHost = z.infer<typeof RegisterHost>;

/** rc admin host off: why (optional; shown in rc devices, describe and the dashboard, and audited). */
export const TurnHostOff = z.object({ reason: z.string().trim().max(500).optional() }).strict();
/** rc admin host on and rm take nothing. */
export const NoBody = z.object({}).strict();

/** Clearing a quarantine: the reason is required, it goes into the audit log. */
export const ClearQuarantine = z
  .object({
    reason: z.string().trim().min(3, 'say why the device is fine again (--reason "...")').max(500),
  })
  .strict();

/** The longest prefix a token may be bound to: its dashboard terminals are `<prefix>web`, itself a submitter. */
const BINDING_PREFIX_MAX = 200 - 'web'.length;

/**
 * A client token's binding (rc admin token create --submitter): a value ending in
 * `/` binds a prefix (the token acts only as names that start with it), anything
 * else one exact name. It is itself a submitter, by the same rule.
 */
export const TokenSubmitter = Submitter.refine(
  (v) => !v.endsWith('/') || v.length <= BINDING_PREFIX_MAX,
  `a prefix binding is at most ${BINDING_PREFIX_MAX} characters, so that <prefix>web (its dashboard terminals) is a submitter too`,
);

export const CreateToken = z
  .object({
    /** web:<name> is the submitter of the dashboard's terminals (of an unbound token). */
    name: z.string().trim().min(1).max(200).regex(shownName, `a token name ${SHOWN_NAME_RULE}: web:<name> is the submitter of its dashboard terminals`),
    kind: z.enum(['client', 'admin']).default('client'),
    /** Bind the token to a submitter name or prefix (TokenSubmitter); absent or null: unbound. */
    submitter: TokenSubmitter.nullish(),
    /** The team its use is charged to (it must exist); absent: `default`. */
    team: z.string().regex(TEAM_NAME, TEAM_NAME_RULE).nullish(),
  })
  .strict()
  .superRefine((t, ctx) => {
    if (t.kind === 'admin' && t.submitter != null) {
      ctx.addIssue({
        code: 'custom',
        path: ['submitter'],
        message: "an admin token acts as anyone (it may stop anyone's job, audited), so it cannot be bound; bind a client token",
      });
    }
  });
export type CreateToken = z.infer<typeof CreateToken>;

export const HostName = hostNameRule;

/** A team's weight in fair share: more than 0, at most 1000. */
const teamShare = z
  .number({ error: 'share must be a number, such as 1 or 2.5' })
  .gt(0, 'share must be more than 0 (a team with 2 gets twice the share of a team with 1)')
  .max(1000, 'share is at most 1000');

/** rc admin team create. */
export const CreateTeam = z.object({ name: z.string().regex(TEAM_NAME, TEAM_NAME_RULE), share: teamShare.default(1) }).strict();
/** rc admin team set. */
export const SetTeam = z.object({ share: teamShare }).strict();
/** rc admin token set: the team it is charged to from now on. */
export const SetToken = z.object({ team: z.string().regex(TEAM_NAME, TEAM_NAME_RULE) }).strict();

/**
 * rc admin limit set: each limit as its flag takes it (`4`, `200/week`, `12h`; core/limits.ts has the rules),
 * null or `none` clearing it; one left out is kept. An issue names the flag.
 */
const limitText = z
  .union([z.string().max(50), z.number()])
  .nullable()
  .optional();
export const SetLimits = z
  .object(Object.fromEntries(Object.keys(LIMIT_FLAGS).map((k) => [k, limitText])) as Record<LimitField, typeof limitText>)
  .strict()
  .transform((b, ctx) => {
    const parsed = parseLimitTexts(b);
    if (parsed.ok) return parsed.patch;
    ctx.addIssue({ code: 'custom', message: parsed.message });
    return z.NEVER;
  });

export const WriteSheet = z
  .object({
    /** Markdown; an empty string removes the sheet. */
    body: z.string().max(64 * 1024, 'a sheet is at most 64 KiB of Markdown'),
    /**
     * The updatedAt of the version this edit started from (null: there was no
     * sheet). When given and the stored one differs, the write is refused
     * (`conflict`): someone saved meanwhile. Absent: last write wins (rc admin sheet).
     */
    ifUpdatedAt: z.iso.datetime({ offset: true }).nullish(),
  })
  .strict();
export type WriteSheet = z.infer<typeof WriteSheet>;

export const Explain = z
  .object({
    selector: z.string().max(4096).default(''),
    device: z.string().max(300).nullish(),
    /** rc run --explain --gpu: each choice's matches, free count and queue. */
    gpu: z.string().max(1000).nullish(),
    /** rc run --explain --gpus: how many devices on one host its bound (freesBy) waits for. */
    gpus: JOB_PLACEMENT.gpus,
  })
  .strict()
  .superRefine((j, ctx) => checkPlacement(j, ctx));
export type Explain = z.infer<typeof Explain>;

/** The browser's sign-in (POST /api/session): a token pasted into the sign-in page. */
export const SignIn = z.object({ token: z.string().trim().min(1).max(200) });

// The controller's environment, parsed once at start-up.
import { join } from 'node:path';
import { z } from 'zod';
import { ROOT } from './paths';
import { parseDuration } from '../core/duration';
import { parseIdleSetting } from '../core/idle';
import { zodMessage } from '../protocol/zod-message';
import { SAMPLE_RETENTION } from './sample-retention';
import { databaseUrlProblem } from './database-url';
import { parseLocalProviderConfig } from './providers/local-config';
import { RUNPOD_GRAPHQL_URL, RUNPOD_REST_URL, runpodAccount } from './providers/runpod';

const flag = z.enum(['0', '1', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/** An idle setting: a duration (1s to 30d) or `off` (core/idle.ts parseIdleSetting); seconds, or null when off. */
const idleSetting = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const r = parseIdleSetting(text, parseDuration);
      if ('problem' in r) {
        ctx.addIssue({ code: 'custom', message: r.problem });
        return z.NEVER;
      }
      return r.seconds;
    });

/** An optional setting that `VAR=` (empty) leaves unset, as if it were not there. */
const unsetWhenEmpty = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const httpUrl = (name: string, fallback: string) =>
  z
    .string()
    .url()
    .refine((u) => /^https?:\/\//.test(u), `${name} must be an http:// or https:// URL`)
    .default(fallback);

const Settings = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Address to listen on; 0.0.0.0 to accept workers from other hosts. */
  RC_BIND: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .superRefine((url, ctx) => {
      const problem = databaseUrlProblem(url);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
  /** The dashboard's address as browsers reach it, when a proxy (TLS) stands in front: https://rc.example.org. */
  RC_PUBLIC_URL: z
    .string()
    .url()
    .refine((u) => /^https?:\/\//.test(u), 'RC_PUBLIC_URL must be an http:// or https:// URL')
    .optional(),
  RC_DATA_DIR: z.string().min(1).default(join(ROOT, '.rc')),
  RC_PG_PORT: z.coerce.number().int().min(1).max(65535).default(54329),
  RC_LOCAL_WORKER: flag.default(true),
  RC_DASHBOARD: flag.default(true),
  /** Seconds a worker may be silent before its host is offline and its jobs lost. */
  RC_HOST_TIMEOUT_S: z.coerce.number().positive().max(3600).default(15),
  /** Milliseconds the controller's event loop may stand still before it counts as paused (server/pause-watch.ts). */
  RC_PAUSE_GAP_MS: z.coerce.number().int().min(100).max(600_000).default(2000),
  /** Output kept per job (bytes); the rest is streamed live but not stored. */
  RC_OUTPUT_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 ** 3)
    .default(16 * 1024 * 1024),
  /** Output received and waiting for the database (bytes) past which workers are cut off and keep it themselves. */
  RC_OUTPUT_WAITING_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(1024 ** 3)
    .default(64 * 1024 * 1024),
  /** Seconds a multi-GPU job waits before devices are held back for it (no starvation by one-GPU jobs). */
  RC_RESERVE_AFTER_S: z.coerce.number().min(0).max(86400).default(30),
  /** Fair share's half-life of use (core/fair-share.ts): a duration (1h to 365d), seconds. */
  RC_FAIRSHARE_HALF_LIFE: z
    .string()
    .default('7d')
    .transform((text, ctx) => {
      const s = parseDuration(text);
      if (s === null || s < 3600 || s > 365 * 86400) {
        ctx.addIssue({ code: 'custom', message: `a duration from 1h to 365d such as 7d or 36h, not ${JSON.stringify(text.slice(0, 50))}` });
        return z.NEVER;
      }
      return s;
    }),
  /** Seconds of notice a preempted --preemptible job gets: SIGTERM (and its RC_PREEMPT_FILE) at the start, SIGKILL at the end. */
  RC_PREEMPT_NOTICE_S: z.coerce.number().int().min(1).max(3600).default(60),
  /** --max-runtime (seconds) of a job that gives none; 0: none (core/runtime-limit.ts). */
  RC_MAX_RUNTIME_DEFAULT_S: z.coerce
    .number()
    .int()
    .min(0)
    .max(30 * 86400)
    .default(24 * 3600),
  /** The longest --max-runtime a job may ask for (seconds); 0: no maximum. */
  RC_MAX_RUNTIME_LIMIT_S: z.coerce
    .number()
    .int()
    .min(0)
    .max(30 * 86400)
    .default(7 * 86400),
  /** Seconds past --max-runtime/--idle-timeout before the controller ends a job its worker did not kill. */
  RC_WATCHDOG_GRACE_S: z.coerce.number().min(0).max(3600).default(30),
  /** Seconds a terminal (rc run --tty, the dashboard's) may have nobody attached before its job ends. */
  RC_TTY_GRACE_S: z.coerce.number().min(1).max(86400).default(45),
  /** A hold whose GPUs are idle (core/idle.ts) this long: its rc hold warns on stderr, the dashboard marks it. `off` turns it off. */
  RC_IDLE_HOLD_WARN: idleSetting('30m'),
  /** A hold idle this long ends (cause idle_hold), audited as hold.idle_release. Default off. */
  RC_IDLE_HOLD_RELEASE: idleSetting('off'),
  /** Bytes of a terminal's recent output kept for a re-attach (reload, dropped connection). */
  RC_TTY_REPLAY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(256 * 1024),
  /** Refused tokens a client address may present per RC_AUTH_FAILURE_WINDOW_S before it is refused (server/auth-limit.ts); 0: no limit. */
  RC_AUTH_FAILURES: z.coerce.number().int().min(0).max(100_000).default(20),
  RC_AUTH_FAILURE_WINDOW_S: z.coerce.number().int().min(1).max(86_400).default(60),
  /** Days every heartbeat's GPU sample is kept; older ones are thinned to 10-minute rows (server/sample-retention.ts). */
  RC_SAMPLES_RAW_DAYS: z.coerce.number().int().min(1).max(30).default(SAMPLE_RETENTION.rawDays),
  /** Days the 10-minute rows are kept. */
  RC_SAMPLES_COARSE_DAYS: z.coerce.number().int().min(1).max(3650).default(SAMPLE_RETENTION.coarseDays),
  /** The local provider (server/providers/local.ts): a JSON file's path or the JSON itself; off when unset. */
  RC_LOCAL_PROVIDER: z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined || text === '') return undefined;
      const r = parseLocalProviderConfig(text);
      if ('problem' in r) {
        ctx.addIssue({ code: 'custom', message: r.problem });
        return z.NEVER;
      }
      return r.config;
    }),
  /** Seconds between the sweeper's passes (server/machines/sweeper.ts). */
  RC_SWEEP_S: z.coerce.number().int().min(1).max(86_400).default(600),
  /** Seconds a provider has to answer a launch; a machine recorded longer ago whose launch never answered is terminated. */
  RC_LAUNCH_TIMEOUT_S: z.coerce.number().int().min(1).max(3600).default(300),
  /** Live provider machines at most (server/machines/placement.ts; seed 002: 16); more jobs wait. */
  RC_MAX_MACHINES: z.coerce.number().int().min(0).max(10_000).default(16),
  /** A RunPod account's API key (server/providers/runpod.ts): the account is off when unset. Never passed to a worker or a job. */
  RC_RUNPOD_API_KEY: unsetWhenEmpty(
    z.string().regex(/^[A-Za-z0-9_-]{8,256}$/, 'a RunPod API key is 8 to 256 letters, digits, _ and - (no spaces, quotes or line ends: paste the key alone)'),
  ),
  /** The image RunPod's pods run: it needs what the worker's install script needs. */
  RC_RUNPOD_IMAGE: unsetWhenEmpty(
    z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}$/, 'an image reference such as docker.io/library/node:22 (no spaces)'),
  ),
  /** The account's name: `--cloud runpod/<name>`. */
  RC_RUNPOD_ACCOUNT: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'an account name is 1 to 32 lower-case letters, digits, _ and -, starting with a letter or digit')
    .default('default'),
  /** Its pods' names are `<prefix>-<machine id>`: the sweeper deletes only pods whose names start so. */
  RC_RUNPOD_PREFIX: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,31}$/, 'a prefix is 1 to 32 lower-case letters, digits and -, starting with a letter or digit')
    .default('rc'),
  RC_RUNPOD_REST_URL: httpUrl('RC_RUNPOD_REST_URL', RUNPOD_REST_URL),
  RC_RUNPOD_GRAPHQL_URL: httpUrl('RC_RUNPOD_GRAPHQL_URL', RUNPOD_GRAPHQL_URL),
});

/** One row of a settings table in docs/operators.md: npm run docs writes the tables from these (scripts/docs.ts). */
export interface SettingDoc {
  /** As the table shows it; a literal in backticks is checked against the schema's default (test/unit/docs-tables.test.ts). */
  default: string;
  meaning: string;
}

/** Every variable of Settings, in the docs' order, with what it does: a variable without its row does not compile. */
export const CONTROLLER_SETTINGS: Record<keyof typeof Settings.shape, SettingDoc> = {
  PORT: { default: '`8080`', meaning: 'HTTP port: API, worker sockets and dashboard. `0` picks a free port.' },
  RC_BIND: { default: '`127.0.0.1`', meaning: 'Address to listen on. `0.0.0.0` accepts workers from other hosts.' },
  RC_PUBLIC_URL: {
    default: 'unset',
    meaning:
      'The dashboard\'s address as browsers reach it, when a TLS proxy stands in front (`https://rc.example.org`): the session cookie is then `Secure`, and that origin passes the cross-site check (see "Security notes").',
  },
  DATABASE_URL: {
    default: 'unset',
    meaning:
      'Use this Postgres instead of the embedded one. Migrations are applied at start-up. Several servers, `db1:5432,db2:5432`, with `?target_session_attrs=read-write`: the primary among them (see "A Postgres whose primary moves").',
  },
  RC_DATA_DIR: {
    default: '`<checkout>/.rc`',
    meaning:
      "`local.json`, `worker.json`, the local worker's `workspace/` (its jobs') and `scratch/`, and with the embedded Postgres `pgdata/` and `pg.json`. As root it is 0711: the local worker's jobs, which run as another user, pass through it to their workspace and open nothing else there.",
  },
  RC_PG_PORT: { default: '`54329`', meaning: 'Port of the embedded Postgres.' },
  RC_LOCAL_WORKER: { default: '`1`', meaning: '`0` starts no local worker.' },
  RC_DASHBOARD: { default: '`1`', meaning: '`0` serves no dashboard (non-API paths answer 404).' },
  RC_HOST_TIMEOUT_S: {
    default: '`15`',
    meaning:
      'A worker that sends no heartbeat for this long puts its host offline, and its running jobs end `lost`. Workers heartbeat every third of it. A dropped connection makes the host `away`; its jobs keep running until the timeout. A lost job keeps its devices until its worker is back: the worker kills what its previous run left before it says hello, and the hello frees them. A host the controller hears from over its connection is never timed out, and nothing is timed out until the database has answered for a whole timeout (see "When the database is away").',
  },
  RC_PAUSE_GAP_MS: {
    default: '`2000`',
    meaning:
      'A controller whose own event loop stood still this long (milliseconds, measured on the monotonic clock: SIGSTOP, a paused VM, a swap storm) heard nothing meanwhile: it then gives every host a whole `RC_HOST_TIMEOUT_S` before it times any out, and logs the pause (see "A frozen controller").',
  },
  RC_OUTPUT_LIMIT_BYTES: {
    default: '`16777216` (16 MiB)',
    meaning: "Output stored per job, from 1024 to 1073741824. Past it, output is streamed live but not stored, and the job's `outputTruncated` is true.",
  },
  RC_OUTPUT_WAITING_BYTES: {
    default: '`67108864` (64 MiB)',
    meaning:
      "Output received and not yet stored that the controller holds (65536–1073741824), while its database is out of disk space or away. Past it, workers are cut off and keep their output themselves (their `RC_OUTPUT_BUFFER_BYTES`); it is resent once the database stores again. Output that outgrew both is lost, and its job's `outputTruncated` is true with the reason (`disk_full`).",
  },
  RC_PREEMPT_NOTICE_S: {
    default: '`60`',
    meaning:
      'Seconds of notice a preempted `rc run --preemptible` job gets: the deadline in its `RC_PREEMPT_FILE` and SIGTERM at the start, SIGKILL at the end (1–3600).',
  },
  RC_MAX_RUNTIME_DEFAULT_S: {
    default: '`86400`',
    meaning:
      '`--max-runtime` (seconds) of an `rc run` job that gives none; `rc run` tells each submitter so once on stderr (per controller), and `rc ps` shows it. `0`: none. Holds (their TTL) and terminals are not bounded by it.',
  },
  RC_MAX_RUNTIME_LIMIT_S: {
    default: '`604800`',
    meaning: 'The longest `--max-runtime` a job may ask for (seconds; a week): more is refused with `bad_request`. `0`: no maximum.',
  },
  RC_WATCHDOG_GRACE_S: {
    default: '`30`',
    meaning: 'Seconds past `--max-runtime` or `--idle-timeout` before the controller ends a job whose worker did not report the kill (0–3600).',
  },
  RC_RESERVE_AFTER_S: {
    default: '`30`',
    meaning: 'Seconds a multi-GPU job waits before matching devices are held back for it (0–86400). See [docs/cli.md, "Queue"](cli.md#queue).',
  },
  RC_FAIRSHARE_HALF_LIFE: {
    default: '`7d`',
    meaning:
      'Fair share\'s half-life: within one priority the queue goes first to the jobs of the team (then the token) furthest below its share of recent use, and a device-hour held (busy or idle) weighs half as much this long after its lease ended. A duration from `1h` to `365d`. See [docs/cli.md, "Queue"](cli.md#queue).',
  },
  RC_IDLE_HOLD_WARN: {
    default: '`30m`',
    meaning:
      "A hold whose GPUs have been idle this long (utilisation at most 1% and no compute process, from the heartbeats; CPU slots have no signal and are never idle) is warned of: its `rc hold` prints `rc: hold … has been idle for …` on stderr, once per idle streak, and the dashboard's holds page marks it. A duration from `1s` to `30d`, or `off`.",
  },
  RC_IDLE_HOLD_RELEASE: {
    default: '`off`',
    meaning:
      'A hold idle this long is released by the controller at once: it ends `killed` with cause `idle_hold`, no exit code of its own and the reason `idle hold released: its GPUs were idle for <dur> (RC_IDLE_HOLD_RELEASE)` (`rc hold`, `rc jobs`, `rc describe` and the dashboard say that one sentence), `rc hold` and `rc wait` exit 216, and the audit log gets `hold.idle_release` (actor `controller`). A duration from `1s` to `30d`, or `off`.',
  },
  RC_TTY_GRACE_S: {
    default: '`45`',
    meaning: 'Seconds a terminal (`rc run --tty`, the dashboard\'s) may have nobody attached before its job ends (1–86400). See "Interactive terminals".',
  },
  RC_TTY_REPLAY_BYTES: {
    default: '`262144` (256 KiB)',
    meaning:
      'Recent output kept per terminal (in Postgres, `tty_output`, so any controller, restarted or not, has it) and replayed when a client re-attaches (1024 to 67108864).',
  },
  RC_AUTH_FAILURES: {
    default: '`20`',
    meaning:
      'Refused tokens (a bearer token, a session cookie, a host credential; on the API, a socket\'s handshake or the sign-in page) one client address may present within `RC_AUTH_FAILURE_WINDOW_S`. Past it, nothing from that address is checked, a valid token included, until the window has passed: `429 rate_limited` with `Retry-After`. The address is the connection\'s (IPv6: its /64); rc trusts no `X-Forwarded-For`, so behind a proxy every client shares its address (see "Token guesses"). `0`: no limit (0–100000).',
  },
  RC_AUTH_FAILURE_WINDOW_S: { default: '`60`', meaning: 'The window of `RC_AUTH_FAILURES`, in seconds (1–86400).' },
  RC_SAMPLES_RAW_DAYS: {
    default: '`1`',
    meaning:
      'Days every heartbeat\'s GPU sample is kept; older ones are thinned to one row per GPU and 10 minutes (1–30). See "What rc keeps, and for how long".',
  },
  RC_SAMPLES_COARSE_DAYS: { default: '`90`', meaning: 'Days the 10-minute rows are kept (1–3650, and at least `RC_SAMPLES_RAW_DAYS`).' },
  RC_LOCAL_PROVIDER: {
    default: 'unset',
    meaning:
      "The local provider: machines are worker containers on this machine's Docker, priced from a table (simulated). A JSON file's path, or the JSON itself: `offers` (the price table), `prefix` (`rclocal`), `image` (`rc-job:stock`), and the faults it acts out for tests (`launchDelayMs`, `failLaunch`, `noCapacity`, `errorAfterCreate`, `spotLifetimeMs`, `spotTakeBacks`). A wrong one stops the controller at start-up, saying what is wrong.",
  },
  RC_SWEEP_S: {
    default: '`600`',
    meaning:
      "Seconds between the sweeper's passes (1–86400): each provider account's instances whose names carry its prefix and that no machine owns are deleted, each audited (`machine.sweep`); nothing without the prefix is touched, and one controller sweeps at a time.",
  },
  RC_MAX_MACHINES: {
    default: '`16`',
    meaning:
      'Live provider machines at most (0–10000; joined hosts do not count): a job that wants a machine past it waits, saying so, until one is deleted. `0` launches none.',
  },
  RC_LAUNCH_TIMEOUT_S: {
    default: '`300`',
    meaning:
      'Seconds a provider has to answer a launch (1–3600). A machine recorded longer ago whose launch never answered (its controller stopped mid-launch) is terminated, whatever the provider made of it.',
  },
  RC_RUNPOD_API_KEY: {
    default: 'unset',
    meaning:
      'A RunPod account\'s API key (sent as `Authorization: Bearer`): with it, the controller rents machines from RunPod (see "Machines from providers: RunPod"). Unset: no RunPod account. Letters, digits, `_` and `-` only. Only the controller holds it: its local worker and every job are started without it. A new, changed or removed key is audited (`provider_account.*`, with a fingerprint, never the key).',
  },
  RC_RUNPOD_IMAGE: {
    default: 'required with the key',
    meaning: "The image each pod runs. It needs what the worker's install script needs: Node.js 20.16 or newer, curl, tar, sha256sum.",
  },
  RC_RUNPOD_ACCOUNT: {
    default: '`default`',
    meaning: "The account's name: `--cloud runpod/<name>`, and the `runpod/<name>` machines, offers and the audit log show.",
  },
  RC_RUNPOD_PREFIX: {
    default: '`rc`',
    meaning:
      "The start of every pod name rc gives (`<prefix>-<machine id>`). The sweeper deletes only pods whose names carry it: give each controller's account its own. It may not be, or start, another account's prefix (`RC_LOCAL_PROVIDER`'s): the controller refuses to start.",
  },
  RC_RUNPOD_REST_URL: { default: '`https://rest.runpod.io/v1`', meaning: "RunPod's REST API (pods)." },
  RC_RUNPOD_GRAPHQL_URL: {
    default: '`https://api.runpod.io/graphql`',
    meaning: "RunPod's GraphQL API (GPU types and prices, which the REST API v1 does not give).",
  },
};

const Env = Settings.superRefine((env, ctx) => {
  if (env.RC_RUNPOD_API_KEY && !env.RC_RUNPOD_IMAGE)
    ctx.addIssue({
      code: 'custom',
      path: ['RC_RUNPOD_IMAGE'],
      message: "required with RC_RUNPOD_API_KEY: the image RunPod's pods run (with Node.js 20.16+, curl, tar and sha256sum for the worker)",
    });
  // The sweeper deletes an account's instances that carry its prefix and that its machines do not own: a prefix shared
  // (or one starting with another's) would let one account's pass see the other's machines as nobody's.
  const prefixes = configuredPrefixes(env);
  for (const [i, a] of prefixes.entries())
    for (const b of prefixes.slice(i + 1))
      if (`${a.prefix}-`.startsWith(`${b.prefix}-`) || `${b.prefix}-`.startsWith(`${a.prefix}-`))
        ctx.addIssue({
          code: 'custom',
          path: [b.setting],
          message: `${b.account}'s prefix ${JSON.stringify(b.prefix)} clashes with ${a.account}'s ${JSON.stringify(a.prefix)} (${a.setting}): the sweeper would delete each other's machines; give each account a prefix of its own`,
        });
  // Coarse rows are made from raw samples as they age out: a shorter coarse retention would delete them as they are made.
  if (env.RC_SAMPLES_COARSE_DAYS < env.RC_SAMPLES_RAW_DAYS)
    ctx.addIssue({
      code: 'custom',
      path: ['RC_SAMPLES_COARSE_DAYS'],
      message: `must be at least RC_SAMPLES_RAW_DAYS (${env.RC_SAMPLES_RAW_DAYS}), not ${env.RC_SAMPLES_COARSE_DAYS}: the coarse rows are made from raw samples as they age out`,
    });
});
export type ControllerConfig = z.infer<typeof Env>;

/** Each configured account's instance-name prefix, with the setting it comes from. */
function configuredPrefixes(env: z.infer<typeof Settings>): { account: string; prefix: string; setting: string }[] {
  const out: { account: string; prefix: string; setting: string }[] = [];
  if (env.RC_LOCAL_PROVIDER) out.push({ account: 'local', prefix: env.RC_LOCAL_PROVIDER.prefix, setting: 'RC_LOCAL_PROVIDER' });
  if (env.RC_RUNPOD_API_KEY) out.push({ account: runpodAccount(env.RC_RUNPOD_ACCOUNT), prefix: env.RC_RUNPOD_PREFIX, setting: 'RC_RUNPOD_PREFIX' });
  return out;
}

/**
 * Settings that stay in the controller: the local worker it starts gets its
 * environment without them (server/local-worker.ts), so neither the worker nor
 * a job that reads the worker's /proc/<pid>/environ sees them. The database's
 * address carries its password; a provider account's settings carry its key;
 * RC_DASHBOARD_API_URL is the controller's note to its own pages (server/dashboard.ts).
 */
export function controllerOnly(name: string): boolean {
  return name === 'DATABASE_URL' || name === 'RC_LOCAL_PROVIDER' || name === 'RC_DASHBOARD_API_URL' || name.startsWith('RC_RUNPOD_');
}

export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): ControllerConfig {
  const parsed = Env.safeParse(env);
  if (!parsed.success) throw new Error(`bad environment variable ${zodMessage(parsed.error)}`);
  return parsed.data;
}

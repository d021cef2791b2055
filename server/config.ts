// The controller's environment, parsed once at start-up.
import { join } from 'node:path';
import { z } from 'zod';
import { ROOT } from './paths';
import { parseDuration } from '../core/duration';
import { parseIdleSetting } from '../core/idle';
import { zodMessage } from '../protocol/zod-message';
import { SAMPLE_RETENTION } from './sample-retention';

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

const Settings = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Address to listen on; 0.0.0.0 to accept workers from other hosts. */
  RC_BIND: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
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
  /** Output kept per job (bytes); the rest is streamed live but not stored. */
  RC_OUTPUT_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 ** 3)
    .default(16 * 1024 * 1024),
  /** Seconds a multi-GPU job waits before devices are held back for it (no starvation by one-GPU jobs). */
  RC_RESERVE_AFTER_S: z.coerce.number().min(0).max(86400).default(30),
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
  /** Days every heartbeat's GPU sample is kept; older ones are thinned to 10-minute rows (server/sample-retention.ts). */
  RC_SAMPLES_RAW_DAYS: z.coerce.number().int().min(1).max(30).default(SAMPLE_RETENTION.rawDays),
  /** Days the 10-minute rows are kept. */
  RC_SAMPLES_COARSE_DAYS: z.coerce.number().int().min(1).max(3650).default(SAMPLE_RETENTION.coarseDays),
});

const Env = Settings.superRefine((env, ctx) => {
  // Coarse rows are made from raw samples as they age out: a shorter coarse retention would delete them as they are made.
  if (env.RC_SAMPLES_COARSE_DAYS < env.RC_SAMPLES_RAW_DAYS)
    ctx.addIssue({
      code: 'custom',
      path: ['RC_SAMPLES_COARSE_DAYS'],
      message: `must be at least RC_SAMPLES_RAW_DAYS (${env.RC_SAMPLES_RAW_DAYS}), not ${env.RC_SAMPLES_COARSE_DAYS}: the coarse rows are made from raw samples as they age out`,
    });
});
export type ControllerConfig = z.infer<typeof Env>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ControllerConfig {
  const parsed = Env.safeParse(env);
  if (!parsed.success) throw new Error(`bad environment variable ${zodMessage(parsed.error)}`);
  return parsed.data;
}

// The worker's environment, parsed once at start-up.
import { homedir, hostname } from 'node:os';
import { isAbsolute, join, normalize, resolve } from 'node:path';
import { z } from 'zod';
import { zodMessage } from '../protocol/zod-message';
import type { MountDirs } from './job-mounts';
import { controllerList } from '../protocol/controllers';

/** A path, where an empty value means unset. */
const optionalPath = z
  .string()
  .optional()
  .transform((v) => v || undefined);
/** An absolute folder path, where an empty value means unset. */
const optionalDir = (name: string) =>
  z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .refine((v) => v === undefined || isAbsolute(v), `${name} must be an absolute path, e.g. /srv/rc/${name.slice(3, -4).toLowerCase()}`);
const flag = z.enum(['0', '1', 'true', 'false'], { message: 'is 0, 1, true or false' }).transform((v) => v === '1' || v === 'true');

const Env = z.object({
  /** The controller's URL, or several (comma-separated) that share one database: tried in turn (controllers.ts). */
  RC_CONTROLLER: z
    .string()
    .refine(
      (v) => controllerList(v).length > 0 && controllerList(v).every((u) => URL.canParse(u) && /^https?:\/\//.test(u)),
      'RC_CONTROLLER must be the controller URL, e.g. http://rc.internal:8080 (or several, comma-separated)',
    ),
  RC_HOST_TOKEN: z.string().min(10, 'RC_HOST_TOKEN must be the host credential from `rc admin host add`'),
  RC_HOST_NAME: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/)
    .default(hostname()),
  /** Default working directory of jobs. */
  RC_WORKSPACE: z.string().min(1).default(join(process.cwd(), 'rc-workspace')),
  /** CPU slots declared when the host has no nvidia-smi, so rc is usable at once. */
  RC_FAKE_DEVICES: z.coerce.number().int().min(0).max(64).default(2),
  /** Seconds between SIGTERM and SIGKILL when a job is killed. */
  RC_KILL_GRACE_S: z.coerce.number().min(0).max(600).default(10),
  /** The worker's config file (declared labels, probes folder); unset for none. */
  RC_WORKER_CONFIG: optionalPath,
  /** Folder of site probes; wins over the config file's probesDir. */
  RC_PROBES_DIR: optionalPath,
  /** Seconds between probe runs. */
  RC_PROBE_INTERVAL_S: z.coerce
    .number()
    .min(5, 'RC_PROBE_INTERVAL_S is at least 5 (seconds)')
    .max(86_400, 'RC_PROBE_INTERVAL_S is at most 86400 (a day)')
    .default(300),
  /** Where jobs run: directly on the host, or in one long-lived container per device. */
  RC_RUNTIME: z.enum(['host', 'docker'], { message: 'RC_RUNTIME is host or docker' }).default('host'),
  /** The image of the device containers (docker runtime); docker/worker-image/build.sh builds the stock one. */
  RC_DOCKER_IMAGE: z
    .string()
    .min(1)
    .max(300)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/, 'RC_DOCKER_IMAGE must be an image reference like rc-job:stock')
    .default('rc-job:stock'),
  /** The docker CLI. */
  RC_DOCKER: z.string().min(1).default('docker'),
  /** GPU memory (MiB) still used after a job above which the GPU is quarantined. */
  RC_GPU_MEM_THRESHOLD_MIB: z.coerce.number().int().min(0).max(1_000_000).default(1024),
  /** Seconds a GPU may take to let go of a finished job's memory before that counts. */
  RC_GPU_SETTLE_S: z.coerce.number().min(0).max(300).default(5),
  /** The worker's own state (the jobs it runs, for the next run after a crash); default per host name, see stateDirFor. */
  RC_STATE_DIR: optionalPath,
  /** A cgroup per host-runtime job where the host offers cgroup v2; 0: the RC_JOB_ID tag, process group and session only. */
  RC_CGROUPS: flag.default(true),
  /** Where jobs' scratch folders are made (worker/job-mounts.ts); default <RC_STATE_DIR>/scratch. */
  RC_SCRATCH_DIR: optionalDir('RC_SCRATCH_DIR'),
  /** The host's persistent shared storage, /shared in every job; unset: no /shared. */
  RC_SHARED_DIR: optionalDir('RC_SHARED_DIR'),
  /** Files the operator registers for jobs, /secrets (read-only) in every job; unset: no /secrets. */
  RC_SECRETS_DIR: optionalDir('RC_SECRETS_DIR'),
});
export type WorkerConfig = z.infer<typeof Env> & { RC_STATE_DIR: string; RC_SCRATCH_DIR: string };

/** $XDG_STATE_HOME/rc-worker/<host>, or ~/.local/state/rc-worker/<host>. */
export function stateDirFor(host: string, env: NodeJS.ProcessEnv): string {
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'rc-worker', host);
}

export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const parsed = Env.transform((c) => {
    const state = c.RC_STATE_DIR ?? stateDirFor(c.RC_HOST_NAME, env);
    const dir = (v: string | undefined) => (v === undefined ? undefined : normalize(v).replace(/(.)\/$/, '$1'));
    return {
      ...c,
      RC_STATE_DIR: state,
      RC_SCRATCH_DIR: dir(c.RC_SCRATCH_DIR) ?? resolve(state, 'scratch'),
      RC_SHARED_DIR: dir(c.RC_SHARED_DIR),
      RC_SECRETS_DIR: dir(c.RC_SECRETS_DIR),
    };
  }).safeParse(env);
  if (!parsed.success) throw new Error(zodMessage(parsed.error));
  return parsed.data;
}

/** The folders of jobs' mounts (worker/job-mounts.ts), from the config. */
export function mountDirs(c: WorkerConfig): MountDirs {
  return { scratch: c.RC_SCRATCH_DIR, shared: c.RC_SHARED_DIR ?? null, secrets: c.RC_SECRETS_DIR ?? null };
}

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
  /** Unacknowledged output kept per job (bytes) while the controller cannot store it; past it the oldest goes, and the job's output is marked truncated. */
  RC_OUTPUT_BUFFER_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(1024 ** 3)
    .default(64 * 1024 * 1024),
  /** The worker's own state (the jobs it runs, for the next run after a crash); default per host name, see stateDirFor. */
  RC_STATE_DIR: optionalPath,
  /** A cgroup per host-runtime job where the host offers cgroup v2; 0: the RC_JOB_ID tag, process group and session only. */
  RC_CGROUPS: flag.default(true),
  /** Shells kept ready for host-runtime jobs, each already in a cgroup of its own (worker/ready-shells.ts); 0: none. */
  RC_READY_SHELLS: z.coerce.number().int().min(0).max(64).default(2),
  /** Where jobs' scratch folders are made (worker/job-mounts.ts); default <RC_STATE_DIR>/scratch. */
  RC_SCRATCH_DIR: optionalDir('RC_SCRATCH_DIR'),
  /** The host's persistent shared storage, /shared in every job; unset: no /shared. */
  RC_SHARED_DIR: optionalDir('RC_SHARED_DIR'),
  /** Files the operator registers for jobs, /secrets (read-only) in every job; unset: no /secrets. */
  RC_SECRETS_DIR: optionalDir('RC_SECRETS_DIR'),
  /** Benchmarks: a file each job's phases on the worker are appended to (worker/job-phases.ts); unset: none kept. */
  RC_JOB_PHASES: optionalPath,
  /** The unprivileged user host-runtime jobs run as when the worker is root (worker/job-user.ts); unset: as the worker's user. */
  RC_JOB_USER: z.string().min(1).max(64).optional(),
});
/**
 * Every variable of Env, in the docs' order, with its default as the table shows it and what it does: npm run docs
 * writes docs/operators.md's worker tables from this (scripts/docs.ts). A variable without its row does not compile.
 */
export const WORKER_SETTINGS: Record<keyof typeof Env.shape, { default: string; meaning: string }> = {
  RC_CONTROLLER: {
    default: 'required',
    meaning: 'Controller URL, e.g. `http://controller:8080`; or several that share one database, comma-separated, tried in turn (see "Several controllers").',
  },
  RC_HOST_TOKEN: { default: 'required', meaning: 'The host credential from `rc admin host add`.' },
  RC_HOST_NAME: {
    default: "the machine's hostname",
    meaning: "Used in the worker's log. The controller knows the host by the name the credential was issued for. Keep the two the same.",
  },
  RC_WORKSPACE: { default: '`./rc-workspace`', meaning: 'Working directory of jobs submitted without `--cwd`. It is created if missing.' },
  RC_FAKE_DEVICES: { default: '`2`', meaning: 'CPU slots to offer when the host has no `nvidia-smi` (0–64).' },
  RC_KILL_GRACE_S: { default: '`10`', meaning: 'Seconds between SIGTERM and SIGKILL when a job is killed (0–600).' },
  RC_STATE_DIR: {
    default: '`$XDG_STATE_HOME/rc-worker/<host>`, else `~/.local/state/rc-worker/<host>`',
    meaning:
      "The worker's own state folder (mode 0700): the jobs it runs, so that its next start can kill what they left if it died. One worker per folder: a second one on a folder in use refuses to start. `npm start`'s worker uses `<RC_DATA_DIR>/worker-state`. See \"A job's processes\".",
  },
  RC_CGROUPS: {
    default: '`1`',
    meaning:
      'Host runtime: a cgroup per job where the host offers cgroup v2 (see "A job\'s processes"). `0` never uses cgroups: jobs are followed by their process group, session and `RC_JOB_ID`.',
  },
  RC_WORKER_CONFIG: {
    default: 'unset',
    meaning:
      'Path of the worker\'s config file: JSON with declared labels (host-wide and per device) and a `probesDir` (see "Labels and probes"). Unset: no declared labels.',
  },
  RC_PROBES_DIR: {
    default: "the config file's `probesDir`",
    meaning: "Folder of site probes: executables printing `key=value` lines. Wins over the config file's `probesDir`.",
  },
  RC_PROBE_INTERVAL_S: { default: '`300`', meaning: 'Seconds between probe runs (5–86400); `rc admin probe <host>` runs them at once.' },
  RC_RUNTIME: {
    default: '`host`',
    meaning:
      'Where jobs run: `host` (directly on the host) or `docker` (one long-lived container per device, see "The Docker runtime"). The host label `runtime` says which.',
  },
  RC_DOCKER_IMAGE: {
    default: '`rc-job:stock`',
    meaning:
      'Image of the device containers (Docker runtime). `docker/worker-image/build.sh` builds the stock one, no registry needed (see "The Docker runtime"). Before this name, the stock image was `rc-worker:ubuntu-24.04`: set that to keep using an older build.',
  },
  RC_DOCKER: { default: '`docker`', meaning: 'The docker CLI the worker calls.' },
  RC_GPU_MEM_THRESHOLD_MIB: { default: '`1024`', meaning: 'GPU memory still in use after a job above which the GPU is quarantined.' },
  RC_GPU_SETTLE_S: { default: '`5`', meaning: "How long a GPU may take to let go of a finished job's memory before that counts." },
  RC_OUTPUT_BUFFER_BYTES: {
    default: '`67108864` (64 MiB)',
    meaning:
      "Output kept per job until the controller says it is stored (65536–1073741824). While the controller's database cannot store it (out of disk space, or away), the oldest goes past this, and the job's `outputTruncated` becomes true with the reason.",
  },
  RC_READY_SHELLS: {
    default: '`2`',
    meaning:
      "Host runtime with job cgroups: how many shells are kept ready, each already in a cgroup of its own and already `RC_JOB_USER`, so a job's command starts without waiting for the kernel to move it into its cgroup (6-22 ms without the cgroup2 mount option `favordynmods`). `0`: each job enters its cgroup as it starts.",
  },
  RC_SCRATCH_DIR: {
    default: '`<RC_STATE_DIR>/scratch`',
    meaning:
      "Absolute. Where jobs' `/scratch` folders are made (their own, wiped when they end), on the host's local disk (see \"Jobs' folders\"). Made (mode 0700) if missing.",
  },
  RC_SHARED_DIR: {
    default: 'unset: no `/shared`',
    meaning:
      "Absolute. The host's persistent shared storage, `/shared` in every job (`RC_SHARED` on the host runtime). Must exist and be writable: the worker never makes it, so a missing network mount is an error, not an empty local folder.",
  },
  RC_SECRETS_DIR: {
    default: 'unset: no `/secrets`',
    meaning:
      'Absolute. Files you register for jobs, `/secrets` (read-only) in every job (`RC_SECRETS` on the host runtime). Must exist and be readable, and hold only files and folders (at most 1000 files, 64 MiB).',
  },
  RC_JOB_PHASES: {
    default: 'unset: not kept',
    meaning:
      "For benchmarks (`npm run bench:phases`): a file to which each job's moments on the worker (order seen, recorded, spawned, first byte, exited, ended, cleaned up, reported) are appended, one JSON line per job.",
  },
  RC_JOB_USER: {
    default: "unset: jobs run as the worker's user (`npm start` as root: `rc-job`)",
    meaning:
      'A user name or uid: host-runtime jobs run as this unprivileged user, so they cannot read the worker\'s key, its `/proc` entries or any file only root may read. Needs a worker running as root and `setpriv` (util-linux). The user must be able to enter `RC_SCRATCH_DIR` and use `RC_WORKSPACE`. See "Who a job runs as".',
  },
};

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

// A job's name (rc run --name) and its environment (rc run --env): the rules
// both sides check, the CLI before it sends and the controller when it
// receives (protocol/api.ts's SubmitJob). Pure: no zod, so the CLI bundle can
// carry it.

/** A job id as the controller makes them (server/jobs/submit.ts newJobId): j and 10 base32 digits. */
export const JOB_ID = /^j[0-9a-v]{10}$/;

/** A job name: letters, digits, . _ -, starting with a letter or digit, at most 63 characters. */
export const JOB_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** Why `name` cannot name a job, or null when it can. */
export function jobNameProblem(name: string): string | null {
  if (!JOB_NAME.test(name)) {
    return `job name ${JSON.stringify(name.slice(0, 80))} is not valid: use 1-63 letters, digits, . _ or -, starting with a letter or digit (e.g. train-bert)`;
  }
  if (JOB_ID.test(name))
    return `job name ${name} looks like a job id (j and 10 base32 digits), so rc kill ${name} could not tell them apart; pick another name`;
  return null;
}

/** An environment variable's name, as POSIX shells take it. */
export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** What rc sets in every job's environment itself (worker/host-runtime.ts jobEnv, docker's GPU selection): a job may not set them. */
export const RESERVED_ENV = [
  'CUDA_VISIBLE_DEVICES',
  'CUDA_DEVICE_ORDER',
  'NVIDIA_VISIBLE_DEVICES',
  'RC_JOB_ID',
  'RC_DEVICES',
  'RC_WORKSPACE',
  'RC_SCRATCH',
  'RC_SHARED',
  'RC_SECRETS',
  'RC_PREEMPT_FILE',
  'RC_FENCE',
  'RC_ARRAY_ID',
  'RC_ARRAY_INDEX',
] as const;

export const ENV_MAX_VARS = 128;
/** The bytes of all KEY=VALUE pairs together (UTF-8). */
export const ENV_MAX_BYTES = 64 * 1024;

export interface EnvProblem {
  /** bad_env: a malformed name or value, or too many or too big; reserved_env: a name rc sets itself. */
  code: 'bad_env' | 'reserved_env';
  /** The key at fault, when there is one. */
  key: string | null;
  message: string;
}

/** Why `key` cannot be set in a job's environment, or null. */
export function envKeyProblem(key: string): EnvProblem | null {
  if (!ENV_KEY.test(key) || key === '__proto__') {
    return {
      code: 'bad_env',
      key,
      message: `${JSON.stringify(key.slice(0, 80))} is not an environment variable name: use letters, digits and _, not starting with a digit (e.g. HF_TOKEN)`,
    };
  }
  if ((RESERVED_ENV as readonly string[]).includes(key)) {
    return {
      code: 'reserved_env',
      key,
      message: `${key} is set by rc itself (it sets ${RESERVED_ENV.join(', ')}) and cannot be passed with --env; to pick devices use --select, -d or --gpus`,
    };
  }
  return null;
}

const utf8 = new TextEncoder();

/** Why a job cannot have this environment, or null. */
export function envProblem(env: Readonly<Record<string, string>>): EnvProblem | null {
  const entries = Object.entries(env);
  if (entries.length > ENV_MAX_VARS)
    return { code: 'bad_env', key: null, message: `a job takes at most ${ENV_MAX_VARS} --env variables, not ${entries.length}` };
  let bytes = 0;
  for (const [k, v] of entries) {
    const bad = envKeyProblem(k);
    if (bad) return bad;
    if (typeof v !== 'string') return { code: 'bad_env', key: k, message: `the value of ${k} must be a string` };
    if (v.includes('\0')) return { code: 'bad_env', key: k, message: `the value of ${k} contains a NUL byte, which no environment can hold` };
    bytes += utf8.encode(k).length + utf8.encode(v).length + 2;
  }
  if (bytes > ENV_MAX_BYTES) {
    return {
      code: 'bad_env',
      key: null,
      message: `the --env variables take ${bytes} bytes, more than the ${ENV_MAX_BYTES / 1024} KiB a job may have; pass large values as a file (rc cp)`,
    };
  }
  return null;
}

/** rc run --keep's bound: an idle machine kept longer than a day is a machine forgotten. */
export const MAX_KEEP_S = 86_400;
/** rc run --keep's default: the machine a job ran on stays idle this long for the next job (seed 002). */
export const DEFAULT_KEEP_S = 300;

/** A --spot job's --restarts unless it says: a spot machine taken back starts the job over on another (seed 002). */
export const SPOT_RESTARTS = 10;

/** The most restarts rc run --restarts may ask for: a job lost that often needs a person to look at its hosts. */
export const MAX_RESTARTS = 20;

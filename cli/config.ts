// Where the controller is and who we are. RC_CONTROLLER and RC_TOKEN win;
// without them the CLI uses the credentials `npm start` wrote in this checkout.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXIT } from '../core/exit-codes';
import { fail } from './output';
import { STANDALONE } from './build-info';

export interface CliConfig {
  /** The first controller; RC_CONTROLLER may list more, comma-separated, tried in turn when one cannot be reached. */
  controller: string;
  controllers: string[];
  token: string;
  submitter: string;
  /** The token is the client token `npm start` wrote in this checkout (no RC_TOKEN, no RC_ADMIN=1). */
  checkoutClient?: boolean;
  /** RC_CONNECT_TIMEOUT_MS, RC_ANSWER_TIMEOUT_MS: how long a controller may take to accept, and to answer (cli/http1.ts). */
  connectTimeoutMs?: number;
  answerTimeoutMs?: number;
  /** RC_MAX_ANSWER_MIB in bytes: the most of one JSON answer the CLI holds (a stream is not held, and is not bounded). */
  maxAnswerBytes?: number;
}

/** The defaults of the knobs above. */
export const CONNECT_TIMEOUT_MS = 5000;
export const ANSWER_TIMEOUT_MS = 60_000;
export const MAX_ANSWER_MIB = 64;

/** A positive whole number from the environment, or its default; anything else is a usage error that names the variable. */
function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) fail('bad_env', `${name} must be a whole number from 1 to ${max}, not ${JSON.stringify(raw)}`, EXIT.usage);
  return n;
}

interface LocalFile {
  controller?: string;
  clientToken?: string;
  adminToken?: string;
}

export function loadCliConfig(env: NodeJS.ProcessEnv = process.env): CliConfig {
  let local: LocalFile | null = null;
  const readLocal = (): LocalFile => {
    if (local) return local;
    local = {};
    // The standalone CLI belongs to no checkout: only the environment configures it.
    if (STANDALONE) return local;
    // The bundle lives in <checkout>/dist; npm start keeps credentials in <checkout>/.rc.
    const file = join(env.RC_DATA_DIR ?? join(__dirname, '..', '.rc'), 'local.json');
    try {
      local = JSON.parse(readFileSync(file, 'utf8')) as LocalFile;
    } catch {
      /* no checkout credentials */
    }
    return local;
  };
  const controllers = (env.RC_CONTROLLER || readLocal().controller || '')
    .split(',')
    .map((u) => u.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  const controller = controllers[0] ?? '';
  const token = env.RC_TOKEN || (env.RC_ADMIN === '1' ? readLocal().adminToken : readLocal().clientToken) || '';
  if (!controller || !token) {
    fail(
      'not_configured',
      STANDALONE
        ? 'set RC_CONTROLLER and RC_TOKEN (ask the operator): export RC_CONTROLLER=http://<controller>:8080 RC_TOKEN=<client token>'
        : 'set RC_CONTROLLER and RC_TOKEN (ask the operator), or run `npm start` in this checkout first',
      EXIT.unauthorized,
    );
  }
  const checkoutClient = !env.RC_TOKEN && env.RC_ADMIN !== '1';
  return {
    controller,
    controllers,
    token,
    submitter: env.RC_SUBMITTER || defaultSubmitter(),
    ...(checkoutClient ? { checkoutClient } : {}),
    connectTimeoutMs: positiveInt(env, 'RC_CONNECT_TIMEOUT_MS', CONNECT_TIMEOUT_MS, 3_600_000),
    answerTimeoutMs: positiveInt(env, 'RC_ANSWER_TIMEOUT_MS', ANSWER_TIMEOUT_MS, 86_400_000),
    maxAnswerBytes: positiveInt(env, 'RC_MAX_ANSWER_MIB', MAX_ANSWER_MIB, 4096) * 1024 * 1024,
  };
}

/** user@host/s<session id>: distinct per terminal session, stable within one. */
function defaultSubmitter(): string {
  let session = String(process.ppid);
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    session = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3] ?? session;
  } catch {
    /* not Linux: the parent's pid will do */
  }
  // os is loaded only here: most agents set RC_SUBMITTER, and every import costs start-up time.
  const os = process.getBuiltinModule('node:os');
  return `${userName(os)}@${os.hostname()}/s${session}`;
}

/**
 * The uid's name, as a token bound to `<user>@<host>/` expects it: from
 * /etc/passwd first, since the standalone rc's runtime (Bun) answers
 * os.userInfo() with $USER, or `unknown` where $USER is unset (a service,
 * cron, an agent's sandbox); then os.userInfo(), $USER, $LOGNAME; `uid<N>`
 * for a uid with no name at all.
 */
function userName(os: typeof import('node:os')): string {
  const uid = process.getuid?.() ?? -1;
  try {
    const name = passwdName(readFileSync('/etc/passwd', 'utf8'), uid);
    if (name) return name;
  } catch {
    /* no /etc/passwd here */
  }
  try {
    const name = os.userInfo().username;
    if (name && name !== 'unknown') return name;
  } catch {
    /* no passwd entry */
  }
  return process.env.USER || process.env.LOGNAME || (uid >= 0 ? `uid${uid}` : 'user');
}

/** The name /etc/passwd gives `uid` (`name:x:uid:gid:…` lines), or null. */
export function passwdName(passwd: string, uid: number): string | null {
  for (const line of passwd.split('\n')) {
    const [name, , id] = line.split(':');
    if (name && id !== undefined && Number(id) === uid && /^\d+$/.test(id)) return name;
  }
  return null;
}

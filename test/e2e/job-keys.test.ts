// A job cannot read the controller's keys (issue 30). `npm start` with its
// defaults (embedded Postgres, local worker): a job run with the client token
// tries every way an attacker would to the data folder's credentials, the
// processes' environments and the database. Each attempt must fail, and the
// same read done by this test process must succeed, so the test cannot pass
// because the attempt was aimed wrong.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { alive, descendantsOf } from '../helpers/stack';
import { until } from '../helpers/until';

const ROOT = join(import.meta.dirname, '..', '..');
const dataDir = mkdtempSync(join(tmpdir(), 'rc-keys-'));
// The probe must be readable by whoever the job runs as.
const probeDir = mkdtempSync(join(tmpdir(), 'rc-keys-probe-'));
chmodSync(probeDir, 0o755);
const probe = join(probeDir, 'probe.mjs');

let child: ChildProcess;
let log = '';
let pgPort = 0;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

before(async () => {
  pgPort = await freePort();
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: '0',
    RC_DATA_DIR: dataDir,
    RC_PG_PORT: String(pgPort),
    RC_HOST_NAME: 'keybox',
    RC_DASHBOARD: '0',
  };
  delete env.DATABASE_URL;
  // As `npm start` runs: from the checkout.
  child = spawn(process.execPath, [join(ROOT, 'dist', 'server.js')], { cwd: ROOT, env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  await until(() => (/\[rc\] ready: the local worker is connected/.test(log) ? true : undefined), `the ready line; the log so far:\n${log}`, 120_000);
  writeFileSync(probe, PROBE);
  chmodSync(probe, 0o644);
});

after(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const stack = [child.pid!, ...descendantsOf(child.pid!)];
    await new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGINT');
    });
    await until(() => (stack.some(alive) ? undefined : true), 'the stack to stop', 30_000).catch(() => {});
  }
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(probeDir, { recursive: true, force: true });
});

function rc(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // The CLI finds the client token in local.json, as on a checkout.
  const cli = spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), ...args], {
    env: { PATH: process.env.PATH, RC_DATA_DIR: dataDir } as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  cli.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  cli.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise((resolve) => cli.on('close', (code) => resolve({ code, stdout, stderr })));
}

interface Keys {
  clientToken: string;
  adminToken: string;
  hostCredential: string;
  pgPassword: string;
}

/** The secrets, read by the test (the control: a process of the controller's user reads them). */
function keys(): Keys {
  const local = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as { clientToken: string; adminToken: string };
  const worker = JSON.parse(readFileSync(join(dataDir, 'worker.json'), 'utf8')) as { credential: string };
  const pg = JSON.parse(readFileSync(join(dataDir, 'pg.json'), 'utf8')) as { password: string };
  return { clientToken: local.clientToken, adminToken: local.adminToken, hostCredential: worker.credential, pgPassword: pg.password };
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** The stack's processes by role: the controller, its worker, the postmaster (its backends are all the other postgres processes). */
function stack(): { controller: number; worker: number; postgres: number[]; all: number[] } {
  const below = descendantsOf(child.pid!);
  const worker = below.find((p) => cmdline(p).includes(join('dist', 'worker.js')));
  const postgres = below.filter((p) => cmdline(p).includes(join(dataDir, 'pgdata')) || /^postgres: /.test(cmdline(p)));
  assert.ok(worker, 'the local worker runs');
  assert.ok(postgres.length, 'the embedded Postgres runs');
  return { controller: child.pid!, worker, postgres, all: [child.pid!, ...below] };
}

interface Attempt {
  what: string;
  ok: boolean;
  data?: string;
  error?: string;
}

test('a job on the local worker cannot reach any credential', { timeout: 300_000 }, async () => {
  const k = keys();
  const secrets = Object.entries(k) as [keyof Keys, string][];
  const s = stack();
  const socketDir = ['/tmp', '/var/run/postgresql'].find((d) => existsSync(join(d, `.s.PGSQL.${pgPort}`)));
  assert.ok(socketDir, 'the embedded Postgres has a unix socket');
  const target = {
    root: ROOT,
    dataDir,
    pids: s.all,
    // Each with the way from its cwd (the checkout; Postgres's is its pgdata) to the data folder.
    named: Object.fromEntries(
      Object.entries({ controller: s.controller, worker: s.worker, postgres: s.postgres[0]! }).map(([role, pid]) => [
        role,
        { pid, fromCwd: relative(readlinkSync(`/proc/${pid}/cwd`), dataDir) || '.' },
      ]),
    ),
    pgPort,
    socket: join(socketDir, `.s.PGSQL.${pgPort}`),
  };
  const run = await rc(['run', '--max-runtime', '5m', '--', process.execPath, probe, JSON.stringify(target)]);
  assert.equal(run.code, 0, `the probe ran: ${run.stderr}`);
  const attempts = run.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Attempt);
  assert.ok(attempts.length > 40, `the probe tried (${attempts.length} attempts)`);

  // Nothing the job printed holds a secret, whatever the attempt.
  for (const [name, secret] of secrets)
    assert.ok(
      !run.stdout.includes(secret),
      `the job read the ${name}:\n${attempts
        .filter((a) => a.data?.includes(secret))
        .map((a) => a.what)
        .join('\n')}`,
    );

  const fds = attempts.find((a) => a.what === 'own fds')?.data?.split('\n') ?? [];
  assert.ok(fds.length >= 3, 'the job lists its open files');
  assert.deepEqual(
    fds.filter((f) => f.startsWith(`${dataDir}/`) && !f.startsWith(`${dataDir}/workspace/`) && !f.startsWith(`${dataDir}/scratch/`)),
    [],
    'the job holds no open file of the data folder',
  );
  const seen = ['environ ', 'cmdline ', 'own '];
  const opened = attempts.filter((a) => a.ok && !seen.some((p) => a.what.startsWith(p)));
  assert.deepEqual(
    opened.map((a) => a.what),
    [],
    'every open of the data folder, by any path, and every database login fails',
  );

  // The control: the same reads by this process (the controller's user) succeed.
  const controls = attempts.filter((a) => a.what.startsWith('read ') || a.what.startsWith('list '));
  assert.ok(controls.length > 20);
  for (const a of controls) {
    // Not resolve(): the kernel follows /proc/<pid>/cwd before any '..'.
    const asked = a.what.replace(/^(read|list) /, '');
    const path = asked.startsWith('/') ? asked : `${dataDir}/workspace/${asked}`;
    assert.doesNotThrow(
      () => (a.what.startsWith('read ') ? readFileSync(path, 'utf8') : readdirSync(path)),
      `the test itself can ${a.what} (the cwd of a relative path is the workspace)`,
    );
  }
  assert.ok(readlinkSync(`/proc/${s.controller}/cwd`));
  for (const pid of [s.controller, s.worker]) assert.ok(readFileSync(`/proc/${pid}/environ`).length > 0, `the test reads /proc/${pid}/environ`);
  // The database: with the password, from here, both ways in work.
  const postgres = (await import(join(ROOT, 'node_modules', 'postgres', 'src', 'index.js'))).default as (o: object) => {
    unsafe(q: string): Promise<unknown[]>;
    end(): Promise<void>;
  };
  for (const way of [{ host: '127.0.0.1', port: pgPort }, { path: target.socket }]) {
    const sql = postgres({ ...way, user: 'rc', password: k.pgPassword, database: 'postgres', max: 1, connect_timeout: 10, onnotice: () => {} });
    assert.equal((await sql.unsafe('select 1 as one')).length, 1);
    await sql.end();
  }
});

// The job's side: every way in, each printed as a line of JSON. It runs as
// whoever the worker runs jobs as, from the job's workspace.
const PROBE = String.raw`
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
const t = JSON.parse(process.argv[2]);
const found = new Set();
const say = (what, ok, data, error) => {
  if (ok && data) for (const m of String(data).matchAll(/[A-Za-z0-9_\-]{20,}/g)) found.add(m[0]);
  console.log(JSON.stringify({ what, ok, data: data === undefined ? undefined : String(data).slice(0, 20000), error }));
};
const attempt = (what, f) => {
  try {
    say(what, true, f());
  } catch (e) {
    say(what, false, undefined, e.code ?? e.message);
  }
};
const read = (p) => attempt('read ' + p, () => readFileSync(p, 'utf8'));
const list = (p) => attempt('list ' + p, () => readdirSync(p).join(' '));
const files = ['local.json', 'worker.json', 'pg.json', 'pgdata/PG_VERSION', 'pgdata/postgresql.conf'];
const dirs = ['', 'pgdata', 'worker-state'];
// Relative: the workspace is inside the data folder.
for (const f of files) read('../' + f);
for (const d of dirs) list('../' + d);
// Absolute.
for (const f of files) read(join(t.dataDir, f));
for (const d of dirs) list(join(t.dataDir, d));
// Through another process's view: its cwd (the checkout) and its root.
for (const [role, { pid, fromCwd }] of Object.entries(t.named)) {
  attempt('readlink /proc/' + role + '/cwd', () => readlinkSync('/proc/' + pid + '/cwd'));
  for (const f of files) {
    read('/proc/' + pid + '/cwd/' + join(fromCwd, f));
    read('/proc/' + pid + '/root' + join(t.dataDir, f));
  }
  list('/proc/' + pid + '/cwd/');
  list('/proc/' + pid + '/fd/');
  attempt('mem of ' + role, () => readFileSync('/proc/' + pid + '/mem').length);
}
// Every process of the stack: its environment and its command line.
for (const pid of t.pids) {
  attempt('environ ' + pid, () => readFileSync('/proc/' + pid + '/environ', 'utf8'));
  attempt('cmdline ' + pid, () => readFileSync('/proc/' + pid + '/cmdline', 'utf8'));
}
say('own environment', true, JSON.stringify(process.env));
// What it was handed open: nothing of the data folder but its workspace.
attempt('own fds', () => readdirSync('/proc/self/fd').map((fd) => { try { return readlinkSync('/proc/self/fd/' + fd); } catch { return ''; } }).join('\n'));
// The database, by its port and its socket, with no password and with every one found.
const postgres = (await import(join(t.root, 'node_modules', 'postgres', 'src', 'index.js'))).default;
const passwords = [undefined, '', 'rc', 'postgres', ...[...found].slice(0, 100)];
for (const way of [{ host: '127.0.0.1', port: t.pgPort }, { path: t.socket }]) {
  for (const user of ['rc', 'postgres', 'rc-job', 'root']) {
    for (const password of user === 'rc' || user === 'postgres' ? passwords : [undefined]) {
      const sql = postgres({ ...way, user, password, database: 'postgres', max: 1, connect_timeout: 5, onnotice: () => {} });
      const what = 'login ' + (way.path ?? way.host) + ' as ' + user + (password === undefined ? ' without a password' : ' with a password of ' + password.length + ' characters');
      try {
        await sql.unsafe('select 1');
        say(what, true, 'in');
      } catch (e) {
        say(what, false, undefined, e.code ?? e.message);
      }
      await sql.end({ timeout: 1 }).catch(() => {});
    }
  }
}
`;

// A job cannot read the controller's keys (issue 30). `npm start` with its
// defaults (embedded Postgres, local worker): a job run with the client token
// tries every way an attacker would to the data folder's credentials, the
// processes' environments and the database. Each attempt must fail, and the
// same read done by this test process must succeed, so the test cannot pass
// because the attempt was aimed wrong.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import * as pty from 'node-pty';
import { ensureTestImage } from '../helpers/docker';
import { alive, descendantsOf } from '../helpers/stack';
import { until } from '../helpers/until';

const ROOT = join(import.meta.dirname, '..', '..');
// The probe must be readable by whoever the job runs as.
const probeDir = mkdtempSync(join(tmpdir(), 'rc-keys-probe-'));
chmodSync(probeDir, 0o755);
const probe = join(probeDir, 'probe.mjs');
writeFileSync(probe, PROBE_SOURCE());
chmodSync(probe, 0o644);
const dockerHost = `keydk${process.pid}`;
const docker = (...args: string[]) => spawnSync('docker', args, { encoding: 'utf8' });

/** One `npm start` (its own data folder, Postgres port and host name), started as a newcomer would: from the checkout. */
class NpmStart {
  readonly dataDir = mkdtempSync(join(tmpdir(), 'rc-keys-'));
  child!: ChildProcess;
  log = '';
  pgPort = 0;

  /** `as`: another user than the test's (root), who then owns the data folder. */
  async start(env: Record<string, string>, as?: { uid: number; gid: number }): Promise<this> {
    // Stopped after the tests whether or not it got ready.
    stacks.push(this);
    this.pgPort = await freePort();
    if (as) chownSync(this.dataDir, as.uid, as.gid);
    const all: Record<string, string | undefined> = {
      ...process.env,
      PORT: '0',
      RC_DATA_DIR: this.dataDir,
      RC_PG_PORT: String(this.pgPort),
      RC_DASHBOARD: '0',
      ...env,
    };
    delete all.DATABASE_URL;
    this.child = spawn(process.execPath, [join(ROOT, 'dist', 'server.js')], {
      cwd: ROOT,
      env: all as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...as,
    });
    this.child.stdout!.on('data', (c: Buffer) => {
      this.log += c.toString();
    });
    this.child.stderr!.on('data', (c: Buffer) => {
      this.log += c.toString();
    });
    const ready = await until(
      () => (/\[rc\] ready: the local worker is connected/.test(this.log) ? true : this.child.exitCode !== null ? false : undefined),
      'the ready line',
      120_000,
    ).catch(() => false);
    assert.ok(ready, `npm start is not ready:\n${this.log}`);
    return this;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const stack = [child.pid!, ...descendantsOf(child.pid!)];
      await new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGINT');
      });
      await until(() => (stack.some(alive) ? undefined : true), 'the stack to stop', 30_000).catch(() => {});
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  rc(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    // The CLI finds the client token in local.json, as on a checkout.
    const cli = spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), ...args], {
      env: { PATH: process.env.PATH, RC_DATA_DIR: this.dataDir } as unknown as NodeJS.ProcessEnv,
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

  /** The secrets, read by the test (the control: a process of the controller's user reads them). */
  keys(): Keys {
    const local = JSON.parse(readFileSync(join(this.dataDir, 'local.json'), 'utf8')) as { clientToken: string; adminToken: string };
    const worker = JSON.parse(readFileSync(join(this.dataDir, 'worker.json'), 'utf8')) as { credential: string };
    const pg = JSON.parse(readFileSync(join(this.dataDir, 'pg.json'), 'utf8')) as { password: string };
    return { clientToken: local.clientToken, adminToken: local.adminToken, hostCredential: worker.credential, pgPassword: pg.password };
  }

  /** Its processes by role: the controller, its worker, Postgres (the postmaster first, then its backends). */
  processes(): { controller: number; worker: number; postgres: number[]; all: number[] } {
    const below = descendantsOf(this.child.pid!);
    const worker = below.find((p) => cmdline(p).includes(join('dist', 'worker.js')));
    const postgres = below.filter((p) => cmdline(p).includes(join(this.dataDir, 'pgdata')) || /^postgres: /.test(cmdline(p)));
    assert.ok(worker, 'the local worker runs');
    assert.ok(postgres.length, 'the embedded Postgres runs');
    return { controller: this.child.pid!, worker, postgres, all: [this.child.pid!, ...below] };
  }
}

const stacks: NpmStart[] = [];
after(async () => {
  await Promise.all(stacks.map((s) => s.stop()));
  // The Docker test's device containers: only those of its host name.
  const ids = docker('ps', '-aq', '--filter', `label=rc.host=${dockerHost}`).stdout.split('\n').filter(Boolean);
  if (ids.length) docker('rm', '-f', ...ids);
  rmSync(probeDir, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

interface Keys {
  clientToken: string;
  adminToken: string;
  hostCredential: string;
  pgPassword: string;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

interface Attempt {
  what: string;
  ok: boolean;
  data?: string;
  error?: string;
}

/** The host-runtime stack, shared by the tests that use it. */
let hostStack: Promise<NpmStart> | null = null;
function hostRuntime(): Promise<NpmStart> {
  hostStack ??= new NpmStart().start({ RC_HOST_NAME: 'keybox' });
  return hostStack;
}

test('a job on the local worker (host runtime) cannot reach any credential', { timeout: 300_000 }, async () => {
  const npm = await hostRuntime();
  const { dataDir, pgPort } = npm;
  const k = npm.keys();
  const secrets = Object.entries(k) as [keyof Keys, string][];
  const s = npm.processes();
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
  const run = await npm.rc(['run', '--max-runtime', '5m', '--', process.execPath, probe, JSON.stringify(target)]);
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
  // Seen as root: no process of the stack is handed the tokens or the database password in its environment or arguments
  // (the worker's own key is in the worker's: no job can read it).
  for (const pid of s.all)
    for (const file of ['environ', 'cmdline']) {
      let text = '';
      try {
        text = readFileSync(`/proc/${pid}/${file}`, 'utf8');
      } catch {
        continue;
      }
      for (const name of ['clientToken', 'adminToken', 'pgPassword'] as const)
        assert.ok(!text.includes(k[name]), `/proc/${pid}/${file} (${cmdline(pid).split('\0')[1] ?? cmdline(pid)}) holds the ${name}`);
    }
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

test('as its own user a job still has its workspace, HOME and scratch, files copied in with rc cp, and its terminal', { timeout: 300_000 }, async () => {
  const npm = await hostRuntime();
  const run = await npm.rc([
    'run',
    '--',
    'sh',
    '-c',
    'id -u; touch "$HOME/h" && echo home-ok; touch ./w && echo workspace-ok; touch "$RC_SCRATCH/s" && echo scratch-ok',
  ]);
  const [uid, ...oks] = run.stdout.trim().split('\n');
  assert.notEqual(uid, '0', 'the job does not run as root');
  assert.deepEqual(oks, ['home-ok', 'workspace-ok', 'scratch-ok'], run.stderr);

  // rc cp writes as the worker (root): the file is given to the workspace's owner, so the job can change it.
  const local = join(probeDir, 'copied.txt');
  writeFileSync(local, 'one\n');
  const cp = await npm.rc(['cp', local, 'keybox:gpu0:/workspace/copied.txt']);
  assert.equal(cp.code, 0, cp.stderr);
  const append = await npm.rc(['run', '--', 'sh', '-c', 'echo two >> copied.txt && cat copied.txt']);
  assert.deepEqual([append.code, append.stdout], [0, 'one\ntwo\n'], append.stderr);

  // A terminal job's terminal is its own: it opens it by its name (/dev/pts/N), as tmux and screen do.
  const term = pty.spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), 'run', '--tty', '--', 'sh', '-c', 'id -u; echo hello > "$(tty)" && echo tty-ok'], {
    cols: 80,
    rows: 24,
    env: { PATH: process.env.PATH!, RC_DATA_DIR: npm.dataDir, TERM: 'xterm' },
  });
  let screen = '';
  term.onData((d) => {
    screen += d;
  });
  const code = await new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
  assert.equal(code, 0, screen);
  assert.match(screen, /hello\r?\n(.*\r?\n)*?tty-ok/, screen);
  assert.doesNotMatch(screen, /^0\r?$/m, 'the terminal job does not run as root');
});

test('npm start not as root says at its start that its jobs can read the keys, and it is true', { timeout: 300_000 }, async () => {
  // nobody: a user with no other user to switch its jobs to, as a newcomer on a laptop.
  // Its PATH without root's own folders, which it could not search.
  const npm = await new NpmStart().start({ RC_HOST_NAME: 'keylaptop', HOME: '/tmp', PATH: '/usr/local/bin:/usr/bin:/bin' }, { uid: 65534, gid: 65534 });
  assert.match(
    npm.log,
    /\[rc\] WARNING: the local worker's jobs run as nobody, the user this controller runs as: any job can read \S+\/local\.json \(the admin token\), the database password and the worker's key\. .*start rc as root/,
  );
  assert.doesNotMatch(npm.log, /jobs run as rc-job/);
  const run = await npm.rc(['run', '--', 'cat', '../local.json']);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.stdout.includes(npm.keys().adminToken), 'what the warning says: here a job reads the admin token');
});

test('a job on the local worker in a container (Docker runtime) cannot reach any credential, nor capture the loopback', { timeout: 300_000 }, async () => {
  const image = await ensureTestImage();
  const npm = await new NpmStart().start({ RC_HOST_NAME: dockerHost, RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: image });
  const { dataDir, pgPort } = npm;
  const secrets = Object.entries(npm.keys()) as [keyof Keys, string][];
  const s = npm.processes();
  const files = ['local.json', 'worker.json', 'pg.json', 'pgdata/PG_VERSION'];
  const paths = [
    ...files.map((f) => `../${f}`),
    ...files.map((f) => join(dataDir, f)),
    ...[s.controller, s.worker, s.postgres[0]!].flatMap((pid) => [
      ...files.map((f) => `/proc/${pid}/root${join(dataDir, f)}`),
      `/proc/${pid}/environ`,
      `/proc/${pid}/cmdline`,
    ]),
  ];
  // What a Postgres client sends first: its user and database. The answer says how it must log in (0: no password at all).
  const startup = pgStartup('rc');
  const octal = [...startup].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('');
  const script = [
    `for f in ${paths.join(' ')}; do if cat "$f" >/dev/null 2>&1; then echo "opened $f"; cat "$f"; echo; fi; done`,
    'for s in /var/run/docker.sock /run/docker.sock; do test -S $s && echo "opened $s"; done',
    'grep CapEff /proc/self/status',
    `echo "pg: $(printf '${octal}' | nc -w 3 127.0.0.1 ${pgPort} | od -An -tx1 | head -1)"`,
  ].join('\n');
  const run = await npm.rc(['run', '--max-runtime', '5m', '--', 'sh', '-c', script]);
  assert.equal(run.code, 0, `the probe ran: ${run.stderr}`);
  for (const [name, secret] of secrets) assert.ok(!run.stdout.includes(secret), `the container's job read the ${name}:\n${run.stdout}`);
  assert.deepEqual(
    run.stdout.split('\n').filter((l) => l.startsWith('opened ')),
    [],
    'no file of the data folder, no process of the stack, no docker socket',
  );
  // Without CAP_NET_RAW (bit 13) no packet socket: the host network's loopback (tokens, the database's login) cannot be captured.
  const capEff = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(run.stdout)?.[1] ?? 'x'}`);
  assert.equal((capEff >> 13n) & 1n, 0n, `the job holds CAP_NET_RAW: CapEff ${capEff.toString(16)}`);
  // The database on the host's loopback asks for a password (3 or 5) or SCRAM (10), never lets it in at once (0).
  const answer = (/^pg: (.*)$/m.exec(run.stdout)?.[1] ?? '').trim().split(/\s+/);
  assert.equal(answer[0], '52', `Postgres answered the container with an authentication request: ${run.stdout}`);
  assert.ok(['03', '05', '0a'].includes(answer[8]!), `Postgres asks the container for a password, code ${answer[8]}`);

  // The controls: from here, the same paths open and the same message gets the same kind of answer.
  for (const path of paths.filter((p) => p.startsWith('/'))) assert.doesNotThrow(() => readFileSync(path), `the test itself reads ${path}`);
  assert.doesNotThrow(() => readFileSync(join(dataDir, 'workspace', '..', 'local.json')));
  const reply = await new Promise<Buffer>((resolve, reject) => {
    const c = createConnection({ host: '127.0.0.1', port: pgPort }, () => c.write(startup));
    c.once('data', (d: Buffer) => {
      c.destroy();
      resolve(d);
    });
    c.once('error', reject);
  });
  assert.equal(reply[0], 0x52);
  assert.ok(existsSync('/var/run/docker.sock') || existsSync('/run/docker.sock'), 'dockerd has a socket on the host');
});

/** A Postgres StartupMessage (protocol 3.0) for `user` on the database postgres. */
function pgStartup(user: string): Buffer {
  const body = Buffer.concat([Buffer.from([0, 3, 0, 0]), Buffer.from(`user\0${user}\0database\0postgres\0\0`)]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length + 4);
  return Buffer.concat([len, body]);
}

// The job's side: every way in, each printed as a line of JSON. It runs as
// whoever the worker runs jobs as, from the job's workspace.
function PROBE_SOURCE(): string {
  return String.raw`
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
}

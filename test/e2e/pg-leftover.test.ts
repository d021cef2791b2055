// A controller killed with -9 leaves its embedded Postgres running: the next
// start stops that Postgres (this data folder's only) and comes up on the same
// data. A port held by anything else (another checkout's Postgres, a running
// rc) is refused with a sentence that says what to do, and nothing is stopped.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { connect } from '../../server/db';
import { startEmbeddedPostgres, type EmbeddedDb } from '../../server/embedded-pg';

const ROOT = join(import.meta.dirname, '..', '..');
const dataDirs: string[] = [];
const children: ChildProcess[] = [];
const postmasters: { pid: number; pgdata: string }[] = [];
const others: EmbeddedDb[] = [];

after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  // Only a Postgres this file started: its pid, checked against its data folder.
  for (const { pid, pgdata } of postmasters) if (cwdOf(pid) === pgdata) process.kill(pid, 'SIGKILL');
  for (const o of others) await o.stop();
  for (const d of dataDirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dataDirs.push(d);
  return d;
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

interface Controller {
  child: ChildProcess;
  log: () => string;
  up: Promise<string>;
  exited: Promise<number | null>;
}

/** The built controller with its own embedded Postgres: no DATABASE_URL, no worker, no dashboard. */
function controller(dataDir: string, pgPort: number): Controller {
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: '0',
    RC_DATA_DIR: dataDir,
    RC_PG_PORT: String(pgPort),
    RC_LOCAL_WORKER: '0',
    RC_DASHBOARD: '0',
  };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'server.js')], { env: env as unknown as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let log = '';
  child.stdout!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const up = new Promise<string>((resolve, reject) => {
    const t = setInterval(() => {
      const m = /controller on (http:\/\/[^;\s]+)/.exec(log);
      if (m) {
        clearInterval(t);
        resolve(m[1]!);
      }
    }, 20);
    void exited.then((code) => {
      clearInterval(t);
      reject(new Error(`the controller exited ${code}:\n${log}`));
    });
  });
  up.catch(() => {});
  return { child, log: () => log, up, exited };
}

async function whoami(url: string, token: string): Promise<{ status: number; kind?: string; name?: string }> {
  const r = await fetch(`${url}/api/whoami`, { headers: { authorization: `Bearer ${token}` } });
  if (!r.ok) return { status: r.status };
  const { kind, name } = (await r.json()) as { kind: string; name: string };
  return { status: r.status, kind, name };
}

function cwdOf(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function until(check: () => boolean, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out: ${what}`);
}

test('a controller killed with -9 starts again: the Postgres it left is stopped, the data is kept; a running rc is left alone', {
  timeout: 180_000,
}, async () => {
  const dataDir = tempDir('rc-crash-');
  const pgdata = join(dataDir, 'pgdata');
  const pgPort = await freePort();
  const first = controller(dataDir, pgPort);
  const url1 = await first.up;
  const creds = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as { clientToken: string; adminToken: string };
  const made = await fetch(`${url1}/api/admin/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${creds.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'made before the crash' }),
  });
  assert.equal(made.status, 201);
  const { token } = (await made.json()) as { token: string };
  const pm = Number(readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
  postmasters.push({ pid: pm, pgdata });

  // A second start while the first one runs must not take its Postgres away.
  const twice = controller(dataDir, pgPort);
  assert.equal(await twice.exited, 1);
  assert.match(twice.log(), /already running from this checkout/);
  assert.match(twice.log(), /Ctrl-C/);
  assert.ok(alive(pm), "the running controller's Postgres was not stopped");
  assert.equal((await whoami(url1, creds.clientToken)).status, 200, 'the running controller still answers');

  first.child.kill('SIGKILL');
  await first.exited;
  assert.ok(alive(pm), 'kill -9 of the controller leaves its Postgres running');
  assert.equal(cwdOf(pm), pgdata);

  const t0 = Date.now();
  const again = controller(dataDir, pgPort);
  const url2 = await again.up;
  const took = Date.now() - t0;
  const said = new RegExp(`a Postgres left by an earlier rc \\(pid ${pm}\\) was stopped \\(([\\d.]+) s\\)`).exec(again.log());
  assert.ok(said, `the restart says it stopped the old Postgres:\n${again.log()}`);
  console.log(`# the restarted controller stopped the old Postgres in ${said[1]} s and answered ${took} ms after its start`);
  assert.ok(!alive(pm), 'the old Postgres is gone');
  const newPm = Number(readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
  postmasters.push({ pid: newPm, pgdata });
  assert.notEqual(newPm, pm);
  assert.equal((await whoami(url2, creds.clientToken)).status, 200);
  assert.deepEqual(await whoami(url2, token), { status: 200, kind: 'client', name: 'made before the crash' }, 'a token made before the crash still works');

  again.child.kill('SIGINT');
  assert.equal(await again.exited, 0);
  await until(() => !alive(newPm), 'Ctrl-C to stop the new Postgres');
});

test("a port held by another checkout's Postgres is refused with the port, that folder and RC_PG_PORT; that Postgres is left running", {
  timeout: 120_000,
}, async () => {
  const otherDir = tempDir('rc-other-');
  const pgPort = await freePort();
  const other = await startEmbeddedPostgres(otherDir, pgPort);
  others.push(other);
  const otherPm = Number(readFileSync(join(otherDir, 'pgdata', 'postmaster.pid'), 'utf8').split('\n')[0]);

  const dataDir = tempDir('rc-mine-');
  const mine = controller(dataDir, pgPort);
  assert.equal(await mine.exited, 1);
  const log = mine.log();
  assert.match(log, new RegExp(`port ${pgPort}`));
  assert.ok(log.includes(join(otherDir, 'pgdata')), `the other data folder is named:\n${log}`);
  assert.match(log, /RC_PG_PORT/);
  assert.doesNotMatch(log, /was stopped/);

  assert.ok(alive(otherPm), "the other checkout's Postgres still runs");
  const db = connect(other.url, 1);
  try {
    const rows = await db.client.unsafe('select 1 as one');
    assert.equal(rows[0]?.one, 1);
  } finally {
    await db.close();
  }
});

// npm start's supervised children, the parts that decide: the back-off of the
// embedded Postgres and the local worker (core/restart-delay.ts), and the
// local worker's pid file, which must name that worker still before anything
// is signalled (server/local-worker.ts). The whole path is in
// test/e2e/clean-stop.test.ts.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { findLeftoverWorker, parseRecord, PID_FILE, startTicksOf, stopLeftoverWorker } from '../../server/local-worker';
import { restartDelayMs } from '../../core/restart-delay';
import { alive } from '../helpers/stack';

const dirs: string[] = [];
const children: ChildProcess[] = [];
const orphans: number[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const pid of orphans) if (alive(pid)) process.kill(pid, 'SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'rc-local-worker-test-'));
  dirs.push(d);
  return d;
}

/** A stand-in for dist/worker.js: a node process whose command line names `entry`. */
const IDLE = 'process.on("SIGTERM", () => process.exit(0)); setInterval(() => {}, 1000)';

function ticks(pid: number): number {
  return startTicksOf(readFileSync(`/proc/${pid}/stat`, 'utf8'))!;
}

test('restartDelayMs: 1 s, doubling to 30 s while it keeps dying soon after a start, 1 s again after a run of a minute', () => {
  assert.equal(restartDelayMs(null, 0), 1000);
  assert.equal(restartDelayMs(1000, 500), 2000);
  assert.equal(restartDelayMs(16_000, 500), 30_000);
  assert.equal(restartDelayMs(30_000, 59_999), 30_000);
  assert.equal(restartDelayMs(30_000, 60_000), 1000);
});

test('startTicksOf and parseRecord: the start time after a command name with spaces; a garbled record is none', () => {
  const stat = '4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 987654 1000 10';
  assert.equal(startTicksOf(stat), 987654);
  assert.equal(startTicksOf(''), null);
  assert.deepEqual(parseRecord('{"pid":12,"startTicks":34}'), { pid: 12, startTicks: 34 });
  for (const bad of ['', 'x', '{"pid":0,"startTicks":1}', '{"pid":12}', '{"pid":"12","startTicks":1}']) assert.equal(parseRecord(bad), null, bad);
});

test('findLeftoverWorker: only the recorded process, with its start time and the worker program; under a live rc it is in use', async () => {
  const dir = dataDir();
  const entry = join(dir, 'worker.js');
  assert.deepEqual(findLeftoverWorker(dir, entry), { kind: 'none' }, 'no pid file');
  // A child of this (Node) process: a controller that still runs.
  const worker = spawn(process.execPath, ['-e', IDLE, entry], { stdio: 'ignore' });
  children.push(worker);
  await new Promise((r) => worker.once('spawn', r));
  await waitFor(() => readFileSync(`/proc/${worker.pid}/cmdline`, 'utf8').includes(entry));
  writeFileSync(join(dir, PID_FILE), JSON.stringify({ pid: worker.pid, startTicks: ticks(worker.pid!) }));
  assert.deepEqual(findLeftoverWorker(dir, entry), { kind: 'in-use', pid: worker.pid, parent: process.pid });
  // The pid reused by another process (another start time), or another program: not the worker.
  writeFileSync(join(dir, PID_FILE), JSON.stringify({ pid: worker.pid, startTicks: ticks(worker.pid!) - 1 }));
  assert.deepEqual(findLeftoverWorker(dir, entry), { kind: 'none' });
  writeFileSync(join(dir, PID_FILE), JSON.stringify({ pid: worker.pid, startTicks: ticks(worker.pid!) }));
  assert.deepEqual(findLeftoverWorker(dir, join(dir, 'other.js')), { kind: 'none' });
  assert.equal(worker.exitCode, null, 'nothing was signalled');
});

test('stopLeftoverWorker: an orphaned worker, stopped (SIGSTOP) too, is ended; its pid file checked before each signal', async () => {
  const dir = dataDir();
  const entry = join(dir, 'worker.js');
  // An orphan: started by a shell that exits at once, so its parent is no longer a Node process.
  const sh = spawn('sh', ['-c', `"${process.execPath}" -e '${IDLE}' "${entry}" >/dev/null 2>&1 & echo $!`], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  sh.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  await new Promise((r) => sh.once('close', r));
  const pid = Number(out.trim());
  orphans.push(pid);
  await waitFor(() => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(entry));
  writeFileSync(join(dir, PID_FILE), JSON.stringify({ pid, startTicks: ticks(pid) }));
  process.kill(pid, 'SIGSTOP');
  assert.deepEqual(findLeftoverWorker(dir, entry), { kind: 'orphan', pid });
  await stopLeftoverWorker(dir, entry, pid);
  assert.ok(!alive(pid), 'the leftover worker is gone');
});

async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

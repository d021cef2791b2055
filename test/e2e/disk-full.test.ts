// A full disk loses no acknowledged output (issue 30, item 4). This file runs
// its own embedded Postgres and puts the job output table on a small tmpfs of
// its own (a tablespace), then fills that file system with a filler file while
// a job prints: what the controller could not store must be resent once space
// is back, or the job's output marked truncated with the reason; never lost
// silently. Postgres's WAL stays on the ordinary disk: a full pg_wal makes
// Postgres restart, a database-away fault the writer already waits out.
// The dashboard is checked in a real Chromium: its notice while the disk is
// full, and a truncated job's page saying why.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { connect, type Database, runMigrations } from '../../server/db';
import { type EmbeddedDb, startEmbeddedPostgres } from '../../server/embedded-pg';
import { launchChromium, noChromium, screenshot, signIn } from '../helpers/browser';
import { type CliResult, Stack } from '../helpers/stack';

const dir = mkdtempSync(join(tmpdir(), 'rc-disk-full-'));
// Postgres runs as its own user (as root): it passes through.
chmodSync(dir, 0o711);
const space = join(dir, 'space');
let mounted = false;
let pg: EmbeddedDb;
let db: Database;
let stack: Stack;
let browser: Awaited<ReturnType<typeof launchChromium>> | null = null;
const filler = join(space, 'filler');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

before(
  async () => {
    pg = await startEmbeddedPostgres(join(dir, 'pg'), await freePort());
    const admin = connect(pg.url, 1);
    await admin.client.unsafe('create database rc');
    await admin.close();
    const url = pg.url.replace(/\/postgres$/, '/rc');
    db = connect(url, 2);
    await runMigrations(db);
    // The tmpfs belongs to the user Postgres runs as (the package made it: `postgres` as root).
    const owner = statSync(join(dir, 'pg', 'pgdata'));
    mkdirSync(space);
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=16m,mode=0700,uid=${owner.uid},gid=${owner.gid}`, 'tmpfs', space]);
    mounted = true;
    mkdirSync(join(space, 'pg'));
    execFileSync('chown', [`${owner.uid}:${owner.gid}`, join(space, 'pg')]);
    await db.client.unsafe(`create tablespace rc_output location '${join(space, 'pg')}'`);
    await db.client.unsafe('alter table job_output set tablespace rc_output');
    // And an empty table a request writes to: its first row needs space the full disk does not have.
    await db.client.unsafe('alter table sheets set tablespace rc_output');
    stack = await Stack.start({
      databaseUrl: url,
      workers: [],
      dashboard: !noChromium,
      // Small bounds, so that the second test's output overflows both the controller's and the worker's.
      controllerEnv: { RC_OUTPUT_WAITING_BYTES: String(256 * 1024) },
    });
    await stack.startWorker('alpha', 1);
    await stack.startWorker('beta', 1, { RC_OUTPUT_BUFFER_BYTES: String(256 * 1024) });
    if (!noChromium) browser = await launchChromium();
  },
  // The first start after a change to the pages builds them (minutes).
  { timeout: 780_000 },
);

after(async () => {
  rmSync(filler, { force: true });
  await browser?.close();
  await stack?.stop();
  await db?.close();
  await pg?.stop();
  if (mounted) execFileSync('umount', [space]);
  rmSync(dir, { recursive: true, force: true });
});

/** Writes zeros into the filler until the file system refuses more. */
function fillDisk(): void {
  const fd = openSync(filler, 'w');
  try {
    for (const size of [1024 * 1024, 4096, 1]) {
      const buf = Buffer.alloc(size);
      try {
        for (;;) writeSync(fd, buf);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      }
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * `rc run` of a job printing lines 1..first, then (once `go` exists) first+1..lines, then making `go`.done;
 * resolves the client's result.
 */
function printingJob(host: string, first: number, lines: number, go: string): { firstHalf: Promise<void>; done: Promise<CliResult> } {
  let out = '';
  let seen: () => void = () => {};
  const firstHalf = new Promise<void>((r) => {
    seen = r;
  });
  const done = stack.cli(
    ['run', '-d', `${host}:gpu0`, '--', 'sh', '-c', `seq 1 ${first}; while [ ! -e ${go} ]; do sleep 0.05; done; seq ${first + 1} ${lines}; : > ${go}.done`],
    {
      timeoutMs: 600_000,
      onSpawn: (c) =>
        c.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes(`\n${first}\n`)) seen();
        }),
    },
  );
  return { firstHalf, done };
}

async function metric(name: string): Promise<number> {
  const text = await fetch(`${stack.controllerUrl}/metrics`, { headers: { authorization: `Bearer ${stack.clientToken}` } }).then((r) => r.text());
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

async function jobIdOf(host: string): Promise<string> {
  const r = await stack.api('GET', '/api/ps');
  const job = (r.body as { jobs: { id: string; host: string | null }[] }).jobs.find((j) => j.host === host);
  assert.ok(job, `a running job on ${host}`);
  return job.id;
}

function isCountUp(text: string, n: number): boolean {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.length === n && lines.every((l, i) => l === String(i + 1));
}

/** Checks that the controller keeps answering while the disk is full, and that a change it cannot store is refused saying why. */
async function servesMeanwhile(jobId: string): Promise<void> {
  const t = Date.now();
  const sheet = await stack.api('PUT', '/api/hosts/alpha/sheet', { body: 'ask before using', ifUpdatedAt: null }, stack.adminToken);
  assert.equal(sheet.status, 507, JSON.stringify(sheet.body));
  assert.equal((sheet.body as { error: { code: string } }).error.code, 'database_full');
  assert.equal((await stack.api('GET', `/api/jobs/${jobId}`)).status, 200);
  assert.equal((await stack.api('GET', '/api/devices')).status, 200);
  const ps = await stack.cli(['ps']);
  assert.equal(ps.code, 0, ps.stderr);
  assert.ok(Date.now() - t < 20_000, `requests took ${Date.now() - t} ms while the disk was full`);
}

test('output the database could not store for lack of space is resent once space is back: every line stored', { timeout: 600_000 }, async (t) => {
  // A failed check leaves no full disk behind for the next test.
  t.after(() => rmSync(filler, { force: true }));
  const lines = 200_000;
  const go = join(dir, 'go-1');
  const job = printingJob('alpha', lines / 2, lines, go);
  await job.firstHalf;
  // What the client saw came through the controller: once nothing waits there, the first half is stored.
  await stack.waitFor(async () => (await metric('rc_job_output_waiting_bytes')) === 0, 'the first half stored', 60_000);
  const id = await jobIdOf('alpha');
  const page = await browser?.context.newPage();
  if (page) {
    await signIn(page, stack.controllerUrl, stack.clientToken);
    // A change told before the live view connects is not heard (the page's first fetch may come before it).
    await page.getByRole('status', { name: 'live updates connected' }).waitFor();
  }
  const logStart = stack.controllerLog.length;
  fillDisk();
  writeFileSync(go, '');
  await stack.waitFor(() => existsSync(`${go}.done`), 'the job to print its last line', 300_000);
  await stack.waitFor(async () => (await metric('rc_output_store_out_of_space')) === 1, 'the out-of-space metric', 60_000);
  await servesMeanwhile(id);
  const said = stack.controllerLog.slice(logStart);
  assert.match(said, /out of disk space/);
  // The pages' notice (the dashboard shows it above every page).
  const notices = (await stack.api('GET', '/api/notices')).body as { notices: { code: string; message: string }[] };
  assert.deepEqual(
    notices.notices.map((n) => n.code),
    ['disk_full'],
  );
  assert.match(notices.notices[0]!.message, /out of disk space/);
  if (page) {
    // Above every page, told by the live view without a reload.
    const banner = page.locator('[data-notice=disk_full]');
    await banner.waitFor({ timeout: 30_000 });
    assert.match((await banner.textContent()) ?? '', /out of disk space/);
    await screenshot(page, 'disk-full-notice');
  }
  const stored = await db.client<{ n: number }[]>`select count(*)::int as n from job_output where job_id = ${id}`;
  rmSync(filler);
  const r = await job.done;
  assert.equal(r.code, 0, r.stderr);
  // Its client saw every line, the held ones once they were resent.
  assert.ok(isCountUp(r.stdout, lines), 'rc run printed every line once, in order');
  assert.equal(await metric('rc_output_store_out_of_space'), 0);
  assert.deepEqual(((await stack.api('GET', '/api/notices')).body as { notices: unknown[] }).notices, []);
  if (page) {
    await page.locator('[data-notice=disk_full]').waitFor({ state: 'detached', timeout: 30_000 });
    await page.close();
  }
  // Said once for the spell, not once per chunk; and said when it ended.
  assert.equal(stack.controllerLog.slice(logStart).match(/out of disk space/g)?.length, 1, stack.controllerLog.slice(logStart));
  assert.match(stack.controllerLog.slice(logStart), /space is back/);
  const logs = await stack.cli(['logs', id], { timeoutMs: 120_000 });
  assert.equal(logs.code, 0, logs.stderr);
  const view = (await stack.api('GET', `/api/jobs/${id}`)).body as { job: { outputTruncated: boolean; outputTruncatedReason: string | null } };
  const received = await metric('rc_job_output_chunks_total');
  const [last] = await db.client<{ n: number; seq: number }[]>`select count(*)::int as n, max(seq)::int as seq from job_output where job_id = ${id}`;
  const storedLines = logs.stdout.split('\n').length - 1;
  console.log(
    `disk full: ${lines} lines printed, ${stored[0]!.n} chunks stored when space came back, ${storedLines} lines stored in the end (${last!.n} chunks of ${last!.seq}); ${received} chunks received (resent: ${received - last!.seq}); truncated: ${view.job.outputTruncated}`,
  );
  assert.ok(isCountUp(logs.stdout, lines), `rc logs has every line 1..${lines} once, in order (it has ${storedLines})`);
  assert.equal(view.job.outputTruncated, false);
  assert.doesNotMatch(logs.stderr, /truncated/);
});

test('output past what the controller and the worker can hold while the disk is full: the job is marked truncated, saying why', {
  timeout: 600_000,
}, async (t) => {
  t.after(() => rmSync(filler, { force: true }));
  // Little before the disk is full (the small bounds hold it), much after.
  const lines = 400_000;
  const first = 1000;
  const go = join(dir, 'go-2');
  const job = printingJob('beta', first, lines, go);
  await job.firstHalf;
  // What the client saw came through the controller: once nothing waits there, the first half is stored.
  await stack.waitFor(async () => (await metric('rc_job_output_waiting_bytes')) === 0, 'the first half stored', 60_000);
  const id = await jobIdOf('beta');
  fillDisk();
  writeFileSync(go, '');
  await stack.waitFor(() => existsSync(`${go}.done`), 'the job to print its last line', 300_000);
  await servesMeanwhile(id);
  rmSync(filler);
  const r = await job.done;
  assert.equal(r.code, 0, r.stderr);
  const view = (await stack.api('GET', `/api/jobs/${id}`)).body as { job: { outputTruncated: boolean; outputTruncatedReason: string | null } };
  const logs = await stack.cli(['logs', id], { timeoutMs: 120_000 });
  assert.equal(logs.code, 0, logs.stderr);
  const storedLines = logs.stdout.split('\n').length - 1;
  console.log(
    `disk full past the buffers: ${lines} lines printed, ${storedLines} stored; truncated: ${view.job.outputTruncated} (${view.job.outputTruncatedReason})`,
  );
  // Never a silent loss: all of it, or the job says that part was lost and why.
  if (isCountUp(logs.stdout, lines)) return;
  assert.equal(view.job.outputTruncated, true);
  assert.equal(view.job.outputTruncatedReason, 'disk_full');
  assert.match(logs.stderr, /output truncated \(disk full\): part of job \w+'s output was lost/);
  // What was stored is the output with the lost chunks missing: the part before the disk was full whole, and the end.
  const stored = logs.stdout.split('\n');
  assert.ok(isCountUp(stored.slice(0, first).join('\n'), first), 'what was stored before the disk was full is whole');
  assert.equal(stored.at(-2), String(lines), 'the last line was stored');
  const describe = await stack.cli(['describe', id]);
  assert.match(describe.stdout, /^output: +truncated \(disk_full\)$/m);
  if (browser) {
    const page = await browser.context.newPage();
    await signIn(page, stack.controllerUrl, stack.clientToken);
    await page.goto(`${stack.controllerUrl}/jobs/${id}`);
    const said = page.locator('[data-truncated=disk_full]');
    await said.waitFor({ timeout: 30_000 });
    assert.match((await said.textContent()) ?? '', /Disk full: part of this output was lost/);
    await screenshot(page, 'disk-full-truncated-job');
    await page.close();
  }
  assert.match(stack.controllerLog, new RegExp(`job ${id}: output chunks \\d+\\.\\.\\d+ were lost: the database was out of disk space`));
});

test('a controller stopped while the disk is full stores nothing as done that was not: the next one gets the output and the end', {
  timeout: 600_000,
}, async (t) => {
  t.after(() => rmSync(filler, { force: true }));
  // Less than the controller holds (RC_OUTPUT_WAITING_BYTES) after the disk is full: its end reaches the controller, and waits there.
  const lines = 21_000;
  const first = 1000;
  const go = join(dir, 'go-3');
  const job = printingJob('alpha', first, lines, go);
  await job.firstHalf;
  await stack.waitFor(async () => (await metric('rc_job_output_waiting_bytes')) === 0, 'the first part stored', 60_000);
  const id = await jobIdOf('alpha');
  fillDisk();
  writeFileSync(go, '');
  await stack.waitFor(() => existsSync(`${go}.done`), 'the job to print its last line', 300_000);
  await stack.waitFor(
    async () => (await metric('rc_job_output_waiting_bytes')) > 0 && (await metric('rc_output_store_out_of_space')) === 1,
    'output held',
    60_000,
  );
  // Its exit is on its way (the worker reports it once its processes are gone).
  // Its end reached the controller, and waits for its output.
  await stack.waitFor(() => stack.controllerLog.includes(`job ${id} ended; its end is stored once its output is`), 'the end to wait for the output', 60_000);
  await stack.stopController('SIGTERM');
  await stack.startController();
  rmSync(filler);
  await stack.waitFor(async () => (await stack.job(id)).state !== 'running', 'the job to end', 120_000);
  const logs = await stack.cli(['logs', id], { timeoutMs: 120_000 });
  const view = (await stack.api('GET', `/api/jobs/${id}`)).body as { job: { state: string; outputTruncated: boolean } };
  const storedLines = logs.stdout.split('\n').length - 1;
  console.log(
    `controller stopped while the disk was full: ${lines} lines printed, ${storedLines} stored; ${view.job.state}, truncated: ${view.job.outputTruncated}`,
  );
  assert.equal(view.job.state, 'succeeded');
  assert.ok(isCountUp(logs.stdout, lines), `rc logs has every line 1..${lines} (it has ${storedLines})`);
  await job.done;
});

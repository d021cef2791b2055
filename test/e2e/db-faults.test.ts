// A database stall or restart loses nothing and frees nothing by mistake.
// This file runs its own embedded Postgres, so it can stop it: a real SIGSTOP
// of every Postgres process (a hung disk looks the same), and a real restart.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { connect, runMigrations } from '../../server/db';
import { startEmbeddedPostgres, type EmbeddedDb } from '../../server/embedded-pg';
import { Stack } from '../helpers/stack';

const HOST_TIMEOUT_S = 3;
let stack: Stack;
let pg: EmbeddedDb;
let port = 0;
const dir = mkdtempSync(join(tmpdir(), 'rc-db-faults-'));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port: p } = s.address() as { port: number };
      s.close(() => resolve(p));
    });
  });
}

before(
  async () => {
    port = await freePort();
    pg = await startEmbeddedPostgres(dir, port);
    const admin = connect(pg.url, 1);
    await admin.client.unsafe('create database rc');
    await admin.close();
    const url = pg.url.replace(/\/postgres$/, '/rc');
    const db = connect(url, 2);
    await runMigrations(db);
    await db.close();
    stack = await Stack.start({ databaseUrl: url, hostTimeoutS: HOST_TIMEOUT_S, workers: [{ name: 'alpha', devices: 1 }] });
  },
  { timeout: 120_000 },
);

after(async () => {
  signalPostgres('SIGCONT');
  await stack?.stop();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The postmaster (from its pid file) and every process it started. */
function postgresPids(): number[] {
  const postmaster = Number(readFileSync(join(dir, 'pgdata', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const pids = [postmaster];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) pids.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return pids;
}

function signalPostgres(sig: NodeJS.Signals): void {
  try {
    for (const pid of postgresPids()) {
      try {
        process.kill(pid, sig);
      } catch {
        /* gone */
      }
    }
  } catch {
    /* not started */
  }
}

const run = (script: string) => stack.runJob(['-d', 'alpha:gpu0'], script, { timeoutMs: 120_000 });

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line-${i + 1}\n`).join('');

test('a 10 s SIGSTOP of Postgres ends no job and frees no device; clients get 503 database_unavailable at once', { timeout: 120_000 }, async () => {
  const first = run('for i in $(seq 1 60); do echo line-$i; sleep 0.2; done');
  const id = await first.id;
  // Queued behind it for the same device: it must not start while the first still runs.
  const second = stack.cli(['run', '-d', 'alpha:gpu0', '--', 'echo', 'second'], { timeoutMs: 120_000 });
  await new Promise((r) => setTimeout(r, 1000));

  signalPostgres('SIGSTOP');
  const stoppedAt = Date.now();
  await new Promise((r) => setTimeout(r, 4500));
  const t0 = Date.now();
  const during = await stack.api('GET', '/api/devices');
  const answeredIn = Date.now() - t0;
  assert.equal(during.status, 503, JSON.stringify(during.body));
  assert.equal((during.body as { error: { code: string } }).error.code, 'database_unavailable');
  assert.ok(answeredIn < 1000, `answered in ${answeredIn} ms, not a hang`);
  await new Promise((r) => setTimeout(r, Math.max(0, 10_000 - (Date.now() - stoppedAt))));
  signalPostgres('SIGCONT');

  const done = await first.done;
  assert.equal(done.code, 0, done.stderr);
  assert.equal(done.stdout, `${id}\n${lines(60)}`);
  const job = await stack.job(id);
  assert.deepEqual([job.state, job.exitCode], ['succeeded', 0]);
  const after = await second;
  assert.equal(after.code, 0, after.stderr);
  const jobs = (await stack.api('GET', '/api/jobs?limit=2')).body as { jobs: { id: string; startedAt: string; endedAt: string }[] };
  const [later, earlier] = jobs.jobs;
  assert.equal(earlier!.id, id);
  assert.ok(Date.parse(later!.startedAt) >= Date.parse(earlier!.endedAt), 'the queued job started only after the first ended');
  const logs = await stack.cli(['logs', id]);
  assert.equal(logs.stdout, `${id}\n${lines(60)}`, 'every line was stored');
});

test('a Postgres restart loses no output line the worker was told is stored', { timeout: 120_000 }, async () => {
  const job = run('for i in $(seq 1 120); do echo line-$i; sleep 0.05; done');
  const id = await job.id;
  await new Promise((r) => setTimeout(r, 1000));
  await pg.stop();
  await new Promise((r) => setTimeout(r, 1500));
  pg = await startEmbeddedPostgres(dir, port);
  const done = await job.done;
  assert.equal(done.code, 0, done.stderr);
  assert.equal(done.stdout, `${id}\n${lines(120)}`, 'the live stream is whole');
  await stack.waitFor(async () => (await stack.api('GET', `/api/jobs/${id}`)).status === 200, 'the API to answer again', 30_000);
  const logs = await stack.cli(['logs', id]);
  assert.equal(logs.code, 0, logs.stderr);
  assert.equal(logs.stdout, `${id}\n${lines(120)}`, 'the stored output is whole, each line once');
  // What other controllers tell it comes through LISTEN: listening again on the restarted Postgres, not once and then never.
  const db = connect(stack.dbUrl, 1);
  try {
    await stack.waitFor(
      async () => (await db.client`select 1 from pg_stat_activity where application_name = 'rc-bus' and query ilike 'listen%'`).length > 0,
      "the controller's bus to listen again after the restart",
      30_000,
    );
  } finally {
    await db.close();
  }
});

test('an exit report the controller failed to store is sent again, on the same connection: the job ends', { timeout: 120_000 }, async () => {
  // A real failure of the end's statement, twice: a trigger that raises while a sequence (not rolled back with the statement) is below 3.
  const db = connect(stack.dbUrl, 1);
  await db.client.unsafe(`
    create sequence rc_test_end_failures;
    create function rc_test_fail_end() returns trigger language plpgsql as $$
      begin
        if nextval('rc_test_end_failures') <= 2 then raise exception 'injected: the end is not stored'; end if;
        return new;
      end $$;
    create trigger rc_test_fail_end before update on jobs for each row
      when (old.state = 'running' and new.state = 'succeeded') execute function rc_test_fail_end();`);
  try {
    const logFrom = stack.controllerLog.length;
    const job = run('sleep 0.5');
    const id = await job.id;
    await stack.waitFor(async () => (await stack.job(id)).state === 'succeeded', 'the job to end with its exit code', 30_000);
    const log = stack.controllerLog.slice(logFrom);
    assert.equal(log.match(new RegExp(`exit report for ${id} failed`, 'g'))?.length, 2, `the first two reports failed:\n${log}`);
    assert.equal(stack.workerLogs.get('alpha')!.match(/connected to /g)?.length, 1, 'sent again without a reconnect');
    const done = await job.done;
    assert.equal(done.code, 0, done.stderr);
    const next = await stack.cli(['run', '-d', 'alpha:gpu0', '--', 'echo', 'next'], { timeoutMs: 30_000 });
    assert.equal(next.code, 0, next.stderr);
  } finally {
    await db.client.unsafe('drop trigger rc_test_fail_end on jobs; drop function rc_test_fail_end; drop sequence rc_test_end_failures');
    await db.close();
  }
});

test('a submit the database stalls in the middle of runs once, and rc run follows it to its exit code', { timeout: 120_000 }, async () => {
  // The submit's INSERT waits on a lock this test holds; Postgres then stops while it waits: the controller answers
  // "may or may not have taken effect" (503) and, once Postgres is back and the lock gone, the INSERT commits.
  const marker = `stalled-submit-${process.pid}`;
  const locker = connect(stack.dbUrl, 1);
  const watcher = connect(stack.dbUrl, 1);
  let unlock = () => {};
  const locked = new Promise<void>((ready) => {
    void locker.client
      .begin(async (tx) => {
        await tx.unsafe('lock table jobs in exclusive mode');
        ready();
        await new Promise<void>((r) => {
          unlock = r;
        });
        throw new Error('roll back');
      })
      .catch(() => {});
  });
  await locked;
  let stderr = '';
  const done = stack.cli(['run', '-d', 'alpha:gpu0', '--', 'sh', '-c', `echo ${marker}; exit 7`], {
    timeoutMs: 100_000,
    onSpawn: (c) => c.stderr!.on('data', (b: Buffer) => (stderr += b.toString())),
  });
  let exited = false;
  void done.then(() => (exited = true));
  try {
    await stack.waitFor(
      async () => {
        const [{ n }] = await watcher.client<[{ n: number }]>`
          select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%insert into jobs%'`;
        return n > 0;
      },
      'the submit to wait on the lock',
      30_000,
    );
    signalPostgres('SIGSTOP');
    await stack.waitFor(
      () => /sending it again|sending the submit again|following job/.test(stderr) || exited,
      'rc run to be told the database stopped',
      30_000,
    );
  } finally {
    signalPostgres('SIGCONT');
    unlock();
  }
  const result = await done;
  await locker.close();
  await watcher.close();
  assert.equal(result.code, 7, `rc run exits with the job's own code:\n${result.stderr}\nstdout: ${result.stdout}\n${stack.controllerLog.slice(-3000)}`);
  assert.equal(result.stdout.split('\n').filter((l) => l === marker).length, 1, result.stdout);
  const [row] = await stackRows(`select count(*)::int as n from jobs where argv::text like '%${marker}%'`);
  assert.equal(row?.n, 1, 'one job, not two');
});

async function stackRows(query: string): Promise<{ n: number }[]> {
  const db = connect(stack.dbUrl, 1);
  try {
    return (await db.client.unsafe(query)) as unknown as { n: number }[];
  } finally {
    await db.close();
  }
}

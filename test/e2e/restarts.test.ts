// rc run --restarts: a job whose host is lost (its worker SIGKILLed) runs
// again from the start on another host, at the front of its priority, with a
// new fence; rc run keeps following it and exits as the new attempt ends. The
// lost attempt's device stays leased until its worker is back and the
// orphan is gone. And every new flag's bad input.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { alive, Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await Stack.start({
    hostTimeoutS: 3,
    workers: [
      { name: 'alpha', devices: 1 },
      { name: 'beta', devices: 1 },
    ],
  });
});
after(async () => {
  await stack.stop();
});

interface Attempt {
  attempt: number;
  host: string | null;
  devices: string[] | null;
  state: string;
  cause: string;
  reason: string | null;
}
const full = async (id: string) =>
  (await stack.api('GET', `/api/jobs/${id}`)).body as { job: { state: string; attempt: number; restarts: number; host: string | null; attempts?: Attempt[] } };

test('a job whose worker is SIGKILLed runs again on another host with --restarts 1; rc run follows it to its end', { timeout: 120_000 }, async () => {
  const run = stack.runJob(['--restarts', '1'], 'echo "on $RC_DEVICES"; sleep 6; echo "done on $RC_DEVICES"', { timeoutMs: 100_000 });
  const id = await run.id;
  await stack.waitFor(async () => (await stack.job(id)).devices !== null, 'the first attempt to start');
  const first = (await full(id)).job;
  assert.equal(first.attempt, 1);
  assert.equal(first.restarts, 1);
  const lostHost = first.host!;
  const otherHost = lostHost === 'alpha' ? 'beta' : 'alpha';
  await stack.stopWorker(lostHost, 'SIGKILL');
  const done = await run.done;
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stdout, new RegExp(`on ${lostHost}:gpu0`));
  assert.match(done.stdout, new RegExp(`done on ${otherHost}:gpu0`));
  assert.doesNotMatch(done.stdout, new RegExp(`done on ${lostHost}`), 'the lost attempt never reported its end');
  assert.match(done.stderr, /attempt 1 ended lost: host .* stopped answering; queued again for attempt 2/);
  const view = (await full(id)).job;
  assert.equal(view.state, 'succeeded');
  assert.equal(view.attempt, 2);
  assert.equal(view.host, otherHost);
  assert.equal(view.attempts?.length, 1);
  assert.deepEqual([view.attempts![0]!.attempt, view.attempts![0]!.state, view.attempts![0]!.cause, view.attempts![0]!.host], [1, 'lost', 'lost', lostHost]);
  // rc jobs and rc describe show the attempt and how the earlier one ended.
  const jobs = await stack.cli(['jobs']);
  assert.match(jobs.stdout, new RegExp(`${id}\\s+succeeded \\[attempt 2; 1: lost, host ${lostHost} stopped answering\\]`));
  const described = await stack.cli(['describe', id]);
  assert.match(described.stdout, /attempt:\s+2 \(restarts 1: up to 2 attempts\)/);
  assert.match(described.stdout, new RegExp(`EARLIER ATTEMPTS[\\s\\S]*1\\s+lost\\s+lost\\s+${lostHost}\\s+${lostHost}:gpu0`));
  // The lost attempt's device stays leased (its orphan may still run) until its worker is back and has killed it.
  const db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  try {
    const leases = await db<{ fence: string }[]>`
      select l.fence::text from leases l join devices d on d.id = l.device_id where d.host_name = ${lostHost} and l.job_id = ${id} and l.released_at is null`;
    assert.equal(leases.length, 1, 'the lost attempt still holds its device in the database');
    const [job] = await db<{ fence: string }[]>`select fence::text from jobs where id = ${id}`;
    assert.notEqual(leases[0]!.fence, job!.fence, 'the new attempt has a fence of its own');
  } finally {
    await db.end();
  }
  await stack.startWorker(lostHost, 1);
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'both devices to be free again', 20_000);
  const again = await stack.cli(['run', '-d', `${lostHost}:gpu0`, '--', 'echo', 'ok']);
  assert.equal(again.code, 0, again.stderr);
});

test('a lost worker that comes back kills its own attempt only, not the new one running beside it on the same machine', { timeout: 180_000 }, async () => {
  // Both workers run on this machine: the restarted one must not take the new attempt (same RC_JOB_ID) for its leftover.
  const go = join(stack.dataDir, 'go-restarted-attempt');
  const run = stack.runJob(
    ['--restarts', '1'],
    `echo "pid $$ on $RC_DEVICES"; n=0; while [ ! -e ${go} ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done; echo "done on $RC_DEVICES"; exit 7`,
    { timeoutMs: 150_000 },
  );
  let out = '';
  run.child().stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const id = await run.id;
  await stack.waitFor(async () => (await stack.job(id)).devices !== null, 'the first attempt to start');
  const lostHost = (await full(id)).job.host!;
  const otherHost = lostHost === 'alpha' ? 'beta' : 'alpha';
  await stack.waitFor(() => new RegExp(`pid \\d+ on ${lostHost}:gpu0`).test(out), 'the first attempt to print its pid', 30_000);
  const firstPid = Number(new RegExp(`pid (\\d+) on ${lostHost}:gpu0`).exec(out)![1]);
  await stack.stopWorker(lostHost, 'SIGKILL');
  await stack.waitFor(() => new RegExp(`pid \\d+ on ${otherHost}:gpu0`).test(out), 'the second attempt to run on the other host', 60_000);
  const secondPid = Number(new RegExp(`pid (\\d+) on ${otherHost}:gpu0`).exec(out)![1]);
  assert.ok(alive(firstPid), 'the lost attempt still runs while its worker is away');
  // The lost worker comes back: before its hello it kills what its previous run left, and only that.
  await stack.startWorker(lostHost, 1);
  await stack.waitFor(async () => !alive(firstPid), "the lost attempt's process to be killed by its own worker", 30_000);
  assert.ok(alive(secondPid), `the new attempt (pid ${secondPid}) still runs; worker ${lostHost}'s log:\n${stack.workerLogs.get(lostHost)}`);
  assert.equal(existsSync(go), false);
  writeFileSync(go, '');
  const done = await run.done;
  assert.equal(done.code, 7, `the new attempt ends with its own exit code: ${done.stderr}`);
  assert.match(done.stdout, new RegExp(`done on ${otherHost}:gpu0`));
  const view = (await full(id)).job;
  assert.deepEqual([view.state, view.attempt, view.host], ['failed', 2, otherHost]);
  assert.equal((await stack.job(id)).exitCode, 7);
  assert.match(readFileSync(join(stack.dataDir, `state-${lostHost}`, 'jobs.json'), 'utf8'), /"jobs":\[\]/);
});

test('without restarts left the job ends lost (exit 205), its attempts kept', { timeout: 120_000 }, async () => {
  const run = stack.runJob(['--restarts', '1', '-d', 'alpha:gpu0'], 'sleep 300', { timeoutMs: 100_000 });
  const id = await run.id;
  await stack.stopWorker('alpha', 'SIGKILL');
  // Attempt 2 can go nowhere but alpha: it waits there until alpha is back, then runs, and alpha is lost again.
  await stack.waitFor(async () => (await full(id)).job.attempt === 2, 'the second attempt to be queued', 20_000);
  assert.equal((await stack.job(id)).state, 'queued');
  await stack.startWorker('alpha', 1);
  await stack.waitFor(async () => (await stack.job(id)).state === 'running', 'the second attempt to start', 20_000);
  await stack.stopWorker('alpha', 'SIGKILL');
  const done = await run.done;
  assert.equal(done.code, 205, done.stderr);
  const view = (await full(id)).job;
  assert.deepEqual([view.state, view.attempt, view.attempts?.map((a) => a.state)], ['lost', 2, ['lost']]);
  await stack.startWorker('alpha', 1);
});

test('bad --restarts, --preemptible and --retry-on-preempt input is refused before anything is submitted', { timeout: 60_000 }, async () => {
  for (const bad of [['--restarts', '-1'], ['--restarts', '1000'], ['--restarts', 'x'], ['--restarts', '1.5'], ['--retry-on-preempt']]) {
    const r = await stack.cli(['run', ...bad, '--', 'true']);
    assert.equal(r.code, 2, `${bad.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^rc: /);
    assert.doesNotMatch(r.stderr, /at .*\.js:\d+/, 'no stack trace');
  }
  const tty = await stack.cli(['run', '--tty', '--restarts', '1']);
  assert.equal(tty.code, 2, tty.stderr);
  const base = { argv: ['true'], submitter: 'tester' };
  for (const body of [
    { ...base, restarts: -1 },
    { ...base, restarts: 21 },
    { ...base, restarts: 'x' },
    { ...base, restarts: 1.5 },
    { ...base, preemptible: 'yes' },
    { ...base, retryOnPreempt: true },
    { ...base, retryOnPreempt: 1, preemptible: true },
    { kind: 'hold', ttlS: 60, submitter: 'tester', preemptible: true },
    { kind: 'hold', ttlS: 60, submitter: 'tester', restarts: 1 },
  ]) {
    const r = await stack.api('POST', '/api/jobs', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal((r.body as { error: { code: string } }).error.code, 'bad_request', JSON.stringify(r.body));
  }
  const wrong = await stack.api('POST', '/api/jobs', { ...base, restarts: 1, preemptible: true }, 'not-a-token');
  assert.equal(wrong.status, 401);
  const none = await stack.api('POST', '/api/jobs', { ...base, restarts: 1, preemptible: true }, null);
  assert.equal(none.status, 401);
  // Nothing was queued or run by any of them.
  assert.equal(((await stack.api('GET', '/api/jobs?state=queued,running')).body as { jobs: unknown[] }).jobs.length, 0);
});

// rc run --array end to end: a real controller and worker as processes, the
// built CLI as a subprocess, a real Postgres underneath. The %N cap is checked
// from the leases table's intervals (never by sampling), an array is killed
// mid-way and waited on, a task's output is found by <array>:<index>, a failed
// task is rc run's exit, and bad input submits nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { EXIT } from '../../core/exit-codes';
import { Stack } from '../helpers/stack';

let stack: Stack;
let sql: postgres.Sql;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 8 }] });
  sql = postgres(stack.dbUrl, { max: 2, onnotice: () => {} });
});
after(async () => {
  await sql.end();
  await stack.stop();
});

interface ArrayView {
  id: string;
  size: number;
  maxRunning: number | null;
  done: boolean;
  counts: Record<string, number>;
  firstFailure: { index: number; state: string; exitCode: number | null } | null;
}
const arrayOf = async (id: string) => ((await stack.api('GET', `/api/arrays/${id}`)).body as { array: ArrayView }).array;
const rows = async () =>
  (await sql<{ jobs: number; arrays: number }[]>`select (select count(*) from jobs)::int as jobs, (select count(*) from job_arrays)::int as arrays`)[0]!;

test('an array of 50 with %4 never has more than 4 tasks holding leases at once (from the leases table), and each task gets its index', async () => {
  const r = await stack.cli(['run', '--array', '0-49%4', '--name', 'sweep', '--', 'sh', '-c', 'sleep 0.3; echo "task $RC_ARRAY_INDEX of $RC_ARRAY_ID"'], {
    timeoutMs: 120_000,
  });
  assert.equal(r.code, 0, r.stderr);
  const id = r.stdout.trim().split('\n')[0]!;
  assert.match(id, /^a[0-9a-v]{10}$/);
  // A compact line per change of its counts, the last one all done; never the tasks' output.
  assert.match(r.stderr, new RegExp(`^${id}: 50 of 50 done, 0 running, 0 queued$`, 'm'));
  assert.doesNotMatch(r.stdout + r.stderr, /task \d+ of/);
  const intervals = await sql<{ jobId: string; from: Date; to: Date }[]>`
    select l.job_id as "jobId", l.acquired_at as from, l.released_at as to from leases l join jobs j on j.id = l.job_id where j.array_id = ${id}`;
  assert.equal(new Set(intervals.map((i) => i.jobId)).size, 50, 'every task held a lease');
  assert.ok(intervals.every((i) => i.to !== null));
  // The most leases held at once: a sweep over the intervals' ends (a release before an acquisition at the same instant).
  const points = intervals.flatMap((i) => [
    { t: i.from.getTime(), d: 1 },
    { t: i.to.getTime(), d: -1 },
  ]);
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const p of points) {
    now += p.d;
    most = Math.max(most, now);
  }
  assert.ok(most <= 4, `at most 4 at once, saw ${most}`);
  assert.ok(most >= 2, `the cap lets several run at once (saw ${most})`);
  // rc logs <array>:<index>: that task's output, with its RC_ARRAY_INDEX.
  const logs = await stack.cli(['logs', `${id}:17`]);
  assert.equal(logs.code, 0, logs.stderr);
  assert.equal(logs.stdout, `task 17 of ${id}\n`);
  // rc jobs --array: its tasks by index, each named <array>:<index>.
  const jobs = await stack.cli(['jobs', '--array', id, '--limit', '100']);
  assert.equal(jobs.code, 0, jobs.stderr);
  const lines = jobs.stdout.trim().split('\n').slice(1);
  assert.equal(lines.length, 50);
  assert.match(lines[0]!, new RegExp(`succeeded .* ${id}:0 `));
  assert.match(lines[49]!, new RegExp(`${id}:49 `));
  // rc describe: the spec, the cap, the counts; by its id and by its name over the API.
  const d = await stack.cli(['describe', id]);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /spec: +0-49%4 \(50 tasks, at most 4 at once\)/);
  assert.match(d.stdout, /0 running, 0 queued, 0 waiting, 50 succeeded/);
  assert.equal((await arrayOf('sweep')).id, id);
  // A task's own description names its array.
  const t = await stack.cli(['describe', `${id}:3`]);
  assert.match(t.stdout, new RegExp(`${id}, task 3`));
});

test('a failed task is rc run --array exit (the lowest-index one that failed); rc wait <array> exits the same', async () => {
  const r = await stack.cli(['run', '--array', '0-5', '--', 'sh', '-c', 'case $RC_ARRAY_INDEX in 2) exit 7;; 4) exit 9;; esac'], { timeoutMs: 60_000 });
  assert.equal(r.code, 7, r.stderr);
  const id = r.stdout.trim();
  assert.match(r.stderr, new RegExp(`task 2 \\(j[0-9a-v]{10}\\) failed; rc logs ${id}:2 shows its output`));
  const a = await arrayOf(id);
  assert.equal(a.counts.failed, 2);
  assert.equal(a.counts.succeeded, 4);
  const w = await stack.cli(['wait', id]);
  assert.equal(w.code, 7);
  assert.equal(w.stdout, '');
});

test('an array killed mid-way: running tasks killed, waiting ones cancelled, none left queued or running; rc wait then ends', async () => {
  const r = await stack.cli(['run', '--array', '0-19%3', '--detach', '--', 'sleep', '60']);
  assert.equal(r.code, 0, r.stderr);
  const id = r.stdout.trim();
  await stack.waitFor(async () => (await arrayOf(id)).counts.running === 3, 'three tasks to run');
  // rc wait is still waiting: it ends once the kill has ended every task.
  const waiting = stack.cli(['wait', id], { timeoutMs: 60_000 });
  const k = await stack.cli(['kill', id]);
  assert.equal(k.code, 0, k.stderr);
  // The answer counts what still runs once the stop was asked: a task its worker killed at once may have ended already.
  assert.match(k.stdout, new RegExp(`^stopping ${id} \\([123] running tasks?\\)`));
  await stack.waitFor(async () => (await arrayOf(id)).done, 'every task to end', 30_000);
  const left = await sql`select id from jobs where array_id = ${id} and state in ('queued', 'running')`;
  assert.equal(left.length, 0);
  const a = await arrayOf(id);
  assert.equal(a.counts.killed, 3);
  assert.equal(a.counts.cancelled, 17);
  assert.equal(a.firstFailure?.state, 'killed');
  const w = await waiting;
  assert.notEqual(w.code, 0);
  assert.equal(w.code, (await stack.cli(['wait', id])).code);
  // Nothing of it holds a device.
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'every device to be free');
  // The kill was audited once.
  const audits = await sql`select 1 from audit where action = 'array.kill' and target = ${id}`;
  assert.equal(audits.length, 1);
});

test('rc ps shows an array as one line with its counts; --tasks lists its tasks', async () => {
  const r = await stack.cli(['run', '--array', '0-9%2', '--detach', '--name', 'pslist', '--', 'sleep', '60']);
  const id = r.stdout.trim();
  await stack.waitFor(async () => (await arrayOf(id)).counts.running === 2, 'two tasks to run');
  const ps = await stack.cli(['ps']);
  assert.equal(ps.code, 0, ps.stderr);
  assert.doesNotMatch(ps.stdout, new RegExp(`${id}:\\d`));
  assert.match(ps.stdout, new RegExp(`^${id} +10 \\(%2\\) +2 +8 +0 +0 +\\S+ +pslist +sleep 60`, 'm'));
  const tasks = await stack.cli(['ps', '--tasks']);
  assert.equal((tasks.stdout.match(new RegExp(`${id}:\\d`, 'g')) ?? []).length, 10);
  assert.equal((await stack.cli(['kill', id])).code, 0);
  await stack.waitFor(async () => (await arrayOf(id)).done, 'every task to end', 30_000);
});

test('bad input is refused with one clear sentence and submits nothing', async () => {
  const was = await rows();
  const cases: [string, RegExp][] = [
    ['0-9,x', /"x" is not an index, a range or a range with a step/],
    ['0-99%0', /%0 would never run a task/],
    ['0-10000', /more than 10,000 tasks/],
    ['1000001', /an index is at most 1,000,000/],
    ['0-9,5', /index 5 is named twice/],
    ['0-20:0', /a step of 0/],
  ];
  for (const [spec, says] of cases) {
    const cli = await stack.cli(['run', '--array', spec, '--', 'true']);
    assert.equal(cli.code, EXIT.usage, `${spec}: ${cli.stderr}`);
    assert.match(cli.stderr, /^rc: bad_array: --array /);
    assert.match(cli.stderr, says);
    // The controller refuses it the same way (a client that skips the CLI's check).
    const api = await stack.api('POST', '/api/arrays', { array: spec, job: { argv: ['true'], submitter: 'alice' } });
    assert.equal(api.status, 400, spec);
    const e = (api.body as { error: { code: string; message: string } }).error;
    assert.equal(e.code, 'bad_array', spec);
    assert.match(e.message, says);
  }
  for (const [body, says] of [
    [{ array: '0-3', job: { kind: 'hold', ttlS: 60, submitter: 'alice' } }, /a hold or a terminal is not an array task/],
    [{ array: '0-3', job: { argv: ['true'], submitter: 'alice', wait: false } }, /drop --no-wait/],
    [{ array: '0-3', job: { argv: ['true'], submitter: 'alice', stdin: true } }, /read no stdin/],
    [{ array: '0-3', job: { argv: ['true'], submitter: 'alice', env: { RC_ARRAY_INDEX: '3' } } }, /RC_ARRAY_INDEX is set by rc itself/],
    [{ array: '0-3', job: { argv: ['true'], submitter: 'alice' }, extra: 1 }, /extra/],
    [{ array: 7, job: { argv: ['true'], submitter: 'alice' } }, /array/],
    [{ array: '0-3' }, /job/],
  ] as const) {
    const api = await stack.api('POST', '/api/arrays', body);
    assert.equal(api.status, 400, JSON.stringify(body));
    assert.match((api.body as { error: { message: string } }).error.message, says);
  }
  // A selector no device matches: refused as a job would be, nothing stored.
  const none = await stack.cli(['run', '--array', '0-3', '-s', 'vram>=9000G', '--', 'true']);
  assert.equal(none.code, EXIT.no_matching_device, none.stderr);
  assert.deepEqual(await rows(), was, 'nothing was submitted');
});

test("an array that would pass the token's --queued limit is refused whole", async () => {
  const admin = (args: string[]) => stack.cli(['admin', ...args], { env: { RC_TOKEN: stack.adminToken } });
  const made = await admin(['token', 'create', 'queuer']);
  assert.equal(made.code, 0, made.stderr);
  const secret = made.stdout.trim().split('\n').pop()!;
  assert.equal((await admin(['limit', 'set', 'token:queuer', '--queued', '5'])).code, 0);
  const was = await rows();
  const r = await stack.cli(['run', '--array', '0-5', '--detach', '--', 'true'], { env: { RC_TOKEN: secret } });
  assert.equal(r.code, EXIT.over_limit, r.stderr);
  assert.match(r.stderr, /an array of 6 tasks would pass it/);
  assert.deepEqual(await rows(), was, 'nothing was submitted');
  const ok = await stack.cli(['run', '--array', '0-4', '--', 'true'], { env: { RC_TOKEN: secret }, timeoutMs: 60_000 });
  assert.equal(ok.code, 0, ok.stderr);
});

test('who may call the array routes: no token, a host credential, a bound token acting as another name, another submitter', async () => {
  const body = { array: '0-1', job: { argv: ['sleep', '60'], submitter: 'alice' } };
  const made = await stack.api('POST', '/api/arrays', body);
  assert.equal(made.status, 201);
  const id = (made.body as { array: ArrayView }).array.id;
  const was = await rows();
  const host = stack.hostCredential('alpha');
  for (const [method, path, b] of [
    ['POST', '/api/arrays', body],
    ['GET', `/api/arrays/${id}`, undefined],
    ['POST', `/api/arrays/${id}/kill`, { submitter: 'alice' }],
  ] as const) {
    assert.equal((await stack.api(method, path, b, null)).status, 401, `${method} ${path} without a token`);
    assert.equal((await stack.api(method, path, b, host)).status, 403, `${method} ${path} with a host credential`);
  }
  const boundMade = await stack.cli(['admin', 'token', 'create', 'bound-b', '--submitter', 'bob'], { env: { RC_TOKEN: stack.adminToken } });
  const bound = boundMade.stdout.trim().split('\n').pop()!;
  const asAlice = await stack.api('POST', '/api/arrays', body, bound);
  assert.equal(asAlice.status, 403);
  assert.equal((asAlice.body as { error: { code: string } }).error.code, 'forbidden');
  const killAsAlice = await stack.api('POST', `/api/arrays/${id}/kill`, { submitter: 'alice' }, bound);
  assert.equal(killAsAlice.status, 403);
  // Bob (his own name, bound) may not kill alice's array.
  const killAsBob = await stack.api('POST', `/api/arrays/${id}/kill`, { submitter: 'bob' }, bound);
  assert.equal(killAsBob.status, 403);
  assert.equal((killAsBob.body as { error: { code: string } }).error.code, 'not_job_owner');
  assert.deepEqual(await rows(), was, 'nothing was submitted');
  assert.equal((await arrayOf(id)).counts.cancelled, 0, 'nothing was killed');
  // Bad input to the other routes.
  assert.equal((await stack.api('GET', '/api/arrays/nope')).status, 404);
  assert.equal((await stack.api('POST', `/api/arrays/${id}/kill`, { submitter: '' })).status, 400);
  assert.equal((await stack.api('GET', '/api/jobs?array=j0123456789')).status, 400);
  assert.equal((await stack.api('GET', '/api/ps?tasks=2')).status, 400);
  const k = await stack.api('POST', `/api/arrays/${id}/kill`, { submitter: 'alice' });
  assert.equal(k.status, 200);
  await stack.waitFor(async () => (await arrayOf(id)).done, 'every task to end', 30_000);
});

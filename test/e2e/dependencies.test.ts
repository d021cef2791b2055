// rc run --after / --after-any and --retries with real processes: a chain
// A → B → C where B fails (C cancelled, cause dependency, exit 218), the wait
// reason in rc ps and the queue, --after-any after a failure, --after a
// name, a dependency across a controller restart and across two
// controllers, retries that fail twice then succeed, and every new flag's
// bad input (a clear error, nothing submitted).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Stack } from '../helpers/stack';

let stack: Stack;
const scratch = mkdtempSync(join(tmpdir(), 'rc-deps-'));
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 3 }] });
});
after(async () => {
  await stack.stop();
  rmSync(scratch, { recursive: true, force: true });
});

interface Full {
  state: string;
  cause: string | null;
  reason: string | null;
  exitCode: number | null;
  startedAt: string | null;
  endedAt: string | null;
  createdAt: string;
  retried: number;
  after?: { id: string; state: string; any: boolean }[];
  attempts?: { attempt: number; state: string; cause: string; exitCode: number | null }[];
}
const full = async (s: Stack, id: string) => ((await s.api('GET', `/api/jobs/${id}`)).body as { job: Full }).job;
const detach = async (s: Stack, args: string[]) => {
  const r = await s.cli(['run', '--detach', ...args]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim();
};
const jobCount = async () => ((await stack.api('GET', '/api/jobs?limit=1000')).body as { jobs: unknown[] }).jobs.length;

test('a chain A → B → C where B fails: B waits for A (rc ps, the queue), C is cancelled with cause dependency and rc run exits 218', {
  timeout: 60_000,
}, async () => {
  const a = await detach(stack, ['--', 'sh', '-c', 'sleep 2']);
  const b = await detach(stack, ['--after', a, '--', 'sh', '-c', 'exit 1']);
  const ps = await stack.cli(['ps']);
  assert.match(ps.stdout, new RegExp(`${b}\\s+waiting\\s+.*after ${a} \\(running\\)`), ps.stdout);
  const queue = (await stack.api('GET', '/api/queue')).body as { jobs: { id: string; position: number | null; waits?: string; why: { text: string } }[] };
  const entry = queue.jobs.find((j) => j.id === b)!;
  assert.deepEqual([entry.position, entry.why.text, entry.waits], [null, `after ${a} (running)`, `after ${a} (running)`]);
  const c = await stack.cli(['run', '--after', b, '--', 'echo', 'never'], { timeoutMs: 30_000 });
  assert.equal(c.code, 218, c.stderr);
  assert.doesNotMatch(c.stdout, /never/);
  assert.match(c.stderr, new RegExp(`rc: dependency: job j\\w+ was cancelled: ${b}, which it runs after, failed \\(exit 1\\)`));
  const [va, vb] = [await full(stack, a), await full(stack, b)];
  assert.equal(va.state, 'succeeded');
  assert.equal(vb.state, 'failed');
  assert.ok(Date.parse(vb.startedAt!) >= Date.parse(va.endedAt!), 'B started only after A ended');
  const cId = /job (j\w+) was cancelled/.exec(c.stderr)![1]!;
  const vc = await full(stack, cId);
  assert.deepEqual([vc.state, vc.cause, vc.startedAt], ['cancelled', 'dependency', null]);
  assert.deepEqual(vc.after, [{ id: b, any: false, state: 'failed', exitCode: 1 }]);
  const described = await stack.cli(['describe', cId]);
  assert.match(described.stdout, new RegExp(`after:\\s+${b} \\(failed, exit 1\\)`));
});

test('--after-any runs after a failure; --after names a job by its name', { timeout: 60_000 }, async () => {
  const failing = await detach(stack, ['--name', 'prep-step', '--', 'sh', '-c', 'sleep 1; exit 3']);
  const anyEnd = await stack.cli(['run', '--after-any', failing, '--', 'echo', 'after any']);
  assert.equal(anyEnd.code, 0, anyEnd.stderr);
  assert.equal(anyEnd.stdout, 'after any\n');
  const ok = await detach(stack, ['--name', 'fetch-data', '--', 'sh', '-c', 'sleep 1']);
  const named = await stack.cli(['run', '--after', 'fetch-data', '--', 'echo', 'after the name']);
  assert.equal(named.code, 0, named.stderr);
  assert.equal((await full(stack, ok)).state, 'succeeded');
});

test('a dependency survives a controller restart: the dependent starts once its job ends under the new controller', { timeout: 90_000 }, async () => {
  const a = await detach(stack, ['--', 'sh', '-c', 'sleep 4']);
  const b = await detach(stack, ['--after', a, '--', 'echo', 'restarted']);
  await stack.stopController();
  await stack.startController();
  await stack.waitFor(async () => (await full(stack, b)).state === 'succeeded', 'the dependent to run after the restart', 40_000);
  const [va, vb] = [await full(stack, a), await full(stack, b)];
  assert.ok(Date.parse(vb.startedAt!) >= Date.parse(va.endedAt!));
});

test('a dependent submitted just as its dependency ends starts at once (raced, a few rounds)', { timeout: 90_000 }, async () => {
  for (let round = 0; round < 5; round++) {
    const a = await detach(stack, ['--', 'sh', '-c', 'sleep 0.3']);
    const b = await detach(stack, ['--after', a, '--', 'true']);
    await stack.waitFor(async () => (await full(stack, b)).state === 'succeeded', `round ${round}: the dependent to run`, 20_000);
    const [va, vb] = [await full(stack, a), await full(stack, b)];
    // Started by the end's own follow-up (or at submit), not by the sweep seconds later.
    const late = Date.parse(vb.startedAt!) - Math.max(Date.parse(va.endedAt!), Date.parse(vb.createdAt));
    assert.ok(late < 1500, `round ${round}: started ${late} ms after it could`);
  }
});

test('--retries 2: a command that fails twice then succeeds runs three attempts; rc run tells each retry and exits 0', { timeout: 60_000 }, async () => {
  const count = join(scratch, 'tries');
  const script = `n=$(cat ${count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${count}; echo "try $n"; [ $n -ge 3 ] || exit 5`;
  const r = await stack.cli(['run', '--retries', '2', '--', 'sh', '-c', script], { timeoutMs: 40_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'try 1\ntry 2\ntry 3\n');
  assert.match(r.stderr, /retrying: attempt 2 of 3 after exit 5/);
  assert.match(r.stderr, /retrying: attempt 3 of 3 after exit 5/);
  const id = ((await stack.api('GET', '/api/jobs?limit=1')).body as { jobs: { id: string }[] }).jobs[0]!.id;
  const v = await full(stack, id);
  assert.deepEqual(
    [v.state, v.retried, v.attempts?.map((a) => [a.attempt, a.state, a.cause, a.exitCode])],
    [
      'succeeded',
      2,
      [
        [1, 'failed', 'exit', 5],
        [2, 'failed', 'exit', 5],
      ],
    ],
  );
  const described = await stack.cli(['describe', id]);
  assert.match(described.stdout, /retries 2 of 2 used/);
  assert.match(described.stdout, /EARLIER ATTEMPTS[\s\S]*1\s+failed\s+exit\s+alpha\s+alpha:gpu\d\s+5\s/);
});

test('--retries with --retry-delay: the retry waits its delay (waits retry), a dependent waits for the retried job, rc run exits with the last code', {
  timeout: 60_000,
}, async () => {
  const run = stack.runJob(['--retries', '1', '--retry-delay', '2s'], 'sleep 0.5; exit 7', { timeoutMs: 40_000 });
  const id = await run.id;
  const dep = await detach(stack, ['--after-any', id, '--', 'true']);
  await stack.waitFor(
    async () => ((await stack.api('GET', `/api/jobs/${id}`)).body as { job: { waiting: string | null } }).job.waiting === 'retry',
    'the retry to wait',
  );
  const ps = await stack.cli(['ps']);
  assert.match(ps.stdout, new RegExp(`${id}\\s+waiting.*retry in \\ds \\(attempt 2 of 2\\)`), ps.stdout);
  assert.equal((await full(stack, dep)).state, 'queued', 'a job being retried is not over: its dependent waits');
  const done = await run.done;
  assert.equal(done.code, 7, done.stderr);
  assert.match(done.stderr, /attempt 2 of 2 after exit 7, in 2s/);
  const v = await full(stack, id);
  const first = v.attempts![0]!;
  assert.equal(first.exitCode, 7);
  await stack.waitFor(async () => (await full(stack, dep)).state === 'succeeded', 'the dependent to run after the last attempt');
});

test('bad input for the new flags: a clear error, exit 2, nothing submitted', { timeout: 60_000 }, async () => {
  const before = await jobCount();
  const cases: [string[], RegExp][] = [
    [['--retries', '21'], /--retries must be a whole number from 0 to 20, not 21/],
    [['--retries', '-1'], /--retries must be a whole number from 0 to 20, not -1/],
    [['--retries', '1', '--retry-delay', 'banana'], /--retry-delay takes a duration such as 30s/],
    [['--retry-delay', '5s'], /--retry-delay needs --retries/],
    [['--after', ''], /--after takes job ids or names/],
    [['--after', 'j1,,j2'], /an empty one is not a job/],
    [['--after', 'jzzzzzzzzzz'], /bad_dependency: --after jzzzzzzzzzz: no job has that id or name/],
    [['--after-any', 'no-such-job'], /bad_dependency: --after-any no-such-job/],
  ];
  for (const [args, want] of cases) {
    const r = await stack.cli(['run', ...args, '--', 'true']);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, want, args.join(' '));
  }
  // The API refuses the same, with a 400 and a stable code.
  const api = async (extra: Record<string, unknown>) =>
    stack.api('POST', '/api/jobs', { kind: 'run', argv: ['true'], submitter: 'tester', ...extra }) as Promise<{
      status: number;
      body: { error?: { code: string; message: string } };
    }>;
  for (const extra of [
    { retries: 21 },
    { retries: -1 },
    { retryDelayS: 90_000, retries: 1 },
    { after: [] },
    { after: [''] },
    { after: Array(101).fill('x') },
  ]) {
    const r = await api(extra);
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.equal(r.body.error?.code, 'bad_request', JSON.stringify(extra));
  }
  const unknown = await api({ after: ['jzzzzzzzzzz'] });
  assert.deepEqual([unknown.status, unknown.body.error?.code], [400, 'bad_dependency']);
  const hold = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 60, submitter: 'tester', after: ['x'] });
  assert.equal(hold.status, 400);
  assert.equal(await jobCount(), before, 'nothing was submitted');
});

test('across two controllers: an end on one releases a dependent that the other starts on its own worker', { timeout: 90_000 }, async () => {
  const other = await Stack.start({ workers: [], databaseUrl: stack.dbUrl });
  try {
    await other.startWorker('beta', 1);
    const a = await detach(stack, ['-d', 'alpha:gpu0', '--', 'sh', '-c', 'sleep 2']);
    const r = await other.cli(['run', '--after', a, '-d', 'beta:gpu0', '--', 'echo', 'on beta'], { timeoutMs: 40_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'on beta\n');
    const [va, vb] = [await full(stack, a), (await other.api('GET', '/api/jobs?limit=1')).body as { jobs: { id: string }[] }];
    const b = await full(other, vb.jobs[0]!.id);
    const late = Date.parse(b.startedAt!) - Date.parse(va.endedAt!);
    assert.ok(late >= 0 && late < 1500, `the other controller started it ${late} ms after the end`);
  } finally {
    await other.stop();
  }
});

test('--after an array waits for every task of it; an array may itself run --after a job; a task held by its cap says so', { timeout: 90_000 }, async () => {
  // An array whose tasks take a moment, at most one at once: the others wait on its cap, and say so.
  const array = (await stack.cli(['run', '--array', '0-2%1', '--detach', '--', 'sh', '-c', 'sleep 1'])).stdout.trim();
  assert.match(array, /^a\w{10}$/);
  const queue = (await stack.api('GET', '/api/queue')).body as { jobs: { array: { id: string } | null; position: number | null; why: { text: string } }[] };
  const held = queue.jobs.filter((j) => j.array?.id === array && j.position === null);
  assert.ok(held.length >= 1, 'tasks past the cap are not in line');
  assert.equal(held[0]!.why.text, `array ${array}'s cap: at most 1 of its tasks at once (--array %1)`);
  // A job after the array starts only once all three tasks succeeded.
  const after = await detach(stack, ['--after', array, '--', 'true']);
  assert.deepEqual((await full(stack, after)).after?.map((d) => d.id).length, 3, 'the array stands for its three tasks');
  await stack.waitFor(async () => (await full(stack, after)).state === 'succeeded', 'the job after the array to succeed', 60_000);
  const tasks = ((await stack.api('GET', `/api/jobs?array=${array}`)).body as { jobs: { endedAt: string | null }[] }).jobs;
  const startedAfter = Date.parse((await full(stack, after)).startedAt!);
  for (const t of tasks) assert.ok(Date.parse(t.endedAt!) <= startedAfter, 'it started after every task ended');
  // An array after a failing job: every task is cancelled for the dependency, and rc wait on the array says so.
  const failing = await detach(stack, ['--', 'sh', '-c', 'sleep 1; exit 3']);
  const dependent = (await stack.cli(['run', '--array', '0-4', '--after', failing, '--detach', '--', 'true'])).stdout.trim();
  const waited = await stack.cli(['wait', dependent], { timeoutMs: 30_000 });
  assert.equal(waited.code, 218, waited.stderr);
  const states = ((await stack.api('GET', `/api/jobs?array=${dependent}`)).body as { jobs: { state: string; cause: string | null }[] }).jobs;
  assert.deepEqual(
    states.map((t) => `${t.state}/${t.cause}`),
    Array(5).fill('cancelled/dependency'),
  );
  // An array that does not exist is refused at submit, nothing stored.
  const before = await jobCount();
  const refused = await stack.cli(['run', '--after', 'a0000000000', '--', 'true']);
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /bad_dependency: --after a0000000000: no array has that id/);
  assert.equal(await jobCount(), before);
});

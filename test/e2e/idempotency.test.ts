// A submit sent twice with one idempotency key makes one job: the second gets
// the first's job back (the CLI sends its submit again when the answer was
// lost, db-faults.test.ts shows that path under a real Postgres stall).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }] });
});
after(async () => stack.stop());

type Job = { id: string; state: string; argv: string[] };
const submit = (body: Record<string, unknown>, token?: string) =>
  stack.api('POST', '/api/jobs', { submitter: 'alice', kind: 'run', ...body }, token) as Promise<{
    status: number;
    body: { job: Job } & { error?: { code: string; message: string } };
  }>;

const jobsWith = async (marker: string) =>
  ((await stack.api('GET', '/api/jobs?limit=200')).body as { jobs: Job[] }).jobs.filter((j) => j.argv.includes(marker));

test('the same key twice: one job, the second answer is the first job (200, not 201)', async () => {
  const body = { argv: ['echo', 'key-once'], idempotencyKey: 'key-once-0001' };
  const first = await submit(body);
  assert.equal(first.status, 201, JSON.stringify(first.body));
  const again = await submit(body);
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.body.job.id, first.body.job.id);
  assert.equal((await jobsWith('key-once')).length, 1);
});

test('twenty submits with one key at once make one job, and all twenty name it', async () => {
  const body = { argv: ['echo', 'key-race'], idempotencyKey: 'key-race-0001', device: 'alpha:gpu0' };
  const answers = await Promise.all(Array.from({ length: 20 }, () => submit(body)));
  for (const a of answers) assert.ok(a.status === 200 || a.status === 201, JSON.stringify(a.body));
  assert.equal(answers.filter((a) => a.status === 201).length, 1, 'one of them stored it');
  assert.equal(new Set(answers.map((a) => a.body.job.id)).size, 1);
  assert.equal((await jobsWith('key-race')).length, 1);
});

test('a streamed retry follows the first job from its first line to its exit', async () => {
  const body = { argv: ['sh', '-c', 'echo streamed-a; echo streamed-b; exit 3'], idempotencyKey: 'key-stream-0001' };
  const first = await submit(body);
  assert.equal(first.status, 201);
  await stack.waitFor(async () => (await stack.job(first.body.job.id)).state === 'failed', 'the job to end');
  const res = await fetch(`${stack.controllerUrl}/api/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.clientToken}`, 'content-type': 'application/json', accept: 'application/x-rc-stream' },
    body: JSON.stringify({ submitter: 'alice', kind: 'run', ...body }),
  });
  assert.equal(res.status, 200);
  const text = Buffer.from(await res.arrayBuffer()).toString('latin1');
  assert.ok(text.includes(first.body.job.id), 'the stream names the first job');
  assert.ok(text.includes('streamed-a\n') && text.includes('streamed-b\n'), text);
  assert.ok(/"type":"exit"[^}]*"exitCode":3/.test(text), text);
  assert.equal((await jobsWith('echo streamed-a; echo streamed-b; exit 3')).length, 1);
});

test('a key is its token’s: another token’s same key makes its own job', async () => {
  const made = await stack.api('POST', '/api/admin/tokens', { name: 'other-key-owner' }, stack.adminToken);
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const other = (made.body as { token: string }).token;
  const body = { argv: ['echo', 'key-scope'], idempotencyKey: 'key-scope-0001' };
  const mine = await submit(body);
  const theirs = await submit(body, other);
  assert.equal(mine.status, 201);
  assert.equal(theirs.status, 201, JSON.stringify(theirs.body));
  assert.notEqual(mine.body.job.id, theirs.body.job.id);
});

test('a key used for another command is refused (409 conflict), naming the first job', async () => {
  const first = await submit({ argv: ['echo', 'key-reuse-1'], idempotencyKey: 'key-reuse-0001' });
  const other = await submit({ argv: ['echo', 'key-reuse-2'], idempotencyKey: 'key-reuse-0001' });
  assert.equal(other.status, 409, JSON.stringify(other.body));
  assert.equal(other.body.error!.code, 'conflict');
  assert.match(other.body.error!.message, new RegExp(`already used for job ${first.body.job.id}.*make a new key for each submit`));
  assert.equal((await jobsWith('key-reuse-2')).length, 0);
});

test('a malformed key is a 400 naming the field, and nothing is stored', async () => {
  for (const key of ['short', 'has space in it', 'x'.repeat(129), 'semi;colon-key', 42]) {
    const r = await submit({ argv: ['echo', 'key-bad'], idempotencyKey: key });
    assert.equal(r.status, 400, `${JSON.stringify(key)}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error!.code, 'bad_request');
    assert.match(r.body.error!.message, /idempotencyKey/);
  }
  assert.equal((await jobsWith('key-bad')).length, 0);
});

test('without a token the key changes nothing: 401', async () => {
  const r = await submit({ argv: ['echo', 'key-anon'], idempotencyKey: 'key-anon-0001' }, '');
  assert.equal(r.status, 401);
});

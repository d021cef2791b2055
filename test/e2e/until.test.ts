// Until when a queued job waits at the latest (core/until.ts), on a real
// fleet: two devices held by jobs with --max-runtime 10m and 20m, a hold with
// --ttl 5m, and a job with no limit; GET /api/queue, GET /api/ps, rc ps,
// rc describe and rc run --explain say the same bound.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { type CliResult, Stack } from '../helpers/stack';

let stack: Stack;
let hold: { id: string; child: ChildProcess; done: Promise<CliResult> };
const ids: Record<string, string> = {};

before(async () => {
  stack = await Stack.start({
    workers: [
      { name: 'alpha', devices: 2 },
      { name: 'beta', devices: 1 },
      { name: 'gamma', devices: 1 },
    ],
  });
  const detach = async (name: string, args: string[]) => {
    const r = await stack.cli(['run', '--detach', ...args, '--', 'sleep', '3600']);
    assert.equal(r.code, 0, r.stderr);
    ids[name] = r.stdout.trim();
  };
  await detach('r10', ['-d', 'alpha:gpu0', '--max-runtime', '10m']);
  await detach('r20', ['-d', 'alpha:gpu1', '--max-runtime', '20m']);
  // No --max-runtime (the stack sets no fleet default): no bound.
  await detach('open', ['-d', 'gamma:gpu0']);
  let child: ChildProcess | null = null;
  let out = '';
  const done = stack.cli(['hold', '-d', 'beta:gpu0', '--ttl', '5m'], {
    timeoutMs: 120_000,
    onSpawn: (c) => {
      child = c;
      c.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    },
  });
  await stack.waitFor(() => out.includes('\n'), 'rc hold to print its hold');
  hold = { id: /^hold (j\w+)/.exec(out)![1]!, child: child!, done };
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'busy'), 'every device to be busy');
  // Queued: one GPU anywhere, one on gamma:gpu0 only, two on one host.
  await detach('any', ['--max-runtime', '1m']);
  await detach('gamma', ['-d', 'gamma:gpu0', '--max-runtime', '1m']);
  await detach('two', ['--gpus', '2', '--max-runtime', '1m']);
});
after(async () => {
  hold?.child.kill('SIGINT');
  await hold?.done;
  await stack.stop();
});

interface Entry {
  id: string;
  freesBy?: string | null;
  why?: { text: string };
}

const started = async (id: string) => Date.parse(((await stack.api('GET', `/api/jobs/${id}`)).body as { job: { startedAt: string } }).job.startedAt);
const expires = async (id: string) => Date.parse(((await stack.api('GET', `/api/jobs/${id}`)).body as { job: { expiresAt: string } }).job.expiresAt);
const queue = async () => new Map(((await stack.api('GET', '/api/queue')).body as { jobs: Entry[] }).jobs.map((j) => [j.id, j]));

test('GET /api/queue and GET /api/ps: the hold of 5m bounds a one-GPU job, 20m two on one host, and a device whose job has no limit none', async () => {
  const holdEnd = await expires(hold.id);
  const r20End = (await started(ids.r20!)) + 20 * 60_000;
  const q = await queue();
  assert.equal(Date.parse(q.get(ids.any!)!.freesBy!), holdEnd);
  assert.ok(Math.abs(holdEnd - Date.now() - 5 * 60_000) < 30_000, 'the hold ends 5m from now');
  assert.equal(q.get(ids.gamma!)!.freesBy, null);
  // Two on one host: alpha's two (10m and 20m); beta and gamma have one each.
  assert.equal(Date.parse(q.get(ids.two!)!.freesBy!), r20End);
  // Beside the reason, which says what it said before.
  assert.match(q.get(ids.any!)!.why!.text, /busy/);
  const ps = new Map(((await stack.api('GET', '/api/ps')).body as { jobs: Entry[] }).jobs.map((j) => [j.id, j]));
  assert.equal(ps.get(ids.any!)!.freesBy, q.get(ids.any!)!.freesBy);
  assert.equal(ps.get(ids.gamma!)!.freesBy, null);
  assert.equal(ps.get(ids.two!)!.freesBy, q.get(ids.two!)!.freesBy);
  assert.ok(!('freesBy' in ps.get(ids.r10!)!), 'a running job has no bound');
});

test('rc ps shows the bound on queued lines; rc describe says why and until when', async () => {
  const ps = (await stack.cli(['ps'])).stdout;
  assert.match(ps, /^JOB +STATE +WHERE +SUBMITTER +FOR +LIMIT +NAME +COMMAND +GPU +UNTIL \(AT THE LATEST\)$/m);
  assert.match(ps, new RegExp(`^${ids.any} +queued #\\d .* by \\d\\d:\\d\\d:\\d\\d \\(in (4m\\d+s|5m)\\)$`, 'm'));
  assert.match(ps, new RegExp(`^${ids.gamma} +queued #\\d .* no bound known$`, 'm'));
  assert.match(ps, new RegExp(`^${ids.two} +queued #\\d .* by \\d\\d:\\d\\d:\\d\\d \\(in (19m\\d+s|20m)\\)$`, 'm'));
  const d = await stack.cli(['describe', ids.any!]);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /^waits: +#1 in line: .*busy/m);
  assert.match(d.stdout, /^until: +a matching device frees by \d\d:\d\d:\d\d \(in (4m\d+s|5m)\) at the latest, if nothing else changes$/m);
  const g = await stack.cli(['describe', ids.gamma!]);
  assert.match(g.stdout, /^until: +no bound is known/m);
  const two = await stack.cli(['describe', ids.two!]);
  assert.match(two.stdout, /^until: +2 matching devices on one host free by \d\d:\d\d:\d\d \(in (19m\d+s|20m)\) at the latest/m);
});

test('rc run --explain says the same before submitting', async () => {
  const any = await stack.cli(['run', '--explain', '--', 'true']);
  assert.equal(any.code, 0, any.stderr);
  assert.match(any.stdout, /^until: a matching device frees by \d\d:\d\d:\d\d \(in (4m\d+s|5m)\) at the latest, if nothing else changes$/m);
  const gamma = await stack.cli(['run', '--explain', '-d', 'gamma:gpu0', '--', 'true']);
  assert.match(gamma.stdout, /^until: no bound is known/m);
  const two = await stack.cli(['run', '--explain', '--gpus', '2', '--', 'true']);
  assert.match(two.stdout, /^until: 2 matching devices on one host free by \d\d:\d\d:\d\d \(in (19m\d+s|20m)\)/m);
  const api = (await stack.api('POST', '/api/explain', { selector: '', gpus: 2 })).body as { freesBy: string };
  assert.equal(Date.parse(api.freesBy), (await started(ids.r20!)) + 20 * 60_000);
  // Nothing was submitted.
  assert.equal((await queue()).size, 3);
});

test('rc hold extend moves the bound: past the 10m run, that run bounds it', async () => {
  const r = await stack.cli(['hold', 'extend', hold.id, '--ttl', '30m']);
  assert.equal(r.code, 0, r.stderr);
  const q = await queue();
  assert.equal(Date.parse(q.get(ids.any!)!.freesBy!), (await started(ids.r10!)) + 10 * 60_000);
});

test('bad --gpus for the explanation is refused, by the API and the CLI', async () => {
  for (const gpus of [0, 9, 1.5, '2']) {
    const r = await stack.api('POST', '/api/explain', { selector: '', gpus });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal((r.body as { error: { code: string } }).error.code, 'bad_request', JSON.stringify(r.body));
  }
  const both = await stack.api('POST', '/api/explain', { selector: '', gpus: 2, gpu: 'A100' });
  assert.equal(both.status, 400);
  const cli = await stack.cli(['run', '--explain', '--gpus', '0', '--', 'true']);
  assert.equal(cli.code, 2, cli.stderr);
  const wrong = await stack.api('POST', '/api/explain', { selector: '', gpus: 2 }, 'rc_not_a_token');
  assert.equal(wrong.status, 401);
});

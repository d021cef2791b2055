// rc hold, rc release, rc hold extend: leases with a TTL and no command.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Stack, type CliResult } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }] });
});
after(async () => stack.stop());

/** Starts rc hold and resolves once it printed its first stdout line (the hold), with the finished result to await. */
async function startHold(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ id: string; line: string; child: ChildProcess; done: Promise<CliResult> }> {
  let child: ChildProcess | null = null;
  let out = '';
  const done = stack.cli(['hold', ...args], {
    env,
    timeoutMs: 60_000,
    onSpawn: (c) => {
      child = c;
      c.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
      });
    },
  });
  await stack.waitFor(() => out.includes('\n'), 'rc hold to print its hold');
  const line = out.split('\n')[0]!;
  const m = /^hold (j\w+) on (\S+) until (\S+) \((\S+)\)$/.exec(line);
  assert.ok(m, `unexpected first line: ${line}`);
  return { id: m[1]!, line, child: child!, done };
}

const device = async (name: string) => (await stack.devices()).find((d) => d.name === name)!;

test('a hold blocks, shows in rc ps with its time left, and ends at its TTL', async () => {
  const h = await startHold(['-d', 'alpha:gpu0', '--ttl', '3s']);
  assert.match(h.line, /^hold j\w+ on alpha:gpu0 until \d{4}-\d\d-\d\dT\S+Z \(3s\)$/);
  assert.equal((await device('alpha:gpu0')).holder?.jobId, h.id);
  const ps = await stack.cli(['ps']);
  assert.match(ps.stdout, new RegExp(`${h.id}\\s+running\\s+alpha:gpu0\\s+tester\\s+\\S+\\s+[123]s left\\s+-\\s+\\(hold\\)`));
  const started = Date.now();
  const r = await h.done;
  const tookS = (Date.now() - started) / 1000;
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`hold ${h.id} ended: hold expired \\(TTL 3s\\)`));
  assert.ok(tookS < 5, `ended ${tookS}s after it printed`);
  assert.equal((await device('alpha:gpu0')).state, 'free');
  assert.equal((await stack.job(h.id)).state, 'killed');
});

test('someone else cannot release a hold; its holder and an admin can', async () => {
  const h = await startHold(['-d', 'alpha:gpu1', '--ttl', '1h']);
  const other = await stack.cli(['release', h.id], { env: { RC_SUBMITTER: 'mallory' } });
  assert.equal(other.code, 209);
  assert.match(other.stderr, /belongs to tester, not mallory/);
  assert.equal((await device('alpha:gpu1')).holder?.jobId, h.id);
  const admin = await stack.cli(['release', h.id], { env: { RC_SUBMITTER: 'ops', RC_TOKEN: stack.adminToken } });
  assert.equal(admin.code, 0, admin.stderr);
  const r = await h.done;
  assert.equal(r.code, 0);
  assert.match(r.stderr, /ended: released by ops \(admin token \d+ local admin \(npm start\)\)/);
  await stack.waitFor(async () => (await device('alpha:gpu1')).state === 'free', 'the device to be free');

  const mine = await startHold(['-d', 'alpha:gpu1', '--ttl', '1h']);
  const rel = await stack.cli(['release', mine.id]);
  assert.equal(rel.stdout, `releasing hold ${mine.id}\n`);
  assert.match((await mine.done).stderr, /ended: released by tester \(token \d+ local client \(npm start\)\)/);
});

test('Ctrl-C on rc hold releases it', async () => {
  const h = await startHold(['--select', 'kind=cpu-slot', '--ttl', '1h']);
  h.child.kill('SIGINT');
  const r = await h.done;
  assert.equal(r.code, 130);
  const job = await stack.job(h.id);
  assert.equal(job.state, 'killed');
  assert.match(job.reason ?? '', /^released by tester \(token \d+ local client \(npm start\)\)$/);
});

test('a hold whose client vanished still ends at its TTL', async () => {
  const h = await startHold(['-d', 'alpha:gpu0', '--ttl', '3s']);
  h.child.kill('SIGKILL');
  await h.done;
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal((await device('alpha:gpu0')).holder?.jobId, h.id, 'still held without its client');
  await stack.waitFor(async () => (await device('alpha:gpu0')).state === 'free', 'the TTL to end the hold', 10_000);
  assert.match((await stack.job(h.id)).reason ?? '', /^hold expired \(TTL 3s\)/);
});

test('rc hold extend moves the end deliberately; only the holder (or an admin) may', async () => {
  const h = await startHold(['-d', 'alpha:gpu0', '--ttl', '2s']);
  const other = await stack.cli(['hold', 'extend', h.id, '--ttl', '1h'], { env: { RC_SUBMITTER: 'mallory' } });
  assert.equal(other.code, 209);
  const ext = await stack.cli(['hold', 'extend', h.id, '--ttl', '30s']);
  assert.equal(ext.code, 0, ext.stderr);
  assert.match(ext.stdout, new RegExp(`^hold ${h.id} now ends at \\S+ \\(30s from now\\)`));
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal((await device('alpha:gpu0')).holder?.jobId, h.id, 'past the first TTL, still held');
  const ps = await stack.cli(['ps']);
  assert.match(ps.stdout, /2\ds left\s+-\s+\(hold\)/);
  await stack.cli(['release', h.id]);
  await h.done;
  const ended = await stack.cli(['hold', 'extend', h.id, '--ttl', '1h']);
  assert.equal(ended.code, 211);
  assert.match(ended.stderr, /has already ended/);
});

test('bad holds are refused before anything is claimed', async () => {
  const noTtl = await stack.cli(['hold', '-d', 'alpha:gpu0']);
  assert.equal(noTtl.code, 2);
  assert.match(noTtl.stderr, /needs --ttl/);
  const tooLong = await stack.cli(['hold', '-d', 'alpha:gpu0', '--ttl', '25h']);
  assert.equal(tooLong.code, 2);
  assert.match(tooLong.stderr, /at most 24h/);
  const cmd = await stack.cli(['hold', '--ttl', '1h', '--', 'echo', 'hi']);
  assert.equal(cmd.code, 2);
  assert.match(cmd.stderr, /runs no command/);
  const api = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 60, argv: ['echo'], submitter: 'x' });
  assert.equal(api.status, 400);
  const ttlOnRun = await stack.api('POST', '/api/jobs', { argv: ['true'], ttlS: 60, submitter: 'x' });
  assert.equal(ttlOnRun.status, 400);
  const r = await stack.cli(['run', '--', 'true']);
  const jobId = (await stack.api('GET', '/api/jobs?limit=1')).body as { jobs: { id: string }[] };
  assert.equal(r.code, 0);
  const notHold = await stack.cli(['release', jobId.jobs[0]!.id]);
  assert.equal(notHold.code, 2);
  assert.match(notHold.stderr, /is not a hold but a run job; stop it with rc kill/);
  assert.equal((await stack.devices()).filter((d) => d.state !== 'free').length, 0);
});

test('bad release and extend requests get a clear error and change nothing', async () => {
  const noId = await stack.cli(['release']);
  assert.equal(noId.code, 2);
  assert.match(noId.stderr, /takes one hold id/);
  const unknown = await stack.cli(['release', 'j0000000000']);
  assert.equal(unknown.code, 208);
  assert.match(unknown.stderr, /no hold j0000000000/);
  const badTtl = await stack.cli(['hold', '-d', 'alpha:gpu0', '--ttl', 'soon']);
  assert.equal(badTtl.code, 2);
  const h = await startHold(['-d', 'alpha:gpu0', '--ttl', '1m']);
  const noTtl = await stack.cli(['hold', 'extend', h.id]);
  assert.equal(noTtl.code, 2);
  assert.match(noTtl.stderr, /rc hold extend <hold-id> --ttl <dur>/);
  for (const ttlS of [0, 86_401, 'an hour']) {
    const r = await stack.api('POST', `/api/holds/${h.id}/extend`, { submitter: 'tester', ttlS });
    assert.equal(r.status, 400, `ttlS ${ttlS}`);
  }
  const noSubmitter = await stack.api('POST', `/api/holds/${h.id}/release`, {});
  assert.equal(noSubmitter.status, 400);
  assert.equal((await device('alpha:gpu0')).holder?.jobId, h.id, 'still held after the refusals');
  await stack.cli(['release', h.id]);
  await h.done;
});

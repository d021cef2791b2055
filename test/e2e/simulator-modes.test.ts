// The fleet simulator's answer mode (bench/simulator/runtime.ts) against a
// real controller on a real Postgres, through the real worker protocol: an
// answered job ends with exit 0 and its chunks arrive in order; a held job
// runs until the fleet releases it; a host that dies (its socket cut, no
// goodbye) leaves its job lost after the host timeout.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Fleet, startFleet } from '../../bench/simulator/fleet';
import { uniformHost } from '../../bench/simulator/spec';
import { Stack } from '../helpers/stack';

let stack: Stack;
let fleet: Fleet | null = null;
before(async () => {
  stack = await Stack.start({ workers: [], hostTimeoutS: 2 });
  fleet = await startFleet({
    url: stack.controllerUrl,
    adminToken: stack.adminToken,
    hosts: [uniformHost('ans-a', 'H100', 2), uniformHost('ans-b', 'H100', 1)],
    heartbeatMs: 300,
    killGraceS: 1,
    jobs: 'answer',
  });
});
after(async () => {
  await fleet?.stop();
  await stack.stop();
});

const submit = async (argv: string[], device: string) => {
  const r = await stack.api('POST', '/api/jobs', { argv, device, submitter: 'test' });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return (r.body as { job: { id: string } }).job.id;
};

test('an answered job writes its chunks in order, each stamped with its send time, and exits 0', async () => {
  const before = Date.now();
  const r = await stack.cli(['run', '-d', 'ans-a:gpu0', '--', 'sim:output', '20', '64', '200']);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n').filter(Boolean);
  assert.equal(lines.length, 20);
  const stamps = lines.map((l) => {
    assert.equal(l.length, 63, l);
    const m = /^T(\d+\.\d+);x+$/.exec(l);
    assert.ok(m, l);
    return Number(m[1]);
  });
  for (let i = 1; i < stamps.length; i++) assert.ok(stamps[i]! >= stamps[i - 1]!, 'in order');
  assert.ok(stamps[0]! >= before - 5 && stamps[19]! <= Date.now() + 5);
  assert.ok(stamps[19]! - stamps[0]! >= 80, `20 chunks at 200/s take about 95 ms (took ${stamps[19]! - stamps[0]!})`);
  const exit = await stack.cli(['run', '-d', 'ans-a:gpu0', '--', 'sim:exit', '3']);
  assert.equal(exit.code, 3);
  const slept = Date.now();
  assert.equal((await stack.cli(['run', '-d', 'ans-a:gpu0', '--', 'sim:sleep', '300'])).code, 0);
  assert.ok(Date.now() - slept >= 300);
});

test('a held job runs until the fleet releases it', async () => {
  const id = await submit(['sim:hold'], 'ans-a:gpu1');
  await stack.waitFor(async () => (await stack.job(id)).state === 'running', 'the held job to run');
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await stack.job(id)).state, 'running');
  assert.equal(fleet!.releaseAll(), 1);
  await stack.waitFor(async () => (await stack.job(id)).state === 'succeeded', 'the released job to succeed');
  assert.equal((await stack.job(id)).exitCode, 0);
});

test('a held sim:output writes nothing until released, then all of it', async () => {
  const id = await submit(['sim:output', '5', '40', '1000', '0', 'held'], 'ans-a:gpu1');
  await stack.waitFor(async () => (await stack.job(id)).state === 'running', 'the output job to run');
  await new Promise((r) => setTimeout(r, 300));
  const quiet = await stack.cli(['logs', id]);
  assert.equal(quiet.stdout, '');
  const released = Date.now();
  assert.equal(fleet!.releaseAll(), 1);
  await stack.waitFor(async () => (await stack.job(id)).state === 'succeeded', 'the output job to succeed');
  const lines = (await stack.cli(['logs', id])).stdout.split('\n').filter(Boolean);
  assert.equal(lines.length, 5);
  assert.ok(Number(/^T(\d+\.\d+);/.exec(lines[0]!)![1]) >= released - 5, 'written after the release');
});

test('a host that dies leaves its job lost after the host timeout', async () => {
  const id = await submit(['sim:hold'], 'ans-b:gpu0');
  await stack.waitFor(async () => (await stack.job(id)).state === 'running', 'the job to run');
  const t = Date.now();
  fleet!.hosts.find((h) => h.spec.name === 'ans-b')!.die();
  await stack.waitFor(async () => (await stack.job(id)).state === 'lost', 'the job to be lost', 20_000);
  const took = Date.now() - t;
  assert.ok(took >= 1500, `lost after ${took} ms, before the 2 s host timeout`);
  // The other host is untouched.
  assert.equal((await stack.cli(['run', '-d', 'ans-a:gpu0', '--', 'sim:exit'])).code, 0);
});

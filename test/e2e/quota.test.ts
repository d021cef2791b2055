// --gpus limits in the queue (issue 32), on a real stack: two controllers on
// one database, one worker with three devices (connected to the first). Team
// vision may hold 1 GPU; alice and agent-a are in it, carol is in nlp. A job
// past its team's limit waits with the reason named (GET /api/queue and rc ps
// on both controllers), while free devices go to other teams; it starts when
// one of its own team's leases ends, not when another team's does. A hold
// obeys the same limit.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

let a: Stack;
let b: Stack;
const dir = mkdtempSync(join(tmpdir(), 'rc-quota-'));
before(async () => {
  a = await Stack.start({ workers: [] });
  b = await Stack.start({ workers: [], databaseUrl: a.dbUrl });
  await a.startWorker('q', 3);
});
after(async () => {
  await b?.stop();
  await a?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const admin = (args: string[]) => a.cli(['admin', ...args], { env: { RC_TOKEN: a.adminToken } });

async function token(name: string, team: string): Promise<string> {
  const r = await admin(['token', 'create', name, '--team', team]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim().split('\n').pop()!;
}

/** A job that runs until its gate file appears, submitted through `stack` with `secret`; its id. */
async function gated(stack: Stack, secret: string, gate: string): Promise<string> {
  const r = await stack.cli(['run', '--detach', '--', 'sh', '-c', `while [ ! -e ${join(dir, gate)} ]; do sleep 0.05; done`], { env: { RC_TOKEN: secret } });
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim().split('\n').pop()!;
}

const open = (gate: string) => writeFileSync(join(dir, gate), '');
const state = async (id: string) => (await a.job(id)).state;

test("a job past its team's --gpus limit waits, named as a quota wait, while other teams take free devices; it starts when its own team's lease ends", {
  timeout: 120_000,
}, async () => {
  assert.equal((await admin(['team', 'create', 'vision'])).code, 0);
  assert.equal((await admin(['team', 'create', 'nlp'])).code, 0);
  const alice = await token('alice', 'vision');
  const agentA = await token('agent-a', 'vision');
  const carol = await token('carol', 'nlp');
  const set = await admin(['limit', 'set', 'team:vision', '--gpus', '1']);
  assert.equal(set.code, 0, set.stderr);

  const a1 = await gated(a, alice, 'a1');
  await a.waitFor(async () => (await state(a1)) === 'running', 'alice’s job to run');
  // Submitted through the other controller: the limit holds across controllers.
  const a2 = await gated(b, agentA, 'a2');
  const c1 = await gated(a, carol, 'c1');
  await a.waitFor(async () => (await state(c1)) === 'running', 'carol’s job to run on a free device');
  assert.equal(await state(a2), 'queued', 'vision holds 1 of its 1 GPU: agent-a’s job waits though a device is free');

  for (const stack of [a, b]) {
    const q = (await stack.api('GET', '/api/queue')).body as { jobs: { id: string; why: { text: string } }[] };
    const mine = q.jobs.find((j) => j.id === a2);
    assert.match(mine!.why.text, /^quota: team vision holds 1 of its 1 GPU\b/, JSON.stringify(mine));
    const ps = await stack.cli(['ps'], { env: { RC_TOKEN: agentA } });
    assert.match(ps.stdout, new RegExp(`${a2}\\s+queued #1\\s.*\\(quota: team vision holds 1 of its 1 GPU`), ps.stdout);
  }

  // A hold obeys the same limit: with a device free, agent-a's hold still waits, and gives up at its timeout.
  const hold = await a.cli(['hold', '--timeout', '2s', '--ttl', '1m'], { env: { RC_TOKEN: agentA } });
  assert.equal(hold.code, 203, `${hold.stdout}\n${hold.stderr}`);

  // Another team's lease ends: agent-a's job still waits (carol's next job shows the passes ran and took the device).
  open('c1');
  await a.waitFor(async () => (await state(c1)) === 'succeeded', 'carol’s job to end');
  const c2 = await gated(a, carol, 'c2');
  await a.waitFor(async () => (await state(c2)) === 'running', 'carol’s second job to run');
  assert.equal(await state(a2), 'queued', 'another team’s freed device is not vision’s to take');

  // Its own team's lease ends: it starts.
  open('a1');
  await a.waitFor(async () => (await state(a2)) === 'running', 'agent-a’s job to start once alice’s ended', 20_000);
  open('a2');
  open('c2');
  await a.waitFor(async () => (await state(a2)) === 'succeeded' && (await state(c2)) === 'succeeded', 'the jobs to end');
});

test('a token limit and its team limit both apply (the stricter wins); raising a limit starts what waited', { timeout: 90_000 }, async () => {
  const bob = await token('bob', 'vision');
  // Team vision: 1 GPU (above). bob alone: 2 GPUs would allow a second, the team's 1 does not.
  assert.equal((await admin(['limit', 'set', 'token:bob', '--gpus', '2'])).code, 0);
  const b1 = await gated(a, bob, 'b1');
  await a.waitFor(async () => (await state(b1)) === 'running', 'bob’s job to run');
  const b2 = await gated(a, bob, 'b2');
  const q = (await a.api('GET', '/api/queue')).body as { jobs: { id: string; why: { text: string } }[] };
  assert.match(q.jobs.find((j) => j.id === b2)!.why.text, /^quota: team vision holds 1 of its 1 GPU/);
  assert.equal(await state(b2), 'queued');
  // The team may hold 2 now: bob's second job starts without any job ending.
  assert.equal((await admin(['limit', 'set', 'team:vision', '--gpus', '2'])).code, 0);
  await a.waitFor(async () => (await state(b2)) === 'running', 'bob’s second job to start once the limit rose');
  open('b1');
  open('b2');
  await a.waitFor(async () => (await state(b2)) === 'succeeded', 'bob’s jobs to end');
});

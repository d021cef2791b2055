// --gpus limits as the scheduling pass applies them (core/quota.ts in core/schedule.ts decide and
// core/wait-reason.ts): a job past its token's or team's limit waits, holds nothing back, and says why.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { exhausted, overQuota, type QuotaInput, quotaView } from '../../core/quota';
import { decide, type DeviceView, type QueuedJob } from '../../core/schedule';
import { waitReasons, type FleetDevice } from '../../core/wait-reason';
import { job } from '../helpers/schedule';

const dev = (index: number, free = true): DeviceView => ({ id: index + 1, name: `h:gpu${index}`, hostName: 'h', index, labels: {}, free });
const fleet = (n: number, busy = 0): FleetDevice[] =>
  Array.from({ length: n }, (_, i) => ({ id: i + 1, name: `h:gpu${i}`, hostName: 'h', index: i, labels: {}, state: i < busy ? 'busy' : 'free' }));

/** Tokens 1 and 2 in team vision (limit `vision`), token 3 in nlp; token 2 may hold `two` alone. */
function input(vision: number, held: [number, number][] = [], two: number | null = null): QuotaInput {
  return {
    teams: new Map([['vision', vision]]),
    tokens: new Map(two === null ? [] : [[2, two]]),
    teamOf: new Map([
      [1, 'vision'],
      [2, 'vision'],
      [3, 'nlp'],
    ]),
    tokenNames: new Map([
      [1, 'alice'],
      [2, 'agent-a'],
      [3, 'carol'],
    ]),
    held: new Map(held),
  };
}

const of = (id: string, tokenId: number, view: ReturnType<typeof quotaView>, extra: Partial<QueuedJob> = {}): QueuedJob => ({
  ...job(id, extra),
  quota: view!.scopesOf(tokenId),
});

test('no --gpus limit anywhere: no view, nothing applies', () => {
  assert.equal(quotaView({ ...input(1), teams: new Map() }), null);
});

test("a team at its limit: its jobs wait while another team's start on the free devices; the plan never passes the limit", () => {
  const view = quotaView(input(2, [[1, 1]]))!;
  const plan = decide([of('v1', 1, view), of('v2', 2, view), of('v3', 1, view), of('n1', 3, view)], [dev(0), dev(1), dev(2), dev(3)], 30, new Map(), view);
  assert.deepEqual(
    plan.map((p) => p.jobId),
    ['v1', 'n1'],
  );
  // decide takes from its own copy: the view is as it was, for the next reader.
  assert.equal(view.left.get('team:vision'), 1);
});

test('a multi-GPU job wider than what its limit leaves waits, and holds back no device for itself', () => {
  const view = quotaView(input(2, [[1, 1]]))!;
  const wide = of('wide', 2, view, { gpus: 2, waitedS: 3600 });
  assert.deepEqual(
    decide([wide, of('n1', 3, view)], [dev(0), dev(1)], 30, new Map(), view).map((p) => p.jobId),
    ['n1'],
  );
});

test('a token limit and its team limit both apply: the stricter wins', () => {
  const view = quotaView(input(4, [[2, 1]], 1))!;
  assert.equal(overQuota(view, view.scopesOf(2), 1), 'token:2');
  assert.equal(overQuota(view, view.scopesOf(1), 1), null);
  assert.deepEqual(exhausted(view, view.tokens).sort(), [2]);
  assert.deepEqual(
    decide([of('t2', 2, view), of('t1', 1, view)], [dev(0), dev(1)], 30, new Map(), view).map((p) => p.jobId),
    ['t1'],
  );
});

test('the wait reason names the scope, what it holds and its limit; a job behind one that starts sees the limit reached', () => {
  const view = quotaView(input(2, [[1, 1]]))!;
  const why = waitReasons([of('v1', 1, view), of('v2', 2, view), of('n1', 3, view)], fleet(4, 1), 30, view);
  assert.match(why.get('v1')!.text, /^next in line/);
  assert.match(why.get('v2')!.text, /^quota: team vision holds 2 of its 2 GPUs \(it starts when one of them frees\)$/);
  assert.match(why.get('n1')!.text, /^next in line/);
  const one = quotaView(input(1, [[2, 1]], null))!;
  assert.equal(waitReasons([of('v', 1, one)], fleet(2), 30, one).get('v')!.text, 'quota: team vision holds 1 of its 1 GPU (it starts when one of them frees)');
});

test('for any queue and limits, no scope is planned past its limit, and every device left free is one no unlimited job could take', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 4 }),
      fc.integer({ min: 0, max: 3 }),
      fc.array(fc.record({ token: fc.integer({ min: 1, max: 3 }), gpus: fc.integer({ min: 1, max: 3 }) }), { maxLength: 12 }),
      fc.integer({ min: 1, max: 8 }),
      (limit, heldBy1, specs, devices) => {
        const view = quotaView(input(limit, [[1, heldBy1]]))!;
        const jobs = specs.map((s, i) => of(`j${i}`, s.token, view, { gpus: s.gpus }));
        const plan = decide(
          jobs,
          Array.from({ length: devices }, (_, i) => dev(i)),
          30,
          new Map(),
          view,
        );
        const tokenOf = new Map(specs.map((s, i) => [`j${i}`, s.token]));
        const vision = plan.filter((p) => tokenOf.get(p.jobId)! !== 3).reduce((n, p) => n + p.devices.length, 0);
        assert.ok(vision <= Math.max(0, limit - heldBy1), `vision planned ${vision} with ${limit - heldBy1} left`);
        // Backfill past the capped ones: an unplanned nlp job is wider than the devices the plan left free.
        const left = devices - plan.reduce((n, p) => n + p.devices.length, 0);
        const planned = new Set(plan.map((p) => p.jobId));
        for (const j of jobs) if (tokenOf.get(j.id) === 3 && !planned.has(j.id)) assert.ok(j.gpus > left, `${j.id} (${j.gpus} GPUs) waits with ${left} free`);
      },
    ),
  );
});

// core/limits.ts: how limits are written, and whether a submit passes them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Ask,
  budgetRefusal,
  checkAsk,
  NO_LIMITS,
  parseLimitTexts,
  parseScope,
  queuedRefusal,
  refillAt,
  type ScopeLimits,
  standingText,
} from '../../core/limits';

const team = (l: Partial<ScopeLimits>): ScopeLimits => ({ ...NO_LIMITS, scope: { kind: 'team', team: 'vision' }, ...l });
const token = (l: Partial<ScopeLimits>): ScopeLimits => ({ ...NO_LIMITS, scope: { kind: 'token', tokenId: 7, name: 'agent-a' }, ...l });
const ask = (a: Partial<Ask>): Ask => ({ kind: 'run', priority: 0, maxRuntimeS: null, runtimeAsked: false, ttlS: null, gpus: 1, ...a });

test('limits parse as the flags write them; none clears one; a wrong one names its flag', () => {
  assert.deepEqual(parseLimitTexts({ gpus: '4', gpuHours: '200/week', queued: '0', maxPriority: '-2', maxHoldTtl: '8h', maxRuntime: '1d' }), {
    ok: true,
    patch: { gpus: 4, gpuHours: 200, period: 'week', queued: 0, maxPriority: -2, maxHoldTtlS: 8 * 3600, maxRuntimeS: 86400 },
  });
  assert.deepEqual(parseLimitTexts({ gpuHours: '12.5/day', gpus: 2 }), { ok: true, patch: { gpuHours: 12.5, period: 'day', gpus: 2 } });
  assert.deepEqual(parseLimitTexts({ gpus: 'none', gpuHours: null }), { ok: true, patch: { gpus: null, gpuHours: null, period: null } });
  const bad: [Parameters<typeof parseLimitTexts>[0], RegExp][] = [
    [{ gpus: '-1' }, /^--gpus: .*not "-1"/],
    [{ gpus: '0' }, /^--gpus: .*from 1/],
    [{ gpus: 'abc' }, /^--gpus: /],
    [{ gpus: '2.5' }, /^--gpus: /],
    [{ gpuHours: '5/month' }, /^--gpu-hours: .*per day or week.*not "5\/month"/],
    [{ gpuHours: '0/week' }, /^--gpu-hours: /],
    [{ gpuHours: '200' }, /^--gpu-hours: /],
    [{ queued: '-3' }, /^--queued: /],
    [{ maxPriority: '11' }, /^--max-priority: .*-10 to 10/],
    [{ maxHoldTtl: 'abc' }, /^--max-hold-ttl: .*duration/],
    [{ maxRuntime: '0' }, /^--max-runtime: /],
    [{ maxRuntime: '31d' }, /^--max-runtime: /],
    [{}, /give at least one limit/],
  ];
  for (const [texts, message] of bad) {
    const r = parseLimitTexts(texts);
    assert.equal(r.ok, false, JSON.stringify(texts));
    assert.match((r as { message: string }).message, message);
  }
});

test('a scope is team:<name> or token:<name or id>', () => {
  assert.deepEqual(parseScope('team:vision'), { ok: true, kind: 'team', name: 'vision' });
  assert.deepEqual(parseScope('token:12'), { ok: true, kind: 'token', name: '12' });
  for (const s of ['vision', 'team:', 'team:-x', 'user:bob', 'team:a b']) assert.equal(parseScope(s).ok, false, s);
});

test('no limits: every ask passes unchanged', () => {
  assert.deepEqual(checkAsk([], ask({ priority: 10, maxRuntimeS: 9999, runtimeAsked: true })), { ok: true, maxRuntimeS: 9999, notice: null });
  assert.deepEqual(checkAsk([team({})], ask({ priority: 10 })), { ok: true, maxRuntimeS: null, notice: null });
});

test('ceilings: --priority, --gpus, a hold --ttl; the refusal names the ceiling and whose limit it is', () => {
  const p = checkAsk([team({ maxPriority: 5 }), token({ maxPriority: 2 })], ask({ priority: 3 }));
  assert.deepEqual(p, { ok: false, message: '--priority 3 is over the ceiling: this token may ask for --priority up to 2 (limit of token agent-a)' });
  assert.equal(checkAsk([team({ maxPriority: 2 })], ask({ priority: 2 })).ok, true);
  assert.match((checkAsk([team({ gpus: 4 })], ask({ gpus: 8 })) as { message: string }).message, /team vision may hold at most 4 at once/);
  assert.equal(checkAsk([team({ gpus: 4 })], ask({ gpus: 4 })).ok, true);
  const hold = checkAsk([team({ maxHoldTtlS: 3600 })], ask({ kind: 'hold', ttlS: 7200 }));
  assert.match((hold as { message: string }).message, /^--ttl 2h is over the ceiling: a hold may last at most 1h \(limit of team vision\)/);
  assert.equal(checkAsk([team({ maxHoldTtlS: 3600 })], ask({ kind: 'hold', ttlS: 3600 })).ok, true);
});

test('--max-runtime: over the strictest ceiling refused; none given gets the ceiling, and a notice says so', () => {
  const scopes = [team({ maxRuntimeS: 86400 }), token({ maxRuntimeS: 3600 })];
  const over = checkAsk(scopes, ask({ maxRuntimeS: 7200, runtimeAsked: true }));
  assert.match((over as { message: string }).message, /^--max-runtime 2h is over the ceiling: a job may run at most 1h \(limit of token agent-a\)/);
  assert.deepEqual(checkAsk(scopes, ask({ maxRuntimeS: 60, runtimeAsked: true })), { ok: true, maxRuntimeS: 60, notice: null });
  const none = checkAsk(scopes, ask({}));
  assert.equal(none.ok && none.maxRuntimeS, 3600);
  assert.match((none as { notice: string }).notice, /limit of token agent-a of 1h applies/);
  // The fleet's default (not asked) over the ceiling: the ceiling.
  assert.equal((checkAsk(scopes, ask({ maxRuntimeS: 7200, runtimeAsked: false })) as { maxRuntimeS: number }).maxRuntimeS, 3600);
  // A terminal too; a hold is bounded by its TTL instead.
  assert.equal((checkAsk(scopes, ask({ kind: 'tty' })) as { maxRuntimeS: number }).maxRuntimeS, 3600);
  assert.equal((checkAsk(scopes, ask({ kind: 'hold', ttlS: 60 })) as { maxRuntimeS: number | null }).maxRuntimeS, null);
});

test('--queued: refused at the limit, not below it', () => {
  assert.equal(queuedRefusal(team({ queued: 2 }), 1), null);
  assert.match(queuedRefusal(team({ queued: 2 }), 2)!, /^team vision has 2 jobs waiting, its limit \(--queued 2\)/);
  assert.equal(queuedRefusal(team({}), 1000), null);
});

test('a budget: refused once used up, naming the figure, the limit and when use leaves the window', () => {
  const l = team({ gpuHours: 200, period: 'week' });
  assert.equal(budgetRefusal(l, { usedS: 199 * 3600, idleS: 0 }, null), null);
  assert.equal(
    budgetRefusal(l, { usedS: 200 * 3600, idleS: 0 }, new Date('2026-12-07T13:59:30Z')),
    'team vision used 200.0 of its 200 GPU-hours this week (the last 7 days); use leaves the window from 2026-12-07 14:00 UTC',
  );
});

test('refillAt: the moment the window, moving on, leaves the use below the budget', () => {
  const now = new Date('2026-12-10T00:00:00Z');
  const h = (n: number) => new Date(now.getTime() - n * 3600_000);
  const day = 86400;
  // 10 device-hours from 20h ago to 10h ago; budget 5h: half of it must leave, 5h after it started leaving: 20h ago + 24h + 5h.
  assert.deepEqual(refillAt([{ from: h(20), to: h(10) }], day, 5 * 3600, now), new Date(h(20).getTime() + (24 + 5) * 3600_000));
  // Below the budget: no refill needed.
  assert.equal(refillAt([{ from: h(2), to: h(1) }], day, 5 * 3600, now), null);
  // A lease older than the window counts only inside it; two at once leave twice as fast.
  const two = [
    { from: h(30), to: h(20) },
    { from: h(24), to: h(20) },
  ];
  // Inside: 4h + 4h = 8h; budget 4h: the window's start must pass 2h of both, from 24h ago: 24h - 2h → 2h from now.
  assert.deepEqual(refillAt(two, day, 4 * 3600, now), new Date(now.getTime() + 2 * 3600_000));
});

test("whoami's line", () => {
  assert.equal(
    standingText({ ...NO_LIMITS, gpus: 4, gpuHours: 200, period: 'week' }, { gpusInUse: 3, usedS: 41.5 * 3600, idleS: 12 * 3600, queued: 0 }),
    'gpus 3 of 4 in use; 41.5 of 200 GPU-hours this week, 12.0 of them idle',
  );
  assert.equal(standingText({ ...NO_LIMITS, queued: 5 }, { gpusInUse: 0, usedS: 0, idleS: 0, queued: 2 }), 'gpus 0 in use; 2 of 5 jobs waiting');
});

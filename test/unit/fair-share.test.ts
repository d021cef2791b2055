// The fair-share rule (core/fair-share.ts): within a priority, teams and then
// tokens further below their share of recent use go first; equal standing keeps
// the queue's own order; priority still comes first; the scheduling decision
// (decide) and the queue's reasons walk in that order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { DEFAULT_HALF_LIFE_S, anyApart, decay, fairOrder, fairRanks, leaseUse, standings, teamStandings, type TokenUse } from '../../core/fair-share';
import { decide, type DeviceView, type QueuedJob, queueOrder } from '../../core/schedule';
import { job } from '../helpers/schedule';

const H = DEFAULT_HALF_LIFE_S;
const DAY_MS = 86_400_000;
const NOW = Date.UTC(2027, 0, 1);

type FairJob = QueuedJob & { tokenKey: number };
const fjob = (seq: number, tokenKey: number, over: Partial<QueuedJob> = {}): FairJob => ({ ...job(`j${seq}`, over), tokenKey });

const dev = (index: number): DeviceView => ({ id: index + 1, name: `a:gpu${index}`, hostName: 'a', index, labels: {}, free: true });

test('a lease is charged at its end and halves every half-life; a running one counts its seconds so far in full', () => {
  assert.equal(leaseUse(NOW - 3_600_000, NOW, NOW, H), 3600);
  assert.equal(leaseUse(NOW - 3_600_000 - H * 1000, NOW - H * 1000, NOW, H), 1800);
  assert.equal(leaseUse(NOW - 2 * H * 1000 - 1000, NOW - 2 * H * 1000, NOW, H), 0.25);
  assert.equal(leaseUse(NOW - 10 * DAY_MS, null, NOW, H), 10 * 86400);
  assert.equal(leaseUse(NOW + 5000, null, NOW, H), 0, 'a lease from a clock ahead counts nothing yet');
  assert.equal(decay(H, H), 0.5);
});

test('no use at all: every token stands equal, and the queue is the queue order', () => {
  const tokens: TokenUse[] = [1, 2, 3].map((key) => ({ key, team: key === 3 ? 'vision' : 'default', use: 0, queued: true }));
  const ranks = fairRanks(tokens, new Map([['vision', 2]]));
  assert.equal(anyApart(ranks), false);
  const jobs = [fjob(3, 1), fjob(1, 2), fjob(2, 3, { requeuedAt: 5 })];
  assert.deepEqual(
    fairOrder(jobs, ranks).map((j) => j.id),
    [...jobs].sort(queueOrder).map((j) => j.id),
  );
});

test('a team with twice the share stands equal with twice the use; a token is weighed within its team', () => {
  const s = standings(
    [
      { key: 1, team: 'a', use: 200, queued: true },
      { key: 2, team: 'b', use: 100, queued: true },
      { key: 3, team: 'b', use: 0, queued: true },
    ],
    new Map([
      ['a', 2],
      ['b', 1],
    ]),
  );
  assert.equal(s.get(1)!.team, s.get(2)!.team);
  assert.equal(s.get(3)!.team, s.get(2)!.team, 'a token is charged its team');
  assert.equal(s.get(2)!.token, 2, 'all of its team’s use, against half the team’s share');
  assert.equal(s.get(3)!.token, 0);
});

test('a team neither queued nor using does not dilute the others’ shares', () => {
  const withIdle = standings(
    [
      { key: 1, team: 'a', use: 10, queued: true },
      { key: 2, team: 'b', use: 30, queued: true },
      { key: 3, team: 'c', use: 0, queued: false },
    ],
    new Map(),
  );
  assert.equal(withIdle.get(1)!.team, 0.25 / 0.5);
  assert.equal(withIdle.get(2)!.team, 0.75 / 0.5);
});

// Generated fleets: teams t0..t3 (shares 1 or 2), tokens 1..6 in them, each token's lease history.
const lease = fc.record({
  startDaysAgo: fc.integer({ min: 0, max: 40 }),
  hours: fc.integer({ min: 0, max: 72 }),
  running: fc.boolean(),
});
const fleet = fc.record({
  teamOf: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 6, maxLength: 6 }),
  shares: fc.array(fc.constantFrom(1, 2), { minLength: 4, maxLength: 4 }),
  leases: fc.array(fc.array(lease, { maxLength: 4 }), { minLength: 6, maxLength: 6 }),
});
type Fleet = {
  teamOf: number[];
  shares: number[];
  leases: { startDaysAgo: number; hours: number; running: boolean }[][];
};

function usesOf(f: Fleet, queued: ReadonlySet<number>): TokenUse[] {
  return f.teamOf.map((team, i) => {
    let use = 0;
    for (const l of f.leases[i]!) {
      const from = NOW - l.startDaysAgo * DAY_MS;
      use += leaseUse(from, l.running ? null : Math.min(NOW, from + l.hours * 3_600_000), NOW, H);
    }
    return { key: i + 1, team: `t${team}`, use, queued: queued.has(i + 1) };
  });
}
const sharesOf = (f: Fleet) => new Map(f.shares.map((s, i) => [`t${i}`, s]));

const queue = fc.array(fc.record({ token: fc.integer({ min: 1, max: 6 }), priority: fc.integer({ min: -1, max: 1 }), requeued: fc.boolean() }), {
  maxLength: 20,
});
const jobsOf = (q: { token: number; priority: number; requeued: boolean }[]) =>
  q.map((x, i) => fjob(i + 1, x.token, { priority: x.priority, requeuedAt: x.requeued ? 1000 + ((i * 7) % 5) : null }));

test('a team that used little starts before one that used much, whatever the submission order', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 500 }), fc.integer({ min: 1, max: 500 }), fc.boolean(), (little, more, lightFirst) => {
      const tokens: TokenUse[] = [
        { key: 1, team: 'light', use: little, queued: true },
        { key: 2, team: 'heavy', use: little + more, queued: true },
      ];
      const jobs = lightFirst ? [fjob(1, 1), fjob(2, 2)] : [fjob(1, 2), fjob(2, 1)];
      const order = fairOrder(jobs, fairRanks(tokens, new Map()));
      assert.equal(order[0]!.tokenKey, 1);
      // And the scheduling decision gives the one free device to the light team's job.
      const plan = decide(order, [dev(0)]);
      assert.equal(jobs.find((j) => j.id === plan[0]!.jobId)!.tokenKey, 1);
    }),
  );
});

test('with equal shares, every job of a team with less use goes before every job of a team with more, within a priority', () => {
  fc.assert(
    fc.property(fleet, queue, (f, q) => {
      const jobs = jobsOf(q);
      const tokens = usesOf(f, new Set(jobs.map((j) => j.tokenKey)));
      const equalShares = new Map<string, number>();
      const ranks = fairRanks(tokens, equalShares);
      const teamUse = new Map<string, number>();
      for (const t of tokens) teamUse.set(t.team, (teamUse.get(t.team) ?? 0) + t.use);
      const teamOf = new Map(tokens.map((t) => [t.key, t.team]));
      const order = fairOrder(jobs, ranks);
      for (let i = 0; i < order.length; i++)
        for (let k = i + 1; k < order.length; k++) {
          const a = order[i]!;
          const b = order[k]!;
          if (a.priority !== b.priority) {
            assert.ok(a.priority > b.priority, 'priority still comes first');
            continue;
          }
          const ua = teamUse.get(teamOf.get(a.tokenKey)!)!;
          const ub = teamUse.get(teamOf.get(b.tokenKey)!)!;
          assert.ok(ua <= ub * (1 + 1e-9), `team use ${ua} goes after ${ub}`);
        }
    }),
  );
});

test('equal use keeps the queue order: queued again first, then submission order', () => {
  fc.assert(
    fc.property(fc.array(lease, { maxLength: 4 }), fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 6, maxLength: 6 }), queue, (history, teamOf, q) => {
      // Every token the same history: in every team the same number of them, so every standing is equal.
      const f: Fleet = { teamOf: teamOf.map(() => 0), shares: [1, 1, 1, 1], leases: teamOf.map(() => history) };
      const jobs = jobsOf(q);
      const ranks = fairRanks(usesOf(f, new Set(jobs.map((j) => j.tokenKey))), sharesOf(f));
      assert.equal(anyApart(ranks), false);
      assert.deepEqual(
        fairOrder(jobs, ranks).map((j) => j.id),
        [...jobs].sort(queueOrder).map((j) => j.id),
      );
    }),
  );
});

test('the order does not depend on the order the tokens and jobs come in', () => {
  fc.assert(
    fc.property(fleet, queue, fc.infiniteStream(fc.nat()), (f, q, rand) => {
      const jobs = jobsOf(q);
      const tokens = usesOf(f, new Set(jobs.map((j) => j.tokenKey)));
      const shuffle = <T>(xs: readonly T[]): T[] => {
        const out = [...xs];
        const it = rand[Symbol.iterator]();
        for (let i = out.length - 1; i > 0; i--) {
          const k = it.next().value % (i + 1);
          [out[i], out[k]] = [out[k]!, out[i]!];
        }
        return out;
      };
      const ranks = fairRanks(tokens, sharesOf(f));
      assert.deepEqual(fairRanks(shuffle(tokens), sharesOf(f)), ranks);
      assert.deepEqual(
        fairOrder(shuffle(jobs), ranks).map((j) => j.id),
        fairOrder(jobs, ranks).map((j) => j.id),
      );
    }),
  );
});

test('within a team, a token that used less goes first; equal tokens keep submission order', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 1000 }), (a, b) => {
      const tokens: TokenUse[] = [
        { key: 1, team: 'default', use: a, queued: true },
        { key: 2, team: 'default', use: b, queued: true },
      ];
      const order = fairOrder([fjob(1, 1), fjob(2, 2), fjob(3, 1), fjob(4, 2)], fairRanks(tokens, new Map()));
      const ids = order.map((j) => j.id);
      if (a === b) assert.deepEqual(ids, ['j1', 'j2', 'j3', 'j4']);
      else if (a < b) assert.deepEqual(ids, ['j1', 'j3', 'j2', 'j4']);
      else assert.deepEqual(ids, ['j2', 'j4', 'j1', 'j3']);
    }),
  );
});

test('use decays: a team that used much long ago stands before one that used a little lately', () => {
  const longAgo = leaseUse(NOW - 60 * DAY_MS, NOW - 59 * DAY_MS, NOW, H); // 24 h, eight half-lives back
  const lately = leaseUse(NOW - DAY_MS, NOW - DAY_MS + 2 * 3_600_000, NOW, H); // 2 h, a day back
  assert.ok(longAgo < lately);
  const ranks = fairRanks(
    [
      { key: 1, team: 'old', use: longAgo, queued: true },
      { key: 2, team: 'new', use: lately, queued: true },
    ],
    new Map(),
  );
  assert.ok(ranks.get(1)! < ranks.get(2)!);
});

test('a token not ranked yet (its first job came after the standings were read) goes after the ranked ones', () => {
  const ranks = new Map([
    [1, 0],
    [2, 1],
  ]);
  assert.deepEqual(
    fairOrder([fjob(1, 9), fjob(2, 2), fjob(3, 1)], ranks).map((j) => j.id),
    ['j3', 'j2', 'j1'],
  );
});

test("a team's standing as the Teams page shows it is the team part of each of its tokens' standings; active teams' parts each sum to 1", () => {
  const tokensArb = fc.uniqueArray(
    fc.record({
      key: fc.integer({ min: 1, max: 1e6 }),
      team: fc.constantFrom('default', 'vision', 'nlp'),
      use: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1e7, noNaN: true })),
      queued: fc.boolean(),
    }),
    { maxLength: 12, selector: (t) => t.key },
  );
  fc.assert(
    fc.property(tokensArb, fc.double({ min: 0.1, max: 10, noNaN: true }), (tokens, visionShare) => {
      const shares = new Map([['vision', visionShare]]);
      const teams = teamStandings(tokens, shares);
      const each = standings(tokens, shares);
      for (const t of tokens) assert.equal(each.get(t.key)!.team, teams.get(t.team)!.standing);
      const active = [...teams.values()].filter((t) => t.active);
      const used = active.some((t) => t.use > 0);
      if (active.length) assert.ok(Math.abs(active.reduce((n, t) => n + t.sharePart, 0) - 1) < 1e-9, 'shares');
      if (used) assert.ok(Math.abs(active.reduce((n, t) => n + t.usePart, 0) - 1) < 1e-9, 'use');
      for (const t of teams.values()) if (!t.active) assert.deepEqual([t.usePart, t.sharePart, t.standing], [0, 0, 0]);
    }),
  );
});

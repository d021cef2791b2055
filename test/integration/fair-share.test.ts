// Fair share on a real Postgres: the use the SQL reads (token_use's charged
// part plus the leases not charged yet) and the queue head it walks in fair
// order agree with core/fair-share.ts over the same lease history, generated;
// rc ps's pages follow the same order; charging counts every lease once, two
// controllers charging at once included; and the fast path (one token queued,
// or no use at all) is the queue's own order.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { DEFAULT_HALF_LIFE_S, anyApart, fairOrder, fairRanks, leaseUse, type TokenUse } from '../../core/fair-share';
import { queueOrder } from '../../core/schedule';
import type { Database } from '../../server/db';
import { FairShare } from '../../server/jobs/fair-share';
import { listActive } from '../../server/jobs/list';
import { chargeUse } from '../../server/jobs/sql/charge-use';
import { queueHead } from '../../server/jobs/sql/queue-head';
import { tokenUse } from '../../server/jobs/sql/token-use';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;
const H = DEFAULT_HALF_LIFE_S;
const TOKENS = 6;
let tokenIds: number[] = [];
let deviceIds: number[] = [];

before(async () => {
  ({ database: db, drop } = await freshDatabase());
  const sql = db.client;
  await sql`insert into hosts (name, status) values ('h', 'away')`;
  deviceIds = (await sql<{ id: number }[]>`insert into devices (host_name, index) select 'h', i from generate_series(0, 39) as i returning id`).map(
    (r) => r.id,
  );
  await sql`insert into teams (name, share) values ('t1', 1), ('t2', 1)`;
  tokenIds = (
    await sql<{ id: number }[]>`
      insert into tokens (kind, name, hash) select 'client', 'tok' || i, 'hash' || i from generate_series(1, ${TOKENS}) as i returning id`
  ).map((r) => r.id);
});
after(async () => drop());

const lease = fc.record({
  token: fc.integer({ min: 0, max: TOKENS - 1 }),
  // Seconds before "now", and held for; few values so that equal uses happen.
  startS: fc.constantFrom(60, 3600, 86400, 10 * 86400, 30 * 86400),
  heldS: fc.constantFrom(0, 30, 3600, 7200),
  running: fc.boolean(),
  cp: fc.boolean(),
  // Charged into token_use before the read (the rest are read from leases).
  charged: fc.boolean(),
});
const queuedJob = fc.record({
  token: fc.integer({ min: 0, max: TOKENS - 1 }),
  priority: fc.integer({ min: -1, max: 1 }),
  requeued: fc.boolean(),
});
const history = fc.record({
  teamOf: fc.array(fc.constantFrom('default', 't1', 't2'), { minLength: TOKENS, maxLength: TOKENS }),
  shares: fc.tuple(fc.constantFrom(1, 2, 0.5), fc.constantFrom(1, 3)),
  leases: fc.array(lease, { maxLength: 12 }),
  queue: fc.array(queuedJob, { maxLength: 14 }),
  limit: fc.integer({ min: 1, max: 16 }),
});
type History = typeof history extends fc.Arbitrary<infer T> ? T : never;

let n = 0;
/** Writes a history (the leases' jobs ended or running), charging those marked charged; the time it is read at. */
async function write(h: History): Promise<Date> {
  const sql = db.client;
  await sql`delete from jobs`;
  await sql`delete from token_use`;
  await sql`update teams set share = ${h.shares[0]} where name = 't1'`;
  await sql`update teams set share = ${h.shares[1]} where name = 't2'`;
  for (let i = 0; i < TOKENS; i++) await sql`update tokens set team = ${h.teamOf[i]!} where id = ${tokenIds[i]!}`;
  const now = (await sql<{ now: Date }[]>`select date_trunc('second', now()) as now`)[0]!.now;
  const t = now.getTime();
  const write = async (subset: History['leases']) => {
    for (const l of subset) {
      const id = `l${n++}`;
      const device = deviceIds[n % deviceIds.length]!;
      const from = new Date(t - l.startS * 1000);
      const to = l.running ? null : new Date(Math.min(t, from.getTime() + l.heldS * 1000));
      await sql`insert into jobs (id, kind, submitter, argv, token_id, state) values (${id}, ${l.cp ? 'cp' : 'run'}, 's', '[]', ${tokenIds[l.token]!},
        ${l.running ? 'running' : 'succeeded'})`;
      // A running lease per device at most (the database's rule): a second running one on it starts on a free device.
      const free = l.running
        ? (
            await sql<{ id: number }[]>`select id from devices d where not exists (select 1 from leases where device_id = d.id and released_at is null) limit 1`
          )[0]!.id
        : device;
      await sql`insert into leases (device_id, job_id, acquired_at, released_at) values (${free}, ${id}, ${from.toISOString()}, ${to?.toISOString() ?? null})`;
    }
  };
  await write(h.leases.filter((l) => l.charged));
  while ((await chargeUse(sql, H)) > 0) {}
  await write(h.leases.filter((l) => !l.charged));
  for (const q of h.queue) {
    await sql`insert into jobs (id, submitter, argv, token_id, priority, requeued_at)
      values (${`q${n++}`}, 's', '[]', ${tokenIds[q.token]!}, ${q.priority}, ${q.requeued ? new Date(t - 1000 * (n % 3)).toISOString() : null})`;
  }
  return now;
}

/** Core's order of the queue over the same history, from the leases themselves. */
function coreOrder(h: History, at: Date, rows: { id: string; tokenId: number; priority: number; seq: number; requeuedAt: Date | null }[]) {
  const t = at.getTime();
  const use = new Array<number>(TOKENS).fill(0);
  for (const l of h.leases) {
    if (l.cp) continue;
    const from = t - l.startS * 1000;
    use[l.token]! += leaseUse(from, l.running ? null : Math.min(t, from + l.heldS * 1000), t, H);
  }
  const queued = new Set(h.queue.map((q) => q.token));
  const tokens: TokenUse[] = use.map((u, i) => ({ key: tokenIds[i]!, team: h.teamOf[i]!, use: u, queued: queued.has(i) }));
  const shares = new Map([
    ['default', 1],
    ['t1', h.shares[0]],
    ['t2', h.shares[1]],
  ]);
  const jobs = rows.map((r) => ({
    id: r.id,
    tokenKey: r.tokenId,
    priority: r.priority,
    seq: r.seq,
    requeuedAt: r.requeuedAt?.getTime() ?? null,
    terms: [],
    deviceName: null,
    gpus: 1,
    waitedS: 0,
  }));
  return { order: fairOrder(jobs, fairRanks(tokens, shares)).map((j) => j.id), use: new Map(tokens.map((x) => [x.key, x.use])) };
}

test('the use SQL reads and the head it walks in fair order are core’s, on generated histories', async () => {
  const sql = db.client;
  await fc.assert(
    fc.asyncProperty(history, async (h) => {
      const at = await write(h);
      const rows = await sql<{ id: string; tokenId: number; priority: number; seq: number; requeuedAt: Date | null }[]>`
        select id, token_id, priority, seq, requeued_at from jobs where state = 'queued'`;
      const core = coreOrder(h, at, rows);
      const read = await tokenUse(sql, H, at);
      for (const r of read) {
        const want = core.use.get(r.key) ?? 0;
        assert.ok(Math.abs(r.use - want) <= 1e-9 * Math.max(1, want), `token ${r.key}: SQL ${r.use}, core ${want}`);
      }
      const ranks = fairRanks(read, new Map(read.map((r) => [r.team, r.share])));
      const apart = anyApart(ranks) ? ranks : null;
      const head = await queueHead(sql, 1000, apart);
      assert.deepEqual(
        head.map((j) => j.id),
        core.order,
      );
      // A shorter head is the start of it: the walk stops at the limit.
      assert.deepEqual(
        (await queueHead(sql, h.limit, apart)).map((j) => j.id),
        core.order.slice(0, h.limit),
      );
      // rc ps: the queued part in the same order, whole and page by page.
      const whole = await listActive(sql, { limit: 1000, after: null }, apart);
      assert.deepEqual(
        whole.jobs.filter((j) => j.state === 'queued').map((j) => j.id),
        core.order,
      );
    }),
    { numRuns: 40 },
  );
});

test('rc ps pages through the fair order: each queued job once, in order, with its position', async () => {
  const sql = db.client;
  const h: History = {
    teamOf: ['t1', 't2', 't2', 'default', 'default', 'default'],
    shares: [1, 1],
    leases: [
      { token: 0, startS: 86400, heldS: 7200, running: false, cp: false, charged: true },
      { token: 1, startS: 3600, heldS: 30, running: false, cp: false, charged: false },
    ],
    queue: Array.from({ length: 9 }, (_, i) => ({ token: i % 3, priority: 0, requeued: i === 4 })),
    limit: 3,
  };
  const at = await write(h);
  const rows = await sql<{ id: string; tokenId: number; priority: number; seq: number; requeuedAt: Date | null }[]>`
    select id, token_id, priority, seq, requeued_at from jobs where state = 'queued'`;
  const core = coreOrder(h, at, rows);
  const ranks = await new FairShare(sql, H, () => {}, 0).ranks();
  assert.ok(ranks, 'the tokens stand apart');
  const seen: { id: string; position: number | null }[] = [];
  let after: Parameters<typeof listActive>[1]['after'] = null;
  for (;;) {
    const page = await listActive(sql, { limit: 2, after }, ranks);
    seen.push(...page.jobs.filter((j) => j.state === 'queued').map((j) => ({ id: j.id, position: j.position })));
    if (!page.next) break;
    const { parsePsQuery } = await import('../../server/jobs/list');
    after = parsePsQuery(new URLSearchParams({ after: page.next })).after;
  }
  assert.deepEqual(
    seen.map((s) => s.id),
    core.order,
  );
  assert.deepEqual(
    seen.map((s) => s.position),
    core.order.map((_, i) => i),
  );
});

test('every token standing equal (one token queued, or no use): no ranks, and the head is the queue order', async () => {
  const sql = db.client;
  const fair = new FairShare(sql, H, () => {}, 0);
  const one: History = {
    teamOf: ['t1', 't2', 'default', 'default', 'default', 'default'],
    shares: [1, 1],
    leases: [{ token: 0, startS: 3600, heldS: 3600, running: false, cp: false, charged: false }],
    queue: [
      { token: 0, priority: 0, requeued: false },
      { token: 0, priority: 1, requeued: false },
      { token: 0, priority: 0, requeued: true },
    ],
    limit: 3,
  };
  await write(one);
  assert.equal(await fair.ranks(), null);
  await write({ ...one, leases: [], queue: [...one.queue, { token: 1, priority: 0, requeued: false }] });
  assert.equal(await fair.ranks(), null, 'no use anywhere: everyone stands equal');
  const rows = await sql<{ id: string; priority: number; seq: number; requeuedAt: Date | null }[]>`
    select id, priority, seq, requeued_at from jobs where state = 'queued'`;
  const today = rows
    .map((r) => ({ ...r, requeuedAt: r.requeuedAt?.getTime() ?? null, terms: [], deviceName: null, gpus: 1, waitedS: 0 }))
    .sort(queueOrder)
    .map((j) => j.id);
  assert.deepEqual(
    (await queueHead(sql, 100, await fair.ranks())).map((j) => j.id),
    today,
  );
});

test('charging counts each ended lease once, two charges at once included; running leases wait for their end', async () => {
  const sql = db.client;
  await sql`delete from jobs`;
  await sql`delete from token_use`;
  const now = (await sql<{ now: Date }[]>`select now()`)[0]!.now;
  const t = now.getTime();
  const jobs = 3000;
  await sql`insert into jobs (id, submitter, argv, token_id, state) select 'c' || i, 's', '[]', ${tokenIds[0]!} + i % 3, 'succeeded' from generate_series(1, ${jobs}) as i`;
  // Each ended lease held 60 s, ended i seconds ago; one more running.
  await sql`insert into leases (device_id, job_id, acquired_at, released_at)
    select ${deviceIds[0]!}, 'c' || i, ${now.toISOString()}::timestamptz - make_interval(secs => i + 60), ${now.toISOString()}::timestamptz - make_interval(secs => i)
    from generate_series(1, ${jobs}) as i`;
  await sql`insert into jobs (id, submitter, argv, token_id, state) values ('c-run', 's', '[]', ${tokenIds[0]!}, 'running')`;
  await sql`insert into leases (device_id, job_id, acquired_at) values (${deviceIds[1]!}, 'c-run', ${new Date(t - 100_000).toISOString()})`;
  const before = await tokenUse(sql, H, now);
  const [a, b] = await Promise.all([chargeUse(sql, H), chargeUse(sql, H)]);
  let more = 0;
  for (let c = await chargeUse(sql, H); c > 0; c = await chargeUse(sql, H)) more += c;
  assert.equal(a + b + more, jobs, 'each ended lease charged once');
  const left = (await sql<{ left: number }[]>`select count(*)::int as left from leases where not charged`)[0]!.left;
  assert.equal(left, 1, 'the running lease is not charged');
  const afterCharge = await tokenUse(sql, H, now);
  const use = (rows: typeof before) => new Map(rows.map((r) => [r.key, r.use]));
  for (const [key, u] of use(before))
    assert.ok(Math.abs(use(afterCharge).get(key)! - u) <= 1e-9 * u, `token ${key}: ${u} before, ${use(afterCharge).get(key)} after`);
  let want = 100;
  for (let i = 1; i <= jobs; i++) if (i % 3 === 0) want += leaseUse(t - (i + 60) * 1000, t - i * 1000, t, H);
  assert.ok(Math.abs(use(afterCharge).get(tokenIds[0]!)! - want) <= 1e-9 * want);
  assert.equal(
    afterCharge.reduce((s, r) => s + r.uncharged, 0),
    0,
  );
});

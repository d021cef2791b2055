// GET /api/ps a page at a time, and rc ps on top of it, with 10,000 queued
// jobs (put straight in the database, behind three running holds): pages in
// the queue order with no job twice or missing, the counts, the cursor, bad
// query values refused by name, and what rc ps prints.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import type { PsEntry, PsPage } from '../../protocol/wire';
import { Stack } from '../helpers/stack';

const QUEUED = 10_000;
let stack: Stack;
let sql: postgres.Sql;
/** Every job's id in the order GET /api/ps lists them: the running holds, then the queue. */
let order: string[] = [];

before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 3 }] });
  for (let i = 0; i < 3; i++) {
    const hold = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 3600, submitter: 'holder' });
    assert.equal(hold.status, 201, JSON.stringify(hold.body));
  }
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'busy'), 'the holds to take every device');
  sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  // Priorities −1, 0 and 1; every 97th job queued again (some at the same moment, as a restart of several jobs is).
  await sql`
    insert into jobs (id, submitter, argv, priority, requeued_at)
    select 'jq' || lpad(g::text, 8, '0'), 'tester', '["true"]'::jsonb, g % 3 - 1,
      case when g % 97 = 0 then timestamptz '2026-01-01' + (g % 5) * interval '1.000001 second' end
    from generate_series(1, ${QUEUED}) g`;
  await sql`analyze jobs`;
  const running = await sql<{ id: string }[]>`select id from jobs where state = 'running' order by priority desc, requeued_at nulls last, seq`;
  const queued = await sql<{ id: string }[]>`select id from jobs where state = 'queued' order by priority desc, requeued_at nulls last, seq`;
  order = [...running, ...queued].map((r) => r.id);
  assert.equal(order.length, QUEUED + 3);
});
after(async () => {
  await sql?.end({ timeout: 2 });
  await stack?.stop();
});

async function page(query: string): Promise<{ status: number; body: PsPage; bytes: number }> {
  const res = await fetch(`${stack.controllerUrl}/api/ps${query}`, { headers: { authorization: `Bearer ${stack.clientToken}` } });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as PsPage, bytes: text.length };
}

async function allPages(limit: number): Promise<{ jobs: PsEntry[]; pages: number }> {
  const jobs: PsEntry[] = [];
  let next: string | null = null;
  let pages = 0;
  do {
    const r = await page(`?limit=${limit}${next ? `&after=${encodeURIComponent(next)}` : ''}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.jobs.length <= limit);
    jobs.push(...r.body.jobs);
    next = r.body.next;
    pages++;
  } while (next !== null);
  return { jobs, pages };
}

test('the first page: 500 jobs, the running ones first, the counts in all, and a cursor', { timeout: 60_000 }, async () => {
  const r = await page('');
  assert.equal(r.status, 200);
  assert.equal(r.body.jobs.length, 500);
  assert.deepEqual(r.body.counts, { running: 3, queued: QUEUED });
  assert.deepEqual(
    r.body.jobs.map((j) => j.id),
    order.slice(0, 500),
  );
  assert.deepEqual(
    r.body.jobs.slice(0, 3).map((j) => [j.state, j.position]),
    [
      ['running', null],
      ['running', null],
      ['running', null],
    ],
  );
  assert.deepEqual(
    r.body.jobs.slice(3).map((j) => j.position),
    Array.from({ length: 497 }, (_, i) => i),
  );
  assert.equal(typeof r.body.next, 'string');
  console.log(`GET /api/ps with ${QUEUED} queued jobs: the first page is ${(r.bytes / 1024).toFixed(0)} KiB`);
  assert.ok(r.bytes < 512 * 1024, `the first page is ${r.bytes} bytes`);
});

test('paged through, every job comes once, in the queue order, with positions 0, 1, 2, …', { timeout: 120_000 }, async () => {
  for (const limit of [5000, 777, 2]) {
    if (limit === 2) {
      // Small pages across the running part and into the queue.
      const first = await page('?limit=2');
      const second = await page(`?limit=2&after=${encodeURIComponent(first.body.next!)}`);
      const third = await page(`?limit=2&after=${encodeURIComponent(second.body.next!)}`);
      assert.deepEqual(
        [...first.body.jobs, ...second.body.jobs, ...third.body.jobs].map((j) => [j.id, j.position]),
        order.slice(0, 6).map((id, i) => [id, i < 3 ? null : i - 3]),
      );
      continue;
    }
    const { jobs, pages } = await allPages(limit);
    assert.equal(pages, Math.ceil((QUEUED + 3) / limit), `limit ${limit}`);
    assert.deepEqual(
      jobs.map((j) => j.id),
      order,
      `limit ${limit}: the same order, no job twice, none missing`,
    );
    assert.deepEqual(
      jobs.slice(3).map((j) => j.position),
      Array.from({ length: QUEUED }, (_, i) => i),
      `limit ${limit}`,
    );
  }
  // One at a time through the jobs queued again at the head of the queue, several at the same moment: the cursor keeps ties apart.
  const requeued = await sql<{ n: number }[]>`select count(*)::int as n from jobs where state = 'queued' and priority = 1 and requeued_at is not null`;
  const head: string[] = [];
  let next: string | null = null;
  for (let i = 0; i < 3 + requeued[0]!.n + 2; i++) {
    const r = await page(`?limit=1${next ? `&after=${encodeURIComponent(next)}` : ''}`);
    head.push(r.body.jobs[0]!.id);
    next = r.body.next;
  }
  assert.deepEqual(head, order.slice(0, head.length));
  // The last page says there is no next one.
  const one = await page('?limit=5000');
  const two = await page(`?limit=5000&after=${encodeURIComponent(one.body.next!)}`);
  const three = await page(`?limit=5000&after=${encodeURIComponent(two.body.next!)}`);
  assert.equal(three.body.jobs.length, 3);
  assert.equal(three.body.next, null);
});

test('the next page goes on from where the last one ended, though jobs before it left the queue meanwhile', { timeout: 60_000 }, async () => {
  const first = await page('?limit=10');
  // The page's last job and one before it are cancelled: the next page goes on after the cursor all the same.
  await sql`update jobs set state = 'cancelled', ended_at = now() where id = ${order[9]!} or id = ${order[5]!}`;
  try {
    const second = await page(`?limit=10&after=${encodeURIComponent(first.body.next!)}`);
    assert.deepEqual(
      second.body.jobs.map((j) => j.id),
      order.slice(10, 20),
    );
    // Positions count the queue as it is now: two jobs ahead left it.
    assert.equal(second.body.jobs[0]!.position, 10 - 3 - 2);
  } finally {
    await sql`update jobs set state = 'queued', ended_at = null where id = ${order[9]!} or id = ${order[5]!}`;
  }
});

test('bad limit and after values get 400 bad_request naming the field', { timeout: 30_000 }, async () => {
  const cases: [string, RegExp][] = [
    ['?limit=0', /^limit must be a whole number from 1 to 5000/],
    ['?limit=5001', /^limit must be a whole number from 1 to 5000/],
    ['?limit=-1', /^limit/],
    ['?limit=1.5', /^limit/],
    ['?limit=abc', /^limit/],
    ['?limit=', /^limit/],
    ['?limit=1e3', /^limit/],
    ['?after=', /^after: not a cursor of this listing/],
    ['?after=garbage', /^after: not a cursor/],
    ['?after=q.11.-.1', /^after: not a cursor/],
    ['?after=x.0.-.1', /^after: not a cursor/],
    ['?after=q.0.-.', /^after: not a cursor/],
    ['?after=q.0.-.1.2', /^after: not a cursor/],
    [`?after=q.0.-.${'9'.repeat(30)}`, /^after: not a cursor/],
    ['?after=q.0.%00.1', /NUL|after/],
  ];
  for (const [query, message] of cases) {
    const res = await fetch(`${stack.controllerUrl}/api/ps${query}`, { headers: { authorization: `Bearer ${stack.clientToken}` } });
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(res.status, 400, `${query}: ${JSON.stringify(body)}`);
    assert.equal(body.error.code, 'bad_request', query);
    assert.match(body.error.message, message, query);
  }
});

test('rc ps shows the first 500 and says how many more; --limit, --all and --json', { timeout: 120_000 }, async () => {
  const rows = (stdout: string) => stdout.trimEnd().split('\n').slice(1);
  const plain = await stack.cli(['ps']);
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(rows(plain.stdout).length, 500);
  assert.match(rows(plain.stdout)[3]!, /^jq\S+\s+queued #1\s/);
  assert.equal(
    plain.stderr,
    `rc: ${QUEUED + 3 - 500} not shown (3 running, ${QUEUED} queued in all): rc ps --all lists every one, rc ps --limit <n> the first n\n`,
  );

  const few = await stack.cli(['ps', '--limit', '5']);
  assert.deepEqual(
    rows(few.stdout).map((l) => l.split(/\s+/)[0]),
    order.slice(0, 5),
  );
  assert.match(few.stderr, new RegExp(`^rc: ${QUEUED + 3 - 5} not shown`));

  const many = await stack.cli(['ps', '--limit', '7000']);
  assert.deepEqual(
    rows(many.stdout).map((l) => l.split(/\s+/)[0]),
    order.slice(0, 7000),
    'two pages',
  );

  const every = await stack.cli(['ps', '--all']);
  assert.equal(every.code, 0, every.stderr);
  assert.deepEqual(
    rows(every.stdout).map((l) => l.split(/\s+/)[0]),
    order,
  );
  assert.equal(every.stderr, '', 'nothing more to say');

  const asJson = await stack.cli(['ps', '--json']);
  const body = JSON.parse(asJson.stdout) as PsPage;
  assert.equal(body.jobs.length, QUEUED + 3, '--json lists every job');
  assert.deepEqual(body.counts, { running: 3, queued: QUEUED });
  assert.equal(body.next, null);
  const firstTwo = JSON.parse((await stack.cli(['ps', '--json', '--limit', '2'])).stdout) as PsPage;
  assert.equal(firstTwo.jobs.length, 2);
  assert.equal(typeof firstTwo.next, 'string', 'and says there is more');

  for (const args of [
    ['ps', '--limit', '0'],
    ['ps', '--limit', 'x'],
    ['ps', '--limit', '5', '--all'],
  ]) {
    const r = await stack.cli(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /--limit/);
  }
});

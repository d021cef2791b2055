// One way to read a row: the raw client (hot-path SQL) and drizzle return the
// same row for the same table (camelCase keys, int8 as numbers, timestamps as
// Dates), json values keep their keys, and the migrator still sees what it applied.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { audit, devices, hosts, jobs } from '../../db/schema';
import { connect, type Database, runMigrations } from '../../server/db';
import type { JobRow } from '../../server/jobs/job-view';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;

before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  drop = fresh.drop;
});
after(async () => drop());

test('a jobs row read with raw SQL is the row drizzle reads: same keys, same values, same types', async () => {
  const [inserted] = await db.db
    .insert(jobs)
    .values({ id: 'jrows', submitter: 's', tokenId: 7, argv: ['echo', 'hi'], fence: 2 ** 40, maxRuntimeS: 60 })
    .returning();
  const [raw] = await db.client<JobRow[]>`select * from jobs where id = 'jrows'`;
  const [viaDrizzle] = await db.db.select().from(jobs).where(eq(jobs.id, 'jrows'));
  assert.deepEqual(raw, viaDrizzle);
  assert.deepEqual(inserted, viaDrizzle, 'insert … returning reads the same row too');
  assert.equal(typeof raw!.seq, 'number');
  assert.equal(raw!.fence, 2 ** 40, 'int8 comes back exact, as a number');
  assert.equal(raw!.tokenId, 7);
  assert.ok(raw!.createdAt instanceof Date);
  assert.equal(raw!.startedAt, null);
});

test('int8 expressions are numbers; one too large for a JS number is refused, not rounded', async () => {
  const [r] = await db.client<{ n: number; big: number }[]>`select count(*) as n, 9007199254740991::int8 as big from jobs`;
  assert.deepEqual(r, { n: 1, big: Number.MAX_SAFE_INTEGER });
  const reader = connect(db.url, 1);
  try {
    await assert.rejects(reader.client`select 9007199254740993::int8 as x`, /does not fit a JavaScript number exactly/);
  } finally {
    await reader.close();
  }
});

test('json values keep their own keys: only column names are camelCased', async () => {
  const detail = { exit_code: 3, snake_key: { inner_key: 1 }, camelKey: true };
  await db.client`insert into audit (actor, action, detail) values ('t', 'rows.test', ${JSON.stringify(detail)}::text::jsonb)`;
  const [raw] = await db.client<{ detail: unknown }[]>`select detail from audit where action = 'rows.test'`;
  assert.deepEqual(raw!.detail, detail);
  const [viaDrizzle] = await db.db.select({ detail: audit.detail }).from(audit).where(eq(audit.action, 'rows.test'));
  assert.deepEqual(viaDrizzle!.detail, detail);
});

test('a transaction through drizzle reads and writes on the transformed client', async () => {
  const id = await db.db.transaction(async (tx) => {
    await tx.insert(hosts).values({ name: 'h' });
    const [d] = await tx.insert(devices).values({ hostName: 'h', index: 1 }).returning({ id: devices.id });
    const [again] = await tx.select().from(devices).where(eq(devices.id, d!.id));
    return again!.id;
  });
  const [raw] = await db.client<{ id: number; hostName: string }[]>`select id, host_name from devices where id = ${id}`;
  assert.deepEqual(raw, { id, hostName: 'h' });
});

test('the migrator sees the migrations it applied: one forgotten is applied again, the others are not', async () => {
  // Undo the last migration (0033_provider_accounts: a newer one changes these lines) by hand, and forget it:
  // the migrator must find the one before it as the last applied.
  await db.client.unsafe('drop table provider_accounts');
  await db.client`delete from drizzle.__drizzle_migrations where id = (select max(id) from drizzle.__drizzle_migrations)`;
  await runMigrations(db);
  const [column] = await db.client<{ n: number }[]>`
    select count(*)::int as n from pg_tables where tablename = 'provider_accounts'`;
  assert.equal(column!.n, 1, 'the forgotten migration was applied again');
  // And run again, nothing is left to apply.
  await runMigrations(db);
});

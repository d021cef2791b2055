// Each rule is written once in core/ and once in SQL (server/jobs/sql/): the
// queue order and the idle predicate. On a real Postgres, for generated cases,
// the SQL and the core function must agree; and the queue's index must be
// built in the queue's order, or every pass sorts the queue itself.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { gpuIdle } from '../../core/idle';
import { type QueuedJob, queueOrder as coreQueueOrder } from '../../core/schedule';
import type { Database } from '../../server/db';
import { gpuIdleSql } from '../../server/jobs/sql/gpu-idle';
import { QUEUE_ORDER_COLUMNS, queueOrder } from '../../server/jobs/sql/queue-order';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;
before(async () => {
  ({ database: db, drop } = await freshDatabase());
});
after(async () => drop());

const queuedJob = fc.record({
  priority: fc.integer({ min: -2, max: 2 }),
  // Seconds after a base time, few values so that ties happen; null: never queued again.
  requeuedS: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
});

test('the queue order in SQL is core queueOrder, on generated queues', async () => {
  const sql = db.client;
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(queuedJob, { minLength: 0, maxLength: 12 }), async (queue) => {
      await sql`delete from jobs`;
      // Inserted in the generated order: seq is the submission order.
      for (const j of queue) {
        const at = j.requeuedS === null ? null : new Date(Date.UTC(2026, 0, 1, 0, 0, j.requeuedS)).toISOString();
        await sql`insert into jobs (id, submitter, argv, priority, requeued_at) values (${`j${n++}`}, 's', '[]', ${j.priority}, ${at}::timestamptz)`;
      }
      const rows = await sql<{ id: string; priority: number; requeuedAt: Date | null; seq: number }[]>`
        select id, priority, requeued_at, seq from jobs where state = 'queued' order by ${queueOrder(sql)}`;
      const asCore: QueuedJob[] = rows.map((r) => ({
        id: r.id,
        priority: r.priority,
        seq: r.seq,
        requeuedAt: r.requeuedAt?.getTime() ?? null,
        terms: [],
        deviceName: null,
        gpus: 1,
        waitedS: 0,
      }));
      const sorted = [...asCore].sort(coreQueueOrder).map((j) => j.id);
      assert.deepEqual(
        rows.map((r) => r.id),
        sorted,
      );
    }),
    { numRuns: 60 },
  );
});

test('the queue index is built in the queue order', async () => {
  const [row] = await db.client<{ def: string }[]>`select pg_get_indexdef('jobs_queue_order_idx'::regclass) as def`;
  const columns = /\((.*)\) WHERE/i.exec(row!.def)?.[1];
  // Postgres prints an ascending column's NULLS LAST (its default) as the column alone.
  const normal = (s: string) =>
    s
      .toLowerCase()
      .split(',')
      .map((c) =>
        c
          .trim()
          .replace(/\s+asc$/, '')
          .replace(/^(\w+) nulls last$/, '$1'),
      )
      .join(', ');
  assert.equal(normal(columns ?? ''), normal(QUEUE_ORDER_COLUMNS));
});

const sample = fc.record({
  utilPct: fc.option(fc.oneof(fc.constantFrom(0, 0.5, 1, 1.0001, 2, 100), fc.double({ min: 0, max: 100, noNaN: true })), { nil: null }),
  procs: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
});

test('the idle predicate in SQL is core gpuIdle, on generated samples', async () => {
  const sql = db.client;
  await fc.assert(
    fc.asyncProperty(fc.array(sample, { minLength: 1, maxLength: 50 }), async (samples) => {
      const rows = await sql<{ i: number; idle: boolean | null }[]>`
        select s.i, ${gpuIdleSql(sql, sql`s.util`, sql`s.procs`)} as idle
        from unnest(${samples.map((_, i) => i)}::int[], ${samples.map((s) => s.utilPct)}::float8[], ${samples.map((s) => s.procs)}::int[]) as s(i, util, procs)
        order by s.i`;
      assert.deepEqual(
        rows.map((r) => r.idle),
        samples.map((s) => gpuIdle(s)),
      );
    }),
    { numRuns: 100 },
  );
});

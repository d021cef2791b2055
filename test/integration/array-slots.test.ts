// server/jobs/array-slots.ts on a real Postgres: the %N cap lets in the
// lowest-index waiting tasks up to the cap, a running task and a requeued one
// hold their places, many concurrent releases never pass the cap, the repair
// sweep finds a stalled array, and an array without a cap is left alone.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { releaseArraySlots, releaseStalledArrays } from '../../server/jobs/array-slots';
import type { Database } from '../../server/db';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;
before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  drop = fresh.drop;
});
after(async () => drop());

/** An array of `size` tasks with cap `cap`, every task waiting on it (waits = 'array'). */
async function array(id: string, size: number, cap: number | null): Promise<void> {
  const sql = db.client;
  await sql`insert into job_arrays (id, spec, size, max_running, submitter) values (${id}, ${`0-${size - 1}`}, ${size}, ${cap}, 's')`;
  await sql`
    insert into jobs (id, submitter, argv, array_id, array_index, waits)
    select ${id} || '-' || i, 's', '[]', ${id}, i, 'array' from generate_series(0, ${size - 1}) as i`;
}
const runnable = async (id: string) =>
  (
    await db.client<{ i: number }[]>`
    select array_index as i from jobs where array_id = ${id} and (state = 'running' or (state = 'queued' and waits is null)) order by array_index`
  ).map((r) => r.i);

test('the lowest-index waiting tasks are let in, up to the cap; running and requeued tasks hold their places', async () => {
  await array('a1', 10, 3);
  const first = await releaseArraySlots(db.client, ['a1']);
  assert.deepEqual(first.sort(), ['a1-0', 'a1-1', 'a1-2']);
  assert.deepEqual(await runnable('a1'), [0, 1, 2]);
  // Again: the cap is full, nothing more.
  assert.deepEqual(await releaseArraySlots(db.client, ['a1', 'a1', null]), []);
  // Task 0 runs, task 1 ends, task 2 is queued again (a restart: it keeps its place).
  await db.client`update jobs set state = 'running' where id = 'a1-0'`;
  await db.client`update jobs set state = 'succeeded' where id = 'a1-1'`;
  assert.deepEqual(await releaseArraySlots(db.client, ['a1']), ['a1-3']);
  assert.deepEqual(await runnable('a1'), [0, 2, 3]);
});

test('an array without a cap is left alone', async () => {
  await array('a2', 4, null);
  assert.deepEqual(await releaseArraySlots(db.client, ['a2']), []);
});

test('twenty concurrent releases as tasks end never let in more than the cap', async () => {
  await array('a3', 200, 4);
  await releaseArraySlots(db.client, ['a3']);
  for (let round = 0; round < 10; round++) {
    // The runnable ones end, all at once, and each end releases (from many connections at once).
    await db.client`update jobs set state = 'succeeded' where array_id = 'a3' and state = 'queued' and waits is null`;
    await Promise.all(Array.from({ length: 20 }, () => releaseArraySlots(db.client, ['a3'])));
    assert.equal((await runnable('a3')).length, 4, `round ${round}`);
  }
});

test('the repair sweep releases a stalled array (its release was lost) and wakes the passes', async () => {
  await array('a4', 5, 2);
  const heard: string[] = [];
  const listener = await db.client.listen('rc', (payload) => heard.push(payload));
  const released = await releaseStalledArrays(db.client);
  assert.ok(released.includes('a4-0') && released.includes('a4-1'));
  assert.deepEqual(await runnable('a4'), [0, 1]);
  // A poke from the database: every controller's pass looks.
  const until = Date.now() + 5000;
  while (!heard.length && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  assert.ok(heard.some((p) => JSON.parse(p).m.t === 'poke'));
  await listener.unlisten();
});

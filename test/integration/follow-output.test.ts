// Following the output of a job whose worker is on another controller
// (server/job-events.ts over the real job_output table): every follower here
// gets every chunk once, in order, whoever else joins, however the chunks come
// (the bus's "stored" notices, a replay, the worker moving here).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Sql } from '../../server/db';
import { JobEvents, type JobItem } from '../../server/job-events';
import { storedOutput } from '../../server/stored-output';
import { freshDatabase } from '../helpers/db';

let db: Awaited<ReturnType<typeof freshDatabase>>;
let sql: Sql;
before(async () => {
  db = await freshDatabase();
  sql = db.database.client;
});
after(async () => db.drop());

const settled = () => new Promise((r) => setTimeout(r, 50));

async function newJob(id: string): Promise<void> {
  await sql`insert into jobs (id, submitter, argv, state) values (${id}, 't', '["true"]'::jsonb, 'running')`;
}

/** Stores chunks as another controller's writer does (without telling anyone). */
async function storeElsewhere(jobId: string, seqs: number[]): Promise<void> {
  for (const seq of seqs) await sql`insert into job_output (job_id, seq, stream, data) values (${jobId}, ${seq}, 1, ${Buffer.from(`n ${seq}\n`)})`;
}

const seqsOf = (items: JobItem[]) => items.flatMap((i) => (i.kind === 'output' ? [i.seq] : []));

test('a replay that catches up (rc attach joining) does not make the live followers skip what it read', async () => {
  await newJob('f1');
  const events = new JobEvents(storedOutput(sql));
  // rc run here, from the start (pipeJob subscribes after 0).
  const live: JobItem[] = [];
  events.subscribe('f1', (i) => live.push(i), 0);
  await storeElsewhere('f1', [1, 2, 3]);
  events.storedMany([{ jobId: 'f1', from: 1, to: 3 }]);
  await settled();
  assert.deepEqual(seqsOf(live), [1, 2, 3]);

  // Chunk 4 is stored by the other controller, which dies before its notice goes out.
  await storeElsewhere('f1', [4]);
  // rc attach reconnects here and replays what is stored (job-stream.ts replayJob): up to 4.
  const replayed: JobItem[] = [];
  events.subscribe('f1', (i) => replayed.push(i));
  events.caughtUp('f1', 4);
  // The worker moves here and goes on with chunk 5.
  events.output('f1', 5, 1, Buffer.from('n 5\n'));
  await settled();
  assert.deepEqual(seqsOf(live), [1, 2, 3, 4, 5], 'rc run got chunk 4 too');
});

test('a replay that catches up tells the live followers what it found at once, without waiting for more output', async () => {
  await newJob('f2');
  const events = new JobEvents(storedOutput(sql));
  const live: JobItem[] = [];
  events.subscribe('f2', (i) => live.push(i), 0);
  await storeElsewhere('f2', [1, 2]);
  events.caughtUp('f2', 2);
  await settled();
  assert.deepEqual(seqsOf(live), [1, 2]);
});

test('the first follower of a job already under way starts where its replay ended', async () => {
  await newJob('f3');
  await storeElsewhere('f3', [1, 2, 3]);
  const events = new JobEvents(storedOutput(sql));
  const got: JobItem[] = [];
  events.subscribe('f3', (i) => got.push(i));
  events.caughtUp('f3', 3);
  await storeElsewhere('f3', [4, 5]);
  events.storedMany([{ jobId: 'f3', from: 5, to: 5 }]);
  await settled();
  // Chunk 4's notice was lost: the gap after the replay is filled, and nothing the replay sent comes again.
  assert.deepEqual(seqsOf(got), [4, 5]);
});

// A job named by its id or by its name (rc run --name): the lookup behind
// every route that takes `:id` (rc describe, rc logs, rc attach, rc kill,
// rc release, rc hold extend).
import { ARRAY_ID, parseTaskRef } from '../../core/array-spec';
import { RcError } from '../../core/errors';
import { JOB_ID, JOB_NAME } from '../../core/job-options';
import type { Sql } from '../db';
import type { jobArrays } from '../../db/schema';
import type { JobRow } from './job-view';

/** How many of the matching ids an ambiguous name's error lists. */
const SHOWN_IDS = 5;

/**
 * The job `ref` names: the job with that id; else, for a name, the one job
 * queued or running under it, or failing that the one job ever given it.
 * not_found when none has it; ambiguous_name (listing ids, newest first) when
 * several do. `what` words the not-found message (a job, a hold).
 */
export async function findJob(sql: Sql, ref: string, what = 'job'): Promise<JobRow> {
  const notFound = () => new RcError('not_found', `no ${what} ${ref}; check the job id or name (rc jobs lists them)`);
  // A task of an array: `<array id>:<index>` (rc logs a0123456789:7).
  const task = parseTaskRef(ref);
  if (task) {
    const [row] = await sql<JobRow[]>`select * from jobs where array_id = ${task.arrayId} and array_index = ${task.index}`;
    if (!row) throw new RcError('not_found', `no task ${task.index} in array ${task.arrayId}; rc describe ${task.arrayId} shows its indexes`);
    return row;
  }
  if (JOB_ID.test(ref)) {
    const [row] = await sql<JobRow[]>`select * from jobs where id = ${ref}`;
    if (!row) throw notFound();
    return row;
  }
  if (!JOB_NAME.test(ref)) throw notFound();
  // Active ones first; one more than is shown tells "and more".
  const rows = await sql<(JobRow & { active: boolean })[]>`
    (select *, true as active from jobs where name = ${ref} and state in ('queued', 'running') order by seq desc limit ${SHOWN_IDS + 1})
    union all
    (select *, false as active from jobs where name = ${ref} and state not in ('queued', 'running') order by seq desc limit ${SHOWN_IDS + 1})`;
  const active = rows.filter((r) => r.active === true);
  const pick = active.length > 0 ? active : rows;
  if (pick.length === 0) throw notFound();
  if (pick.length === 1) {
    const { active: _, ...job } = pick[0]!;
    return job;
  }
  const ids = pick.sort((a, b) => b.seq - a.seq).map((j) => j.id);
  const shown = ids.slice(0, SHOWN_IDS).join(', ') + (ids.length > SHOWN_IDS ? ', ...' : '');
  throw new RcError(
    'ambiguous_name',
    `${ref} names ${ids.length > SHOWN_IDS ? `more than ${SHOWN_IDS}` : ids.length} ${active.length > 0 ? 'queued or running ' : ''}jobs (${shown}, newest first); use a job id`,
  );
}

/** An array's row (server/jobs/array-view.ts reads its counts). */
export type ArrayRow = typeof jobArrays.$inferSelect;

/**
 * The array `ref` names: its id (`a` and 10 base32 digits), or its --name
 * (the newest array of that name). not_found when there is none.
 */
export async function findArray(sql: Sql, ref: string): Promise<ArrayRow> {
  const notFound = () => new RcError('not_found', `no array ${ref}; check the array id (rc run --array printed it; rc ps lists arrays with tasks left)`);
  if (!ARRAY_ID.test(ref) && !JOB_NAME.test(ref)) throw notFound();
  const [row] = ARRAY_ID.test(ref)
    ? await sql<ArrayRow[]>`select * from job_arrays where id = ${ref}`
    : await sql<ArrayRow[]>`select * from job_arrays where name = ${ref} order by created_at desc limit 1`;
  if (!row) throw notFound();
  return row;
}

/** Every task of an array, by index (rc run --after <array> waits on all of them). */
export async function arrayTaskIds(sql: Sql, arrayId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`select id from jobs where array_id = ${arrayId} order by array_index`;
  return rows.map((r) => r.id);
}

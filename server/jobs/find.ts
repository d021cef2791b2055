// A job named by its id or by its name (rc run --name): the lookup behind
// every route that takes `:id` (rc describe, rc logs, rc attach, rc kill,
// rc release, rc hold extend).
import { RcError } from '../../core/errors';
import { JOB_ID, JOB_NAME } from '../../core/job-options';
import type { Sql } from '../db';
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

// The jobs waiting on others (rc run --after, --after-any) that may be
// settled now, each with every job it waits on as it stands: those that wait
// on jobs that just ended (`ended`), those named (`jobs`: one just
// submitted), or (null: the sweep) every waiting one whose wait could be
// over, found through jobs_waiting_idx.
// The decision itself is core's (core/dependencies.ts settle).
import type { Sql } from '../../db';
import type { DependencyRow } from './dependencies-of';

/** One job a waiting job runs after, as rc describe reads them; a job that is gone (never the case but for a refused rc cp) reads as cancelled. */
export type WaitingOnRow = DependencyRow;

/** How many waiting jobs one sweep settles at most (the next sweep takes the rest). */
export const SWEEP_MAX = 1000;

export function waitingOn(sql: Sql, of: { ended: readonly string[] } | { jobs: readonly string[] } | null): Promise<WaitingOnRow[]> {
  const which =
    of !== null && 'ended' in of
      ? sql`select distinct j.id from job_deps d join jobs j on j.id = d.job_id
            where d.after_id = any(${of.ended as string[]}::text[]) and j.state = 'queued' and j.waits = 'after'`
      : of !== null
        ? sql`select j.id from jobs j where j.id = any(${of.jobs as string[]}::text[]) and j.state = 'queued' and j.waits = 'after'`
        : // Only those a decision is possible for: none of its jobs still active, or one --after job that did not succeed.
          sql`select j.id from jobs j where j.state = 'queued' and j.waits = 'after'
            and (not exists (select 1 from job_deps d join jobs a on a.id = d.after_id where d.job_id = j.id and a.state in ('queued', 'running'))
              or exists (select 1 from job_deps d left join jobs a on a.id = d.after_id
                         where d.job_id = j.id and not d."any" and (a.id is null or a.state not in ('queued', 'running', 'succeeded'))))
            limit ${SWEEP_MAX}`;
  return sql<WaitingOnRow[]>`
    with w as (${which})
    select d.job_id, d.after_id, d."any", coalesce(a.state, 'cancelled') as state, a.exit_code, a.end_cause as cause
    from job_deps d join w on w.id = d.job_id left join jobs a on a.id = d.after_id
    order by d.job_id, d.after_id`;
}

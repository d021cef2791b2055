// The jobs each of `jobIds` runs after (rc run --after, --after-any), in the order named (by id), with their states now.
import type { EndCause, JobState } from '../../../core/job-state';
import type { Sql } from '../../db';

export interface DependencyRow {
  jobId: string;
  afterId: string;
  any: boolean;
  state: JobState;
  exitCode: number | null;
  cause: EndCause | null;
}

export function dependenciesOf(sql: Sql, jobIds: readonly string[]): Promise<DependencyRow[]> {
  return sql<DependencyRow[]>`
    select d.job_id, d.after_id, d."any", coalesce(a.state, 'cancelled') as state, a.exit_code, a.end_cause as cause
    from job_deps d left join jobs a on a.id = d.after_id
    where d.job_id = any(${jobIds as string[]}::text[])
    order by d.job_id, a.seq nulls last`;
}

// The jobs a submit names in --after / --after-any, locked (for share) in the
// submit's transaction: an end that is being stored commits first and is read
// here in its final state, or waits until this submit commits, and then the
// end's follow-up statement (server/jobs/waits.ts) sees the new job_deps rows.
import type { EndCause, JobState } from '../../../core/job-state';
import type { Runner } from '../../limits';

export interface LockedDependency {
  id: string;
  state: JobState;
  exitCode: number | null;
  cause: EndCause | null;
}

export function lockDependencies(tx: Runner, ids: readonly string[]): Promise<LockedDependency[]> {
  return tx<LockedDependency[]>`
    select id, state, exit_code, end_cause as cause from jobs where id = any(${ids as string[]}::text[]) order by id for share`;
}

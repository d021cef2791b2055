// Who holds a claimed job's devices, as the fleet view shows it.
import type { Holder } from '../../protocol/wire';
import type { JobRow } from './job-view';

export function holderOf(job: Pick<JobRow, 'id' | 'kind' | 'submitter' | 'startedAt'>): Holder {
  return { jobId: job.id, kind: job.kind, submitter: job.submitter, since: (job.startedAt ?? new Date()).toISOString() };
}

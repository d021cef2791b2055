// What a worker's hello means for the jobs the database runs on its host: the
// database's running jobs against the jobs (and fences) the worker reports.
// Pure: server/jobs/worker-reports.ts runs the statements it implies.
//
// - a job the database runs there and the worker reports with its fence: kept
//   (and a stop asked while the worker was away is sent again);
// - one the worker does not report (or reports with another fence): lost, the
//   worker restarted without it;
// - one the worker reports that the database does not run there: stopped,
//   nobody holds a lease for it.

export interface RunningThere {
  id: string;
  fence: number | null;
  /** A stop asked for it (rc kill, a watchdog, a preemption), not yet carried out. */
  killRequestedBy: string | null;
}

export interface ReportedJob {
  jobId: string;
  fence: number;
}

export interface StopOrder {
  jobId: string;
  fence: number;
  reason: string;
}

export interface Reconciled<J extends RunningThere> {
  kept: J[];
  lost: J[];
  /** What the worker must stop: jobs it runs without a lease, then stops asked while it was away. */
  stop: StopOrder[];
}

export const NO_LEASE_REASON = 'the controller no longer holds a lease for this job';

export function reconcile<J extends RunningThere>(running: readonly J[], reported: readonly ReportedJob[]): Reconciled<J> {
  const fenceOf = new Map(reported.map((r) => [r.jobId, r.fence]));
  const kept: J[] = [];
  const lost: J[] = [];
  for (const job of running) (fenceOf.get(job.id) === job.fence ? kept : lost).push(job);
  const known = new Set(kept.map((j) => j.id));
  const stop: StopOrder[] = reported.filter((r) => !known.has(r.jobId)).map((r) => ({ jobId: r.jobId, fence: r.fence, reason: NO_LEASE_REASON }));
  for (const j of kept) if (j.killRequestedBy) stop.push({ jobId: j.id, fence: j.fence!, reason: j.killRequestedBy });
  return { kept, lost, stop };
}

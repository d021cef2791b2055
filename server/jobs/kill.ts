// Stopping a job: a queued one is cancelled at once, a running one is told to
// its worker, which kills the whole process group and reports the exit.
import { eq } from 'drizzle-orm';
import { RcError } from '../../core/errors';
import { audit, jobs } from '../../db/schema';
import { actorDetail, actorText, actsAs, type Identity } from '../auth';
import type { Db, Sql } from '../db';
import type { JobEvents } from '../job-events';
import type { KillJobOrder } from '../../protocol/worker';
import { type StopCause, step } from '../../core/job-state';
import { endJob } from './finish';
import { requestStop } from './sql/request-stop';
import { FINAL_STATES } from '../../core/job-state';
import type { JobRow } from './job-view';
import { auditOrigin, auditTokenId } from '../request-scope';

export interface KillDeps {
  db: Db;
  sql: Sql;
  events: JobEvents;
  /** Tells a job's worker to stop it, wherever it is connected. */
  hub: { killJob(hostName: string, order: KillJobOrder): void };
}

/**
 * rc kill and rc release: by the job's submitter (claimed as this token may,
 * actsAs) or with an admin token. Audited, and the reason names the submitter
 * and the token: `killed by alice (token 7 agent-a)`.
 */
export async function killJob(deps: KillDeps, identity: Identity, jobId: string, submitter: string, verb: 'killed' | 'released' = 'killed'): Promise<JobRow> {
  actsAs(identity, submitter);
  const [job] = await deps.db.select().from(jobs).where(eq(jobs.id, jobId));
  if (!job) throw new RcError('not_found', `no job ${jobId}; check the job id`);
  if (job.submitter !== submitter && identity.kind !== 'admin') {
    throw new RcError('not_job_owner', `job ${jobId} belongs to ${job.submitter}, not ${submitter}; leave it alone`);
  }
  if (FINAL_STATES.has(job.state)) return job;
  const actor = actorText(identity, submitter);
  await deps.db.insert(audit).values({
    actor,
    action: verb === 'released' ? 'hold.release' : 'job.kill',
    target: jobId,
    detail: { ...actorDetail(identity, submitter), owner: job.submitter },
    origin: auditOrigin(),
    tokenId: auditTokenId(),
  });
  return stopJob(deps, job, `${verb} by ${actor}`, verb === 'released' ? 'released' : 'killed');
}

/** Ends a job for `reason` and `cause` (the first stop asked wins): no owner check and no audit, the caller's business. */
export async function stopJob(deps: KillDeps, job: JobRow, reason: string, cause: StopCause): Promise<JobRow> {
  if (job.state === 'queued') {
    // Still queued: it never ran, so it is cancelled (a watchdog's cause cannot apply yet).
    const end = step({ state: 'queued', stop: null, ending: null }, { type: 'stop', stop: { cause, reason } }).ending!;
    const ended = await endJob(deps, job.id, end, { from: ['queued'] });
    if (ended) return ended;
  }
  const running = await requestStop(deps.sql, job.id, reason, cause);
  if (running) deps.hub.killJob(running.hostName!, { jobId: job.id, fence: running.fence!, reason: running.killRequestedBy ?? reason });
  return running ?? job;
}

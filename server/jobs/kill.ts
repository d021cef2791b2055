// Stopping a job: a queued one is cancelled at once, a running one is told to
// its worker, which kills the whole process group and reports the exit.
import { and, eq, sql } from 'drizzle-orm';
import { RcError } from '../../core/errors';
import { audit, jobs } from '../../db/schema';
import { actorDetail, actorText, actsAs, type Identity } from '../auth';
import type { Db, Sql } from '../db';
import type { JobEvents } from '../job-events';
import type { WorkerHub } from '../worker-hub';
import { finishJob } from './finish';
import { FINAL_STATES, type JobRow } from './job-view';

export interface KillDeps {
  db: Db;
  sql: Sql;
  events: JobEvents;
  hub: WorkerHub;
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
  });
  return stopJob(deps, job, `${verb} by ${actor}`);
}

/** Ends a job for `reason` (the first reason recorded wins): no owner check and no audit, the caller's business. */
export async function stopJob(deps: KillDeps, job: JobRow, reason: string): Promise<JobRow> {
  if (job.state === 'queued') {
    const ended = await finishJob(deps.sql, job.id, null, { state: 'cancelled', exitCode: null, reason }, ['queued']);
    if (ended) {
      deps.events.event(job.id, { type: 'exit', jobId: job.id, state: ended.state, exitCode: null, reason: ended.reason });
      return ended;
    }
  }
  const [running] = await deps.db
    .update(jobs)
    .set({ killRequestedBy: sql`coalesce(${jobs.killRequestedBy}, ${reason})` })
    .where(and(eq(jobs.id, job.id), eq(jobs.state, 'running')))
    .returning();
  if (running) deps.hub.killJob(running.hostName!, { jobId: job.id, fence: running.fence!, reason: running.killRequestedBy ?? reason });
  return running ?? job;
}

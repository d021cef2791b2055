// Stopping a job: a queued one is cancelled at once, a running one is told to
// its worker, which kills the whole process group and reports the exit.
import { and, eq, sql } from 'drizzle-orm';
import { RcError } from '../../core/errors';
import { audit, jobs } from '../../db/schema';
import type { Identity } from '../auth';
import type { Db, Sql } from '../db';
import type { JobEvents } from '../job-events';
import type { WorkerHub } from '../worker-hub';
import { finishJob } from './finish';
import { FINAL_STATES, type JobRow } from './job-view';

export interface KillDeps { db: Db; sql: Sql; events: JobEvents; hub: WorkerHub }

export async function killJob(deps: KillDeps, identity: Identity, jobId: string, submitter: string, verb: 'killed' | 'released' = 'killed'): Promise<JobRow> {
  const { db, events, hub } = deps;
  const [job] = await db.select().from(jobs).where(eq(jobs.id, jobId));
  if (!job) throw new RcError('not_found', `no job ${jobId}; check the job id`);
  const isAdmin = identity.kind === 'admin';
  if (job.submitter !== submitter && !isAdmin) {
    throw new RcError('not_job_owner', `job ${jobId} belongs to ${job.submitter}, not ${submitter}; leave it alone`);
  }
  if (FINAL_STATES.has(job.state)) return job;
  const by = job.submitter === submitter ? `${verb} by ${submitter}` : `${verb} by admin ${identity.name} (as ${submitter})`;
  if (isAdmin && job.submitter !== submitter) {
    await db.insert(audit).values({ actor: `admin:${identity.name}`, action: verb === 'released' ? 'hold.release' : 'job.kill', target: jobId, detail: { submitter: job.submitter, as: submitter } });
  }
  if (job.state === 'queued') {
    const ended = await finishJob(deps.sql, jobId, null, { state: 'cancelled', exitCode: null, reason: by }, ['queued']);
    if (ended) {
      events.event(jobId, { type: 'exit', jobId, state: ended.state, exitCode: null, reason: ended.reason });
      return ended;
    }
  }
  const [running] = await db.update(jobs).set({ killRequestedBy: sql`coalesce(${jobs.killRequestedBy}, ${by})` })
    .where(and(eq(jobs.id, jobId), eq(jobs.state, 'running'))).returning();
  if (running) hub.killJob(running.hostName!, { jobId, fence: running.fence!, reason: by });
  return running ?? job;
}

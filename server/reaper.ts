// Hosts that stay silent past the timeout go offline; their running jobs end
// `lost` and their devices are freed.
import { and, eq, inArray, sql } from 'drizzle-orm';
import { hosts, jobs } from '../db/schema';
import type { Db, Sql } from './db';
import type { JobEvents } from './job-events';
import { finishJob } from './jobs/finish';

export async function reapSilentHosts(db: Db, raw: Sql, events: JobEvents, timeoutS: number): Promise<number> {
  const gone = await db.update(hosts).set({ status: 'offline' })
    .where(and(inArray(hosts.status, ['online', 'away']), sql`${hosts.lastSeenAt} < now() - make_interval(secs => ${timeoutS})`))
    .returning({ name: hosts.name });
  let lost = 0;
  for (const { name } of gone) {
    const running = await db.select({ id: jobs.id, fence: jobs.fence }).from(jobs).where(and(eq(jobs.hostName, name), eq(jobs.state, 'running')));
    for (const job of running) {
      const ended = await finishJob(raw, job.id, job.fence, { state: 'lost', exitCode: null, reason: `host ${name} stopped answering` });
      if (ended) {
        lost++;
        events.event(job.id, { type: 'exit', jobId: job.id, state: 'lost', exitCode: null, reason: ended.reason });
      }
    }
  }
  return lost;
}

/** At start-up no worker is connected to this controller yet: give every host the full timeout to come back. */
export async function markHostsAway(db: Db): Promise<void> {
  await db.update(hosts).set({ status: 'away', lastSeenAt: sql`now()` }).where(inArray(hosts.status, ['online', 'away']));
}

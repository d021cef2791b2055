// Hosts that stay silent past the timeout go offline; their running jobs end
// `lost`. Their devices stay leased to those jobs: the processes may still run
// (a host cut off from the network, a worker stuck), so the devices are freed
// only when the worker comes back and says the jobs are gone (server/jobs/finish.ts).
//
// Silence is judged from timestamps in the database, which nobody could write
// while the database itself was away (stopped, restarting). So the reaper
// judges nothing until the database has answered for a whole timeout, and
// never reaps a host whose worker this controller heard from within it.
import { and, inArray, sql } from 'drizzle-orm';
import { hosts } from '../db/schema';
import type { Db, Sql } from './db';
import type { JobEngine } from './jobs/engine';

export interface ReapDeps {
  db: Db;
  sql: Sql;
  /** The job engine: a silent host's running jobs are lost through it. */
  engine: Pick<JobEngine, 'loseHostJobs'>;
  timeoutS: number;
  /** Milliseconds the database has answered without a break (server/db-health.ts). */
  dbUpForMs: () => number;
  /** Hosts whose workers this controller heard from within the timeout. */
  heardFrom: (withinMs: number) => string[];
  /** A host went offline (the dashboard's live view). */
  changed: (hostName: string) => void;
}

export async function reapSilentHosts(deps: ReapDeps): Promise<number> {
  const { db, timeoutS } = deps;
  if (deps.dbUpForMs() < timeoutS * 1000) return 0;
  // The silent ones first (usually none): a fleet of thousands is not named in a statement every second.
  const silent = await deps.sql<{ name: string }[]>`
    select name from hosts where status in ('online', 'away') and last_seen_at < now() - make_interval(secs => ${timeoutS})`;
  if (!silent.length) return 0;
  const alive = new Set(deps.heardFrom(timeoutS * 1000));
  const names = silent.map((h) => h.name).filter((n) => !alive.has(n));
  if (!names.length) return 0;
  const gone = await db
    .update(hosts)
    .set({ status: 'offline' })
    .where(and(inArray(hosts.name, names), inArray(hosts.status, ['online', 'away']), sql`${hosts.lastSeenAt} < now() - make_interval(secs => ${timeoutS})`))
    .returning({ name: hosts.name });
  let lost = 0;
  for (const { name } of gone) {
    deps.changed(name);
    lost += await deps.engine.loseHostJobs(name);
  }
  return lost;
}

/**
 * At start-up no worker is connected to this controller yet: every host gets
 * the full timeout to come back, but those another controller hears from
 * (a heartbeat within a third of the timeout) are left as they are.
 */
export async function markHostsAway(db: Db, timeoutS: number): Promise<void> {
  await db
    .update(hosts)
    .set({ status: 'away', lastSeenAt: sql`now()` })
    .where(and(inArray(hosts.status, ['online', 'away']), sql`${hosts.lastSeenAt} < now() - make_interval(secs => ${timeoutS / 2})`));
}

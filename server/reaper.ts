// Hosts that stay silent past the timeout go offline; their running jobs end
// `lost`. Their devices stay leased to those jobs: the processes may still run
// (a host cut off from the network, a worker stuck), so the devices are freed
// only when the worker comes back and says the jobs are gone (server/jobs/finish.ts).
//
// Silence is judged from timestamps in the database, which nobody could write
// while the database itself was away (stopped, restarting). So the reaper
// judges nothing until the database has answered for a whole timeout, and
// never reaps a host whose worker this controller heard from within it. The
// same holds for this controller's own pauses (server/pause-watch.ts): awake
// again, it gives every host a whole timeout before it judges any.
//
// A host still `online` but connected to no controller here has a controller
// that went silent holding it (frozen, or killed before it could mark the host
// away), or is itself cut off. Its worker notices a silent controller (a
// heartbeat unacknowledged for half a timeout, worker/controller-link.ts) and
// moves on: another controller gives it a second timeout to arrive before it
// judges (server/heartbeat-timing.ts). The controller holding a host judges it at the plain timeout, so a
// dead host behind a live controller is lost no later than before.
import { and, inArray, sql } from 'drizzle-orm';
import { hosts } from '../db/schema';
import type { Db, Sql } from './db';
import { switchGraceS } from './heartbeat-timing';
import type { JobEngine } from './jobs/engine';

export interface ReapDeps {
  db: Db;
  sql: Sql;
  /** The job engine: a silent host's running jobs are lost through it. */
  engine: Pick<JobEngine, 'loseHostJobs'>;
  timeoutS: number;
  /** Milliseconds the database has answered without a break (server/db-health.ts). */
  dbUpForMs: () => number;
  /** Milliseconds since this controller last woke from a pause (server/pause-watch.ts). */
  awakeForMs: () => number;
  /** Whether the host's worker is connected to this controller. */
  heldHere: (hostName: string) => boolean;
  /** Hosts whose workers this controller heard from within the timeout. */
  heardFrom: (withinMs: number) => string[];
  /** A host went offline (the dashboard's live view). */
  changed: (hostName: string) => void;
}

/** A host silent past the timeout in the database: its status, and seconds since it was last seen. */
export interface SilentHost {
  name: string;
  status: string;
  silentS: number;
}

/** Seconds of silence after which a host not heard from here is dead: the timeout, and the switch grace past it for one still `online` on another controller (above). */
function deadAfterS(h: SilentHost, timeoutS: number, heldHere: (hostName: string) => boolean): number {
  return heldHere(h.name) || h.status !== 'online' ? timeoutS : timeoutS + switchGraceS(timeoutS);
}

/** Of the silent hosts, those to put offline: not heard from here, and past the timeout that applies to each (above). */
export function deadHosts(silent: readonly SilentHost[], timeoutS: number, heard: ReadonlySet<string>, heldHere: (hostName: string) => boolean): string[] {
  return silent.filter((h) => !heard.has(h.name) && h.silentS >= deadAfterS(h, timeoutS, heldHere)).map((h) => h.name);
}

/**
 * Milliseconds until the next of the nearly silent hosts is due (null: none is): the reaper wakes then
 * rather than at its next tick, so a host is lost at its timeout, not up to a tick after it.
 */
export function nextDueMs(silent: readonly SilentHost[], timeoutS: number, heard: ReadonlySet<string>, heldHere: (hostName: string) => boolean): number | null {
  let next: number | null = null;
  for (const h of silent) {
    if (heard.has(h.name)) continue;
    const inMs = (deadAfterS(h, timeoutS, heldHere) - h.silentS) * 1000;
    if (inMs > 0 && (next === null || inMs < next)) next = inMs;
  }
  return next;
}

/** Whether the controller may judge hosts by time now: the database and this process have both been up for a whole timeout. */
function mayJudge(deps: ReapDeps): boolean {
  const ms = deps.timeoutS * 1000;
  return deps.dbUpForMs() >= ms && deps.awakeForMs() >= ms;
}

/** What a pass of the reaper did: jobs lost, and when the next nearly silent host falls due (ms; null: none within a tick). */
export interface ReapPass {
  lost: number;
  nextDueMs: number | null;
}

/** One pass. `tickMs`: how often passes run anyway; hosts that fall due before the next tick are named in `nextDueMs`. */
export async function reapSilentHosts(deps: ReapDeps, tickMs = 1000): Promise<ReapPass> {
  const { db, timeoutS } = deps;
  if (!mayJudge(deps)) return { lost: 0, nextDueMs: null };
  // The silent ones and those about to be (usually none): a fleet of thousands is not named in a statement every second.
  const silent = await deps.sql<SilentHost[]>`
    select name, status, extract(epoch from now() - last_seen_at)::float8 as "silentS" from hosts
    where status in ('online', 'away') and last_seen_at < now() - make_interval(secs => ${timeoutS - tickMs / 1000})`;
  if (!silent.length) return { lost: 0, nextDueMs: null };
  // Asked again: this process may have been stopped while the query was out.
  if (!mayJudge(deps)) return { lost: 0, nextDueMs: null };
  const heard = new Set(deps.heardFrom(timeoutS * 1000));
  const names = deadHosts(silent, timeoutS, heard, deps.heldHere);
  const nextDue = nextDueMs(silent, timeoutS, heard, deps.heldHere);
  if (!names.length) return { lost: 0, nextDueMs: nextDue };
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
  return { lost, nextDueMs: nextDue };
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

// Releasing queued jobs that wait on something besides a device (jobs.waits):
// one function per kind of wait. `after` (rc run --after, --after-any):
// settleDependents, once the jobs they wait on ended; `retry` (rc run
// --retry-delay): releaseRetries, once not_before has come; `array`, a place
// under an array's --array %N cap: releaseArraySlots in
// server/jobs/array-slots.ts, the cap's one owner. Each runs right after a job's end is stored
// (server/jobs/finish.ts endJobs) and as a sweep every few seconds
// (JobEngine.settleWaits), so a controller that died between an end and its
// release loses nothing; any controller may run either.
import { type Dependency, settle } from '../../core/dependencies';
import { ended } from '../../core/job-state';
import type { Sql } from '../db';
import { releaseArraySlots, releaseStalledArrays } from './array-slots';
import { type EndDeps, storeEnds } from './end-store';
import { nextRetryMs } from './sql/next-retry';
import { type Released, releaseWaits } from './sql/release-waits';
import { type WaitingOnRow, waitingOn } from './sql/waiting-on';

/** The most rounds of a cascade (a job cancelled for a dependency cancels its own dependents) in one go; the sweep goes on from there. */
const MAX_ROUNDS = 100;

/**
 * Settles the jobs that wait on `endedJobIds` (which just ended, for good):
 * core's settle() releases each whose --after jobs all succeeded and
 * --after-any ones all ended, and cancels (cause `dependency`, through the
 * one end statement, so its followers hear it) each with an --after job that
 * ended otherwise; the dependents of those cancelled follow, round by round.
 */
export async function settleDependents(deps: EndDeps, endedJobIds: readonly string[]): Promise<void> {
  let over: readonly string[] = endedJobIds;
  for (let round = 0; over.length && round < MAX_ROUNDS; round++) over = await settleRound(deps, await waitingOn(deps.sql, { ended: over }));
}

/** Jobs just submitted with dependencies (a job, or an array's tasks), settled as if they had just ended: one already failed cancels them at once. */
export async function settleSubmitted(deps: EndDeps, jobIds: string | readonly string[]): Promise<void> {
  const cancelled = await settleRound(deps, await waitingOn(deps.sql, { jobs: typeof jobIds === 'string' ? [jobIds] : jobIds }));
  if (cancelled.length) await settleDependents(deps, cancelled);
}

/** releaseRetries and the sweep's settling: what a sweep did, and when the next --retry-delay is over (ms from now; null: none waits). */
export interface Swept {
  released: number;
  cancelled: number;
  nextRetryMs: number | null;
}

/**
 * The repair sweep: every waiting job whose dependencies could be settled now
 * (an end whose follow-up statement never ran: its controller died), and
 * every --retry-delay that is over.
 */
export async function sweepWaits(deps: EndDeps): Promise<Swept> {
  const rows = await waitingOn(deps.sql, null);
  const jobs = new Set(rows.map((r) => r.jobId)).size;
  const cancelled = rows.length ? await settleRound(deps, rows) : [];
  if (cancelled.length) await settleDependents(deps, cancelled);
  const retried = await releaseRetries(deps.sql);
  if (retried.length) deps.released?.();
  // Arrays' tasks left waiting on a cap with room under it (the release after a task's end never ran).
  const slotted = await releaseStalledArrays(deps.sql);
  return { released: jobs - cancelled.length + retried.length + slotted.length, cancelled: cancelled.length, nextRetryMs: await nextRetryMs(deps.sql) };
}

/** Every `retry` wait whose not_before has come: the job may start (its next attempt). */
export async function releaseRetries(sql: Sql): Promise<Released[]> {
  return arraysHook(sql, await releaseWaits(sql, 'retry', null));
}

/** One round: each waiting job decided by core; returns the ids of those cancelled (their own dependents are next). */
async function settleRound(deps: EndDeps, rows: readonly WaitingOnRow[]): Promise<string[]> {
  const byJob = new Map<string, Dependency[]>();
  for (const r of rows) {
    const list = byJob.get(r.jobId) ?? [];
    list.push({ id: r.afterId, any: r.any, state: r.state, exitCode: r.exitCode, cause: r.cause });
    byJob.set(r.jobId, list);
  }
  const release: string[] = [];
  const cancel: { jobId: string; reason: string }[] = [];
  for (const [jobId, list] of byJob) {
    const v = settle(list);
    if (v.verdict === 'release') release.push(jobId);
    else if (v.verdict === 'cancel') cancel.push({ jobId, reason: v.reason });
  }
  if (release.length) {
    await arraysHook(deps.sql, await releaseWaits(deps.sql, 'after', release));
    deps.released?.();
  }
  if (!cancel.length) return [];
  const gone = await storeEnds(
    deps,
    cancel.map((c) => ({ jobId: c.jobId, end: ended('cancelled', 'dependency', c.reason), fence: null, host: null })),
    { from: ['queued'] },
  );
  return gone.map((g) => g.id);
}

/**
 * Released jobs that are tasks of a capped array now wait for a place under
 * its cap (waits 'array'): releaseArraySlots, the cap's one owner, lets in
 * what fits.
 */
async function arraysHook(sql: Sql, released: Released[]): Promise<Released[]> {
  const arrayIds = [...new Set(released.filter((r) => r.waits === 'array').map((r) => r.arrayId!))];
  if (arrayIds.length) await releaseArraySlots(sql, arrayIds);
  return released;
}

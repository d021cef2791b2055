// rc run --after / --after-any and --retries, apart from any I/O: when a
// waiting job may start, when it never will, and how both are said.
import type { EndCause, JobState } from './job-state';

/** The most jobs one submit may name in --after, and again in --after-any. */
export const MAX_DEPENDENCIES = 100;
/** rc run --retries: at most this many runs again after a non-zero exit. */
export const MAX_RETRIES = 20;
/** rc run --retry-delay: at most a day between a failed attempt and the next. */
export const MAX_RETRY_DELAY_S = 24 * 3600;

/** A job another waits on, as that one's wait sees it. */
export interface Dependency {
  id: string;
  /** --after-any: any end will do; else (--after) only `succeeded`. */
  any: boolean;
  state: JobState;
  exitCode: number | null;
  cause: EndCause | null;
}

export type Verdict =
  /** Some are still queued or running (a job being retried is queued): these, in the order given. */
  | { verdict: 'wait'; unmet: Dependency[] }
  /** Every --after job succeeded and every --after-any one ended. */
  | { verdict: 'release' }
  /** An --after job ended another way: the job never runs (cancelled, cause dependency). */
  | { verdict: 'cancel'; on: Dependency; reason: string };

function isOver(state: JobState): boolean {
  return state !== 'queued' && state !== 'running';
}

/**
 * What a job waiting on `deps` does now. One --after job that ended other
 * than succeeded decides at once, even while others still run: the job can
 * never start, so nobody is kept waiting for it.
 */
export function settle(deps: readonly Dependency[]): Verdict {
  const broken = deps.find((d) => !d.any && isOver(d.state) && d.state !== 'succeeded');
  if (broken) return { verdict: 'cancel', on: broken, reason: dependencyReason(broken) };
  const unmet = deps.filter((d) => !isOver(d.state));
  return unmet.length ? { verdict: 'wait', unmet } : { verdict: 'release' };
}

/** Whether a submit's dependencies, as they stand, let it start as any job: none unmet and none broken. */
export function satisfied(deps: readonly Dependency[]): boolean {
  return settle(deps).verdict === 'release';
}

/** Why a dependent job was cancelled: `j123, which it runs after, failed (exit 1)`. */
export function dependencyReason(d: Pick<Dependency, 'id' | 'state' | 'exitCode' | 'cause'>): string {
  const how =
    d.state === 'failed' && d.exitCode !== null
      ? `failed (exit ${d.exitCode})`
      : d.state === 'cancelled' && d.cause === 'dependency'
        ? 'was cancelled for its own dependency'
        : d.state === 'killed' || d.state === 'lost' || d.state === 'cancelled' || d.state === 'preempted'
          ? `was ${d.state}`
          : d.state;
  return `${d.id}, which it runs after, ${how}`;
}

/** How many unmet ones a wait reason names before "and N more". */
const NAMED = 3;

/** A dependency-waiting job's reason, as rc ps and the queue show it: `after j123 (running), j124 (queued)`. */
export function afterText(unmet: readonly Pick<Dependency, 'id' | 'state'>[]): string {
  const named = unmet.slice(0, NAMED).map((d) => `${d.id} (${d.state})`);
  const more = unmet.length > NAMED ? ` and ${unmet.length - NAMED} more` : '';
  return `after ${named.join(', ')}${more}`;
}

/** A retry-waiting job's reason: `retry in 25s (attempt 2 of 3)`. */
export function retryText(notBefore: Date, now: Date, attempt: number, of: number): string {
  const s = Math.max(0, Math.ceil((notBefore.getTime() - now.getTime()) / 1000));
  return `retry in ${s}s (attempt ${attempt} of ${of})`;
}

/** What a follower of a retried job is told: `attempt 2 of 3 after exit 1`. */
export function retryNotice(next: number, of: number, exitCode: number | null, delayS: number): string {
  return `attempt ${next} of ${of} after exit ${exitCode ?? '?'}${delayS > 0 ? `, in ${delayS}s` : ''}`;
}

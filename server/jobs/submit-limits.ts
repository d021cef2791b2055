// The limits every submit faces (jobs, holds, terminals: server/jobs/submit.ts
// calls these for all of them): the token's and its team's (server/limits.ts),
// decided by core/limits.ts. With no limit set, one indexed read finds none and
// nothing else is read.
import { RcError } from '../../core/errors';
import { type Ask, budgetRefusal, checkAsk, PERIOD_S, queuedRefusal, refillAt, type ScopeLimits } from '../../core/limits';
import type { Sql } from '../db';
import { budgetIntervals, budgetUse, gpusInUse, limitsFor, queuedNow, type Runner } from '../limits';

export interface Admitted {
  /** The limits that bind the submitting token (empty: none, and no check follows). */
  scopes: ScopeLimits[];
  /** Its --max-runtime after the ceilings (a job that gave none gets the strictest). */
  maxRuntimeS: number | null;
  /** What to tell the submitter (a ceiling applied as its --max-runtime); null: nothing. */
  notice: string | null;
  /** False when a --gpus limit is already reached: it must not start at submit, the scheduling pass decides. */
  mayStartAtOnce: boolean;
}

/**
 * Refuses (`over_limit`) a submit past the token's or its team's limits that
 * need no queue: --priority, --max-runtime, a hold's --ttl, more GPUs than the
 * scope may ever hold, a used-up GPU-hours budget. The --queued limit is
 * checked where the job is queued (queueWithinLimits).
 */
export async function admit(sql: Sql, tokenId: number, ask: Ask): Promise<Admitted> {
  const scopes = await limitsFor(sql, tokenId);
  if (!scopes.length) return { scopes, maxRuntimeS: ask.maxRuntimeS, notice: null, mayStartAtOnce: true };
  const verdict = checkAsk(scopes, ask);
  if (!verdict.ok) throw new RcError('over_limit', verdict.message);
  for (const l of scopes) {
    if (l.period === null) continue;
    const use = await budgetUse(sql, l.scope, l.period);
    if (use.usedS < l.gpuHours! * 3600) continue;
    const { now, intervals } = await budgetIntervals(sql, l.scope, l.period);
    throw new RcError('over_limit', budgetRefusal(l, use, refillAt(intervals, PERIOD_S[l.period], l.gpuHours! * 3600, now))!);
  }
  let mayStartAtOnce = true;
  for (const l of scopes) if (l.gpus !== null && (await gpusInUse(sql, l.scope)) + ask.gpus > l.gpus) mayStartAtOnce = false;
  return { scopes, maxRuntimeS: verdict.maxRuntimeS, notice: verdict.notice, mayStartAtOnce };
}

/**
 * Queues a job (`insert`) unless a scope's --queued limit is reached
 * (`over_limit`); `adding` jobs at once (an array's tasks) are refused whole. Each such scope's count is taken under a transaction-level
 * advisory lock of that scope, so two submits at the limit cannot both pass;
 * with no --queued limit it is the plain insert.
 */
export async function queueWithinLimits<T>(
  sql: Sql,
  scopes: readonly ScopeLimits[],
  insert: (tx: Runner) => Promise<T>,
  opts: {
    /** Jobs stored at once (an array's tasks): refused whole when they would pass a --queued limit. */
    adding?: number;
    /** The insert needs a transaction of its own anyway (a job with dependencies locks them and stores its job_deps rows). */
    inTransaction?: boolean;
  } = {},
): Promise<T> {
  const { adding = 1, inTransaction = false } = opts;
  const limited = scopes.filter((l) => l.queued !== null);
  if (!limited.length && !inTransaction) return insert(sql);
  return sql.begin(async (tx) => {
    // Locks in one order (team before token, as limitsFor reads them): two submits never wait on each other crosswise.
    for (const l of limited) {
      await tx`select pg_advisory_xact_lock(${QUEUED_LOCK}, hashtext(${l.scope.kind === 'team' ? `team:${l.scope.team}` : `token#${l.scope.tokenId}`}))`;
      const refusal = queuedRefusal(l, await queuedNow(tx, l.scope), adding);
      if (refusal) throw new RcError('over_limit', refusal);
    }
    return insert(tx);
  }) as Promise<T>;
}

/** The advisory locks' first key (the two-key space: db.ts's and the pruner's single keys never meet it). */
const QUEUED_LOCK = 7432;

// The --gpus limits for the queue's readers (the scheduling pass, GET
// /api/queue, rc ps): what each limited scope may still take (core/quota.ts).
// The limits change rarely: read at most every FRESH_MS, as fair share's
// standings are. The devices held change with every start and end: read each
// time, and only when some limit exists (none: nothing is read but the limits).
import { overQuota, type QuotaView, quotaReason, quotaView } from '../../core/quota';
import type { QueuedJob } from '../../core/schedule';
import type { Sql } from '../db';
import { gpusHeld } from './sql/gpus-held';
import { type QuotaLimits, quotaLimits } from './sql/quota-limits';

/** How long a read of the limits is used (ms): a limit set through another controller applies within it. */
export const LIMITS_FRESH_MS = 1000;

export class Quotas {
  private read: { at: number; limits: QuotaLimits } | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly freshMs: number = LIMITS_FRESH_MS,
  ) {}

  /** What the limits leave now, or null when no scope has a --gpus limit. */
  async view(): Promise<QuotaView | null> {
    const limits = await this.limits();
    if (!limits.teams.size && !limits.tokens.size) return null;
    const held = await gpusHeld(this.sql, [...new Set([...limits.teamOf.keys(), ...limits.tokens.keys()])]);
    return quotaView({ ...limits, held });
  }

  /** A limit was set here: the next view reads it. */
  forget(): void {
    this.read = null;
  }

  private async limits(): Promise<QuotaLimits> {
    const now = Date.now();
    if (this.read && now - this.read.at < this.freshMs) return this.read.limits;
    const limits = await quotaLimits(this.sql);
    this.read = { at: now, limits };
    return limits;
  }
}

/** A queued job with the limited scopes its token is charged to (none: as it was). */
export function withQuota(job: QueuedJob, quota: QuotaView | null, tokenId: number | null | undefined): QueuedJob {
  const scopes = quota?.scopesOf(tokenId ?? null);
  return scopes?.length ? { ...job, quota: scopes } : job;
}

/** Why a queued job of this token waits on a --gpus limit now, or null when its limits leave it room. */
export function quotaWait(quota: QuotaView, tokenId: number | null | undefined, gpus: number): string | null {
  const key = overQuota(quota, quota.scopesOf(tokenId ?? null), gpus);
  if (key === null) return null;
  return quotaReason(quota, key, Math.max(0, (quota.limits.get(key)?.limit ?? 0) - quota.left.get(key)!));
}

// The --gpus limits as a scheduling pass applies them (issue 32): a job whose
// token or team would hold more devices than its limit waits, with the reason
// named; it starts when one of its own scope's leases ends, not another's.
// Pure: the caller reads the limits and the devices each scope holds
// (server/jobs/quota.ts); decide() (core/schedule.ts) and the wait reasons
// (core/wait-reason.ts) take what is left here.

/** A scope a job is charged to, as a key: `team:vision`, `token:12` (a token's id). */
export type QuotaKey = string;

export const teamKey = (team: string): QuotaKey => `team:${team}`;
export const tokenKey = (tokenId: number): QuotaKey => `token:${tokenId}`;

/** What each limited scope may still take, and how to say it when it may not. */
export interface QuotaView {
  /** Devices left under the limit, by scope (only scopes with a --gpus limit). */
  left: Map<QuotaKey, number>;
  /** The limit and its scope in words (`team vision`, `token agent-a`), by scope. */
  limits: ReadonlyMap<QuotaKey, { limit: number; words: string }>;
  /** The limited scopes a job of this token is charged to (its token's and its team's). */
  scopesOf(tokenId: number | null): readonly QuotaKey[];
  /** The tokens any limit reaches. */
  tokens: readonly number[];
}

export interface QuotaInput {
  /** --gpus limits: of teams by name, of tokens by id. */
  teams: ReadonlyMap<string, number>;
  tokens: ReadonlyMap<number, number>;
  /** Each token's team (those whose team has a limit; others may be left out). */
  teamOf: ReadonlyMap<number, string>;
  /** Tokens' names, for the sentences (an id stands in for one not given). */
  tokenNames: ReadonlyMap<number, string>;
  /** Devices each token's jobs, terminals and holds lease now (rc cp's aside). */
  held: ReadonlyMap<number, number>;
}

/** The view of a pass, or null when no scope has a --gpus limit (nothing to apply). */
export function quotaView(q: QuotaInput): QuotaView | null {
  if (!q.teams.size && !q.tokens.size) return null;
  const left = new Map<QuotaKey, number>();
  const limits = new Map<QuotaKey, { limit: number; words: string }>();
  for (const [team, limit] of q.teams) {
    left.set(teamKey(team), limit);
    limits.set(teamKey(team), { limit, words: `team ${team}` });
  }
  for (const [id, limit] of q.tokens) {
    left.set(tokenKey(id), limit);
    limits.set(tokenKey(id), { limit, words: `token ${q.tokenNames.get(id) ?? id}` });
  }
  const scopesOf = (tokenId: number | null): QuotaKey[] => {
    if (tokenId === null) return [];
    const out: QuotaKey[] = [];
    if (q.tokens.has(tokenId)) out.push(tokenKey(tokenId));
    const team = q.teamOf.get(tokenId);
    if (team !== undefined && q.teams.has(team)) out.push(teamKey(team));
    return out;
  };
  for (const [tokenId, n] of q.held) for (const k of scopesOf(tokenId)) left.set(k, left.get(k)! - n);
  return { left, limits, scopesOf, tokens: [...new Set([...q.teamOf.keys(), ...q.tokens.keys()])] };
}

/** The tokens none of whose jobs could start now: a limit of theirs has no device left (the queue's head leaves them out). */
export function exhausted(view: QuotaView, tokenIds: Iterable<number>): number[] {
  return [...tokenIds].filter((t) => overQuota(view, view.scopesOf(t), 1) !== null);
}

/** The first of `scopes` that has fewer than `gpus` devices left, or null when all have room. */
export function overQuota(view: Pick<QuotaView, 'left'>, scopes: readonly QuotaKey[], gpus: number): QuotaKey | null {
  for (const k of scopes) if ((view.left.get(k) ?? Number.POSITIVE_INFINITY) < gpus) return k;
  return null;
}

/** `gpus` more devices held by the scopes. */
export function take(view: Pick<QuotaView, 'left'>, scopes: readonly QuotaKey[], gpus: number): void {
  for (const k of scopes) {
    const left = view.left.get(k);
    if (left !== undefined) view.left.set(k, left - gpus);
  }
}

/** `quota: team vision holds 4 of its 4 GPUs` (what it holds now, as the pass began). */
export function quotaReason(view: Pick<QuotaView, 'limits'>, key: QuotaKey, heldNow: number): string {
  const l = view.limits.get(key);
  if (!l) return `quota: ${key} is at its limit`;
  return `quota: ${l.words} holds ${heldNow} of its ${l.limit} GPU${l.limit === 1 ? '' : 's'} (it starts when one of them frees)`;
}

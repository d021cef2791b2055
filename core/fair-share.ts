// Fair share (issue 32): within one priority, the queue goes by how far each
// job's team is below its share of recent use, and within a team by how far
// its token is below its share; equal standing keeps the queue's own order
// (queued again first, then submission order: core/schedule.ts queueOrder).
//
// Use is device-seconds held, busy or idle alike (a held device is a device
// nobody else has). A lease's seconds are charged when it ends and decay from
// then with a half-life (RC_FAIRSHARE_HALF_LIFE, 7 days unless set): its use at
// time t is held_s * 2^(-(t - released_at) / half_life); a running lease's
// seconds so far count in full. Decay applied to a sum is applied to each
// part, so the controller keeps one decayed sum per token and decays it by its
// timestamp when read (server/jobs/sql/charge-use.ts), and the order is the
// same as if every lease were added up again (test/integration/fair-share.test.ts).
//
// Standing, as Slurm's classic fair-share factor 2^(-usage/share) orders it
// (a monotone function of usage/share; rc orders by usage/share itself):
//   team:  (team's use / all use) / (team's share / shares of the active teams)
//   token: (token's use / its team's use) / (1 / active tokens of its team)
// where a team's share is teams.share, and a team (a token) is active while it
// has use or queued jobs: a team that stopped using the fleet long ago does not
// dilute everyone's share for ever, and one that has work waiting counts at once.
// 0 is no use; 1 is exactly its share; lower goes first. Team first, then token.
// With no team set up (every token in `default`) the team part is equal for all
// and fair share is among tokens only; with no use at all every job stands
// equal and the queue is today's.
import { type QueuedJob, queueOrder } from './schedule';

/** The default half-life of use (seconds): a week. */
export const DEFAULT_HALF_LIFE_S = 7 * 86400;

/** Standings closer than this are equal (sums in another order, in SQL or here, differ in the last bits). */
const EQUAL_WITHIN = 1e-9;

/** The factor use decays by over `elapsedS` seconds. */
export function decay(elapsedS: number, halfLifeS: number): number {
  return 2 ** (-elapsedS / halfLifeS);
}

/** A lease's use at `nowMs` (device-seconds): charged at its end and decayed from then; a running one's seconds so far, in full. */
export function leaseUse(acquiredMs: number, releasedMs: number | null, nowMs: number, halfLifeS: number): number {
  const heldS = Math.max(0, (releasedMs ?? nowMs) - acquiredMs) / 1000;
  return releasedMs === null ? heldS : heldS * decay((nowMs - releasedMs) / 1000, halfLifeS);
}

/** A token as fair share weighs it: its key (tokens.id; 0 for jobs with no token), its team, its decayed use, and whether it has jobs queued. */
export interface TokenUse {
  key: number;
  team: string;
  /** Decayed device-seconds (leaseUse summed). */
  use: number;
  queued: boolean;
}

/** How far above its share a team and a token are: 0 no use, 1 exactly its share (lower goes first). */
export interface Standing {
  team: number;
  token: number;
}

/** A team as fair share weighs it: its decayed use, its part of all active teams' use and of their shares, and its standing (use part over share part; lower goes first). */
export interface TeamStanding {
  use: number;
  /** It has use or jobs queued: only active teams divide the fleet. */
  active: boolean;
  usePart: number;
  sharePart: number;
  standing: number;
}

/** Each team's standing (the team part of `standings`); `shares` gives teams.share by team (a team not in it has share 1). */
export function teamStandings(tokens: readonly TokenUse[], shares: ReadonlyMap<string, number>): Map<string, TeamStanding & { activeTokens: number }> {
  const teams = new Map<string, { use: number; active: number }>();
  for (const t of tokens) {
    const team = teams.get(t.team) ?? { use: 0, active: 0 };
    team.use += t.use;
    if (t.queued || t.use > 0) team.active += 1;
    teams.set(t.team, team);
  }
  let allUse = 0;
  let allShares = 0;
  for (const [name, team] of teams) {
    if (team.active === 0) continue;
    allUse += team.use;
    allShares += shareOf(shares, name);
  }
  const out = new Map<string, TeamStanding & { activeTokens: number }>();
  for (const [name, team] of teams) {
    const active = team.active > 0;
    const usePart = active && allUse > 0 ? team.use / allUse : 0;
    const sharePart = active ? shareOf(shares, name) / allShares : 0;
    out.set(name, { use: team.use, active, usePart, sharePart, standing: active && allUse > 0 ? ratio(usePart, sharePart) : 0, activeTokens: team.active });
  }
  return out;
}

/** Each token's standing; `shares` gives teams.share by team (a team not in it has share 1). */
export function standings(tokens: readonly TokenUse[], shares: ReadonlyMap<string, number>): Map<number, Standing> {
  const teams = teamStandings(tokens, shares);
  const out = new Map<number, Standing>();
  for (const t of tokens) {
    const team = teams.get(t.team)!;
    const tokenStanding = team.use <= 0 ? 0 : ratio(t.use / team.use, 1 / Math.max(1, team.activeTokens));
    out.set(t.key, { team: team.standing, token: tokenStanding });
  }
  return out;
}

/**
 * Each token's place: 0 first, equal standings sharing one (and no gaps). The
 * queue orders by priority, then this, then its own order (queueOrder).
 */
export function fairRanks(tokens: readonly TokenUse[], shares: ReadonlyMap<string, number>): Map<number, number> {
  const s = standings(tokens, shares);
  const keyed = [...s].map(([key, st]) => ({ key, team: rounded(st.team), token: rounded(st.token) }));
  keyed.sort((a, b) => compare(a.team, b.team) || compare(a.token, b.token) || a.key - b.key);
  const ranks = new Map<number, number>();
  let rank = 0;
  keyed.forEach((k, i) => {
    const before = keyed[i - 1];
    if (before && (before.team !== k.team || before.token !== k.token)) rank += 1;
    ranks.set(k.key, rank);
  });
  return ranks;
}

/** Whether fair share changes anything: some two tokens stand apart. */
export function anyApart(ranks: ReadonlyMap<number, number>): boolean {
  for (const r of ranks.values()) if (r !== 0) return true;
  return false;
}

/** The queue in fair order: each job with its token's rank (a token not ranked goes after those that are), sorted by queueOrder. */
export function fairOrder<J extends QueuedJob & { tokenKey: number }>(jobs: readonly J[], ranks: ReadonlyMap<number, number>): J[] {
  const last = unrankedRank(ranks);
  return jobs.map((j) => ({ ...j, fairRank: ranks.get(j.tokenKey) ?? last })).sort(queueOrder);
}

/** Where a token with no rank yet goes (it queued its first job after the standings were read): after every ranked one, until the next read. */
export function unrankedRank(ranks: ReadonlyMap<number, number>): number {
  let max = -1;
  for (const r of ranks.values()) if (r > max) max = r;
  return max + 1;
}

function shareOf(shares: ReadonlyMap<string, number>, team: string): number {
  return shares.get(team) ?? 1;
}

/** Use over share; no share at all with some use stands behind everyone. */
function ratio(usePart: number, sharePart: number): number {
  if (usePart <= 0) return 0;
  return sharePart > 0 ? usePart / sharePart : Number.POSITIVE_INFINITY;
}

function rounded(x: number): number {
  return Number.isFinite(x) ? Math.round(x / EQUAL_WITHIN) * EQUAL_WITHIN : x;
}

function compare(a: number, b: number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

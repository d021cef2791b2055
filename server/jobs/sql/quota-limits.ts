// The --gpus limits a scheduling pass applies (core/quota.ts), and the tokens
// they reach: those limited themselves, and those of limited teams.
import type { Sql } from '../../db';

export interface QuotaLimits {
  teams: Map<string, number>;
  tokens: Map<number, number>;
  teamOf: Map<number, string>;
  tokenNames: Map<number, string>;
}

export async function quotaLimits(sql: Sql): Promise<QuotaLimits> {
  const limits = await sql<{ team: string | null; tokenId: number | null; gpus: number }[]>`
    select team, token_id, gpus from limits where gpus is not null`;
  const out: QuotaLimits = { teams: new Map(), tokens: new Map(), teamOf: new Map(), tokenNames: new Map() };
  for (const l of limits) {
    if (l.team !== null) out.teams.set(l.team, l.gpus);
    else if (l.tokenId !== null) out.tokens.set(l.tokenId, l.gpus);
  }
  if (!limits.length) return out;
  const tokens = await sql<{ id: number; name: string; team: string }[]>`
    select id, name, team from tokens where team = any(${[...out.teams.keys()]}::text[]) or id = any(${[...out.tokens.keys()]}::bigint[])`;
  for (const t of tokens) {
    out.teamOf.set(t.id, t.team);
    out.tokenNames.set(t.id, t.name);
  }
  return out;
}

// Limits on a team's or a token's use (issue 32), as stored: read for a submit
// (server/jobs/submit-limits.ts decides with core/limits.ts), set and shown by
// rc admin limit (audited), and the figures they are checked against (jobs
// waiting, devices leased, device-hours in a budget's window). Use is charged
// to a job's token, and to the team that token is in now.
import type postgres from 'postgres';
import { RcError } from '../core/errors';
import { type LimitPatch, type LimitValues, PERIOD_S, type Period, parseScope, type Scope, type ScopeLimits, standingText } from '../core/limits';
import type { LimitView, Standing } from '../protocol/wire';
import type { Sql } from './db';
import { auditOrigin, auditTokenId } from './request-scope';

/** A statement runner: the pool, or a transaction of it. */
export type Runner = Sql | postgres.TransactionSql<{ int8: number }>;

interface LimitRow extends LimitValues {
  team: string | null;
  tokenId: number | null;
  tokenName: string | null;
  updatedAt: Date;
}

const scopeOf = (r: LimitRow): Scope =>
  r.team !== null ? { kind: 'team', team: r.team } : { kind: 'token', tokenId: r.tokenId!, name: r.tokenName ?? String(r.tokenId) };

function scopeLimits(r: LimitRow): ScopeLimits {
  return {
    scope: scopeOf(r),
    gpus: r.gpus,
    gpuHours: r.gpuHours,
    period: r.period as Period | null,
    queued: r.queued,
    maxPriority: r.maxPriority,
    maxHoldTtlS: r.maxHoldTtlS,
    maxRuntimeS: r.maxRuntimeS,
  };
}

/**
 * The limits that bind a token: its own and its team's. One indexed read; with
 * no limits set it finds nothing and nothing else is read.
 */
export async function limitsFor(sql: Runner, tokenId: number): Promise<ScopeLimits[]> {
  const rows = await sql<LimitRow[]>`
    select l.*, t.name as token_name from limits l left join tokens t on t.id = l.token_id
    where l.token_id = ${tokenId} or l.team = (select team from tokens where id = ${tokenId})
    order by l.team nulls last`;
  return rows.map(scopeLimits);
}

/** The jobs of a scope, as a condition on `j` (jobs). */
function jobsOf(sql: Runner, s: Scope) {
  return s.kind === 'team' ? sql`j.token_id in (select id from tokens where team = ${s.team})` : sql`j.token_id = ${s.tokenId}`;
}

/** Jobs of the scope waiting now. */
export async function queuedNow(sql: Runner, s: Scope): Promise<number> {
  const [r] = await sql<[{ n: number }]>`select count(*)::int as n from jobs j where j.state = 'queued' and ${jobsOf(sql, s)}`;
  return r.n;
}

/** Devices the scope's jobs, terminals and holds lease now (rc cp's short leases aside). */
export async function gpusInUse(sql: Runner, s: Scope): Promise<number> {
  const [r] = await sql<[{ n: number }]>`
    select count(*)::int as n from leases l join jobs j on j.id = l.job_id
    where l.released_at is null and j.kind <> 'cp' and ${jobsOf(sql, s)}`;
  return r.n;
}

/**
 * Device-seconds the scope's leases held in the rolling window [now - period, now]
 * (running ones up to now), and their idle part (a lease's idle seconds in the
 * proportion of it inside the window, as server/usage.ts counts them).
 */
export async function budgetUse(sql: Runner, s: Scope, period: Period): Promise<{ usedS: number; idleS: number }> {
  const [r] = await sql<[{ usedS: number; idleS: number }]>`
    select coalesce(sum(in_s), 0)::float8 as used_s,
      coalesce(sum(case when signal and full_s > 0 then least(in_s, idle_s * in_s / full_s) else 0 end), 0)::float8 as idle_s
    from (
      select greatest(0, extract(epoch from coalesce(l.released_at, now()) - greatest(l.acquired_at, now() - make_interval(secs => ${PERIOD_S[period]}))))::float8 as in_s,
        extract(epoch from coalesce(l.released_at, now()) - l.acquired_at)::float8 as full_s, l.idle_s, l.idle_seen_at is not null as signal
      from leases l join jobs j on j.id = l.job_id
      where coalesce(l.released_at, now()) > now() - make_interval(secs => ${PERIOD_S[period]}) and j.kind <> 'cp' and ${jobsOf(sql, s)}
    ) w`;
  return r;
}

/** The scope's leases in its window as intervals (running ones to now), and the database's now: when the budget refills (core/limits.ts refillAt). */
export async function budgetIntervals(sql: Runner, s: Scope, period: Period): Promise<{ now: Date; intervals: { from: Date; to: Date }[] }> {
  const rows = await sql<{ from: Date; to: Date; now: Date }[]>`
    select l.acquired_at as from, coalesce(l.released_at, now()) as to, now() as now
    from leases l join jobs j on j.id = l.job_id
    where coalesce(l.released_at, now()) > now() - make_interval(secs => ${PERIOD_S[period]}) and j.kind <> 'cp' and ${jobsOf(sql, s)}`;
  const now = rows[0]?.now ?? (await sql<[{ now: Date }]>`select now() as now`)[0].now;
  return { now, intervals: rows };
}

/** The one live token a name (or an id) names: not_found for none, ambiguous_name (naming their ids) for several. */
export async function resolveToken(sql: Runner, nameOrId: string): Promise<{ id: number; name: string; kind: string }> {
  const byId = /^[1-9][0-9]{0,15}$/.test(nameOrId) ? Number(nameOrId) : null;
  const rows = await sql<{ id: number; name: string; kind: string }[]>`
    select id, name, kind from tokens
    where revoked_at is null and kind <> 'host' and (name = ${nameOrId} or id = ${byId ?? -1})
    order by (id = ${byId ?? -1}) desc, id`;
  // An id wins over a token that happens to be named like one.
  if (byId !== null && rows[0]?.id === byId) return rows[0];
  if (!rows.length)
    throw new RcError('not_found', `no live client or admin token is named ${JSON.stringify(nameOrId.slice(0, 80))}; rc admin tokens lists them`);
  if (rows.length > 1)
    throw new RcError('ambiguous_name', `${rows.length} live tokens are named ${nameOrId} (ids ${rows.map((r) => r.id).join(', ')}): give the id instead`);
  return rows[0]!;
}

/** A scope as written (`team:vision`, `token:agent-a`, `token:12`), checked against what exists. */
export async function resolveScope(sql: Runner, text: string): Promise<Scope> {
  const parsed = parseScope(text);
  if (!parsed.ok) throw new RcError('bad_request', parsed.message);
  if (parsed.kind === 'token') {
    const t = await resolveToken(sql, parsed.name);
    return { kind: 'token', tokenId: t.id, name: t.name };
  }
  const [team] = await sql`select 1 from teams where name = ${parsed.name}`;
  if (!team) throw new RcError('not_found', `no team is named ${parsed.name}; rc admin team list lists them (rc admin team create ${parsed.name} makes it)`);
  return { kind: 'team', team: parsed.name };
}

/** Sets (or clears) some of a scope's limits, audited; a row left with no limit is removed. Returns the scope's limits now. */
export async function setLimits(sql: Sql, scopeText: string, patch: LimitPatch, actor: string): Promise<LimitView> {
  return sql.begin(async (tx) => {
    const scope = await resolveScope(tx, scopeText);
    const team = scope.kind === 'team' ? scope.team : null;
    const tokenId = scope.kind === 'token' ? scope.tokenId : null;
    const [before] = await tx<LimitRow[]>`
      select l.*, null as token_name from limits l where ${team !== null ? tx`team = ${team}` : tx`token_id = ${tokenId}`} for update`;
    const now: LimitValues = { ...NO_VALUES, ...(before ? pick(before) : {}), ...patch };
    if (before) await tx`delete from limits where id = ${(before as unknown as { id: number }).id}`;
    if (Object.values(now).some((v) => v !== null)) await tx`insert into limits ${tx({ team, tokenId, ...now })}`;
    await tx`insert into audit (actor, action, target, detail, origin, token_id)
      values (${actor}, 'limit.set', ${scopeKeyOf(scope)}, ${JSON.stringify({ set: patch, was: before ? pick(before) : null })}::text::jsonb, ${auditOrigin()}, ${auditTokenId()})`;
    return { scope: scopeKeyOf(scope), ...now };
  });
}

const NO_VALUES: LimitValues = { gpus: null, gpuHours: null, period: null, queued: null, maxPriority: null, maxHoldTtlS: null, maxRuntimeS: null };

function pick(r: LimitValues): LimitValues {
  return {
    gpus: r.gpus,
    gpuHours: r.gpuHours,
    period: r.period,
    queued: r.queued,
    maxPriority: r.maxPriority,
    maxHoldTtlS: r.maxHoldTtlS,
    maxRuntimeS: r.maxRuntimeS,
  };
}

const scopeKeyOf = (s: Scope) => (s.kind === 'team' ? `team:${s.team}` : `token:${s.name}`);

/** Every scope's limits (or one scope's), teams first, then tokens by id. */
export async function listLimits(sql: Sql, scopeText: string | null): Promise<LimitView[]> {
  const scope = scopeText === null ? null : await resolveScope(sql, scopeText);
  const rows = await sql<LimitRow[]>`
    select l.*, t.name as token_name from limits l left join tokens t on t.id = l.token_id
    ${scope === null ? sql`` : scope.kind === 'team' ? sql`where l.team = ${scope.team}` : sql`where l.token_id = ${scope.tokenId}`}
    order by l.team nulls last, l.token_id`;
  if (scope !== null && !rows.length) return [{ scope: scopeKeyOf(scope), ...NO_VALUES }];
  return rows.map((r) => ({ scope: scopeKeyOf(scopeOf(r)), ...pick(r) }));
}

/** Where a token stands (rc whoami): its team, and for each scope that limits it, the limits and its figures against them. */
export async function standingOf(sql: Sql, tokenId: number): Promise<{ team: string; limits: Standing[] }> {
  const [token] = await sql<[{ team: string }?]>`select team from tokens where id = ${tokenId}`;
  const limits = await limitsFor(sql, tokenId);
  const standings = await Promise.all(
    limits.map(async (l) => {
      const [gpus, queued, use] = await Promise.all([
        gpusInUse(sql, l.scope),
        queuedNow(sql, l.scope),
        l.period === null ? { usedS: 0, idleS: 0 } : budgetUse(sql, l.scope, l.period),
      ]);
      const figures = { gpusInUse: gpus, queued, ...use };
      return { limits: { scope: scopeKeyOf(l.scope), ...pick(l) }, ...figures, text: standingText(l, figures) };
    }),
  );
  return { team: token?.team ?? 'default', limits: standings };
}

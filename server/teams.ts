// Teams and who is in them (issue 32): rc admin team create / set / list, and
// moving a token to a team (rc admin token set --team). Every change is audited.
// A token not put anywhere is in `default` (db/migrations/0025_teams.sql).
import { RcError } from '../core/errors';
import { limitsSummary, type LimitValues, type Period } from '../core/limits';
import type { TeamView } from '../protocol/wire';
import type { Sql } from './db';
import { type Runner, resolveToken } from './limits';
import { auditOrigin, auditTokenId } from './request-scope';

function audit(tx: Runner, actor: string, action: string, target: string, detail: Record<string, unknown>) {
  return tx`insert into audit (actor, action, target, detail, origin, token_id)
    values (${actor}, ${action}, ${target}, ${JSON.stringify(detail)}::text::jsonb, ${auditOrigin()}, ${auditTokenId()})`;
}

/** A team that does not exist: not_found, saying how to make it. */
export function noTeam(name: string): RcError {
  return new RcError('not_found', `no team is named ${name}; rc admin team list lists them (rc admin team create ${name} makes it)`);
}

export async function createTeam(sql: Sql, name: string, share: number, actor: string): Promise<TeamView> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ name: string }[]>`insert into teams (name, share) values (${name}, ${share}) on conflict (name) do nothing returning name`;
    if (!row) throw new RcError('conflict', `a team named ${name} exists already; rc admin team set ${name} --share N changes its share`);
    await audit(tx, actor, 'team.create', name, { share });
    return (await listTeams(tx, name))[0]!;
  });
}

export async function setTeamShare(sql: Sql, name: string, share: number, actor: string): Promise<TeamView> {
  return sql.begin(async (tx) => {
    const [was] = await tx<{ share: number }[]>`select share from teams where name = ${name} for update`;
    if (!was) throw noTeam(name);
    await tx`update teams set share = ${share} where name = ${name}`;
    await audit(tx, actor, 'team.set', name, { share, was: was.share });
    return (await listTeams(tx, name))[0]!;
  });
}

/** Every team (or one), by name: its share, its live tokens, and its limits. */
export async function listTeams(sql: Runner, only: string | null = null): Promise<TeamView[]> {
  const rows = await sql<(LimitValues & { name: string; share: number; members: number; createdAt: Date; hasLimits: boolean })[]>`
    select t.name, t.share, t.created_at,
      (select count(*)::int from tokens k where k.team = t.name and k.revoked_at is null and k.kind <> 'host') as members,
      l.id is not null as has_limits, l.gpus, l.gpu_hours, l.period, l.queued, l.max_priority, l.max_hold_ttl_s, l.max_runtime_s
    from teams t left join limits l on l.team = t.name
    ${only === null ? sql`` : sql`where t.name = ${only}`}
    order by t.name`;
  return rows.map((r) => ({
    name: r.name,
    share: r.share,
    members: r.members,
    createdAt: r.createdAt.toISOString(),
    limits: r.hasLimits ? limitsSummary({ ...r, period: r.period as Period | null }) : 'none',
  }));
}

/** Puts a token (a name naming one live token, or an id) in a team, audited. */
export async function setTokenTeam(sql: Sql, token: string, team: string, actor: string): Promise<{ id: number; name: string; team: string; was: string }> {
  return sql.begin(async (tx) => {
    const t = await resolveToken(tx, token);
    const [exists] = await tx`select 1 from teams where name = ${team}`;
    if (!exists) throw noTeam(team);
    const [was] = await tx<{ team: string }[]>`select team from tokens where id = ${t.id} for update`;
    await tx`update tokens set team = ${team} where id = ${t.id}`;
    await audit(tx, actor, 'token.team', t.name, { id: t.id, team, was: was!.team });
    return { id: t.id, name: t.name, team, was: was!.team };
  });
}

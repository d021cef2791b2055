// The dashboard's Teams page (GET /api/usage/teams): each team with its
// members, its own limits and where it stands against them (server/limits.ts
// counts), its fair-share standing (core/fair-share.ts over the same reading
// the queue orders by), and its device time per UTC day, the idle part apart.
// Use is charged to the team a job's token is in now, as usage by team and
// the budgets charge it; a job with no token is `default`'s, as fair share has it.
import { RcError } from '../core/errors';
import { teamStandings } from '../core/fair-share';
import { NO_LIMITS, type Period } from '../core/limits';
import type { LimitView, TeamDay, TeamsUsage, TeamUse } from '../protocol/wire';
import type { Sql } from './db';
import { tokenUse } from './jobs/sql/token-use';
import { budgetUse, gpusInUse, listLimits, queuedNow } from './limits';

export const MAX_DAYS = 90;
const DEFAULT_DAYS = 14;

/** `days`: whole days before today, 1 to 90 (14 when left out); nothing else is taken. */
export function parseTeamsUsageQuery(query: URLSearchParams): number {
  for (const key of query.keys()) if (key !== 'days') throw new RcError('bad_request', `${key.slice(0, 50)}: GET /api/usage/teams takes only days`);
  const text = query.get('days');
  if (text === null) return DEFAULT_DAYS;
  if (!/^\d{1,3}$/.test(text) || Number(text) < 1 || Number(text) > MAX_DAYS)
    throw new RcError('bad_request', `days: a whole number of days from 1 to ${MAX_DAYS}, such as 14, not ${JSON.stringify(text.slice(0, 50))}`);
  return Number(text);
}

export async function teamsUsage(sql: Sql, days: number, halfLifeS: number): Promise<TeamsUsage> {
  const [teams, members, limits, fair, daily] = await Promise.all([
    sql<{ name: string; share: number }[]>`select name, share from teams order by name`,
    sql<{ id: number; name: string; kind: 'client' | 'admin'; submitter: string | null; team: string }[]>`
      select id, name, kind, submitter, team from tokens where revoked_at is null and kind <> 'host' order by name, id`,
    listLimits(sql, null),
    tokenUse(sql, halfLifeS),
    dailyUse(sql, days),
  ]);
  const standings = teamStandings(fair, new Map(teams.map((t) => [t.name, t.share])));
  const out = await Promise.all(
    teams.map(async (t): Promise<TeamUse> => {
      const scope = { kind: 'team' as const, team: t.name };
      const own: LimitView = limits.find((l) => l.scope === `team:${t.name}`) ?? { scope: `team:${t.name}`, ...NO_LIMITS };
      const [gpus, queued, budget] = await Promise.all([
        gpusInUse(sql, scope),
        queuedNow(sql, scope),
        own.period === null ? null : budgetUse(sql, scope, own.period as Period),
      ]);
      const st = standings.get(t.name);
      return {
        name: t.name,
        share: t.share,
        members: members.filter((m) => m.team === t.name).map(({ team: _, ...m }) => m),
        limits: own,
        gpusInUse: gpus,
        queued,
        budget,
        fairShare: st
          ? { use: st.use, active: st.active, usePart: st.usePart, sharePart: st.sharePart, standing: st.standing }
          : { use: 0, active: false, usePart: 0, sharePart: 0, standing: 0 },
        daily: daily.days.map((day) => daily.byTeam.get(t.name)?.get(day) ?? { day, busyS: 0, idleS: 0 }),
      };
    }),
  );
  return { days, halfLifeS, teams: out };
}

/**
 * Device-seconds each team's leases held on each UTC day from `days` days ago
 * to today (running leases up to now), split at midnight; a lease's idle
 * seconds go to each day in the proportion of it that day, as server/usage.ts
 * counts a window. rc cp's short leases are left out.
 */
async function dailyUse(sql: Sql, days: number): Promise<{ days: string[]; byTeam: Map<string, Map<string, TeamDay>> }> {
  const span = sql`generate_series(((now() at time zone 'utc')::date - ${days}::int)::timestamp, (now() at time zone 'utc')::date::timestamp, interval '1 day') as day`;
  const [dayRows, rows] = await Promise.all([
    sql<{ day: string }[]>`select day::date::text as day from ${span} order by 1`,
    sql<{ team: string; day: string; inS: number; idleS: number }[]>`
      with d as (
        select day::date as day, day at time zone 'utc' as from_t, (day + interval '1 day') at time zone 'utc' as to_t from ${span}
      ), s as (
        select coalesce(t.team, 'default') as team, d.day,
          greatest(0, extract(epoch from least(coalesce(l.released_at, now()), d.to_t) - greatest(l.acquired_at, d.from_t)))::float8 as in_s,
          extract(epoch from coalesce(l.released_at, now()) - l.acquired_at)::float8 as full_s, l.idle_s, l.idle_seen_at is not null as signal
        from leases l join jobs j on j.id = l.job_id left join tokens t on t.id = j.token_id
          join d on l.acquired_at < d.to_t and coalesce(l.released_at, now()) > d.from_t
        where coalesce(l.released_at, now()) > (select min(from_t) from d) and j.kind <> 'cp'
      )
      select team, day::text as day, sum(in_s)::float8 as in_s,
        sum(case when signal and full_s > 0 then least(in_s, idle_s * in_s / full_s) else 0 end)::float8 as idle_s
      from s group by team, day`,
  ]);
  const byTeam = new Map<string, Map<string, TeamDay>>();
  for (const r of rows) {
    const team = byTeam.get(r.team) ?? new Map<string, TeamDay>();
    byTeam.set(r.team, team);
    team.set(r.day, { day: r.day, busyS: Math.max(0, r.inS - r.idleS), idleS: r.idleS });
  }
  return { days: dayRows.map((r) => r.day), byTeam };
}

// What the machines cost so far (GET /api/machines' `costs`; rc machines, the
// Machines page), in one statement over every machine ever launched: a job's
// part of a machine is its price × the time each of the job's attempts ran on
// the machine's host (ended attempts in job_attempts, the current one on jobs),
// cut to the machine's life; the rest of the machine's time is idle (booting,
// kept for the next job), the machine's own cost and no team's. A job's team is
// its token's team now, as usage by team charges it (no token: `default`).
// Sums keep full precision; views round to cents.
import type { CostView, MachineCosts } from '../../protocol/wire';
import type { Sql } from '../db';

/** How many of the dearest jobs the answer lists. */
export const DEAREST_JOBS = 20;

type Row = { kind: 'team' | 'job' | 'idle' | 'total'; key: string | null; name: string | null; team: string | null; cost: number; simulated: boolean };

export async function machineCosts(sql: Sql): Promise<MachineCosts> {
  const rows = await sql<Row[]>`
    with m as (
      select id, host_name, price_per_hour as price, simulated, created_at as t0, coalesce(terminated_at, now()) as t1 from machines
    ), runs as (
      -- Each run with its job's name and token, so the jobs are read once.
      select a.job_id, j.name, j.token_id, a.host_name, a.started_at, a.ended_at from job_attempts a join jobs j on j.id = a.job_id
        where a.started_at is not null and a.host_name in (select host_name from m)
      union all
      select j.id, j.name, j.token_id, j.host_name, j.started_at, coalesce(j.ended_at, now()) from m join jobs j on j.host_name = m.host_name
        where j.started_at is not null and j.kind <> 'cp'
    ), parts as (
      select r.job_id, r.name, r.token_id, m.id as machine_id, m.simulated,
        m.price * extract(epoch from least(r.ended_at, m.t1) - greatest(r.started_at, m.t0))::float8 / 3600 as cost
      from runs r join m on m.host_name = r.host_name and r.started_at < m.t1 and r.ended_at > m.t0
    ), per_job as (
      select p.job_id, p.name, coalesce(t.team, 'default') as team, sum(p.cost)::float8 as cost, bool_or(p.simulated) as simulated
      from parts p left join tokens t on t.id = p.token_id
      group by p.job_id, p.name, t.team
    ), busy as (
      select machine_id, sum(cost)::float8 as busy from parts group by machine_id
    ), per_machine as (
      select m.simulated, m.price * extract(epoch from m.t1 - m.t0)::float8 / 3600 as cost, coalesce(b.busy, 0) as busy
      from m left join busy b on b.machine_id = m.id
    )
    select 'team' as kind, team as key, null as name, team, sum(cost)::float8 as cost, bool_or(simulated) as simulated
      from per_job group by team
    union all
    (select 'job', job_id, name, team, cost, simulated from per_job order by cost desc, job_id limit ${DEAREST_JOBS})
    union all
    -- Two attempts on one machine at once (never on a provider machine, which runs one job) would count twice: never below 0.
    select 'idle', null, null, null, coalesce(sum(greatest(0, cost - busy)), 0)::float8,
      coalesce(bool_or(simulated and cost - busy > 0), false) from per_machine
    union all
    select 'total', null, null, null, coalesce(sum(cost), 0)::float8, coalesce(bool_or(simulated and cost > 0), false) from per_machine`;
  const view = (r: Row): CostView => ({ cost: r.cost, simulated: r.simulated });
  const byCost = (a: { cost: number }, b: { cost: number }) => b.cost - a.cost;
  return {
    byTeam: rows
      .filter((r) => r.kind === 'team')
      .map((r) => ({ team: r.key!, ...view(r) }))
      .sort((a, b) => byCost(a, b) || a.team.localeCompare(b.team)),
    byJob: rows
      .filter((r) => r.kind === 'job')
      .map((r) => ({ jobId: r.key!, name: r.name, team: r.team!, ...view(r) }))
      .sort((a, b) => byCost(a, b) || a.jobId.localeCompare(b.jobId)),
    idle: view(rows.find((r) => r.kind === 'idle')!),
    total: view(rows.find((r) => r.kind === 'total')!),
  };
}

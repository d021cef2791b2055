// GET /api/machines (rc machines, the Machines page): the machines rented from
// providers, each with its cost so far: its price × the hours from its
// creation (the provider may bill from the launch call) until it was
// terminated, or now. A simulated price says so.
import type { MachineView } from '../../protocol/wire';
import type { Sql } from '../db';

export async function listMachines(sql: Sql, all: boolean): Promise<MachineView[]> {
  return select(sql, sql`where ${all} or state <> 'terminated'`);
}

export async function machineView(sql: Sql, id: string): Promise<MachineView | null> {
  return (await select(sql, sql`where id = ${id}`))[0] ?? null;
}

async function select(sql: Sql, where: ReturnType<Sql>): Promise<MachineView[]> {
  const rows = await sql<
    (Omit<MachineView, 'createdAt' | 'terminatedAt' | 'idleUntil'> & { createdAt: Date; terminatedAt: Date | null; idleUntil: Date | null })[]
  >`
    select id, account, instance_name as "instanceName", host_name as "hostName", state,
      offer->>'gpuModel' as "gpuModel", coalesce((offer->>'gpuCount')::int, 0) as "gpuCount",
      price_per_hour as "pricePerHour", spot, simulated, created_at as "createdAt", terminated_at as "terminatedAt",
      terminated_why as "terminatedWhy", job_id as "jobId",
      -- Kept idle until then; once it is being deleted that time means nothing.
      case when state not in ('terminating', 'terminated') then idle_until end as "idleUntil",
      price_per_hour * extract(epoch from coalesce(terminated_at, now()) - created_at)::float8 / 3600 as "costSoFar"
    from machines
    ${where}
    order by created_at desc, id`;
  return rows.map((r) => ({
    ...r,
    costSoFar: Math.round(r.costSoFar * 10_000) / 10_000,
    createdAt: r.createdAt.toISOString(),
    terminatedAt: r.terminatedAt?.toISOString() ?? null,
    idleUntil: r.idleUntil?.toISOString() ?? null,
  }));
}

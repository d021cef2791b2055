// The provider machine a job's host is (rc describe <job>, the job's page): the
// machine whose worker joined as that host. Read for one job at a time only;
// lists of jobs leave it out.
import type { JobMachineView } from '../../protocol/wire';
import type { Sql } from '../db';

/** The machine whose host is `hostName`, as it is now; null for a joined (reserved) host or none. */
export async function machineRanOn(sql: Sql, hostName: string | null): Promise<JobMachineView | null> {
  if (hostName === null) return null;
  const [m] = await sql<JobMachineView[]>`
    select id, account, state, offer->>'gpuModel' as "gpuModel", coalesce((offer->>'gpuCount')::int, 0) as "gpuCount",
      price_per_hour as "pricePerHour", spot, simulated, terminated_why as "terminatedWhy"
    from machines where host_name = ${hostName}
    order by created_at desc limit 1`;
  return m ?? null;
}

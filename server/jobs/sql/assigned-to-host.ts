// Whether the job was ever assigned to the host under this fence (now, or in
// an earlier attempt): only then may that host's report about it count.
import type { Sql } from '../../db';

export async function assignedToHost(sql: Sql, jobId: string, fence: number, hostName: string): Promise<boolean> {
  const [mine] = await sql`
    select 1 from jobs where id = ${jobId} and fence = ${fence} and host_name = ${hostName}
    union all select 1 from job_attempts where job_id = ${jobId} and fence = ${fence} and host_name = ${hostName}`;
  return mine !== undefined;
}

// A copy the worker refused (no such file, a path outside the workspace):
// nothing was copied and nothing failed, so its short job leaves no trace
// (its lease goes with it: leases.job_id cascades).
import type { Sql } from '../../db';

export async function dropRefusedCopy(sql: Sql, jobId: string, fence: number): Promise<void> {
  await sql`delete from jobs where id = ${jobId} and fence = ${fence}`;
}

// The job's output passed the bound kept per job: replays then say that the rest was not stored.
import type { Sql } from '../../db';

export async function markOutputTruncated(sql: Sql, jobId: string): Promise<void> {
  await sql`update jobs set output_truncated = true where id = ${jobId}`;
}

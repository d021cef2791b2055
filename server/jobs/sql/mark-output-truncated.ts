// Part of the job's output is not stored: past the bound kept per job, or lost
// while the database could not store it. Replays then say so, and why. The
// first reason stays: output past the bound is not stored anyway.
import type { OutputTruncatedReason } from '../../../core/output-truncated';
import type { Sql } from '../../db';

export async function markOutputTruncated(sql: Sql, jobId: string, reason: OutputTruncatedReason): Promise<void> {
  await sql`
    update jobs set output_truncated = true, output_truncated_reason = coalesce(output_truncated_reason, ${reason})
    where id = ${jobId}`;
}

// Asks a running --preemptible job to stop for another job: only once (a job
// already being stopped is not chosen again). Null when it is not such a job now.
import type { Sql } from '../../db';

export async function stopForPreemption(sql: Sql, jobId: string, reason: string): Promise<{ hostName: string; fence: number } | null> {
  const [row] = await sql<{ hostName: string; fence: number }[]>`
    update jobs set kill_requested_by = ${reason}, kill_cause = 'preempted'
    where id = ${jobId} and state = 'running' and preemptible and kill_requested_by is null
    returning host_name, fence`;
  return row ?? null;
}

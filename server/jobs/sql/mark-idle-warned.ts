// A hold idle past RC_IDLE_HOLD_WARN is warned of once per idle streak (the
// streak that began at `idleFrom`). True for the one pass that marks it.
import type { Sql } from '../../db';

export async function markIdleWarned(sql: Sql, jobId: string, idleFrom: Date): Promise<boolean> {
  const [first] = await sql`update jobs set idle_warned_at = now()
    where id = ${jobId} and state = 'running' and (idle_warned_at is null or idle_warned_at < ${idleFrom.toISOString()}::timestamptz) returning id`;
  return first !== undefined;
}

// Holds the devices a preemption frees for the queued job it is made for,
// until `holdS` from now. One UPDATE: of two controllers' passes, one wins;
// a job that already has devices held for it gets no second preemption.
import type { Sql } from '../../db';

export async function holdForPreemption(sql: Sql, jobId: string, deviceIds: readonly number[], holdS: number): Promise<boolean> {
  const [won] = await sql`
    update jobs set preempt_devices = ${JSON.stringify(deviceIds)}::text::jsonb,
      preempt_until = now() + make_interval(secs => ${holdS})
    where id = ${jobId} and state = 'queued' and (preempt_until is null or preempt_until <= now())
    returning id`;
  return won !== undefined;
}

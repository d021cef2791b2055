// Until when queued jobs wait at the latest (core/until.ts has the rule): the
// fleet as the caller has it, and one query for the bounds of the jobs that
// hold its busy devices, however many jobs are asked about.
import type { QueuedJob } from '../core/schedule';
import { holdersToBound, type UntilDevice, untilOf } from '../core/until';
import type { Sql } from './db';
import { freesByOf } from './jobs/sql/frees-by';

/** Each job's bound as an ISO time, by id; null: no bound is known. */
export async function freesByOfJobs(
  sql: Sql,
  queued: readonly QueuedJob[],
  fleet: readonly UntilDevice[],
  now = Date.now(),
): Promise<Map<string, string | null>> {
  if (!queued.length) return new Map();
  const bounds = await freesByOf(sql, holdersToBound(fleet));
  const out = new Map<string, string | null>();
  for (const [id, t] of untilOf(queued, fleet, bounds, now)) out.set(id, t === null ? null : new Date(t).toISOString());
  return out;
}

// Ends the wait of queued jobs waiting on `kind` (their dependencies met, their
// --retry-delay over): they may start. A task of an array with a --array %N
// cap goes on to wait for a place under it (waits 'array'): only
// releaseArraySlots (server/jobs/array-slots.ts) lets it past the cap.
import type { Sql } from '../../db';

export interface Released {
  id: string;
  /** Set when it now waits for its array's cap. */
  arrayId: string | null;
  waits: 'array' | null;
}

/** `ids`: those jobs (dependencies); null: every `retry` wait whose not_before has come. */
export function releaseWaits(sql: Sql, kind: 'after' | 'retry', ids: readonly string[] | null): Promise<Released[]> {
  return sql<Released[]>`
    update jobs j set
      waits = case when j.array_id is not null and exists (select 1 from job_arrays a where a.id = j.array_id and a.max_running is not null) then 'array' end,
      not_before = null
    where j.state = 'queued' and j.waits = ${kind}
      ${ids !== null ? sql`and j.id = any(${ids as string[]}::text[])` : sql`and j.not_before <= now()`}
    returning j.id, j.array_id, j.waits`;
}

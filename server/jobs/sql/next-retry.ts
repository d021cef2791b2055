// When the next --retry-delay wait is over (milliseconds from now; null: none waits), so the sweep wakes then.
import type { Sql } from '../../db';

export async function nextRetryMs(sql: Sql): Promise<number | null> {
  const [row] = await sql<{ ms: number | null }[]>`
    select (extract(epoch from min(not_before) - now()) * 1000)::float8 as ms from jobs where state = 'queued' and waits = 'retry'`;
  return row?.ms ?? null;
}

// When each of these running jobs frees its devices at the latest (core/until.ts):
// its start + --max-runtime, or a hold's expiry (extend moves it), whichever
// comes first; null without either (least() skips nulls). What the watchdogs enforce.
import type { Sql } from '../../db';

export async function freesByOf(sql: Sql, jobIds: readonly string[]): Promise<Map<string, number | null>> {
  if (!jobIds.length) return new Map();
  const rows = await sql<{ id: string; freesBy: Date | null }[]>`
    select id, least(expires_at, started_at + make_interval(secs => max_runtime_s)) as frees_by
    from jobs where id = any(${jobIds as string[]}::text[]) and state = 'running'`;
  return new Map(rows.map((r) => [r.id, r.freesBy?.getTime() ?? null]));
}

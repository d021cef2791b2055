// Devices the jobs, terminals and holds of each of `tokenIds` lease now (rc
// cp's short leases aside): what their --gpus limits count (core/quota.ts).
import type { Sql } from '../../db';

export async function gpusHeld(sql: Sql, tokenIds: readonly number[]): Promise<Map<number, number>> {
  if (!tokenIds.length) return new Map();
  const rows = await sql<{ tokenId: number; n: number }[]>`
    select j.token_id, count(*)::int as n from leases l join jobs j on j.id = l.job_id
    where l.released_at is null and j.kind <> 'cp' and j.token_id = any(${tokenIds as number[]}::bigint[])
    group by j.token_id`;
  return new Map(rows.map((r) => [r.tokenId, r.n]));
}

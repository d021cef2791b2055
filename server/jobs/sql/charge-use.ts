// Fair share's bookkeeping (core/fair-share.ts): ended leases not charged yet
// are added to their tokens' decayed use in token_use, and marked charged, in
// one statement. Until then a lease is read from leases itself (token-use.ts):
// one snapshot sees a lease in exactly one of the two places. Two controllers
// charging at once take different leases (SKIP LOCKED), and lock token_use's
// rows in key order, so they neither count a lease twice nor deadlock.
import type { Sql } from '../../db';

/** Leases charged per statement: a long history (the leases before fair share existed) goes in several. */
export const CHARGE_BATCH = 20_000;

/** Charges up to CHARGE_BATCH ended leases; how many it charged. */
export async function chargeUse(sql: Sql, halfLifeS: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    with picked as (
      select id from leases where not charged and released_at is not null limit ${CHARGE_BATCH} for update skip locked
    ), marked as (
      update leases l set charged = true from picked where l.id = picked.id returning l.job_id, l.acquired_at, l.released_at
    ), sums as (
      -- A copy's short lease (rc cp) is not use, as in rc usage.
      select coalesce(j.token_id, 0) as key,
        sum(greatest(0, date_part('epoch', m.released_at - m.acquired_at))
          * power(2, -extract(epoch from now() - m.released_at)::float8 / ${halfLifeS}::float8)) as use
      from marked m join jobs j on j.id = m.job_id where j.kind <> 'cp' group by 1
    ), added as (
      insert into token_use (token_key, use_s, at) select key, use, now() from sums order by key
      on conflict (token_key) do update set
        use_s = token_use.use_s * power(2, -extract(epoch from greatest(token_use.at, excluded.at) - token_use.at)::float8 / ${halfLifeS}::float8)
          + excluded.use_s * power(2, -extract(epoch from greatest(token_use.at, excluded.at) - excluded.at)::float8 / ${halfLifeS}::float8),
        at = greatest(token_use.at, excluded.at)
      returning 1
    )
    select (select count(*) from marked)::int as n`;
  return row!.n;
}

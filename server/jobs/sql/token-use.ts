// What fair share weighs (core/fair-share.ts), in one statement: each token
// (and each key with use or jobs queued: 0, jobs with no token), with its team, the team's share, its decayed
// use at `at` (token_use's charged part decayed by its timestamp, plus the
// leases not charged yet: the running ones' seconds so far in full, the ended
// ones' decayed from their end), and whether it has jobs queued. The tokens
// with jobs queued come from the queue's token index, one probe each.
import type { Sql } from '../../db';

export interface TokenUseRow {
  key: number;
  team: string;
  share: number;
  use: number;
  queued: boolean;
  /** Its ended leases not charged yet (charge-use.ts adds them to token_use). */
  uncharged: number;
}

/** `at`: the time use is read at (null: the database's now). */
export function tokenUse(sql: Sql, halfLifeS: number, at: Date | null = null): Promise<TokenUseRow[]> {
  return sql<TokenUseRow[]>`
    with recursive t as (select coalesce(${at?.toISOString() ?? null}::timestamptz, now()) as at),
    queued(key) as (
      (select coalesce(token_id, 0) from jobs where state = 'queued' and waits is null order by coalesce(token_id, 0) limit 1)
      union all
      select (select coalesce(token_id, 0) from jobs where state = 'queued' and waits is null and coalesce(token_id, 0) > queued.key order by coalesce(token_id, 0) limit 1)
      from queued where queued.key is not null
    ), charged as (
      select token_key as key, use_s * power(2, -date_part('epoch', t.at - token_use.at) / ${halfLifeS}::float8) as use from token_use, t
    ), open as (
      select coalesce(j.token_id, 0) as key,
        sum(case when l.released_at is null then greatest(0, date_part('epoch', t.at - l.acquired_at))
          else greatest(0, date_part('epoch', l.released_at - l.acquired_at))
            * power(2, -date_part('epoch', t.at - l.released_at) / ${halfLifeS}::float8) end) filter (where j.kind <> 'cp') as use,
        count(*) filter (where l.released_at is not null)::int as uncharged
      from leases l join jobs j on j.id = l.job_id, t where not l.charged group by 1
    ), keys as (
      select key from queued where key is not null union select key from charged union select key from open union select id from tokens
    )
    select k.key, coalesce(tk.team, 'default') as team, coalesce(tm.share, 1)::float8 as share,
      coalesce(c.use, 0) + coalesce(o.use, 0) as use, exists (select 1 from queued q where q.key = k.key) as queued,
      coalesce(o.uncharged, 0) as uncharged
    from keys k left join charged c on c.key = k.key left join open o on o.key = k.key
      left join tokens tk on tk.id = k.key left join teams tm on tm.name = coalesce(tk.team, 'default')`;
}

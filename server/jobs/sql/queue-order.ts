// The queue order in SQL, written once: core/schedule.ts queueOrder says the
// same (higher priority first; within a priority, the jobs of tokens further
// below their fair share first; then jobs queued again first, in the order
// they were queued again; then submission order). The scheduling pass, GET
// /api/queue, rc ps's positions and the jobs_queue_order_idx index follow it;
// test/integration/rules-agree.test.ts and fair-share.test.ts check that this
// and core agree on generated queues, and that the index has this order.
import { unrankedRank } from '../../../core/fair-share';
import type { Sql } from '../../db';

/** The ORDER BY list of the queue with every token standing equal, as the index jobs_queue_order_idx is built. */
export const QUEUE_ORDER_COLUMNS = 'priority desc, requeued_at nulls last, seq';

/** The queue order as a fragment of a statement (`order by ${queueOrder(sql)}`), every token standing equal. */
export function queueOrder(sql: Pick<Sql, 'unsafe'>) {
  return sql.unsafe(QUEUE_ORDER_COLUMNS);
}

/** The fair order of rows that carry `fair_rank` (fairQueued's). */
export const FAIR_ORDER_COLUMNS = 'priority desc, fair_rank, requeued_at nulls last, seq';

/** Tokens' fair-share ranks (core/fair-share.ts fairRanks) by token key (tokens.id; 0 for jobs with no token). */
export type FairRanks = ReadonlyMap<number, number>;

/**
 * The first `limit` queued jobs in fair order, as a subquery to alias
 * (`from ${fairQueued(sql, ranks, n)} as jobs`): every column of jobs, and
 * `fair_rank`. Not one sort of the whole queue: for each priority (highest
 * first) and each rank (first first), that rank's tokens' jobs come in the
 * queue's order from an index (one token: jobs_queue_token_idx; several:
 * jobs_queue_order_idx, the others skipped), and the walk stops once it has
 * `limit`. Tokens not ranked (their first job came after the ranks were
 * read) go last, until the next read. Sort the outer query by FAIR_ORDER_COLUMNS.
 */
export function fairQueued(sql: Sql, ranks: FairRanks, limit: number, skip: readonly number[] = []) {
  // Tokens whose --gpus limit is reached (core/quota.ts exhausted): none of their jobs could start, so none fills the head.
  const skipped = skip.length ? sql`and coalesce(token_id, 0) <> all(${skip as number[]}::bigint[])` : sql``;
  const keys = [...ranks.keys()];
  const rankList = keys.map((k) => ranks.get(k)!);
  return sql`(
    with recursive prio(p) as (
      (select priority from jobs where state = 'queued' and waits is null order by priority desc limit 1)
      union all
      select (select priority from jobs where state = 'queued' and waits is null and priority < prio.p order by priority desc limit 1) from prio where prio.p is not null
    ), grp(rank, keys) as (
      select rank, array_agg(key) from unnest(${keys}::bigint[], ${rankList}::int[]) as r(key, rank) group by rank
      union all select ${unrankedRank(ranks)}::int, null::bigint[]
    )
    select h.*, walk.rank as fair_rank from (
      -- In the order they are walked: the join keeps it, so the sort below takes one rank's jobs at a time and stops at the limit.
      select prio.p, grp.rank, grp.keys, coalesce(cardinality(grp.keys), 0) as n from prio, grp where prio.p is not null order by prio.p desc, grp.rank
    ) walk cross join lateral (
      (select * from jobs where walk.n = 1 and state = 'queued' and waits is null and not cloud_only and coalesce(token_id, 0) = walk.keys[1] and priority = walk.p ${skipped}
        order by requeued_at nulls last, seq limit ${limit})
      union all
      (select * from jobs where walk.n > 1 and state = 'queued' and waits is null and not cloud_only and priority = walk.p and coalesce(token_id, 0) + 0 = any(walk.keys) ${skipped}
        order by requeued_at nulls last, seq limit ${limit})
      union all
      (select * from jobs where walk.n = 0 and state = 'queued' and waits is null and not cloud_only and priority = walk.p and coalesce(token_id, 0) + 0 <> all(${keys}::bigint[]) ${skipped}
        order by requeued_at nulls last, seq limit ${limit})
    ) h
    order by walk.p desc, walk.rank, h.requeued_at nulls last, h.seq limit ${limit})`;
}

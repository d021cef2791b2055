// The queue order in SQL, written once: core/schedule.ts queueOrder says the
// same (higher priority first; within a priority, jobs queued again first, in
// the order they were queued again; then submission order). The scheduling
// pass, GET /api/queue, rc ps's positions and the jobs_queue_order_idx index
// follow it; test/integration/rules-agree.test.ts checks that this and core agree
// on generated queues, and that the index has this order.
import type { Sql } from '../../db';

/** The ORDER BY list of the queue, as the index jobs_queue_order_idx is built. */
export const QUEUE_ORDER_COLUMNS = 'priority desc, requeued_at nulls last, seq';

/** The queue order as a fragment of a statement (`order by ${queueOrder(sql)}`). */
export function queueOrder(sql: Pick<Sql, 'unsafe'>) {
  return sql.unsafe(QUEUE_ORDER_COLUMNS);
}

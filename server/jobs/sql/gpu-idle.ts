// The idle rule in SQL, written once: core/idle.ts gpuIdle says the same (at
// most IDLE_UTIL_PCT utilisation and no compute process; either unknown: no
// signal, null). test/integration/rules-agree.test.ts checks that they agree on
// generated samples.
import type { PendingQuery, Row } from 'postgres';
import { IDLE_UTIL_PCT } from '../../../core/idle';
import type { Sql } from '../../db';

/** true: idle; false: busy; null: no signal. `util` and `procs` are SQL expressions of a sample. */
export function gpuIdleSql(sql: Sql, util: PendingQuery<Row[]>, procs: PendingQuery<Row[]>) {
  return sql`(case when ${util} is null or ${procs} is null then null else ${util} <= ${IDLE_UTIL_PCT} and ${procs} = 0 end)`;
}

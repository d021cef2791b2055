// An idle hold past RC_IDLE_HOLD_RELEASE: the stop is asked and audited in one
// statement; only the first pass to ask writes the audit row.
import type { Sql } from '../../db';

export async function releaseIdleHold(sql: Sql, jobId: string, reason: string, idle: string, release: string): Promise<void> {
  await sql`
    with u as (
      update jobs set kill_requested_by = ${reason}, kill_cause = 'idle_hold'
      where id = ${jobId} and state = 'running' and kill_requested_by is null returning id, submitter
    )
    insert into audit (actor, action, target, detail)
    select 'controller', 'hold.idle_release', u.id, jsonb_build_object('owner', u.submitter, 'idle', ${idle}::text, 'release', ${release}::text)
    from u`;
}

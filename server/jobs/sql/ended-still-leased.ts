// Leases on a host's devices held by assignments that are over (the job ended,
// or runs again under another fence): what a host that comes back must stop.
// By the lease's own fence: an earlier attempt of a job that runs again
// elsewhere (a restart) is over too.
import type { Sql } from '../../db';

export function endedStillLeased(sql: Sql, hostName: string): Promise<{ id: string; fence: number; reason: string | null }[]> {
  return sql<{ id: string; fence: number; reason: string | null }[]>`
    select distinct j.id, l.fence, coalesce(j.reason, 'its attempt ' || coalesce(a.attempt::text, '?') || ' was ' || coalesce(a.state, 'ended')) as reason
    from leases l join jobs j on j.id = l.job_id join devices d on d.id = l.device_id
      left join job_attempts a on a.job_id = j.id and a.fence = l.fence
    where l.released_at is null and d.host_name = ${hostName} and l.fence is not null
      and (j.state not in ('queued', 'running') or l.fence is distinct from j.fence)`;
}

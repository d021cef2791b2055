// The leased devices' idle streaks, kept by each heartbeat: a fragment of the
// heartbeat's one statement (server/heartbeat.ts), over its CTE `lk` of the
// leases it locked with their device's sample (id, util, procs). Idle by the
// one rule (gpu-idle.ts, core/idle.ts): an idle streak grows by the time since
// the last sample, a busy sample ends it, and no signal leaves nothing seen.
import type { Sql } from '../../db';
import { gpuIdleSql } from './gpu-idle';

export function leaseIdleStreaks(sql: Sql) {
  const idle = gpuIdleSql(sql, sql`lk.util`, sql`lk.procs`);
  return sql`
    update leases l set
      idle_s = l.idle_s + case when ${idle} is true and l.idle_since is not null
        then greatest(0, extract(epoch from now() - l.idle_seen_at)) else 0 end,
      idle_since = case when ${idle} is true then coalesce(l.idle_since, now()) end,
      idle_seen_at = case when ${idle} is not null then now() end
    from lk where l.id = lk.id`;
}

// Jobs' GPU idleness as the views show it, from their leases' idle streaks
// (kept by each heartbeat, server/heartbeat.ts; the rule is core/idle.ts).
import { jobIdleSeconds } from '../../core/idle';
import type { JobView } from '../../protocol/wire';
import type { Sql } from '../db';

export interface JobIdle {
  /** The current idle streak in seconds (running jobs); null: no GPU signal. */
  idleS: number | null;
  /** Idle seconds in all, over its leases; null when none of them ever had a GPU signal. */
  idleTotalS: number | null;
  /** A hold warned of (RC_IDLE_HOLD_WARN) in its current idle streak. */
  idleWarned: boolean;
}

/** The idleness of these jobs (one query), by id; a job without leases is absent. */
export async function loadIdle(sql: Sql, ids: readonly string[]): Promise<Map<string, JobIdle>> {
  if (!ids.length) return new Map();
  const rows = await sql<{ jobId: string; streaks: (number | null)[] | null; total: number; signal: boolean; warned: boolean | null }[]>`
    select l.job_id,
      json_agg(case when l.idle_seen_at is null then null when l.idle_since is null then 0
        else extract(epoch from now() - l.idle_since)::float8 end) filter (where l.released_at is null) as streaks,
      sum(l.idle_s)::float8 as total, bool_or(l.idle_seen_at is not null) as signal,
      bool_and(l.idle_since is not null and j.idle_warned_at >= l.idle_since) filter (where l.released_at is null) as warned
    from leases l join jobs j on j.id = l.job_id
    where l.job_id = any(${ids as string[]}::text[])
    group by l.job_id`;
  return new Map(rows.map((r) => [r.jobId, { idleS: jobIdleSeconds(r.streaks ?? []), idleTotalS: r.signal ? r.total : null, idleWarned: r.warned === true }]));
}

/** The views with their idleness filled in (running jobs' streaks; every job's total). */
export async function withIdle<V extends JobView>(sql: Sql, views: V[]): Promise<V[]> {
  const idle = await loadIdle(
    sql,
    views.filter((v) => v.startedAt !== null).map((v) => v.id),
  );
  return views.map((v) => {
    const i = idle.get(v.id);
    if (!i) return v;
    return { ...v, idleS: v.state === 'running' ? i.idleS : null, idleTotalS: i.idleTotalS, idleWarned: v.state === 'running' && i.idleWarned };
  });
}

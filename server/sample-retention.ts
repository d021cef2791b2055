// How long GPU samples are kept, and the pass that keeps it so (every 10
// minutes, server/controller.ts). Raw samples (gpu_samples, one per device per
// heartbeat) serve the charts of the last day; older ones are thinned to one
// row per device and 10 minutes (gpu_samples_coarse), kept for 90 days, for
// the week and 90-day charts. Usage accounting reads the leases, never these.
import type { Sql } from './db';

export interface SampleRetention {
  /** Raw samples older than this many days are rolled up into coarse rows. */
  rawDays: number;
  /** Coarse rows older than this many days are deleted. */
  coarseDays: number;
}

/** The defaults of RC_SAMPLES_RAW_DAYS and RC_SAMPLES_COARSE_DAYS. */
export const SAMPLE_RETENTION: SampleRetention = { rawDays: 1, coarseDays: 90 };

/** A coarse row's span: 10 minutes, aligned to the epoch (so hours and days hold whole buckets). */
export const COARSE_BUCKET_S = 600;

/** The advisory lock of a prune: one controller prunes at a time (db.ts's migrations hold 7431001). */
export const PRUNE_LOCK = 7431002;

/** Per roll-up statement: this many devices, and at most this span of each one's backlog, so a statement stays small whatever the fleet or the backlog. */
const ROLL_BATCH = { devices: 200, spanS: 3600 };
/** Coarse rows deleted per statement. */
const DROP_BATCH = 10_000;

export interface PruneResult {
  /** Raw samples rolled up (and deleted). */
  rolled: number;
  /** Coarse rows past their retention, deleted. */
  coarseDropped: number;
}

/**
 * Thins the sample history: raw samples past `keep.rawDays` into coarse rows,
 * coarse rows past `keep.coarseDays` deleted. Null when another controller is
 * pruning (it holds PRUNE_LOCK): the work would be the same, done twice.
 */
export async function pruneGpuSamples(sql: Sql, keep: SampleRetention = SAMPLE_RETENTION): Promise<PruneResult | null> {
  const conn = await sql.reserve();
  try {
    const [lock] = await conn<{ got: boolean }[]>`select pg_try_advisory_lock(${PRUNE_LOCK}) as got`;
    if (!lock?.got) return null;
    try {
      const rolled = await rollUpSamples(conn, keep.rawDays);
      const coarseDropped = await dropCoarseSamples(conn, keep.coarseDays);
      return { rolled, coarseDropped };
    } finally {
      await conn`select pg_advisory_unlock(${PRUNE_LOCK})`.catch(() => {});
    }
  } finally {
    conn.release();
  }
}

interface DeviceKey {
  hostName: string;
  deviceIndex: number;
}

/**
 * Rolls raw samples older than `rawDays` into gpu_samples_coarse and deletes
 * them; the number rolled. Only whole buckets: the cut is a bucket boundary,
 * so a bucket is rolled when all of it is past the retention.
 *
 * Safe to run anywhere at once (the lock only saves doing the work twice): each
 * statement deletes the raw rows it rolls and adds them into their buckets
 * (upsert: sums and counts added, peaks kept), so a raw row is counted by the
 * one statement whose delete took it, and a bucket rolled in several goes adds up.
 */
export async function rollUpSamples(sql: Sql, rawDays: number, limits = ROLL_BATCH): Promise<number> {
  const [row] = await sql<{ cut: Date }[]>`
    select to_timestamp(floor(extract(epoch from now() - make_interval(days => ${rawDays}::int)) / ${COARSE_BUCKET_S}::int)
      * ${COARSE_BUCKET_S}::int) as cut`;
  // As text: this client's timestamps are parsed into Dates, not written from them (watchdogs.ts does the same).
  const cut = row!.cut.toISOString();
  let after: DeviceKey = { hostName: '', deviceIndex: -1 };
  let rolled = 0;
  for (;;) {
    // The next devices that have raw samples, in index order: one index probe each (a loose index scan),
    // whether or not the device is still registered (a removed host's samples age out too).
    const keys = await sql<DeviceKey[]>`
      with recursive k as (
        (select host_name, device_index from gpu_samples
          where (host_name, device_index) > (${after.hostName}::text, ${after.deviceIndex}::int)
          order by host_name, device_index limit 1)
        union all
        select n.host_name, n.device_index from k cross join lateral (
          select g.host_name, g.device_index from gpu_samples g
          where (g.host_name, g.device_index) > (k.host_name, k.device_index)
          order by g.host_name, g.device_index limit 1) n
      )
      select host_name, device_index from k limit ${limits.devices}`;
    for (;;) {
      const step = await rollUpBatch(sql, keys, cut, limits.spanS);
      rolled += step.rolled;
      if (!step.more) break;
    }
    if (keys.length < limits.devices) return rolled;
    after = keys[keys.length - 1]!;
  }
}

/** One statement: these devices' raw samples before `cut`, at most `spanS` of each (whole buckets); `more` when some are left. */
async function rollUpBatch(sql: Sql, keys: DeviceKey[], cut: string, spanS: number): Promise<{ rolled: number; more: boolean }> {
  if (!keys.length) return { rolled: 0, more: false };
  const b = COARSE_BUCKET_S;
  const [r] = await sql<{ rolled: number; more: boolean }[]>`
    with k as (
      select * from unnest(${keys.map((k) => k.hostName)}::text[], ${keys.map((k) => k.deviceIndex)}::int[]) as k(host_name, device_index)
    ), w as (
      -- Each device's oldest raw sample before the cut, and where this statement stops: a bucket boundary.
      select k.host_name, k.device_index,
        least(${cut}::timestamptz, to_timestamp(floor(extract(epoch from f.at) / ${b}::int) * ${b}::int + ${spanS}::int)) as upto
      from k cross join lateral (
        select g.at from gpu_samples g
        where g.host_name = k.host_name and g.device_index = k.device_index and g.at < ${cut}::timestamptz
        order by g.at limit 1) f
    ), gone as (
      delete from gpu_samples g using w
      where g.host_name = w.host_name and g.device_index = w.device_index and g.at < w.upto
      returning g.host_name, g.device_index, g.at, g.util_pct, g.mem_used_mib, g.mem_total_mib
    ), buckets as (
      select host_name, device_index, to_timestamp(floor(extract(epoch from at) / ${b}::int) * ${b}::int) as at,
        coalesce(sum(util_pct), 0) as util_sum, count(util_pct) as util_samples,
        max(mem_used_mib) as mem_used_mib, max(mem_total_mib) as mem_total_mib, count(*) as samples
      from gone group by 1, 2, 3
    ), up as (
      insert into gpu_samples_coarse as c (host_name, device_index, at, util_sum, util_samples, mem_used_mib, mem_total_mib, samples)
      select * from buckets
      on conflict (host_name, device_index, at) do update set
        util_sum = c.util_sum + excluded.util_sum,
        util_samples = c.util_samples + excluded.util_samples,
        mem_used_mib = greatest(c.mem_used_mib, excluded.mem_used_mib),
        mem_total_mib = greatest(c.mem_total_mib, excluded.mem_total_mib),
        samples = c.samples + excluded.samples
    )
    select (select count(*) from gone)::int as rolled, exists (select 1 from w where upto < ${cut}::timestamptz) as more`;
  return r!;
}

/** Deletes coarse rows older than `coarseDays`, a batch per statement (by gpu_samples_coarse_at_idx); the number deleted. */
export async function dropCoarseSamples(sql: Sql, coarseDays: number): Promise<number> {
  let dropped = 0;
  for (;;) {
    const gone = await sql`
      delete from gpu_samples_coarse where ctid = any(array(
        select ctid from gpu_samples_coarse where at < now() - make_interval(days => ${coarseDays}::int) limit ${DROP_BATCH}))`;
    dropped += gone.count;
    if (gone.count < DROP_BATCH) return dropped;
  }
}

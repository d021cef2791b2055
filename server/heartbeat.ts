// A worker's heartbeat: the host is alive, and here is how its GPUs look.
// One statement, so a heartbeat costs one round trip whatever the GPU count.
import { leaseIdleStreaks } from './jobs/sql/lease-idle-streaks';
import type { GpuSample } from '../protocol/worker';
import type { Sql } from './db';

/** Heartbeats that arrive together are stored together: at most this long a wait. */
export const BATCH_MS = 10;
/** And at most this many in one statement. */
const BATCH_MAX = 1000;
/** Batches stored at once: while one commits, the next is written. */
const MAX_IN_FLIGHT = 2;

interface Beat {
  host: string;
  gpus: GpuSample[];
  done: (cameBack: boolean) => void;
  fail: (err: unknown) => void;
}

/**
 * Stores heartbeats. Those that arrive within BATCH_MS of each other go in
 * one statement (a fleet of thousands heartbeats hundreds of times a
 * second: one round trip each would be most of the database's work), one
 * batch at a time; the next gathers while one is stored.
 */
export class HeartbeatWriter {
  private queue: Beat[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** Batches being stored (at most MAX_IN_FLIGHT: a host is in one of them at most, it beats seconds apart). */
  private writing = 0;

  /** `sql`: best a pool whose commits do not wait for the disk (a heartbeat lost in a crash is sent again in seconds). */
  constructor(private readonly sql: Sql) {}

  /** Stores a heartbeat; resolves true when the host was not online before it (it came back: its devices may be scheduled again). */
  store(host: string, gpus: GpuSample[]): Promise<boolean> {
    return new Promise((done, fail) => {
      this.queue.push({ host, gpus, done, fail });
      if (this.queue.length >= BATCH_MAX) this.flushSoon(0);
      else this.flushSoon(BATCH_MS);
    });
  }

  private flushSoon(ms: number): void {
    if (this.writing >= MAX_IN_FLIGHT) return; // a write that ends flushes again
    if (this.timer && ms > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.writing += 1;
      void this.flush().finally(() => {
        this.writing -= 1;
        if (this.queue.length) this.flushSoon(this.queue.length >= BATCH_MAX ? 0 : BATCH_MS);
      });
    }, ms);
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, BATCH_MAX);
    // A host twice in one batch: its latest beat is stored, both are answered by it.
    const last = new Map<string, Beat>();
    for (const b of batch) last.set(b.host, b);
    try {
      const was = await storeHeartbeats(this.sql, [...last.values()]);
      for (const b of batch) b.done(was.has(b.host) && was.get(b.host) !== 'online');
    } catch (err) {
      for (const b of batch) b.fail(err);
    }
  }
}

/** Stores heartbeats of many hosts in one statement: each host online and seen now, its devices' latest samples, the samples' history. The status each host had before, by name (a host unknown is absent). */
export async function storeHeartbeats(sql: Sql, beats: readonly { host: string; gpus: GpuSample[] }[]): Promise<Map<string, string>> {
  const hosts = beats.map((b) => b.host);
  const gpus = beats.map((b) => JSON.stringify(b.gpus));
  const rows = await sql<{ name: string; was: string }[]>`
    with b as (
      select * from unnest(${hosts}::text[], ${gpus}::text[]) as b(host, gpus)
    ), old as (
      -- In name order: two batches (or the reaper) locking hosts never wait on each other in a circle.
      -- The hosts again as a condition on each table (here and in d): the planner cannot count what unnest gives, and
      -- with the join alone it read every host and device (10,000 devices: 20 of a beat's 30 ms).
      select h.name, h.status from hosts h join b on h.name = b.host where h.name = any(${hosts}::text[]) order by h.name for update of h
    ), h as (
      update hosts set last_seen_at = now(), status = 'online' from old
      where hosts.name = any(${hosts}::text[]) and hosts.name = old.name returning old.name, old.status as was
    ), s as (
      select b.host, x.* from b, jsonb_to_recordset(b.gpus::jsonb)
        as x("index" int, "name" text, "memTotalMiB" float8, "memUsedMiB" float8, "utilPct" float8, "procs" int)
    ), d as (
      update devices set sampled_at = now(),
        gpu_sample = jsonb_build_object('name', s.name, 'memTotalMiB', s."memTotalMiB", 'memUsedMiB', s."memUsedMiB", 'utilPct', s."utilPct", 'procs', s.procs)
      from s where devices.host_name = any(${hosts}::text[]) and devices.host_name = s.host and devices.index = s.index
      returning devices.id, s."utilPct" as util, s.procs
    ), lk as (
      -- A lease locked elsewhere is being ended or released: skipped, never waited for (a beat that waited could close a
      -- circle with a batch of ends). Its streak loses nothing: the next beat adds the time since idle_seen_at.
      select l.id, d.util, d.procs from leases l join d on l.device_id = d.id where l.released_at is null for update of l skip locked
    ), i as (
      -- The leased devices' idle streaks (server/jobs/sql/lease-idle-streaks.ts).
      ${leaseIdleStreaks(sql)}
    ), g as (
      insert into gpu_samples (host_name, device_index, mem_used_mib, mem_total_mib, util_pct)
      select s.host, s.index, round(s."memUsedMiB"), round(s."memTotalMiB"), round(s."utilPct") from s
    )
    select name, was from h`;
  return new Map(rows.map((r) => [r.name, r.was]));
}

// A worker's heartbeat: the host is alive, and here is how its GPUs look.
// One statement, so a heartbeat costs one round trip whatever the GPU count.
import type { GpuSample } from '../protocol/worker';
import type { Sql } from './db';

/** Stores a heartbeat; true when the host was not online before it (it came back: its devices may be scheduled again). */
export async function storeHeartbeat(sql: Sql, hostName: string, gpus: GpuSample[]): Promise<boolean> {
  if (!gpus.length) {
    const rows = await sql<{ was: string }[]>`
      with old as (select name, status from hosts where name = ${hostName} for update)
      update hosts set last_seen_at = now(), status = 'online' from old where hosts.name = old.name returning old.status as was`;
    return rows.length > 0 && rows[0]!.was !== 'online';
  }
  const rows = await sql<{ was: string }[]>`
    with old as (
      select name, status from hosts where name = ${hostName} for update
    ), h as (
      update hosts set last_seen_at = now(), status = 'online' from old where hosts.name = old.name returning old.status as was
    ), s as (
      select * from jsonb_to_recordset(${JSON.stringify(gpus)}::text::jsonb)
        as x("index" int, "name" text, "memTotalMiB" float8, "memUsedMiB" float8, "utilPct" float8)
    ), d as (
      update devices set sampled_at = now(),
        gpu_sample = jsonb_build_object('name', s.name, 'memTotalMiB', s."memTotalMiB", 'memUsedMiB', s."memUsedMiB", 'utilPct', s."utilPct")
      from s where devices.host_name = ${hostName} and devices.index = s.index
    ), g as (
      insert into gpu_samples (host_name, device_index, mem_used_mib, mem_total_mib, util_pct)
      select ${hostName}, s.index, round(s."memUsedMiB"), round(s."memTotalMiB"), round(s."utilPct") from s
    )
    select was from h`;
  return rows.length > 0 && rows[0]!.was !== 'online';
}

/** Samples older than a day go: they are for charts of the recent past, not an archive. */
export async function pruneGpuSamples(sql: Sql): Promise<void> {
  await sql`delete from gpu_samples where at < now() - interval '1 day'`;
}

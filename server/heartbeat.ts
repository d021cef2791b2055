// A worker's heartbeat: the host is alive, and here is how its GPUs look.
// One statement, so a heartbeat costs one round trip whatever the GPU count.
import type { GpuSample } from '../protocol/worker';
import type { Sql } from './db';

export async function storeHeartbeat(sql: Sql, hostName: string, gpus: GpuSample[]): Promise<void> {
  if (!gpus.length) {
    await sql`update hosts set last_seen_at = now(), status = 'online' where name = ${hostName}`;
    return;
  }
  await sql`
    with h as (
      update hosts set last_seen_at = now(), status = 'online' where name = ${hostName}
    ), s as (
      select * from jsonb_to_recordset(${JSON.stringify(gpus)}::text::jsonb)
        as x("index" int, "name" text, "memTotalMiB" float8, "memUsedMiB" float8, "utilPct" float8)
    ), d as (
      update devices set sampled_at = now(),
        gpu_sample = jsonb_build_object('name', s.name, 'memTotalMiB', s."memTotalMiB", 'memUsedMiB', s."memUsedMiB", 'utilPct', s."utilPct")
      from s where devices.host_name = ${hostName} and devices.index = s.index
    )
    insert into gpu_samples (host_name, device_index, mem_used_mib, mem_total_mib, util_pct)
    select ${hostName}, s.index, round(s."memUsedMiB"), round(s."memTotalMiB"), round(s."utilPct") from s`;
}

/** Samples older than a day go: they are for charts of the recent past, not an archive. */
export async function pruneGpuSamples(sql: Sql): Promise<void> {
  await sql`delete from gpu_samples where at < now() - interval '1 day'`;
}

// The claim: one statement moves a queued job to running and takes leases on
// its devices. The partial unique index on leases refuses a device that is
// already leased, which fails the whole statement: all or nothing.
import type { Sql } from '../db';
import { rowToJob } from './job-row';
import type { JobRow } from './job-view';

export async function claimDevices(sql: Sql, jobId: string, hostName: string, devices: { id: number; name: string }[]): Promise<JobRow | null> {
  const ids = `{${devices.map((d) => d.id).join(',')}}`;
  try {
    const rows = await sql<Record<string, unknown>[]>`
      with j as (
        update jobs set state = 'running', started_at = now(), host_name = ${hostName},
          devices = ${JSON.stringify(devices.map((d) => d.name))}::text::jsonb, fence = nextval('fence_seq'),
          -- A hold's TTL counts from its start, not from its submit.
          expires_at = case when kind = 'hold' then now() + make_interval(secs => hold_ttl_s) end
        where id = ${jobId} and state = 'queued'
          -- A device quarantined since the plan was made is not taken.
          and not exists (select 1 from devices where id = any(${ids}::text::bigint[]) and unhealthy_since is not null)
        returning *
      ), l as (
        insert into leases (device_id, job_id) select d, j.id from j, unnest(${ids}::text::bigint[]) d
        returning id
      )
      select j.*, (select count(*) from l) as leased from j`;
    return rows[0] ? rowToJob(rows[0]) : null;
  } catch (err) {
    // Another controller leased one of the devices first.
    if (isLeaseConflict(err)) return null;
    throw err;
  }
}

/** The one-active-lease index refused a lease: someone else holds the device. */
export function isLeaseConflict(err: unknown): boolean {
  return (err as { code?: string }).code === '23505' || (err as { cause?: { code?: string } }).cause?.code === '23505';
}

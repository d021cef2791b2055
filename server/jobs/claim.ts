// The claim: one statement moves a job to running and takes leases on its
// devices. The partial unique index on leases refuses a device that is
// already leased, which fails the whole statement: all or nothing.
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../db';
import { BUS_CHANNEL } from '../bus';
import type { JobRow } from './job-view';

/** Where a claimed job runs: what the worker needs to know of each device. */
export interface Target {
  index: number;
  name: string;
  uuid: string | null;
}

/** The targets of claimed devices; their UUIDs come from the loaded fleet (`uuids` by device id), which a plan does not carry. */
export function targetsOf(claimed: readonly { id: number; index: number; name: string }[], uuids: ReadonlyMap<number, string | null>): Target[] {
  return claimed.map((d) => ({ index: d.index, name: d.name, uuid: uuids.get(d.id) ?? null }));
}

export function claimDevices(sql: Sql, jobId: string, hostName: string, devices: { id: number; name: string }[]): Promise<JobRow | null> {
  return withLeases(
    sql,
    devices,
    (healthy) => sql`
    update jobs set state = 'running', started_at = now(), host_name = ${hostName},
      devices = ${JSON.stringify(devices.map((d) => d.name))}::text::jsonb, fence = nextval('fence_seq'),
      -- A hold's TTL counts from its start, not from its submit.
      expires_at = case when kind = 'hold' then now() + make_interval(secs => hold_ttl_s) end
    where id = ${jobId} and state = 'queued' and ${healthy}
    returning *`,
  );
}

/**
 * One statement: `job` (an UPDATE or INSERT of one job row, `returning *`)
 * and a lease on each device for the row it returns. `healthy` is the
 * condition that none of the devices was quarantined since the plan was made.
 * Null when no row came out, or when another claim holds one of the devices.
 */
export async function withLeases(
  sql: Sql,
  devices: { id: number }[],
  job: (healthy: PendingQuery<Row[]>) => PendingQuery<Row[]>,
  /** A bus payload (a `start` message, its fence 0) that the statement sends when it commits, with the job's fence in it. */
  announce: string | null = null,
): Promise<JobRow | null> {
  const ids = `{${devices.map((d) => d.id).join(',')}}`;
  const healthy = sql`not exists (select 1 from devices where id = any(${ids}::text::bigint[]) and unhealthy_since is not null)`;
  try {
    // A data-modifying WITH runs to completion whether or not the outer select reads it: l needs no reference.
    const notify = announce === null ? sql`null` : sql`pg_notify(${BUS_CHANNEL}, jsonb_set(${announce}::jsonb, '{m,fence}', to_jsonb(j.fence))::text)`;
    const [row] = await sql<(JobRow & { announced: unknown })[]>`
      with j as (${job(healthy)}), l as (
        insert into leases (device_id, job_id) select d, j.id from j, unnest(${ids}::text::bigint[]) d
      )
      select j.*, ${notify} as announced from j`;
    if (!row) return null;
    const { announced: _, ...claimed } = row;
    return claimed;
  } catch (err) {
    if (isLeaseConflict(err)) return null;
    throw err;
  }
}

/** The one-active-lease index refused a lease: someone else holds the device. */
function isLeaseConflict(err: unknown): boolean {
  return (err as { code?: string }).code === '23505' || (err as { cause?: { code?: string } }).cause?.code === '23505';
}

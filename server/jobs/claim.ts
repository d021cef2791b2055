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
      devices = ${JSON.stringify(devices.map((d) => d.name))}::text::jsonb, gpus = ${devices.length}, fence = nextval('fence_seq'),
      -- A hold's TTL counts from its start, not from its submit.
      expires_at = case when kind = 'hold' then now() + make_interval(secs => hold_ttl_s) end
    where id = ${jobId} and state = 'queued' and ${healthy}
    returning *`,
  );
}

/**
 * One statement: `job` (an UPDATE or INSERT of one job row, `returning *`)
 * and a lease on each device for the row it returns. `healthy` is the
 * condition that none of the devices was quarantined, nor its host turned off
 * or removed, since the plan was made.
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
  const healthy = sql`not ${unusable(sql, sql`${ids}::text::bigint[]`)}`;
  try {
    // A data-modifying WITH runs to completion whether or not the outer select reads it: l needs no reference.
    const notify = announce === null ? sql`null` : sql`pg_notify(${BUS_CHANNEL}, jsonb_set(${announce}::jsonb, '{m,fence}', to_jsonb(j.fence))::text)`;
    const [row] = await sql<(JobRow & { announced: unknown })[]>`
      with j as (${job(healthy)}), l as (
        insert into leases (device_id, job_id, fence) select d, j.id, j.fence from j, unnest(${ids}::text::bigint[]) d
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

/** Whether any of the devices `ids` (an SQL bigint[]) was quarantined, or its host turned off or removed, since the plan was made. */
function unusable(sql: Sql, ids: PendingQuery<Row[]>) {
  return sql`exists (
    select 1 from devices d join hosts h on h.name = d.host_name
    where d.id = any(${ids}) and (d.unhealthy_since is not null or h.off_since is not null or h.removed_at is not null))`;
}

/** The one-active-lease index refused a lease: someone else holds the device. */
function isLeaseConflict(err: unknown): boolean {
  return (err as { code?: string }).code === '23505' || (err as { cause?: { code?: string } }).cause?.code === '23505';
}

/** One job of a batch claim: the job and the devices the plan gave it, all on one host. */
export interface PlannedClaim {
  jobId: string;
  hostName: string;
  devices: { id: number; name: string }[];
}

/**
 * Many claims in one statement (a scheduling pass's plan): each job still
 * queued and not locked by another claim (SKIP LOCKED: two controllers'
 * passes take disjoint jobs, and never wait on each other) moves to running
 * with a lease on each of its devices, unless one was quarantined (or its
 * host turned off or removed) since. The
 * claimed rows, by job id; a plan's job missing from them was not claimed.
 * When the lease index refuses any device (a submit elsewhere took it), the
 * whole statement fails: the claims are then made one at a time, each all or
 * nothing as claimDevices is.
 */
export async function claimBatch(sql: Sql, plan: readonly PlannedClaim[]): Promise<Map<string, JobRow>> {
  const out = new Map<string, JobRow>();
  if (!plan.length) return out;
  if (plan.length === 1) {
    const [p] = plan;
    const row = await claimDevices(sql, p!.jobId, p!.hostName, p!.devices);
    if (row) out.set(row.id, row);
    return out;
  }
  const ids = plan.map((p) => p.jobId);
  const hosts = plan.map((p) => p.hostName);
  const deviceIds = plan.map((p) => `{${p.devices.map((d) => d.id).join(',')}}`);
  const names = plan.map((p) => JSON.stringify(p.devices.map((d) => d.name)));
  try {
    const rows = await sql<(JobRow & { claimedIds: unknown })[]>`
      with p as (
        select * from unnest(${ids}::text[], ${hosts}::text[], ${deviceIds}::text[], ${names}::text[]) as p(job_id, host_name, device_ids, names)
      ), c as (
        select jobs.id from jobs join p on p.job_id = jobs.id
        where jobs.state = 'queued'
          and not ${unusable(sql, sql`p.device_ids::bigint[]`)}
        order by jobs.id
        for update of jobs skip locked
      ), j as (
        update jobs set state = 'running', started_at = now(), host_name = p.host_name, devices = p.names::jsonb, gpus = jsonb_array_length(p.names::jsonb),
          fence = nextval('fence_seq'),
          expires_at = case when jobs.kind = 'hold' then now() + make_interval(secs => jobs.hold_ttl_s) end
        from p, c where jobs.id = c.id and p.job_id = c.id
        returning jobs.*, p.device_ids as claimed_ids
      ), l as (
        insert into leases (device_id, job_id, fence) select unnest(j.claimed_ids::bigint[]), j.id, j.fence from j
      )
      select * from j`;
    for (const { claimedIds: _, ...row } of rows) out.set(row.id, row as JobRow);
    return out;
  } catch (err) {
    if (!isLeaseConflict(err)) throw err;
  }
  for (const p of plan) {
    const row = await claimDevices(sql, p.jobId, p.hostName, p.devices);
    if (row) out.set(row.id, row);
  }
  return out;
}

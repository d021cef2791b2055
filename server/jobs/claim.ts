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

export function claimDevices(sql: Sql, jobId: string, hostName: string, devices: readonly { id: number; name: string }[]): Promise<JobRow | null> {
  return withLeases(
    sql,
    devices,
    (healthy) => sql`
    update jobs set state = 'running', started_at = now(), host_name = ${hostName},
      devices = ${JSON.stringify(devices.map((d) => d.name))}::text::jsonb, gpus = ${devices.length}, fence = nextval('fence_seq'),
      -- A hold's TTL counts from its start, not from its submit.
      expires_at = case when kind = 'hold' then now() + make_interval(secs => hold_ttl_s) end
    where id = ${jobId} and state = 'queued' and waits is null and ${healthy}
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
  devices: readonly { id: number }[],
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

/**
 * Whether any of the devices `ids` (an SQL bigint[]) was quarantined, or its
 * host turned off or removed, since the plan was made. For a batch the
 * planner reads the devices and hosts once, for the few that are unusable
 * (naming the batch's device ids as well made it test each claim against
 * all of them: a 10,000-device claim took 909 ms instead of 285).
 */
function unusable(sql: Sql, ids: PendingQuery<Row[]>) {
  return sql`exists (
    select 1 from devices d join hosts h on h.name = d.host_name
    where d.id = any(${ids}) and (d.unhealthy_since is not null or h.off_since is not null or h.removed_at is not null))`;
}

/** The one-active-lease index refused a lease: someone else holds the device. */
function isLeaseConflict(err: unknown): boolean {
  const name = uniqueViolated(err);
  return name !== null && name !== KEY_INDEX;
}

/** The submit's idempotency key was used before by the same token (jobs_token_idempotency_key). */
export function isKeyConflict(err: unknown): boolean {
  return uniqueViolated(err) === KEY_INDEX;
}

const KEY_INDEX = 'jobs_token_idempotency_key';

/** The unique index a statement violated ('' when Postgres did not name it), or null for any other outcome. */
function uniqueViolated(err: unknown): string | null {
  for (const e of [err, (err as { cause?: unknown }).cause] as ({ code?: string; constraint_name?: string } | undefined)[])
    if (e?.code === '23505') return e.constraint_name ?? '';
  return null;
}

/** One job of a batch claim: the job and the devices the plan gave it, all on one host. */
export interface PlannedClaim<D extends { id: number; name: string } = { id: number; name: string }> {
  jobId: string;
  hostName: string;
  devices: readonly D[];
  /**
   * Queued jobs, in queue order, that fit these devices exactly as `jobId`
   * does (the same selector, device name, count and --gpu choices), `jobId`
   * among them. Claims that share this array share its jobs: when another
   * controller's claim took some of them first, the next ones take their
   * devices, so two passes that planned the same head of the queue both
   * start jobs instead of one of them starting none. Absent: `jobId` only.
   */
  alternates?: readonly string[];
}

/** A job a batch claim moved to running, and the planned claim whose devices it took. */
export interface Claimed<D extends { id: number; name: string } = { id: number; name: string }> {
  job: JobRow;
  claim: PlannedClaim<D>;
}

/** What a batch claim did: the jobs it started, and the claims it could not use because a device was not as planned. */
export interface BatchClaimed<D extends { id: number; name: string } = { id: number; name: string }> {
  claimed: Claimed<D>[];
  /**
   * Claims refused because a device of theirs was quarantined, or its host
   * turned off or removed, since the plan (or, after a lease conflict,
   * every claim that took no job): what the pass saw of those hosts is wrong.
   * A claim whose group ran out of jobs (another controller took them) is
   * not among them: its devices are as planned, and still free.
   */
  unusable: PlannedClaim<D>[];
}

/**
 * Many claims in one statement (a scheduling pass's plan). Each group of
 * claims (those sharing `alternates`, or one job alone) takes, in order, as
 * many of its jobs as it has claims whose devices are still usable (none
 * quarantined, nor its host turned off or removed, since the plan), among
 * those still queued and not locked by another claim (SKIP LOCKED: two
 * controllers' passes take disjoint jobs and never wait on each other); each
 * moves to running with a lease on each device of its claim.
 * When the lease index refuses any device (a submit elsewhere took it), the
 * whole statement fails: the claims are then made one at a time, each for its
 * own job, all or nothing as claimDevices is.
 */
export async function claimBatch<D extends { id: number; name: string }>(sql: Sql, plan: readonly PlannedClaim<D>[]): Promise<BatchClaimed<D>> {
  if (!plan.length) return { claimed: [], unusable: [] };
  if (plan.length === 1 && (plan[0]!.alternates?.length ?? 1) <= 1) return claimEach(sql, plan);
  // Groups: claims sharing one alternates array, in the plan's order.
  const groupOf = new Map<readonly string[], number>();
  const candidates: string[] = [];
  const slotGroup = plan.map((p) => {
    const alts = p.alternates?.length ? p.alternates : [p.jobId];
    let g = groupOf.get(alts);
    if (g === undefined) {
      g = candidates.length;
      groupOf.set(alts, g);
      candidates.push(`{${alts.join(',')}}`);
    }
    return g;
  });
  const hosts = plan.map((p) => p.hostName);
  const deviceIds = plan.map((p) => `{${p.devices.map((d) => d.id).join(',')}}`);
  const names = plan.map((p) => JSON.stringify(p.devices.map((d) => d.name)));
  try {
    const rows = await sql<(JobRow & { claimSlot: number; claimedIds: unknown; unusableSlots: number[] })[]>`
      with s as (
        select * from unnest(${slotGroup}::int[], ${hosts}::text[], ${deviceIds}::text[], ${names}::text[])
          with ordinality as s(g, host_name, device_ids, names, slot)
      ), p as (
        -- Each group's usable claims, in plan order, as arrays: zipped below with the jobs the group got (no join of
        -- claims with jobs: the planner, which cannot count either side, made that one quadratic).
        select s.g, count(*) as k, array_agg(s.slot order by s.slot) as slots, array_agg(s.host_name order by s.slot) as hosts,
          array_agg(s.device_ids order by s.slot) as device_ids, array_agg(s.names order by s.slot) as names
        from s where not ${unusable(sql, sql`s.device_ids::bigint[]`)}
        group by s.g
      ), cand as (
        select g - 1 as g, ids from unnest(${candidates}::text[]) with ordinality as c(ids, g)
      ), c as (
        select p.*, array(
          select jobs.id from unnest(cand.ids::text[]) with ordinality as q(id, r)
          join jobs on jobs.id = q.id
          where jobs.state = 'queued' and jobs.waits is null
          order by q.r limit p.k
          for update of jobs skip locked
        ) as ids
        from p join cand on cand.g = p.g
      ), pair as (
        select z.* from c cross join lateral unnest(c.ids, c.slots, c.hosts, c.device_ids, c.names) as z(id, slot, host_name, device_ids, names)
        where z.id is not null and z.slot is not null
      ), j as (
        update jobs set state = 'running', started_at = now(), host_name = pair.host_name, devices = pair.names::jsonb, gpus = jsonb_array_length(pair.names::jsonb),
          fence = nextval('fence_seq'),
          expires_at = case when jobs.kind = 'hold' then now() + make_interval(secs => jobs.hold_ttl_s) end
        from pair
        where jobs.id = pair.id
        returning jobs.*, pair.device_ids as claimed_ids, pair.slot as claim_slot
      ), l as (
        insert into leases (device_id, job_id, fence) select unnest(j.claimed_ids::bigint[]), j.id, j.fence from j
      ), bad as (
        select coalesce(array_agg(s.slot::int), '{}') as unusable_slots from s where s.slot not in (select unnest(p.slots) from p)
      )
      -- One row (bad's) even when no job was claimed.
      select j.*, bad.unusable_slots from bad left join j on true order by j.claim_slot`;
    return {
      claimed: rows
        .filter((r) => r.id !== null)
        .map(({ claimSlot, claimedIds: _, unusableSlots: __, ...row }) => ({ job: row, claim: plan[Number(claimSlot) - 1]! })),
      unusable: (rows[0]?.unusableSlots ?? []).map((slot) => plan[slot - 1]!),
    };
  } catch (err) {
    if (!isLeaseConflict(err)) throw err;
  }
  return claimEach(sql, plan);
}

/** The claims one at a time, each for its own job; one that took none is unusable (it cannot tell why). */
async function claimEach<D extends { id: number; name: string }>(sql: Sql, plan: readonly PlannedClaim<D>[]): Promise<BatchClaimed<D>> {
  const out: BatchClaimed<D> = { claimed: [], unusable: [] };
  for (const claim of plan) {
    const job = await claimDevices(sql, claim.jobId, claim.hostName, claim.devices);
    if (job) out.claimed.push({ job, claim });
    else out.unusable.push(claim);
  }
  return out;
}

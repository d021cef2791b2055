// The fleet as people and the scheduler see it: devices, their labels and holders.
import { deviceName } from '../core/schedule';
import type { devices, hosts, labels } from '../db/schema';
import type { DeviceRow, DeviceSummary, HostRow, JobKind, LabelView, RecordedDeviceState } from '../protocol/wire';
import type { Sql } from './db';

export type { DeviceRow, DeviceSummary, HostRow, LabelView };

type DeviceColumns = typeof devices.$inferSelect;
type LabelRow = typeof labels.$inferSelect;
/** A present device with its host's status and its active lease, if any (the left join's columns are null without one). */
type FleetDevice = Pick<
  DeviceColumns,
  'id' | 'hostName' | 'index' | 'uuid' | 'unhealthySince' | 'unhealthyReason' | 'unhealthyEvidence' | 'gpuSample' | 'sampledAt'
> & {
  hostStatus: DeviceSummary['hostStatus'];
  hostOff: boolean;
  jobId: string | null;
  jobKind: JobKind | null;
  submitter: string | null;
  acquiredAt: Date | null;
  /** The lease's idle streak as of its last GPU sample: null without a signal. */
  leaseIdleS: number | null;
};

export interface LoadOptions {
  /** Only this host's devices. */
  host?: string;
  /** Only these hosts' devices (a few stale hosts loaded at once: one query, not one per host). */
  hosts?: readonly string[];
  /** Every label's source, age and staleness (labelDetails); default true. Without: the merged labels only, cheaper. */
  details?: boolean;
  /** Only removed hosts' devices (state `removed`; rc devices --all): by default, only the others'. */
  removed?: boolean;
}

/** The present devices, by host and index: all of them, or one host's (`host`); with their labels' details unless `details: false`. */
export function loadDevices(sql: Sql, opts?: LoadOptions & { details?: true }): Promise<DeviceRow[]>;
export function loadDevices(sql: Sql, opts: LoadOptions & { details: false }): Promise<DeviceSummary[]>;
export function loadDevices(sql: Sql, opts: LoadOptions): Promise<DeviceSummary[] | DeviceRow[]>;
export async function loadDevices(sql: Sql, opts: LoadOptions = {}): Promise<DeviceSummary[] | DeviceRow[]> {
  const details = opts.details ?? true;
  // Fragments, not `$1 is null or …`: a prepared statement's generic plan would not use the index for some hosts.
  const names = opts.hosts ?? (opts.host !== undefined ? [opts.host] : null);
  const one = names !== null;
  // One snapshot for the devices and their labels: read apart (two connections), a host's hello committing in
  // between gave its devices without their labels, until the next change of that host.
  const [found, allLabels, merged] = await sql.begin('isolation level repeatable read read only', (tx) => {
    const where = one ? tx`where host_name = any(${names}::text[])` : tx``;
    return [
      tx<FleetDevice[]>`
      select d.id, d.host_name, d.index, d.uuid, h.status as host_status, h.off_since is not null as host_off, l.job_id, j.kind as job_kind, j.submitter, l.acquired_at,
        case when l.idle_seen_at is null then null when l.idle_since is null then 0
          else greatest(0, extract(epoch from l.idle_seen_at - l.idle_since))::float8 end as lease_idle_s,
        d.unhealthy_since, d.unhealthy_reason, d.unhealthy_evidence, d.gpu_sample, d.sampled_at
      from devices d
      join hosts h on h.name = d.host_name
      left join leases l on l.device_id = d.id and l.released_at is null
      left join jobs j on j.id = l.job_id
      where d.present and h.removed_at is ${opts.removed ? tx`not null` : tx`null`} ${one ? tx`and d.host_name = any(${names}::text[])` : tx``}
      order by d.host_name, d.index`,
      // Each level's rows with details, merged rows without (the other query reads nothing).
      tx<LabelRow[]>`select * from labels ${details ? where : tx`where false`} order by key, device_index desc, source`,
      // Without details, the database merges each level (a declared label beats a detected one) and sends one
      // object per device and per host: a few thousand rows instead of a hundred thousand.
      tx<{ hostName: string; deviceIndex: number; labels: Record<string, string> }[]>`
          select host_name, device_index, json_object_agg(key, value) as labels from (
            select distinct on (host_name, device_index, key) host_name, device_index, key, value from labels ${details ? tx`where false` : where}
            order by host_name, device_index, key, source = 'declared' desc
          ) l group by host_name, device_index`,
    ];
  });
  const levels = new Map<string, Record<string, string>>();
  for (const m of merged) levels.set(`${m.hostName}\0${m.deviceIndex}`, m.labels);
  const byHost = new Map<string, LabelRow[]>();
  for (const l of allLabels) {
    const list = byHost.get(l.hostName) ?? [];
    list.push(l);
    byHost.set(l.hostName, list);
  }
  return found.map((d) => {
    const own = details ? (byHost.get(d.hostName) ?? []).filter((l) => l.deviceIndex === -1 || l.deviceIndex === d.index) : [];
    const labelDetails = details
      ? markEffective(
          own.map(
            (l): LabelView => ({
              key: l.key,
              value: l.value,
              source: l.source,
              probe: l.probe,
              seenAt: l.seenAt.toISOString(),
              stale: l.stale,
              hostWide: l.deviceIndex === -1,
              effective: false,
            }),
          ),
        )
      : null;
    return {
      id: d.id,
      name: deviceName(d.hostName, d.index),
      hostName: d.hostName,
      index: d.index,
      uuid: d.uuid,
      hostStatus: d.hostStatus,
      state: opts.removed ? 'removed' : deviceState(d.unhealthySince !== null, d.hostStatus, d.jobId !== null, d.hostOff),
      hostOff: d.hostOff,
      holder: d.jobId
        ? { jobId: d.jobId, kind: d.jobKind ?? 'run', submitter: d.submitter ?? '', since: d.acquiredAt!.toISOString(), idleS: d.leaseIdleS }
        : null,
      // Worked out from the queue on top of this (server/reservations.ts).
      reservedFor: null,
      labels: labelDetails
        ? Object.fromEntries(labelDetails.filter((l) => l.effective).map((l) => [l.key, l.value]))
        : mergeLevels(levels.get(`${d.hostName}\0-1`), levels.get(`${d.hostName}\0${d.index}`)),
      ...(labelDetails ? { labelDetails } : {}),
      unhealthy: d.unhealthySince ? { since: d.unhealthySince.toISOString(), reason: d.unhealthyReason ?? '', evidence: d.unhealthyEvidence ?? {} } : null,
      gpu: d.gpuSample && d.sampledAt ? { ...d.gpuSample, at: d.sampledAt.toISOString() } : null,
    } as DeviceRow;
  });
}

/**
 * A device's state. Unhealthy wins: a quarantined device is never free,
 * whatever else is true. An offline host's devices are offline, even while a
 * lost job still holds them (freed when the worker comes back without it).
 * A turned-off host's devices are off once their jobs are done (busy until then).
 */
export function deviceState(unhealthy: boolean, hostStatus: DeviceSummary['hostStatus'], held: boolean, hostOff: boolean): RecordedDeviceState {
  if (unhealthy) return 'unhealthy';
  if (hostStatus === 'offline') return 'offline';
  if (held) return 'busy';
  if (hostOff) return 'off';
  return hostStatus === 'online' ? 'free' : 'offline';
}

/** The rank of markEffective's rule: a device's own label beats its host's, a declared one a detected one. */
function rank(hostWide: boolean, source: LabelView['source']): number {
  return (hostWide ? 0 : 2) + (source === 'declared' ? 1 : 0);
}

/** markEffective's rule over the levels the database merged: a device's own labels beat its host's. In key order, as with details. */
function mergeLevels(host: Record<string, string> | undefined, own: Record<string, string> | undefined): Record<string, string> {
  const all = { ...host, ...own };
  return Object.fromEntries(
    Object.keys(all)
      .sort()
      .map((k) => [k, all[k]!]),
  );
}

/**
 * One value per key, the rule documented in docs/operators.md: a device's own label
 * beats its host's, and a declared label (the operator's word) beats a
 * detected one, so an operator can correct a probe. The losers stay visible
 * in `rc describe`, marked as overridden.
 */
export function markEffective(details: LabelView[]): LabelView[] {
  const best = new Map<string, LabelView>();
  for (const l of details) {
    const cur = best.get(l.key);
    if (!cur || rank(l.hostWide, l.source) > rank(cur.hostWide, cur.source)) best.set(l.key, l);
  }
  return details.map((l) => ({ ...l, effective: best.get(l.key) === l }));
}

/** Registered hosts by name: every one, the one named `host` (none when it is not registered), or those named; removed ones only with `all`. */
export async function loadHosts(sql: Sql, host?: string | readonly string[], opts: { all?: boolean } = {}): Promise<HostRow[]> {
  const named = host === undefined ? null : sql`name = any(${typeof host === 'string' ? [host] : host}::text[])`;
  const conds = [named, opts.all ? null : sql`removed_at is null`].filter((c) => c !== null);
  const where = conds.length === 2 ? sql`where ${conds[0]!} and ${conds[1]!}` : conds.length === 1 ? sql`where ${conds[0]!}` : sql``;
  const rows = await sql<(typeof hosts.$inferSelect)[]>`select * from hosts ${where} order by name`;
  return rows.map(hostRow);
}

export function hostRow(h: typeof hosts.$inferSelect): HostRow {
  return {
    name: h.name,
    status: h.status,
    lastSeenAt: h.lastSeenAt?.toISOString() ?? null,
    workerVersion: h.workerVersion,
    off: h.offSince ? { since: h.offSince.toISOString(), by: h.offBy ?? '', reason: h.offReason } : null,
    removed: h.removedAt ? { at: h.removedAt.toISOString(), by: h.removedBy ?? '' } : null,
  };
}

// The fleet as people and the scheduler see it: devices, their labels and holders.
import { deviceName } from '../core/schedule';
import type { DeviceRow, HostRow, LabelView } from '../protocol/wire';
import type { Sql } from './db';

export type { DeviceRow, HostRow, LabelView };

interface RawDevice extends Record<string, unknown> {
  id: string | number;
  host_name: string;
  index: number;
  uuid: string | null;
  host_status: DeviceRow['hostStatus'];
  job_id: string | null;
  submitter: string | null;
  acquired_at: Date | null;
  unhealthy_since: Date | null;
  unhealthy_reason: string | null;
  unhealthy_evidence: Record<string, unknown> | null;
  gpu_sample: Omit<NonNullable<DeviceRow['gpu']>, 'at'> | null;
  sampled_at: Date | null;
}
interface RawLabel extends Record<string, unknown> {
  host_name: string;
  device_index: number;
  key: string;
  value: string;
  source: 'declared' | 'detected';
  probe: string | null;
  seen_at: Date;
  stale: string | null;
}

export async function loadDevices(sql: Sql): Promise<DeviceRow[]> {
  const [devices, labels] = await Promise.all([
    sql<RawDevice[]>`
      select d.id, d.host_name, d.index, d.uuid, h.status as host_status, l.job_id, j.submitter, l.acquired_at,
        d.unhealthy_since, d.unhealthy_reason, d.unhealthy_evidence, d.gpu_sample, d.sampled_at
      from devices d
      join hosts h on h.name = d.host_name
      left join leases l on l.device_id = d.id and l.released_at is null
      left join jobs j on j.id = l.job_id
      where d.present
      order by d.host_name, d.index`,
    sql<RawLabel[]>`select host_name, device_index, key, value, source, probe, seen_at, stale from labels order by key, device_index desc, source`,
  ]);
  const byHost = new Map<string, RawLabel[]>();
  for (const l of labels) {
    const list = byHost.get(l.host_name) ?? [];
    list.push(l);
    byHost.set(l.host_name, list);
  }
  return devices.map((d) => {
    const own = (byHost.get(d.host_name) ?? []).filter((l) => l.device_index === -1 || l.device_index === d.index);
    const details = markEffective(
      own.map(
        (l): LabelView => ({
          key: l.key,
          value: l.value,
          source: l.source,
          probe: l.probe,
          seenAt: new Date(l.seen_at).toISOString(),
          stale: l.stale,
          hostWide: l.device_index === -1,
          effective: false,
        }),
      ),
    );
    return {
      id: Number(d.id),
      name: deviceName(d.host_name, d.index),
      hostName: d.host_name,
      index: d.index,
      uuid: d.uuid,
      hostStatus: d.host_status,
      // Unhealthy wins: a quarantined device is never free, whatever else is true. An offline host's devices
      // are offline, even while a lost job still holds them (freed when the worker comes back without it).
      state: d.unhealthy_since ? 'unhealthy' : d.host_status === 'offline' ? 'offline' : d.job_id ? 'busy' : d.host_status === 'online' ? 'free' : 'offline',
      holder: d.job_id ? { jobId: d.job_id, submitter: d.submitter ?? '', since: new Date(d.acquired_at!).toISOString() } : null,
      labels: Object.fromEntries(details.filter((l) => l.effective).map((l) => [l.key, l.value])),
      labelDetails: details,
      unhealthy: d.unhealthy_since
        ? { since: new Date(d.unhealthy_since).toISOString(), reason: d.unhealthy_reason ?? '', evidence: d.unhealthy_evidence ?? {} }
        : null,
      gpu: d.gpu_sample && d.sampled_at ? { ...d.gpu_sample, at: new Date(d.sampled_at).toISOString() } : null,
    };
  });
}

/**
 * One value per key, the rule documented in install.md: a device's own label
 * beats its host's, and a declared label (the operator's word) beats a
 * detected one, so an operator can correct a probe. The losers stay visible
 * in `rc describe`, marked as overridden.
 */
export function markEffective(details: LabelView[]): LabelView[] {
  const rank = (l: LabelView) => (l.hostWide ? 0 : 2) + (l.source === 'declared' ? 1 : 0);
  const best = new Map<string, LabelView>();
  for (const l of details) {
    const cur = best.get(l.key);
    if (!cur || rank(l) > rank(cur)) best.set(l.key, l);
  }
  return details.map((l) => ({ ...l, effective: best.get(l.key) === l }));
}

export async function loadHosts(sql: Sql): Promise<HostRow[]> {
  const rows = await sql<{ name: string; status: HostRow['status']; last_seen_at: Date | null; worker_version: string | null }[]>`
    select name, status, last_seen_at, worker_version from hosts order by name`;
  return rows.map((h) => ({
    name: h.name,
    status: h.status,
    lastSeenAt: h.last_seen_at ? new Date(h.last_seen_at).toISOString() : null,
    workerVersion: h.worker_version,
  }));
}

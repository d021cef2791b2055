// The fleet as people and the scheduler see it: devices, their labels and holders.
import { deviceName } from '../core/schedule';
import type { devices, hosts, labels } from '../db/schema';
import type { DeviceRow, HostRow, JobKind, LabelView } from '../protocol/wire';
import type { Sql } from './db';

export type { DeviceRow, HostRow, LabelView };

type DeviceColumns = typeof devices.$inferSelect;
type LabelRow = typeof labels.$inferSelect;
/** A present device with its host's status and its active lease, if any (the left join's columns are null without one). */
type FleetDevice = Pick<
  DeviceColumns,
  'id' | 'hostName' | 'index' | 'uuid' | 'unhealthySince' | 'unhealthyReason' | 'unhealthyEvidence' | 'gpuSample' | 'sampledAt'
> & { hostStatus: DeviceRow['hostStatus']; jobId: string | null; jobKind: JobKind | null; submitter: string | null; acquiredAt: Date | null };

export async function loadDevices(sql: Sql): Promise<DeviceRow[]> {
  const [found, allLabels] = await Promise.all([
    sql<FleetDevice[]>`
      select d.id, d.host_name, d.index, d.uuid, h.status as host_status, l.job_id, j.kind as job_kind, j.submitter, l.acquired_at,
        d.unhealthy_since, d.unhealthy_reason, d.unhealthy_evidence, d.gpu_sample, d.sampled_at
      from devices d
      join hosts h on h.name = d.host_name
      left join leases l on l.device_id = d.id and l.released_at is null
      left join jobs j on j.id = l.job_id
      where d.present
      order by d.host_name, d.index`,
    sql<LabelRow[]>`select * from labels order by key, device_index desc, source`,
  ]);
  const byHost = new Map<string, LabelRow[]>();
  for (const l of allLabels) {
    const list = byHost.get(l.hostName) ?? [];
    list.push(l);
    byHost.set(l.hostName, list);
  }
  return found.map((d) => {
    const own = (byHost.get(d.hostName) ?? []).filter((l) => l.deviceIndex === -1 || l.deviceIndex === d.index);
    const details = markEffective(
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
    );
    return {
      id: d.id,
      name: deviceName(d.hostName, d.index),
      hostName: d.hostName,
      index: d.index,
      uuid: d.uuid,
      hostStatus: d.hostStatus,
      // Unhealthy wins: a quarantined device is never free, whatever else is true. An offline host's devices
      // are offline, even while a lost job still holds them (freed when the worker comes back without it).
      state: d.unhealthySince ? 'unhealthy' : d.hostStatus === 'offline' ? 'offline' : d.jobId ? 'busy' : d.hostStatus === 'online' ? 'free' : 'offline',
      holder: d.jobId ? { jobId: d.jobId, kind: d.jobKind ?? 'run', submitter: d.submitter ?? '', since: d.acquiredAt!.toISOString() } : null,
      labels: Object.fromEntries(details.filter((l) => l.effective).map((l) => [l.key, l.value])),
      labelDetails: details,
      unhealthy: d.unhealthySince ? { since: d.unhealthySince.toISOString(), reason: d.unhealthyReason ?? '', evidence: d.unhealthyEvidence ?? {} } : null,
      gpu: d.gpuSample && d.sampledAt ? { ...d.gpuSample, at: d.sampledAt.toISOString() } : null,
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
  const rows = await sql<(typeof hosts.$inferSelect)[]>`select * from hosts order by name`;
  return rows.map((h) => ({ name: h.name, status: h.status, lastSeenAt: h.lastSeenAt?.toISOString() ?? null, workerVersion: h.workerVersion }));
}

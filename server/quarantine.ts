// Quarantine: a device that something went wrong on (GPU memory still held
// after a job, a process rc did not start, a probe reporting the GPU failing,
// a container the worker cannot recreate) becomes `unhealthy` and is never
// scheduled. Only an admin clears it; both steps are audited.
import { RcError } from '../core/errors';
import { parseDeviceName } from '../core/schedule';
import type { devices } from '../db/schema';
import type { Quarantine } from '../protocol/worker';
import type { Sql } from './db';
import type { DeviceRow } from './fleet';
import { auditOrigin, auditTokenId } from './request-scope';

/**
 * Marks a device unhealthy unless it already is (the first reason stays: it
 * is usually the cause, later ones its consequences). Returns true when it changed.
 */
export async function quarantineDevice(sql: Sql, hostName: string, q: Quarantine, actor: string): Promise<boolean> {
  const rows = await sql`
    with d as (
      update devices set unhealthy_since = now(), unhealthy_reason = ${q.reason}, unhealthy_evidence = ${JSON.stringify(q.evidence)}::text::jsonb
      where host_name = ${hostName} and index = ${q.index} and unhealthy_since is null
      returning host_name, index
    )
    insert into audit (actor, action, target, detail)
    select ${actor}, 'device.quarantine', d.host_name || ':gpu' || d.index, ${JSON.stringify({ reason: q.reason, evidence: q.evidence })}::text::jsonb from d
    returning id`;
  return rows.length > 0;
}

/** Clears a quarantine (admin only, checked by the route); the audit entry keeps what was cleared and why. */
export async function clearQuarantine(
  sql: Sql,
  device: string,
  reason: string,
  actor: string,
): Promise<{ device: string; was: { reason: string; since: string } }> {
  const parsed = parseDeviceName(device);
  if (!parsed) throw new RcError('bad_request', `${device} is not a device name; device names look like host:gpu0`);
  const rows = await sql<Pick<typeof devices.$inferSelect, 'unhealthyReason' | 'unhealthySince'>[]>`
    with old as (
      select id, unhealthy_reason, unhealthy_since, unhealthy_evidence from devices
      where host_name = ${parsed.hostName} and index = ${parsed.index} for update
    ), cleared as (
      update devices set unhealthy_since = null, unhealthy_reason = null, unhealthy_evidence = null
      from old where devices.id = old.id and old.unhealthy_since is not null
      returning devices.id
    ), logged as (
      insert into audit (actor, action, target, detail, origin, token_id)
      select ${actor}, 'device.clear', ${device},
        jsonb_build_object('reason', ${reason}::text, 'was', old.unhealthy_reason, 'since', old.unhealthy_since, 'evidence', old.unhealthy_evidence),
        ${auditOrigin()}::text, ${auditTokenId()}::bigint
      from old join cleared on cleared.id = old.id
    )
    select unhealthy_reason, unhealthy_since from old`;
  const row = rows[0];
  if (!row) throw new RcError('not_found', `no device is named ${device}; rc devices lists them`);
  if (!row.unhealthySince) throw new RcError('conflict', `${device} is not quarantined; there is nothing to clear`);
  return { device, was: { reason: row.unhealthyReason ?? '', since: row.unhealthySince.toISOString() } };
}

/** Values of a `health` label that mean the device is fine; any other value quarantines it. */
const HEALTHY = new Set(['ok', 'healthy', 'pass', 'passed', 'good']);

/**
 * Devices whose probes say the GPU is failing: an effective `health` label
 * (from nvidia-smi or a site probe, or declared) with a value other than ok.
 */
export function quarantinesFromLabels(devices: DeviceRow[]): { hostName: string; q: Quarantine }[] {
  const out: { hostName: string; q: Quarantine }[] = [];
  for (const d of devices) {
    const health = d.labelDetails.find((l) => l.key === 'health' && l.effective);
    if (!health || HEALTHY.has(health.value.trim().toLowerCase()) || d.unhealthy) continue;
    const from = health.source === 'declared' ? 'the worker config declares' : `probe ${health.probe ?? '?'} reports`;
    out.push({
      hostName: d.hostName,
      q: {
        index: d.index,
        reason: `${from} health=${health.value}`,
        evidence: { label: 'health', value: health.value, source: health.source, probe: health.probe, seenAt: health.seenAt },
      },
    });
  }
  return out;
}

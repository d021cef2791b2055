// Accepting a job: validate what it asks for against the fleet, then queue it.
import { randomBytes } from 'node:crypto';
import { RcError } from '../../core/errors';
import { parseSelector, formatSelector } from '../../core/selector';
import { deviceMatches, parseDeviceName } from '../../core/schedule';
import type { SubmitJob } from '../../protocol/api';
import type { Identity } from '../auth';
import type { Sql } from '../db';
import { loadDevices } from '../fleet';
import { rowToJob } from './job-row';
import type { JobRow } from './job-view';

export function newJobId(): string {
  // 10 base32 characters: short enough to type, 50 bits so collisions are a non-issue.
  const n = randomBytes(8).readBigUInt64BE(0) >> 14n;
  return 'j' + n.toString(32).padStart(10, '0');
}

export async function submitJob(sql: Sql, identity: Identity, body: SubmitJob): Promise<{ job: JobRow; position: number }> {
  const parsed = parseSelector(body.selector);
  if (!parsed.ok) throw new RcError('bad_selector', parsed.error.message);
  const terms = parsed.terms;
  const selectorText = formatSelector(terms);
  const wanted = body.device ?? null;
  if (wanted !== null && !parseDeviceName(wanted)) {
    throw new RcError('no_matching_device', `no device is named ${wanted}; device names look like host:gpu0 (rc devices lists them)`);
  }
  const candidates = (await loadDevices(sql)).filter((d) => deviceMatches({ terms, deviceName: wanted }, d));
  if (candidates.length === 0) {
    throw new RcError('no_matching_device', wanted !== null
      ? `no device matches: ${wanted} does not exist${terms.length ? ` or does not satisfy ${selectorText}` : ''}`
      : `no device matches the selector: ${selectorText}`);
  }
  // Quarantined devices are never scheduled: say so now rather than queue forever.
  const healthy = candidates.filter((d) => d.state !== 'unhealthy');
  if (healthy.length === 0) {
    const [first] = candidates;
    throw new RcError('quarantined', wanted !== null
      ? `${wanted} is quarantined (unhealthy: ${first!.unhealthy?.reason ?? 'no reason recorded'}); pick another device (rc devices lists them) and tell an operator, who alone can clear it`
      : `every device matching ${selectorText || 'the request'} is quarantined (${candidates.map((d) => d.name).join(', ')}); widen the selector or pick another device, and tell an operator, who alone can clear them`);
  }
  if (body.gpus > 1) {
    const perHost = new Map<string, number>();
    for (const d of healthy) perHost.set(d.hostName, (perHost.get(d.hostName) ?? 0) + 1);
    if (Math.max(...perHost.values()) < body.gpus) {
      throw new RcError('no_matching_device', `no host has ${body.gpus} devices matching the selector: ${selectorText || '(any)'}`);
    }
  }
  // One statement inserts the job and counts the queued jobs ahead of it.
  const rows = await sql<Record<string, unknown>[]>`
    insert into jobs (id, kind, submitter, token_id, argv, cwd, selector, device_name, gpus, priority, max_runtime_s, idle_timeout_s, wait_timeout_s, hold_ttl_s)
    values (${newJobId()}, ${body.kind}, ${body.submitter}, ${identity.tokenId}, ${JSON.stringify(body.argv)}::text::jsonb, ${body.cwd ?? null},
      ${selectorText}, ${wanted}, ${body.gpus}, ${body.priority}, ${body.maxRuntimeS ?? null}, ${body.idleTimeoutS || null}, ${body.waitTimeoutS ?? null}, ${body.ttlS ?? null})
    returning *, (select count(*)::int from jobs where state = 'queued' and priority >= ${body.priority}) as position`;
  return { job: rowToJob(rows[0]!), position: Number(rows[0]!.position) };
}

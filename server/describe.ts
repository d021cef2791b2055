// What people and agents read before choosing a device: one device in full
// (rc describe), and what a selector would match (rc run --explain).
import { RcError } from '../core/errors';
import { deviceMatches, parseDeviceName } from '../core/schedule';
import { explainTerms, formatSelector, matchTerms, parseSelector } from '../core/selector';
import type { sheets } from '../db/schema';
import type { DeviceDescription, Explanation, SheetView } from '../protocol/wire';
import type { Sql } from './db';
import { loadDevices } from './fleet';
import { type JobRow, jobView } from './jobs/job-view';

type SheetRow = typeof sheets.$inferSelect;

/** A stored sheet as the API shows it. */
function sheetView(s: Pick<SheetRow, 'body' | 'updatedBy' | 'updatedAt'>): SheetView {
  return { body: s.body, updatedBy: s.updatedBy, updatedAt: s.updatedAt.toISOString() };
}

export async function describeDevice(sql: Sql, name: string): Promise<DeviceDescription> {
  const device = (await loadDevices(sql)).find((d) => d.name === name);
  if (!device) throw new RcError('not_found', `no device is named ${name}; rc devices lists them`);
  const [found, recent] = await Promise.all([
    sql<SheetRow[]>`select * from sheets where host_name = ${device.hostName} and device_index in (-1, ${device.index})`,
    sql<JobRow[]>`select * from jobs where devices @> ${JSON.stringify([name])}::text::jsonb order by created_at desc limit 10`,
  ]);
  const view = (i: number): SheetView | null => {
    const s = found.find((r) => r.deviceIndex === i);
    return s ? sheetView(s) : null;
  };
  return { device, sheet: view(-1), note: view(device.index), recentJobs: recent.map(jobView) };
}

/** Replaces (or, with an empty body, removes) a host's sheet or a device's note. */
export async function writeSheet(sql: Sql, hostName: string, deviceIndex: number, body: string, actor: string): Promise<SheetView | null> {
  return sql.begin(async (tx) => {
    const [host] = await tx<{ name: string }[]>`select name from hosts where name = ${hostName}`;
    if (!host) throw new RcError('not_found', `no host is named ${hostName}; rc devices lists the hosts' devices`);
    await tx`insert into audit (actor, action, target, detail) values (${actor}, ${deviceIndex === -1 ? 'sheet.write' : 'note.write'},
      ${deviceIndex === -1 ? hostName : `${hostName}:gpu${deviceIndex}`}, ${JSON.stringify({ bytes: Buffer.byteLength(body) })}::text::jsonb)`;
    if (body === '') {
      await tx`delete from sheets where host_name = ${hostName} and device_index = ${deviceIndex}`;
      return null;
    }
    const [row] = await tx<Pick<SheetRow, 'updatedAt'>[]>`
      insert into sheets (host_name, device_index, body, updated_by) values (${hostName}, ${deviceIndex}, ${body}, ${actor})
      on conflict (host_name, device_index) do update set body = excluded.body, updated_by = excluded.updated_by, updated_at = now()
      returning updated_at`;
    return sheetView({ body, updatedBy: actor, updatedAt: row!.updatedAt });
  });
}

export async function readSheet(sql: Sql, hostName: string): Promise<SheetView | null> {
  const [host] = await sql<{ name: string }[]>`select name from hosts where name = ${hostName}`;
  if (!host) throw new RcError('not_found', `no host is named ${hostName}`);
  const [s] = await sql<SheetRow[]>`select * from sheets where host_name = ${hostName} and device_index = -1`;
  return s ? sheetView(s) : null;
}

/** What a selector (and -d) would match, how much of it is free, and why the rest does not match. */
export async function explain(sql: Sql, selector: string, device: string | null): Promise<Explanation> {
  const parsed = parseSelector(selector);
  if (!parsed.ok) throw new RcError('bad_selector', parsed.error.message);
  if (device !== null && !parseDeviceName(device)) throw new RcError('no_matching_device', `no device is named ${device}; device names look like host:gpu0`);
  const [devices, queued] = await Promise.all([
    loadDevices(sql),
    sql<Pick<JobRow, 'selector' | 'deviceName'>[]>`select selector, device_name from jobs where state = 'queued'`,
  ]);
  const job = { terms: parsed.terms, deviceName: device };
  const matching = devices.filter((d) => deviceMatches(job, d));
  const notMatching = devices
    .filter((d) => !deviceMatches(job, d))
    .map((d) => ({
      name: d.name,
      reasons: [
        ...(device !== null && d.name !== device ? [`not ${device}`] : []),
        ...explainTerms(parsed.terms, d.labels)
          .filter((v) => !v.ok)
          .map((v) => v.reason),
      ],
    }));
  const depth = queued.filter((q) => {
    const p = parseSelector(q.selector);
    return p.ok && matching.some((d) => (q.deviceName === null || q.deviceName === d.name) && matchTerms(p.terms, d.labels));
  }).length;
  return {
    selector: formatSelector(parsed.terms),
    device,
    matching: matching.map((d) => ({ name: d.name, state: d.state, holder: d.holder })),
    free: matching.filter((d) => d.state === 'free').length,
    queued: depth,
    notMatching,
  };
}

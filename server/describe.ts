// What people and agents read before choosing a device: one device in full
// (rc describe), and what a selector would match (rc run --explain).
import { RcError } from '../core/errors';
import { deviceMatches, parseDeviceName, type QueuedJob } from '../core/schedule';
import { explainTerms, formatSelector, matchTerms, parseSelector } from '../core/selector';
import { choiceKey, choiceTerms, formatGpuChoice, parseGpuChoices } from '../core/gpu-choices';
import { familyAsModelHint, isKnownGpuName, unknownGpuNameMessage } from '../core/gpu-names';
import { hostsOff } from '../core/hosts-off';
import { TermsCache } from '../core/terms-cache';
import type { sheets } from '../db/schema';
import type { DeviceDescription, Explanation, HostDescription, SheetView } from '../protocol/wire';
import type { Sql } from './db';
import { type DeviceSummary, loadDevices, loadHosts } from './fleet';
import { type JobRow, jobView } from './jobs/job-view';
import { auditOrigin, auditTokenId } from './request-scope';
import { type Reserved, shown } from './reservations';
import { freesByOfJobs } from './until';

type SheetRow = typeof sheets.$inferSelect;

/** A stored sheet as the API shows it. */
function sheetView(s: Pick<SheetRow, 'body' | 'updatedBy' | 'updatedAt'>): SheetView {
  return { body: s.body, updatedBy: s.updatedBy, updatedAt: s.updatedAt.toISOString() };
}

/** One device in full; `reserved`: the free devices held back for a queued job (server/reservations.ts). */
export async function describeDevice(sql: Sql, name: string, reserved: Reserved = new Map()): Promise<DeviceDescription> {
  const parsed = parseDeviceName(name);
  const found = parsed ? (await loadDevices(sql, { host: parsed.hostName })).find((d) => d.name === name) : undefined;
  const device = found && shown(found, reserved);
  if (!device) throw new RcError('not_found', `no device is named ${name}; rc devices lists them`);
  const [sheets, recent, hostRows] = await Promise.all([
    sql<SheetRow[]>`select * from sheets where host_name = ${device.hostName} and device_index in (-1, ${device.index})`,
    sql<JobRow[]>`select * from jobs where devices @> ${JSON.stringify([name])}::text::jsonb order by created_at desc limit 10`,
    loadHosts(sql, device.hostName),
  ]);
  const view = (i: number): SheetView | null => {
    const s = sheets.find((r) => r.deviceIndex === i);
    return s ? sheetView(s) : null;
  };
  return { device, host: hostRows[0]!, sheet: view(-1), note: view(device.index), recentJobs: recent.map(jobView) };
}

/** How many of a host's recent jobs its page shows. */
export const HOST_RECENT_JOBS = 20;

/** One host in full (the host page): its row, its devices with their labels' details, its sheet, its recent jobs; `reserved` as in describeDevice. */
export async function describeHost(sql: Sql, name: string, reserved: Reserved = new Map()): Promise<HostDescription> {
  const [hostRows, devices, sheet, recent] = await Promise.all([
    loadHosts(sql, name, { all: true }),
    loadDevices(sql, { host: name }),
    sql<SheetRow[]>`select * from sheets where host_name = ${name} and device_index = -1`,
    sql<JobRow[]>`select * from jobs where host_name = ${name} order by seq desc limit ${HOST_RECENT_JOBS}`,
  ]);
  const host = hostRows[0];
  if (!host) throw new RcError('not_found', `no host is named ${name}; rc admin hosts lists them (GET /api/hosts)`);
  // A removed host's page still shows its devices, as removed.
  const listed = host.removed ? await loadDevices(sql, { host: name, removed: true }) : devices.map((d) => shown(d, reserved));
  return { host, devices: listed, sheet: sheet[0] ? sheetView(sheet[0]) : null, recentJobs: recent.map(jobView) };
}

/**
 * Replaces (or, with an empty body, removes) a host's sheet or a device's note.
 * `ifUpdatedAt` (the version the edit started from; null: none) refuses the
 * write with `conflict` when someone saved another meanwhile; undefined: the
 * last write wins. Versions compare at the millisecond the API shows (SheetView's
 * ISO string), and are stored at that precision.
 */
export async function writeSheet(
  sql: Sql,
  hostName: string,
  deviceIndex: number,
  body: string,
  actor: string,
  ifUpdatedAt?: string | null,
): Promise<SheetView | null> {
  const origin = auditOrigin();
  const what = deviceIndex === -1 ? `the sheet of ${hostName}` : `the note of ${hostName}:gpu${deviceIndex}`;
  return sql.begin(async (tx) => {
    // The host's row, locked: two edits of its sheet or notes take turns, so the version check holds until the write.
    const [host] = await tx<{ name: string }[]>`select name from hosts where name = ${hostName} for update`;
    if (!host) throw new RcError('not_found', `no host is named ${hostName}; rc devices lists the hosts' devices`);
    if (ifUpdatedAt !== undefined) {
      const [cur] = await tx<Pick<SheetRow, 'updatedBy' | 'updatedAt'>[]>`
        select updated_by, updated_at from sheets where host_name = ${hostName} and device_index = ${deviceIndex}`;
      const expected = ifUpdatedAt === null ? null : Date.parse(ifUpdatedAt);
      const stored = cur ? cur.updatedAt.getTime() : null;
      if (stored !== expected) {
        throw new RcError(
          'conflict',
          cur
            ? `${cur.updatedBy} saved ${what} at ${cur.updatedAt.toISOString()}, after you opened it; nothing was changed: reload to see their version, then make your edit again`
            : `${what} was removed after you opened it; nothing was changed: reload to see that, then make your edit again`,
        );
      }
    }
    await tx`insert into audit (actor, action, target, detail, origin, token_id) values (${actor}, ${deviceIndex === -1 ? 'sheet.write' : 'note.write'},
      ${deviceIndex === -1 ? hostName : `${hostName}:gpu${deviceIndex}`}, ${JSON.stringify({ bytes: Buffer.byteLength(body) })}::text::jsonb, ${origin}, ${auditTokenId()})`;
    if (body === '') {
      await tx`delete from sheets where host_name = ${hostName} and device_index = ${deviceIndex}`;
      return null;
    }
    // At the millisecond: the version a client sends back is the ISO string it was shown.
    const [row] = await tx<Pick<SheetRow, 'updatedAt'>[]>`
      insert into sheets (host_name, device_index, body, updated_by, updated_at)
      values (${hostName}, ${deviceIndex}, ${body}, ${actor}, date_trunc('milliseconds', now()))
      on conflict (host_name, device_index) do update set body = excluded.body, updated_by = excluded.updated_by, updated_at = excluded.updated_at
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

/**
 * What a selector (and -d) would match among the devices `fleet` gives (the
 * fleet in memory), how much of it is free, and why the rest does not match;
 * with --gpu (`gpu`), the same for each choice.
 */
export async function explain(
  sql: Sql,
  fleet: () => Promise<readonly DeviceSummary[]>,
  selector: string,
  device: string | null,
  gpu: string | null = null,
  gpus = 1,
): Promise<Explanation> {
  const parsed = parseSelector(selector);
  if (!parsed.ok) throw new RcError('bad_selector', parsed.error.message);
  if (device !== null && !parseDeviceName(device)) throw new RcError('no_matching_device', `no device is named ${device}; device names look like host:gpu0`);
  const gpuChoices = gpu === null ? null : parseGpuChoices(gpu);
  if (gpuChoices && !gpuChoices.ok) throw new RcError('bad_gpu', gpuChoices.message);
  const [devices, rows] = await Promise.all([
    fleet(),
    sql<Pick<JobRow, 'selector' | 'deviceName' | 'gpuChoices'>[]>`select selector, device_name, gpu_choices from jobs where state = 'queued'`,
  ]);
  // The queued jobs, each as the ways it may be placed (its choices, or itself).
  const cache = new TermsCache();
  const queued = rows.map((q) =>
    (cache.choices(q.selector, q.gpuChoices) ?? [{ terms: cache.selector(q.selector) }]).map((w) => ({ terms: w.terms, deviceName: q.deviceName })),
  );
  const queuedFor = (matching: readonly DeviceSummary[]) => queued.filter((ways) => ways.some((w) => matching.some((d) => deviceMatches(w, d)))).length;
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
  const entry = (d: DeviceSummary) => ({ name: d.name, state: d.state, holder: d.holder, reservedFor: d.reservedFor });
  const listed = (list: readonly DeviceSummary[]) => list.map(entry);
  // Refused as a submit would be (server/jobs/submit.ts): a name rc does not know and no device reports.
  for (const c of gpuChoices?.ok ? gpuChoices.choices : []) {
    const any = choiceTerms([], c);
    if (!isKnownGpuName(c.model) && !devices.some((d) => matchTerms(any, d.labels)))
      throw new RcError('bad_gpu', unknownGpuNameMessage(formatGpuChoice(c), c.model));
  }
  // Why a drained host is drained: only those hosts are read.
  const drained = [...new Set(matching.filter((d) => d.hostOff).map((d) => d.hostName))];
  const reasons = new Map(drained.length ? (await loadHosts(sql, drained)).map((h) => [h.name, h.off?.reason || null] as const) : []);
  const choices = gpuChoices?.ok
    ? gpuChoices.choices.map((c) => {
        const terms = choiceTerms(parsed.terms, c);
        const mine = matching.filter((d) => matchTerms(terms, d.labels));
        return {
          choice: formatGpuChoice(c),
          count: c.count,
          by: choiceKey(c) === 'gpu_family' ? ('family' as const) : ('model' as const),
          term: terms[terms.length - 1]!.text,
          matching: mine.map((d) => ({ ...entry(d), gpuModel: d.labels.gpu_model ?? null })),
          free: mine.filter((d) => d.state === 'free').length,
          freeOnOneHost: mostOnOneHost(mine.filter((d) => d.state === 'free')),
          onOneHost: mostOnOneHost(mine.filter((d) => d.state !== 'unhealthy')),
          queued: queuedFor(mine),
          hostsOff: hostsOff(mine, reasons),
        };
      })
    : null;
  const hint = familyAsModelHint(parsed.terms);
  // Until when a job of this placement would wait at the latest: the queue's rule (core/until.ts) for a job not yet submitted.
  const asQueued: QueuedJob = {
    id: '',
    priority: 0,
    seq: 0,
    terms: parsed.terms,
    deviceName: device,
    gpus,
    waitedS: 0,
    ...(gpuChoices?.ok ? { choices: gpuChoices.choices.map((c) => ({ label: formatGpuChoice(c), terms: choiceTerms(parsed.terms, c), gpus: c.count })) } : {}),
  };
  const freesBy = (await freesByOfJobs(sql, [asQueued], devices)).get('') ?? null;
  return {
    selector: formatSelector(parsed.terms),
    device,
    matching: listed(matching),
    free: matching.filter((d) => d.state === 'free').length,
    queued: queuedFor(matching),
    notMatching,
    hostsOff: hostsOff(matching, reasons),
    ...(hint ? { hint } : {}),
    freesBy,
    ...(choices ? { choices } : {}),
  };
}

/** The most of these devices on one host. */
function mostOnOneHost(list: readonly Pick<DeviceSummary, 'hostName'>[]): number {
  const n = new Map<string, number>();
  for (const d of list) n.set(d.hostName, (n.get(d.hostName) ?? 0) + 1);
  return Math.max(0, ...n.values());
}

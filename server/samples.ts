// GPU samples over time (GET /api/samples): the fleet page's sparklines (10m:
// every heartbeat's sample) and a device's charts (1h: 30 s buckets, 1d: 10 min
// buckets, from gpu_samples; 7d: 1 h buckets, 90d: 6 h buckets, from
// gpu_samples_coarse and the raw samples not rolled up yet, as one series;
// utilisation averaged and memory at its peak). Every query is one range of
// gpu_samples_device_at_idx (and of gpu_samples_coarse's primary key) per
// device, or per host (host_name, device_index, at).
import { RcError } from '../core/errors';
import { deviceName, HOST_NAME, parseDeviceName } from '../core/schedule';
import type { DeviceSamples, SampleWindow } from '../protocol/wire';
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from './db';

/** At most this many hosts in one request: a page of the fleet, not all of it at once. */
export const MAX_SAMPLE_HOSTS = 500;

/** `coarse`: the window reaches past the raw samples' day, so it reads gpu_samples_coarse too (its buckets hold whole 10-minute rows). */
const WINDOWS: Record<SampleWindow, { seconds: number; bucketS: number | null; coarse?: true }> = {
  '10m': { seconds: 600, bucketS: null },
  '1h': { seconds: 3600, bucketS: 30 },
  '1d': { seconds: 86400, bucketS: 600 },
  '7d': { seconds: 7 * 86400, bucketS: 3600, coarse: true },
  '90d': { seconds: 90 * 86400, bucketS: 6 * 3600, coarse: true },
};
const WINDOW_NAMES = Object.keys(WINDOWS);
/** "10m, 1h, 1d, 7d or 90d" */
const WINDOW_LIST = `${WINDOW_NAMES.slice(0, -1).join(', ')} or ${WINDOW_NAMES.at(-1)}`;

export interface SamplesFilter {
  /** These hosts' devices, or one device. */
  hosts: string[] | null;
  device: { hostName: string; index: number } | null;
  window: SampleWindow;
}

export function parseSamplesQuery(query: URLSearchParams): SamplesFilter {
  const hostsText = query.get('hosts');
  const deviceText = query.get('device');
  if ((hostsText === null) === (deviceText === null))
    throw new RcError('bad_request', 'give either hosts=<name,…> (at most 500) or device=<host:gpuN>, exactly one of them');
  const windowText = query.get('window') ?? '10m';
  if (!Object.hasOwn(WINDOWS, windowText)) throw new RcError('bad_request', `window must be ${WINDOW_LIST}, not ${JSON.stringify(windowText.slice(0, 50))}`);
  const window = windowText as SampleWindow;
  if (deviceText !== null) {
    const device = parseDeviceName(deviceText);
    if (!device) throw new RcError('bad_request', `device: ${JSON.stringify(deviceText.slice(0, 100))} is not a device name; device names look like host:gpu0`);
    return { hosts: null, device, window };
  }
  const hosts = [
    ...new Set(
      hostsText!
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean),
    ),
  ];
  if (!hosts.length) throw new RcError('bad_request', 'hosts: give at least one host name, comma-separated (hosts=gpubox-a,gpubox-b)');
  if (hosts.length > MAX_SAMPLE_HOSTS)
    throw new RcError('bad_request', `hosts: at most ${MAX_SAMPLE_HOSTS} hosts at once, not ${hosts.length}; ask for them in pages`);
  const bad = hosts.find((h) => !HOST_NAME.test(h));
  if (bad !== undefined)
    throw new RcError(
      'bad_request',
      `hosts: ${JSON.stringify(bad.slice(0, 100))} is not a host name (letters, digits, . _ -, starting with a letter or digit)`,
    );
  return { hosts, device: null, window };
}

interface SampleRow {
  hostName: string;
  deviceIndex: number;
  t: number;
  util: number | null;
  mem: number;
  total: number;
}

/**
 * The samples of the devices asked for, oldest first, by host and index. A
 * device with no sample in the window is not listed; an unknown host lists
 * nothing; an unknown device is `not_found`.
 */
export async function loadSamples(sql: Sql, f: SamplesFilter): Promise<DeviceSamples[]> {
  const { seconds, bucketS, coarse } = WINDOWS[f.window];
  if (f.device) {
    const [known] = await sql`select 1 from devices where host_name = ${f.device.hostName} and index = ${f.device.index}`;
    if (!known) throw new RcError('not_found', `no device is named ${deviceName(f.device.hostName, f.device.index)}; rc devices lists them`);
  }
  const which = f.device ? sql`host_name = ${f.device.hostName} and device_index = ${f.device.index}` : sql`host_name = any(${f.hosts!}::text[])`;
  const since = sql`at > now() - make_interval(secs => ${seconds})`;
  const rows = coarse
    ? await loadStitched(sql, which, seconds, bucketS!)
    : bucketS === null
      ? await sql<SampleRow[]>`
          select host_name, device_index, round(extract(epoch from at), 3)::float8 as t, util_pct::float8 as util,
            mem_used_mib as mem, mem_total_mib as total
          from gpu_samples where ${which} and ${since}
          order by host_name, device_index, at`
      : await sql<SampleRow[]>`
          select host_name, device_index, (floor(extract(epoch from at) / ${bucketS}::int) * ${bucketS}::int)::float8 as t,
            round(avg(util_pct), 1)::float8 as util, max(mem_used_mib) as mem, max(mem_total_mib) as total
          from gpu_samples where ${which} and ${since}
          group by 1, 2, 3 order by 1, 2, 3`;
  const out: DeviceSamples[] = [];
  let cur = null as DeviceSamples | null;
  for (const r of rows) {
    const name = deviceName(r.hostName, r.deviceIndex);
    if (cur?.device !== name) {
      cur = { device: name, at: [], utilPct: [], memUsedMiB: [], memTotalMiB: 0 };
      out.push(cur);
    }
    cur.at.push(r.t);
    cur.utilPct.push(r.util);
    cur.memUsedMiB.push(r.mem);
    // Oldest first: the last one written is the newest.
    cur.memTotalMiB = r.total;
  }
  return out;
}

/**
 * A long window's buckets from both tables: a sample is either still raw or
 * rolled into a coarse row (server/sample-retention.ts deletes what it rolls,
 * in the same statement), never both, so adding the two up counts it once.
 * The window starts at a bucket boundary: a coarse row is wholly in or out.
 */
async function loadStitched(sql: Sql, which: PendingQuery<Row[]>, seconds: number, bucketS: number): Promise<SampleRow[]> {
  const from = sql`to_timestamp(floor((extract(epoch from now()) - ${seconds}::int) / ${bucketS}::int) * ${bucketS}::int)`;
  return sql<SampleRow[]>`
    select host_name, device_index, (floor(extract(epoch from at) / ${bucketS}::int) * ${bucketS}::int)::float8 as t,
      round(sum(util_sum)::numeric / nullif(sum(util_samples), 0), 1)::float8 as util, max(mem_used_mib) as mem, max(mem_total_mib) as total
    from (
      select host_name, device_index, at, util_sum, util_samples, mem_used_mib, mem_total_mib
      from gpu_samples_coarse where ${which} and at >= ${from}
      union all
      select host_name, device_index, at, coalesce(util_pct, 0), (util_pct is not null)::int, mem_used_mib, mem_total_mib
      from gpu_samples where ${which} and at >= ${from}
    ) s
    group by 1, 2, 3 order by 1, 2, 3`;
}

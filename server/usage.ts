// Who used the fleet, and how much of it sat idle (GET /api/usage, rc usage,
// the dashboard's Usage page): device-hours leased in a window, split into
// jobs, terminals and holds, and the idle part of them (core/idle.ts, kept per
// lease by the heartbeats), by submitter, token, team (the team the job's token
// is in now), host or model. The leases are
// the record: one row per device a job held, kept with the job. A lease only
// partly inside the window counts for that part, and its idle seconds in the
// same proportion. A lease with no GPU signal (a CPU slot, or a GPU that sent
// none) counts as leased and in `noSignalS`, never as idle; `cpuSlotS` is the
// CPU slots' part of it (a device without a GPU UUID), so a GPU fleet's is 0.
import { parseDuration } from '../core/duration';
import { RcError } from '../core/errors';
import { canonicalGpuModel } from '../core/gpu-names';
import { bucketUse } from '../core/usage-series';
import type { UsageBy, UsageLease, UsageReport, UsageRow, UsageSeries } from '../protocol/wire';
import type { Sql } from './db';
import type { Runner } from './limits';

export const USAGE_BY: readonly UsageBy[] = ['submitter', 'token', 'host', 'model', 'team'];
/** The longest window (a year): the leases are kept as long as their jobs. */
const MAX_SINCE_S = 366 * 86400;
/** The most leases a drill-down lists (the longest first). */
const LEASES_SHOWN = 200;

export interface UsageFilter {
  sinceS: number;
  by: UsageBy;
  /** The drill-down: only the leases of this key (of `by`). */
  key: string | null;
}

export function parseUsageQuery(query: URLSearchParams): UsageFilter {
  const key = query.get('key');
  if (key !== null && key.length > 300) throw new RcError('bad_request', 'key: at most 300 characters');
  return { ...parseWindow(query), key };
}

/** GET /api/usage/series: the window and grouping only; any other key is refused rather than ignored. */
export function parseUsageSeriesQuery(query: URLSearchParams): Omit<UsageFilter, 'key'> {
  for (const k of query.keys())
    if (k !== 'since' && k !== 'by') throw new RcError('bad_request', `${k.slice(0, 50)}: GET /api/usage/series takes only since and by`);
  return parseWindow(query);
}

function parseWindow(query: URLSearchParams): Omit<UsageFilter, 'key'> {
  const sinceText = query.get('since') ?? '7d';
  const sinceS = parseDuration(sinceText);
  if (sinceS === null || sinceS < 60 || sinceS > MAX_SINCE_S)
    throw new RcError('bad_request', `since: a duration from 1m to 366d such as 12h, 7d or 30d, not ${JSON.stringify(sinceText.slice(0, 50))}`);
  const by = (query.get('by') ?? 'submitter') as UsageBy;
  if (!USAGE_BY.includes(by)) throw new RcError('bad_request', `by: one of ${USAGE_BY.join(', ')}, not ${JSON.stringify(String(by).slice(0, 50))}`);
  return { sinceS, by };
}

interface LeaseRow {
  jobId: string;
  kind: 'run' | 'tty' | 'hold' | 'cp';
  submitter: string;
  tokenId: string | null;
  tokenName: string | null;
  /** The team the job's token is in now (use is charged to the token's team). */
  team: string | null;
  hostName: string;
  deviceIndex: number;
  gpuName: string | null;
  acquiredAt: Date;
  releasedAt: Date | null;
  /** Seconds inside the window, and the lease's whole length so far. */
  inS: number;
  fullS: number;
  idleS: number;
  signal: boolean;
  cpuSlot: boolean;
}

/** The leases (rc cp's left out) that overlap the last `sinceS` seconds. */
function leasesIn(sql: Runner, sinceS: number) {
  return sql<LeaseRow[]>`
    select l.job_id, j.kind, j.submitter, j.token_id, t.name as token_name, t.team, d.host_name, d.index as device_index,
      d.gpu_sample->>'name' as gpu_name, l.acquired_at, l.released_at,
      extract(epoch from coalesce(l.released_at, now()) - greatest(l.acquired_at, now() - make_interval(secs => ${sinceS})))::float8 as in_s,
      extract(epoch from coalesce(l.released_at, now()) - l.acquired_at)::float8 as full_s,
      l.idle_s, l.idle_seen_at is not null as signal, d.uuid is null as cpu_slot
    from leases l join jobs j on j.id = l.job_id join devices d on d.id = l.device_id left join tokens t on t.id = j.token_id
    where coalesce(l.released_at, now()) > now() - make_interval(secs => ${sinceS}) and j.kind <> 'cp'`;
}

export async function usage(sql: Sql, f: UsageFilter): Promise<UsageReport> {
  const rows = await leasesIn(sql, f.sinceS);
  const byKey = new Map<string, UsageRow>();
  const total = emptyRow('total');
  const leases: UsageLease[] = [];
  for (const r of rows) {
    const inS = Math.max(0, r.inS);
    const idle = r.signal && r.fullS > 0 ? Math.min(inS, r.idleS * (inS / r.fullS)) : 0;
    const key = keyOf(r, f.by);
    if (f.key !== null) {
      if (key === f.key) leases.push(leaseView(r, inS, idle));
      continue;
    }
    const row = byKey.get(key) ?? emptyRow(key);
    byKey.set(key, row);
    for (const into of [row, total]) add(into, r, inS, idle);
  }
  if (f.key !== null) {
    leases.sort((a, b) => b.leasedS - a.leasedS);
    const row = emptyRow(f.key);
    for (const l of leases) {
      row.leasedS += l.leasedS;
      row[KIND_FIELD[l.kind]] += l.leasedS;
      if (l.idleS === null) row.noSignalS += l.leasedS;
      else row.idleS += l.idleS;
      if (l.cpuSlot) row.cpuSlotS += l.leasedS;
    }
    return { sinceS: f.sinceS, by: f.by, rows: [row], total: row, leases: leases.slice(0, LEASES_SHOWN) };
  }
  return { sinceS: f.sinceS, by: f.by, rows: [...byKey.values()].sort((a, b) => b.leasedS - a.leasedS), total };
}

/** The same leases over time, per key of `by` (the Usage page's chart). */
export async function usageSeries(sql: Sql, f: Omit<UsageFilter, 'key'>): Promise<UsageSeries> {
  // One clock for the buckets and the leases: the database's, read in the same statement.
  const [[clock], rows] = await sql.begin((tx) => [tx<{ nowS: number }[]>`select extract(epoch from now())::float8 as now_s`, leasesIn(tx, f.sinceS)]);
  const spans = rows.map((r) => ({
    key: keyOf(r, f.by),
    fromS: r.acquiredAt.getTime() / 1000,
    toS: r.releasedAt ? r.releasedAt.getTime() / 1000 : null,
    idleS: r.signal ? r.idleS : null,
  }));
  return { sinceS: f.sinceS, by: f.by, ...bucketUse(spans, f.sinceS, clock!.nowS) };
}

const KIND_FIELD = { run: 'jobsS', tty: 'terminalsS', hold: 'holdsS' } as const;

function keyOf(r: LeaseRow, by: UsageBy): string {
  switch (by) {
    case 'submitter':
      return r.submitter;
    case 'token':
      return r.tokenId === null ? '(none)' : `${r.tokenId} ${r.tokenName ?? ''}`.trim();
    case 'team':
      return r.team ?? '(none)';
    case 'host':
      return r.hostName;
    case 'model':
      return r.gpuName ? canonicalGpuModel(r.gpuName) : 'none (CPU slot)';
  }
}

function emptyRow(key: string): UsageRow {
  return { key, leasedS: 0, jobsS: 0, terminalsS: 0, holdsS: 0, idleS: 0, noSignalS: 0, cpuSlotS: 0 };
}

function add(into: UsageRow, r: LeaseRow, inS: number, idle: number): void {
  if (r.kind === 'cp') return;
  into.leasedS += inS;
  into[KIND_FIELD[r.kind]] += inS;
  if (r.signal) into.idleS += idle;
  else into.noSignalS += inS;
  if (r.cpuSlot) into.cpuSlotS += inS;
}

function leaseView(r: LeaseRow, inS: number, idle: number): UsageLease {
  return {
    jobId: r.jobId,
    kind: r.kind as UsageLease['kind'],
    submitter: r.submitter,
    device: `${r.hostName}:gpu${r.deviceIndex}`,
    from: r.acquiredAt.toISOString(),
    to: r.releasedAt?.toISOString() ?? null,
    leasedS: inS,
    idleS: r.signal ? idle : null,
    cpuSlot: r.cpuSlot,
  };
}

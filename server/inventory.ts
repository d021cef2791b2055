// The fleet kept in memory: every host and device with its labels, state and
// holder, so that a submit, a scheduling pass or a listing costs what it
// touches, not the size of the fleet (loading it all takes about a second at
// 10,000 devices).
//
// It is kept current two ways. Leases change often (every start and end):
// those are applied as they happen, from the job events every controller
// sees (its own, and the others' through the bus). Everything else (a host's
// hello, inventory, status, a quarantine) is rare: the live view's change
// marks that host stale, and it is loaded again, one query, before the next
// read. A full load in the background every MAX_AGE_MS, and a blocking one
// when the bus comes back, bound what a lost message could leave wrong.
//
// It is a view, never the last word: the claim statement and the
// one-active-lease index decide. A device shown free that is not makes a
// claim fail (the host is then loaded again); one shown busy that is not
// waits for the next load.
import { gpuIdle } from '../core/idle';
import { matchTerms, type SelectorTerm } from '../core/selector';
import type { DeviceView } from '../core/schedule';
import type { GpuSample } from '../protocol/worker';
import type { DeviceRow, DeviceState, DeviceSummary, Fleet, Holder, HostRow, RecordedDeviceState } from '../protocol/wire';
import type { Sql } from './db';
import { deviceState, loadDevices, loadHosts } from './fleet';
import { type Reserved, shown } from './reservations';

/** The backstop: a full load, in the background, at least this often. */
export const MAX_AGE_MS = 60_000;
/**
 * Past this many stale hosts, the whole fleet is loaded instead of those (one
 * query for them all either way). Hundreds go stale at once when a fleet
 * connects, or when another controller's hosts say hello; loading the whole
 * fleet for each such burst took seconds at 10,000 devices.
 */
const MAX_HOST_LOADS = 2000;
/** Selectors whose matching devices are kept (labels change rarely; selectors repeat). */
const MATCH_CACHE_SIZE = 512;

/** A device as the scheduler sees it, kept up to date in place: no copy per pass. */
export type SchedDevice = DeviceView & { uuid: string | null };

interface Entry {
  row: DeviceRow;
  view: SchedDevice;
  /** The row without its labels' details, as JSON; null after a change (a listing makes it again). */
  json: string | null;
}

export class Inventory {
  private hosts = new Map<string, HostRow>();
  /** Each host's devices, by index. */
  private parts = new Map<string, Entry[]>();
  private readonly byId = new Map<number, Entry>();
  private readonly byName = new Map<string, Entry>();
  /** Devices each job holds, by id. */
  private readonly holdings = new Map<string, Set<number>>();
  private readonly free = new Set<Entry>();
  /** Devices a claim made here is taking right now: not free to anyone else here meanwhile. */
  private readonly pending = new Set<number>();
  /** Every device by host then index; null after a change of parts. */
  private sorted: Entry[] | null = null;
  private readonly matches = new Map<string, { version: number; entries: Entry[] }>();
  /** candidates()' count of each match it was asked for (a match is a new array whenever it changes). */
  private readonly mostOf = new WeakMap<readonly Entry[], number>();
  /**
   * The hosts that are provider machines (server/machines/), each with the job it is for (null: none now). A
   * machine runs only the job placement gave it: its devices are never free to the rest of the queue.
   */
  private readonly machines = new Map<string, string | null>();
  /** Bumped whenever parts (and so labels or presence) are replaced. */
  private version = 0;

  /** Every change gets the next number: a load keeps what changed after it began. */
  private seq = 0;
  /** When each device's lease last changed here (seq). */
  private readonly leaseSeq = new Map<number, number>();
  private loadedAt = 0;
  private wholeStaleAt = 0;
  private readonly staleHosts = new Map<string, number>();
  private loading: Promise<void> | null = null;
  private background: Promise<void> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly onError: (err: unknown) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  // ---- what changed ----

  /** A host's labels, devices, status or quarantine changed (or, without a host, anything): loaded again before the next read. */
  changed(host?: string): void {
    const seq = ++this.seq;
    if (host) this.staleHosts.set(host, seq);
    else this.wholeStaleAt = seq;
  }

  /** A job started on these devices (its start event, here or elsewhere). */
  leased(host: string, deviceNames: readonly string[], holder: Holder): void {
    const seq = ++this.seq;
    const held = this.holdings.get(holder.jobId) ?? new Set<number>();
    for (const name of deviceNames) {
      const e = this.byName.get(name);
      if (!e || e.row.hostName !== host) continue;
      this.leaseSeq.set(e.row.id, seq);
      if (e.row.holder && e.row.holder.jobId !== holder.jobId) this.holdings.get(e.row.holder.jobId)?.delete(e.row.id);
      // No GPU signal until its first sample under this lease (sampled() keeps it after).
      e.row.holder = { ...holder, idleS: e.row.holder?.jobId === holder.jobId ? (e.row.holder.idleS ?? null) : null };
      held.add(e.row.id);
      this.restate(e);
    }
    if (held.size) this.holdings.set(holder.jobId, held);
  }

  /** A job ended, or went back to the queue: its devices' leases were released. */
  /**
   * An attempt of the job ended but keeps its leases (lost, queued again for
   * its next attempt): they are kept apart, so the next attempt's end does not
   * free them here; their own release loads the host again.
   */
  keptApart(jobId: string): void {
    const held = this.holdings.get(jobId);
    if (!held) return;
    this.holdings.delete(jobId);
    this.holdings.set(`${jobId} kept ${++this.seq}`, held);
  }

  released(jobId: string): void {
    const held = this.holdings.get(jobId);
    if (!held) return;
    this.holdings.delete(jobId);
    const seq = ++this.seq;
    for (const id of held) {
      const e = this.byId.get(id);
      if (!e || e.row.holder?.jobId !== jobId) continue;
      this.leaseSeq.set(id, seq);
      e.row.holder = null;
      this.restate(e);
    }
  }

  /** A heartbeat's samples from a host connected here. */
  sampled(host: string, gpus: readonly GpuSample[], at: Date): void {
    const part = this.parts.get(host);
    if (!part) return;
    const iso = at.toISOString();
    for (const g of gpus) {
      const e = part.find((d) => d.row.index === g.index);
      if (!e) continue;
      const before = e.row.gpu;
      e.row.gpu = { name: g.name, memTotalMiB: g.memTotalMiB, memUsedMiB: g.memUsedMiB, utilPct: g.utilPct, procs: g.procs ?? null, at: iso };
      // The holder's idle streak as of this sample (the heartbeat's statement keeps the lease's, core/idle.ts has the rule).
      if (e.row.holder) {
        const idle = gpuIdle(g);
        const wasIdle = before !== null && gpuIdle(before) === true && typeof e.row.holder.idleS === 'number';
        e.row.holder.idleS = idle === null ? null : !idle ? 0 : wasIdle ? e.row.holder.idleS! + Math.max(0, (at.getTime() - Date.parse(before.at)) / 1000) : 0;
      }
      e.json = null;
    }
  }

  /** A claim here is taking these devices: nobody else here is offered them until settle(). */
  reserve(ids: readonly number[]): void {
    for (const id of ids) {
      this.pending.add(id);
      const e = this.byId.get(id);
      if (e) this.restate(e);
    }
  }

  /** The claim is over: taken (leased() said so) or not. */
  settle(ids: readonly number[]): void {
    for (const id of ids) {
      this.pending.delete(id);
      const e = this.byId.get(id);
      if (e) this.restate(e);
    }
  }

  // ---- reads (each brings stale parts up to date first) ----

  /** The devices' UUIDs by id (what a job's targets name), from what is here: a submit's few, not a map of the fleet. */
  uuids(ids: readonly number[]): Map<number, string | null> {
    return new Map(ids.map((id) => [id, this.byId.get(id)?.row.uuid ?? null]));
  }

  /** Every device by host then index, with its labels' details (GET /api/devices?details=1, the queue's reasons). */
  async rows(terms: readonly SelectorTerm[] = []): Promise<DeviceRow[]> {
    await this.fresh();
    return this.match(terms, null).map((e) => e.row);
  }

  /**
   * GET /api/devices as JSON text, without the labels' details: each
   * device's JSON is kept until it changes, so a listing of thousands costs
   * a join, not a serialization of every one. `reserved`: the free devices
   * held back for a queued job, listed as such (server/reservations.ts).
   */
  async listing(terms: readonly SelectorTerm[] = [], reserved: Reserved = new Map()): Promise<string> {
    await this.fresh();
    const parts = this.match(terms, null).map((e) => {
      if (reserved.has(e.row.name)) return JSON.stringify(shown(summary(e.row), reserved));
      e.json ??= JSON.stringify(summary(e.row));
      return e.json;
    });
    return `{"devices":[${parts.join(',')}]}`;
  }

  /** The fleet page's data: every host and device, or one host's, and the queue's length; `reserved` as in listing(). */
  async fleet(host?: string, reserved: Reserved = new Map()): Promise<Fleet> {
    await this.fresh();
    const [queued] = await this.sql<{ n: number }[]>`select count(*)::int as n from jobs where state = 'queued'`;
    const names = host === undefined ? [...this.hosts.keys()].sort() : this.hosts.has(host) ? [host] : [];
    return {
      hosts: names.map((n) => this.hosts.get(n)!),
      devices: names.flatMap((n) => (this.parts.get(n) ?? []).map((e) => shown(summary(e.row), reserved))),
      queued: queued!.n,
    };
  }

  /** Whether a host is registered. */
  async hasHost(host: string): Promise<boolean> {
    await this.fresh();
    return this.hosts.has(host);
  }

  /**
   * The devices that match a job's selector and name, whatever their state,
   * by host then index, and the most of them that are not quarantined on any
   * one host (whether a job of n devices could ever start); both cached per
   * selector, so a submit to a fleet of thousands does not count them again.
   */
  async candidates(terms: readonly SelectorTerm[], deviceName: string | null): Promise<Candidates> {
    await this.fresh();
    const matching = this.match(terms, deviceName);
    // Kept per match: quarantine changes only when a host is loaded again, which makes a new match.
    let most = this.mostOf.get(matching);
    if (most === undefined) {
      most = mostOnOneHost(matching);
      this.mostOf.set(matching, most);
    }
    return { matching, most };
  }

  /**
   * Before a refusal (nothing matches): hosts the database has that are not
   * here yet, or with other devices (one registered, or connected to another
   * controller, moments ago, its change not yet heard) are loaded. True when
   * any was.
   */
  async catchUpHosts(): Promise<boolean> {
    await this.fresh();
    const rows = await this.sql<{ name: string; n: number }[]>`
      select h.name, (select count(*) from devices d where d.host_name = h.name and d.present)::int as n from hosts h`;
    const missing = rows.filter((r) => !this.hosts.has(r.name) || (this.parts.get(r.name)?.length ?? 0) !== r.n);
    for (const r of missing) this.changed(r.name);
    if (!missing.length) return false;
    await this.fresh();
    return true;
  }

  /** The free devices whose hosts `here` says are connected here (a scheduling pass); all of those hosts' devices with `all`. */
  async schedulable(here: (host: string) => boolean, all = false): Promise<SchedDevice[]> {
    await this.fresh();
    const out: SchedDevice[] = [];
    if (all) {
      for (const [host, part] of this.parts) if (here(host)) for (const e of part) out.push(e.view);
    } else for (const e of this.free) if (here(e.row.hostName)) out.push(e.view);
    // A provider machine's free devices, for the one job it is for (the pass holds them for it: core/schedule.ts heldFor).
    for (const [host, job] of this.machines) {
      if (job === null || !here(host)) continue;
      for (const e of this.parts.get(host) ?? []) if (e.row.state === 'free' && !this.pending.has(e.row.id)) out.push({ ...e.view, free: true, forJob: job });
    }
    return out;
  }

  /** Leased devices whose GPU was idle at its last sample (the metrics): the holder's idle streak is running. */
  idleLeased(): number {
    let n = 0;
    for (const e of this.byId.values()) if (e.row.holder && typeof e.row.holder.idleS === 'number' && e.row.holder.idleS > 0) n += 1;
    return n;
  }

  /** Devices by state as recorded (the metrics). */
  byState(): Record<Exclude<RecordedDeviceState, 'removed'>, number> {
    // A removed host's devices are not here, and none is `reserved` here (server/reservations.ts works that out).
    const n: Record<DeviceState, number> = { free: 0, busy: 0, reserved: 0, off: 0, unhealthy: 0, offline: 0, removed: 0 };
    for (const e of this.byId.values()) n[e.row.state] += 1;
    const { removed: _, reserved: __, ...listed } = n;
    return listed;
  }

  // ---- loading ----

  private match(terms: readonly SelectorTerm[], deviceName: string | null): Entry[] {
    if (deviceName !== null) {
      const e = this.byName.get(deviceName);
      return e && matchTerms(terms, e.row.labels) ? [e] : [];
    }
    this.sorted ??= [...this.parts.keys()].sort().flatMap((h) => this.parts.get(h)!);
    const all = this.sorted;
    if (!terms.length) return all;
    const key = JSON.stringify(terms.map((t) => [t.key, t.op, t.value]));
    const hit = this.matches.get(key);
    if (hit && hit.version === this.version) return hit.entries;
    const entries = all.filter((e) => matchTerms(terms, e.row.labels));
    if (this.matches.size >= MATCH_CACHE_SIZE) this.matches.clear();
    this.matches.set(key, { version: this.version, entries });
    return entries;
  }

  private restate(e: Entry): void {
    e.json = null;
    const state = deviceState(e.row.unhealthy !== null, e.row.hostStatus, e.row.holder !== null, e.row.hostOff);
    e.row.state = state;
    e.view.free = state === 'free' && !this.pending.has(e.row.id) && !this.machines.has(e.row.hostName);
    if (e.view.free) this.free.add(e);
    else this.free.delete(e);
  }

  /**
   * Brings stale parts up to date; concurrent readers share one load. A
   * first load, a bus outage or many stale hosts wait for a whole load; the
   * age backstop runs in the background while readers use what is here.
   */
  private async fresh(): Promise<void> {
    if (this.loadedAt && !this.wholeStaleAt && this.now() - this.loadedAt > MAX_AGE_MS && !this.background) {
      this.background = this.load(true)
        .catch(this.onError)
        .finally(() => {
          this.background = null;
        });
    }
    for (let pass = 0; pass < 2 && (this.loadedAt === 0 || this.wholeStaleAt > 0 || this.staleHosts.size > 0); pass++) {
      this.loading ??= this.load(false).finally(() => {
        this.loading = null;
      });
      await this.loading;
    }
  }

  private async load(whole: boolean): Promise<void> {
    const seq = this.seq;
    if (whole || this.loadedAt === 0 || this.wholeStaleAt > 0 || this.staleHosts.size > MAX_HOST_LOADS) {
      const [hosts, rows, machines] = await Promise.all([loadHosts(this.sql), loadDevices(this.sql), machineHosts(this.sql)]);
      this.machines.clear();
      for (const [h, job] of machines) this.machines.set(h, job);
      const byHost = new Map<string, DeviceRow[]>(hosts.map((h) => [h.name, []]));
      for (const r of rows) byHost.get(r.hostName)?.push(r);
      for (const h of this.parts.keys()) if (!byHost.has(h)) this.store(h, null, [], seq);
      for (const h of hosts) this.store(h.name, h, byHost.get(h.name)!, seq);
      this.loadedAt = this.now();
      if (this.wholeStaleAt <= seq) this.wholeStaleAt = 0;
      for (const [h, at] of this.staleHosts) if (at <= seq) this.staleHosts.delete(h);
      return;
    }
    const names = [...this.staleHosts.keys()];
    const [hosts, rows, machines] = await Promise.all([loadHosts(this.sql, names), loadDevices(this.sql, { hosts: names }), machineHosts(this.sql, names)]);
    for (const h of names) {
      if (machines.has(h)) this.machines.set(h, machines.get(h)!);
      else this.machines.delete(h);
    }
    const hostRows = new Map(hosts.map((h) => [h.name, h]));
    const byHost = new Map<string, DeviceRow[]>(names.map((h) => [h, []]));
    for (const r of rows) byHost.get(r.hostName)?.push(r);
    for (const h of names) {
      this.store(h, hostRows.get(h) ?? null, byHost.get(h)!, seq);
      if ((this.staleHosts.get(h) ?? 0) <= seq) this.staleHosts.delete(h);
    }
  }

  /** Puts one host's part as loaded when the change counter was `seq`: a lease changed here since then is kept as it is here. */
  private store(host: string, row: HostRow | null, rows: DeviceRow[], seq: number): void {
    const old = new Map((this.parts.get(host) ?? []).map((e) => [e.row.id, e]));
    for (const e of old.values()) this.drop(e);
    if (!row) {
      this.hosts.delete(host);
      this.parts.delete(host);
    } else {
      this.hosts.set(host, row);
      const part = rows.map((r) => {
        const before = old.get(r.id);
        if (before && (this.leaseSeq.get(r.id) ?? 0) > seq) r.holder = before.row.holder;
        if (before?.row.gpu && (!r.gpu || before.row.gpu.at > r.gpu.at)) r.gpu = before.row.gpu;
        const e: Entry = {
          json: null,
          row: r,
          view: { id: r.id, name: r.name, hostName: r.hostName, index: r.index, labels: r.labels, uuid: r.uuid, free: false },
        };
        this.byId.set(r.id, e);
        this.byName.set(r.name, e);
        if (r.holder) {
          const held = this.holdings.get(r.holder.jobId) ?? new Set<number>();
          held.add(r.id);
          this.holdings.set(r.holder.jobId, held);
        }
        this.restate(e);
        return e;
      });
      this.parts.set(host, part);
    }
    this.sorted = null;
    this.version += 1;
  }

  private drop(e: Entry): void {
    this.byId.delete(e.row.id);
    this.byName.delete(e.row.name);
    this.free.delete(e);
    if (e.row.holder) {
      const held = this.holdings.get(e.row.holder.jobId);
      held?.delete(e.row.id);
      if (held?.size === 0) this.holdings.delete(e.row.holder.jobId);
    }
  }
}

/** The live provider machines' hosts (all, or those `names`), each with the job placement gave it (null: none now, or it is being deleted). */
async function machineHosts(sql: Sql, names?: readonly string[]): Promise<Map<string, string | null>> {
  const rows = await sql<{ host: string; job: string | null }[]>`
    select host_name as host, case when state <> 'terminating' then job_id end as job from machines
    where state <> 'terminated' ${names ? sql`and host_name = any(${names as string[]}::text[])` : sql``}`;
  return new Map(rows.map((r) => [r.host, r.job]));
}

/** What matches a job's selector (Inventory.candidates). */
export interface Candidates {
  matching: { row: DeviceRow; view: SchedDevice }[];
  /** The most matching devices on one host that are not quarantined: 0 when every one is. */
  most: number;
}

function mostOnOneHost(matching: readonly { row: DeviceRow }[]): number {
  const perHost = new Map<string, number>();
  let most = 0;
  for (const { row: d } of matching) {
    if (d.state === 'unhealthy') continue;
    const n = (perHost.get(d.hostName) ?? 0) + 1;
    perHost.set(d.hostName, n);
    if (n > most) most = n;
  }
  return most;
}

/** A device row without its labels' details (the fleet page's shape). */
function summary(r: DeviceRow): DeviceSummary {
  const { labelDetails: _, ...rest } = r;
  return rest;
}

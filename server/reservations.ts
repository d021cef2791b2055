// Which free devices are held back for a queued job, and for which: the
// device listings (GET /api/devices, /api/fleet, /api/devices/:name,
// /api/hosts/:name) and POST /api/explain show them as `reserved`, not free,
// since no other job starts on them. Two things hold a device back: a
// multi-GPU job that waited past RC_RESERVE_AFTER_S holds back the matching
// devices of one host (core/wait-reason.ts heldBack, the walk GET /api/queue's
// reasons make, which follows the scheduling pass's rule), and preemption
// holds the devices it frees for the job it frees them for until its notice
// is over. Worked out from the queue and the fleet when asked, as the queue's
// reasons are, so every controller shows the same whichever hosts it holds.
import { TermsCache } from '../core/terms-cache';
import { type FleetDevice, heldBack } from '../core/wait-reason';
import type { DeviceSummary, ReservedFor } from '../protocol/wire';
import type { Sql } from './db';
import type { FairShare } from './jobs/fair-share';
import { queueHead } from './jobs/sql/queue-head';

/** As many queued jobs as a scheduling pass considers (server/scheduler.ts PASS_WINDOW). */
const QUEUE_READ = 1000;

/**
 * How long an answer is used again while no job event came: a listing at
 * 10,000 devices with multi-GPU jobs queued would otherwise walk the queue
 * each time. A reservation that begins because a job waited long enough (no
 * event tells that) shows this much later at most.
 */
const FRESH_MS = 1000;

/** The free devices held back now: who for, by device name. */
export type Reserved = ReadonlyMap<string, ReservedFor>;

const NONE: Reserved = new Map();

export class Reservations {
  private loading: Promise<Reserved> | null = null;
  private fresh: { at: number; value: Reserved } | null = null;
  /** Bumped by changed(): a load begun before is not kept. */
  private epoch = 0;
  private last: Reserved = NONE;

  constructor(
    private readonly sql: Sql,
    private readonly reserveAfterS: number,
    /** The fleet as its records give it (the inventory's rows: no device is `reserved` there). */
    private readonly fleet: () => Promise<readonly DeviceSummary[]>,
    /** The queue in fair order, as the scheduling pass reads it (null: the queue's own order). */
    private readonly fairShare: Pick<FairShare, 'ranks'> | null = null,
  ) {}

  /** The free devices held back now, by name. Reads made while one is under way share it. */
  now(): Promise<Reserved> {
    if (this.fresh && Date.now() - this.fresh.at < FRESH_MS) return Promise.resolve(this.fresh.value);
    if (this.loading) return this.loading;
    const epoch = this.epoch;
    const at = Date.now();
    const loading = this.load().then((value) => {
      if (this.epoch === epoch) this.fresh = { at, value };
      return value;
    });
    this.loading = loading;
    void loading
      .finally(() => {
        if (this.loading === loading) this.loading = null;
      })
      .catch(() => {});
    return loading;
  }

  /** A job was queued, started or ended, or a host's devices changed (here or elsewhere): the next read works them out again. */
  changed(): void {
    this.epoch += 1;
    this.fresh = null;
    this.loading = null;
  }

  /**
   * The hosts whose reserved devices changed since the last watch: a
   * reservation begins when a job has waited long enough, which no event
   * tells, so the dashboard hears of it from here.
   */
  async changedHosts(): Promise<string[]> {
    const before = this.last;
    const now = await this.now();
    this.last = now;
    const hosts = new Set<string>();
    for (const [name, r] of now) if (before.get(name)?.jobId !== r.jobId) hosts.add(hostOf(name));
    for (const name of before.keys()) if (!now.has(name)) hosts.add(hostOf(name));
    return [...hosts].sort();
  }

  private async load(): Promise<Reserved> {
    // One small query while no queued job could hold anything back (most of the time): only multi-GPU jobs
    // reserve, and only jobs preemption frees devices for have devices held.
    const [any] = await this.sql`
      select 1 from jobs where state = 'queued' and waits is null and (gpus > 1 or gpu_choices is not null or preempt_until > now()) limit 1`;
    if (!any) return NONE;
    const ranks = (await this.fairShare?.ranks()) ?? null;
    const [rows, fleet] = await Promise.all([queueHead(this.sql, QUEUE_READ, ranks), this.fleet()]);
    const terms = new TermsCache();
    const now = Date.now();
    const queued = rows.map((r) => {
      const job = terms.queued(r, now);
      return r.avoidHosts?.length ? { ...job, avoidHosts: r.avoidHosts } : job;
    });
    const listed = fleet.filter((d): d is DeviceSummary & FleetDevice => d.state !== 'removed' && d.state !== 'reserved');
    const byId = new Map(listed.map((d) => [d.id, d]));
    const held = new Map<string, { jobId: string; gpus: number; why: ReservedFor['why'] }>();
    // Preemption's holds first: the scheduling pass gives those devices to their job before anything else.
    for (const r of rows) {
      for (const id of r.heldDevices ?? []) {
        const d = byId.get(id);
        if (d?.state === 'free' && !held.has(d.name)) held.set(d.name, { jobId: r.id, gpus: r.gpus, why: 'preemption' });
      }
    }
    for (const [id, h] of heldBack(queued, listed, this.reserveAfterS)) {
      const d = byId.get(id);
      if (d?.state === 'free' && !held.has(d.name)) held.set(d.name, { ...h, why: 'multi_gpu' });
    }
    if (!held.size) return NONE;
    const ids = [...new Set([...held.values()].map((h) => h.jobId))];
    const who = new Map(
      (await this.sql<{ id: string; submitter: string }[]>`select id, submitter from jobs where id = any(${ids}::text[])`).map((j) => [j.id, j.submitter]),
    );
    return new Map([...held].map(([name, h]) => [name, { jobId: h.jobId, submitter: who.get(h.jobId) ?? '', gpus: h.gpus, why: h.why }]));
  }
}

/** A device as listed: `reserved`, with who for, when it is free and held back; as recorded otherwise. */
export function shown<D extends DeviceSummary>(d: D, reserved: Reserved): D {
  const r = d.state === 'free' ? reserved.get(d.name) : undefined;
  return r ? { ...d, state: 'reserved', reservedFor: r } : d;
}

function hostOf(deviceName: string): string {
  return deviceName.slice(0, deviceName.lastIndexOf(':'));
}

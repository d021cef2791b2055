// The fleet page's data, kept between requests: loading every device with
// its merged labels is the cost that grows with the fleet (about 0.7 s for
// 8,000 devices here), and every page load and every reconnect asks for it.
// The live view's changes (server/live.ts: a lease, a host's state, labels, a
// quarantine, here or told by another controller) mark a host's part stale,
// or the whole fleet when a change names no host; what is stale is loaded
// again when next asked for, one host at a time; whatever else could leave
// it wrong lasts at most MAX_AGE_MS. The queue's length is
// counted each time (an index scan). GPU samples in the parts may be as old
// as the part: the pages read samples from GET /api/samples.
import { RcError } from '../core/errors';
import type { LiveChange } from '../protocol/events';
import type { DeviceSummary, Fleet, HostRow } from '../protocol/wire';
import type { Sql } from './db';
import { loadFleet } from './fleet';

/**
 * A backstop: the changes that make parts stale come from this controller or,
 * through the bus, from the others (and when the bus's connection comes back
 * the whole fleet is made stale: what was sent meanwhile is lost). This bounds
 * what a change that no live event names could leave wrong.
 */
export const MAX_AGE_MS = 60_000;
/** Past this many stale hosts, one load of the whole fleet is cheaper than one per host. */
const MAX_HOST_LOADS = 32;

interface Part {
  host: HostRow;
  devices: DeviceSummary[];
}

export class FleetCache {
  private parts = new Map<string, Part>();
  /** When the whole fleet was last loaded; 0: never. */
  private loadedAt = 0;
  /** Every change gets the next number, so a load only clears what it saw: a change during a load stays. */
  private seq = 0;
  /** The change that made the whole fleet stale; 0: none since the last load. */
  private wholeStaleAt = 0;
  private readonly staleHosts = new Map<string, number>();
  private loading: Promise<void> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly now: () => number = Date.now,
  ) {}

  /** A change the live view tells: its host's part, or the whole fleet, is loaded again when next asked for. */
  changed(c: LiveChange): void {
    if (c.what !== 'devices') return;
    const seq = ++this.seq;
    if (c.host) this.staleHosts.set(c.host, seq);
    else this.wholeStaleAt = seq;
  }

  /** Every host and device, or one host's (not_found when it is unknown), and the queue's length. */
  async fleet(host?: string): Promise<Fleet> {
    if (host !== undefined) {
      // One host's part is cheap: read through, and keep it.
      const seq = this.seq;
      const one = await loadFleet(this.sql, host);
      if (this.loadedAt) this.store(host, one, seq);
      return one;
    }
    await this.fresh();
    const [queued] = await this.sql<{ n: number }[]>`select count(*)::int as n from jobs where state = 'queued'`;
    const names = [...this.parts.keys()].sort();
    return {
      hosts: names.map((n) => this.parts.get(n)!.host),
      devices: names.flatMap((n) => this.parts.get(n)!.devices),
      queued: queued!.n,
    };
  }

  /**
   * Brings the parts up to date; concurrent callers share one load. Two
   * passes at most: a load already under way may predate this request's
   * changes, and changes that keep coming during loads are told to the pages
   * anyway (they fetch those hosts again).
   */
  private async fresh(): Promise<void> {
    for (let pass = 0; pass < 2 && this.stale(); pass++) {
      this.loading ??= this.load().finally(() => {
        this.loading = null;
      });
      await this.loading;
    }
  }

  private stale(): boolean {
    return this.wholeStale() || this.staleHosts.size > 0;
  }

  private wholeStale(): boolean {
    return this.loadedAt === 0 || this.wholeStaleAt > 0 || this.now() - this.loadedAt > MAX_AGE_MS;
  }

  private async load(): Promise<void> {
    const seq = this.seq;
    if (this.wholeStale() || this.staleHosts.size > MAX_HOST_LOADS) {
      const all = await loadFleet(this.sql);
      const parts = new Map<string, Part>();
      for (const h of all.hosts) parts.set(h.name, { host: h, devices: [] });
      for (const d of all.devices) parts.get(d.hostName)?.devices.push(d);
      this.parts = parts;
      this.loadedAt = this.now();
      if (this.wholeStaleAt <= seq) this.wholeStaleAt = 0;
      for (const [h, at] of this.staleHosts) if (at <= seq) this.staleHosts.delete(h);
      return;
    }
    const hosts = [...this.staleHosts.keys()];
    const loaded = await Promise.all(
      hosts.map((h) =>
        loadFleet(this.sql, h).catch((err: unknown) => {
          if (err instanceof RcError && err.code === 'not_found') return null;
          throw err;
        }),
      ),
    );
    hosts.forEach((h, i) => {
      const one = loaded[i];
      if (one) this.store(h, one, seq);
      else if (this.staleHosts.get(h)! <= seq) {
        // Gone (not_found): no longer part of the fleet.
        this.parts.delete(h);
        this.staleHosts.delete(h);
      }
    });
  }

  /** Keeps one host's part as loaded when the change counter was `seq`; a change since leaves it stale. */
  private store(host: string, one: Fleet, seq: number): void {
    const row = one.hosts[0];
    if (row) this.parts.set(host, { host: row, devices: one.devices });
    else this.parts.delete(host);
    if ((this.staleHosts.get(host) ?? 0) <= seq) this.staleHosts.delete(host);
  }
}

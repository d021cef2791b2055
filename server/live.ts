// The dashboard's live view (the `/` namespace): every change a page shows
// is told to the browsers connected here and, through the bus, to those of
// the other controllers. Changes of one kind and place that come together
// (a burst of job ends, a probe run) are told once per CHANGE_WINDOW_MS: a
// page fetches again, it does not need every step.
import type { Namespace } from 'socket.io';
import { LiveEvent, type LiveChange } from '../protocol/events';

export const CHANGE_WINDOW_MS = 100;
/** New GPU samples come with every heartbeat of every host: they are told at most this often. */
export const SAMPLES_EVERY_MS = 5000;

export class LiveFeed {
  private ns: Namespace | null = null;
  private readonly pending = new Map<string, LiveChange>();
  private timer: NodeJS.Timeout | null = null;
  private samplesAt = 0;
  private samplesTimer: NodeJS.Timeout | null = null;
  private readonly listeners: ((c: LiveChange, known: boolean) => void)[] = [];

  /** `publish`: to the other controllers (the bus). */
  constructor(private readonly publish: (c: LiveChange) => void) {}

  attach(ns: Namespace): void {
    this.ns = ns;
  }

  /** Hears every change as it is made or heard, before any browser does; `known`: one the fleet in memory has already (ofJob(), derived()). */
  onChange(listener: (c: LiveChange, known: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** A change made here: told here and elsewhere. */
  changed(c: LiveChange): void {
    this.queue(c, true);
  }

  /**
   * A heartbeat's samples were stored: told here and elsewhere at most every
   * SAMPLES_EVERY_MS, the first after a quiet spell at once, later ones once
   * at the end of the spell (so the newest samples are always told).
   */
  sampled(): void {
    const wait = this.samplesAt + SAMPLES_EVERY_MS - Date.now();
    if (wait <= 0) {
      this.samplesAt = Date.now();
      this.changed({ what: 'samples' });
      return;
    }
    if (this.samplesTimer) return;
    this.samplesTimer = setTimeout(() => {
      this.samplesTimer = null;
      this.samplesAt = Date.now();
      this.changed({ what: 'samples' });
    }, wait);
    this.samplesTimer.unref();
  }

  /** A change told here only: one another controller told (the bus), or one every controller sees for itself (a job's events). */
  here(c: LiveChange): void {
    this.queue(c, false);
  }

  /** What a job's event (a start, an end) changes, told here only: every controller hears the events and tells its own browsers. */
  ofJob(c: LiveChange): void {
    this.queue(c, false, true);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.samplesTimer) clearTimeout(this.samplesTimer);
    this.samplesTimer = null;
    this.pending.clear();
  }

  /**
   * What every controller works out for itself from what it has (a device
   * held back for a queued job, or no longer: server/reservations.ts), told
   * here only; nothing is loaded again.
   */
  derived(c: LiveChange): void {
    this.queue(c, false, true);
  }

  /** Whether any browser follows the live view here: what only they would hear of need not be worked out otherwise. */
  get watched(): boolean {
    return (this.ns?.sockets.size ?? 0) > 0;
  }

  private queue(c: LiveChange, spread: boolean, known = false): void {
    for (const l of this.listeners) l(c, known);
    const key = `${spread ? '+' : '-'}${c.what}:${c.host ?? ''}:${c.jobId ?? ''}`;
    this.pending.set(key, c);
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), CHANGE_WINDOW_MS);
    this.timer.unref();
  }

  private flush(): void {
    this.timer = null;
    const told = new Set<string>();
    for (const [key, c] of this.pending) {
      if (key.startsWith('+')) this.publish(c);
      // A change heard from the bus and made here in one window is told once.
      if (told.has(key.slice(1))) continue;
      told.add(key.slice(1));
      this.ns?.emit(LiveEvent.changed, c);
    }
    this.pending.clear();
  }
}

// A controller that did not run for a while (SIGSTOP, a paused VM, a swap
// storm) heard nothing meanwhile: when it runs again, its hosts' timestamps are
// stale through no fault of theirs, and its timers fire before it reads a byte
// of what the workers sent meanwhile. Its own event loop tells it: a tick that
// comes far later than asked, on the monotonic clock, means this process did
// not run. Whatever judges hosts by time asks how long it has been awake.
import { performance } from 'node:perf_hooks';

/** A gap this long between two ticks (ms) is a pause, not a busy moment (RC_PAUSE_GAP_MS). */
export const DEFAULT_PAUSE_GAP_MS = 2000;
/** How often the loop is looked at. */
const TICK_MS = 250;

export class PauseWatch {
  private last: number;
  /** When this process last woke from a pause; -Infinity: never paused. */
  private wokeAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly gapMs: number = DEFAULT_PAUSE_GAP_MS,
    private readonly onPause: (gapMs: number) => void = () => {},
    private readonly now: () => number = () => performance.now(),
  ) {
    this.last = now();
  }

  start(): void {
    this.timer = setInterval(() => this.look(), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Milliseconds since this process last woke from a pause (Infinity when it never paused).
   * It looks first: the first timer to run after a pause may be the one asking, before the watch's own tick.
   */
  awakeForMs(): number {
    this.look();
    return this.now() - this.wokeAt;
  }

  private look(): void {
    const now = this.now();
    const gap = now - this.last;
    this.last = now;
    if (gap > this.gapMs) {
      this.wokeAt = now;
      this.onPause(gap);
    }
  }
}

// A job's watchdogs on its worker: --max-runtime counts from the start,
// --idle-timeout from the last output. Either one firing kills the job with a reason.
import { formatDuration } from '../core/duration';

export class Watchdog {
  private readonly runtimeTimer: NodeJS.Timeout | null;
  private idleTimer: NodeJS.Timeout | null = null;
  private fired = false;

  constructor(
    private readonly limits: { maxRuntimeS: number | null; idleTimeoutS: number | null },
    private readonly onFire: (reason: string, cause: 'max_runtime' | 'idle') => void,
  ) {
    this.runtimeTimer = limits.maxRuntimeS ? setTimeout(() => this.fire('max_runtime exceeded', 'max_runtime'), limits.maxRuntimeS * 1000) : null;
    this.activity();
  }

  /** The job printed something: the idle clock starts again. */
  activity(): void {
    if (!this.limits.idleTimeoutS || this.fired) return;
    if (this.idleTimer) this.idleTimer.refresh();
    else
      this.idleTimer = setTimeout(() => this.fire(`idle: no output for ${formatDuration(this.limits.idleTimeoutS!)}`, 'idle'), this.limits.idleTimeoutS * 1000);
  }

  stop(): void {
    if (this.runtimeTimer) clearTimeout(this.runtimeTimer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
  }

  private fire(reason: string, cause: 'max_runtime' | 'idle'): void {
    if (this.fired) return;
    this.fired = true;
    this.stop();
    this.onFire(reason, cause);
  }
}

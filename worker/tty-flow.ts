// Terminal jobs' traffic with the controller: their output is live only (not
// numbered, not kept), sent within a window the controller acknowledges, and
// their input and resizes come from it. Flow control: a terminal is paused
// while disconnected, while the controller says so, or with a full send window.
import { WorkerEvent } from '../protocol/events';
import { TTY_WORKER_WINDOW, TtyAck, TtyInput, TtyJobRef, TtyResize } from '../protocol/tty';
import type { ControllerLink } from './controller-link';
import type { DeviceProblem, JobCallbacks, RunningTty, Runtime } from './runtime';
import type { StartJob } from '../protocol/worker';
import type { Watchdog } from './watchdog';

/** A terminal job's flow control: paused while disconnected, while the controller says so, or with a full send window. */
export interface TtyState {
  run: RunningTty;
  inflight: number;
  held: boolean;
}

/** What the terminals need of a running job (worker/job-runner.ts's Job). */
interface Job {
  order: StartJob;
  watchdog: Watchdog | null;
  tty?: TtyState;
}

export class Terminals {
  constructor(
    private readonly link: ControllerLink,
    private readonly jobs: Map<string, Job>,
  ) {
    const socket = link.socket;
    socket.on(WorkerEvent.ttyInput, (raw) => {
      const m = TtyInput.safeParse(raw);
      if (m.success) this.ttyJob(m.data)?.tty?.run.write(m.data.data);
    });
    socket.on(WorkerEvent.ttyResize, (raw) => {
      const m = TtyResize.safeParse(raw);
      if (m.success) this.ttyJob(m.data)?.tty?.run.resize(m.data.cols, m.data.rows);
    });
    socket.on(WorkerEvent.ttyPause, (raw) => this.hold(raw, true));
    socket.on(WorkerEvent.ttyResume, (raw) => this.hold(raw, false));
    socket.on(WorkerEvent.ttyAck, (raw) => {
      const m = TtyAck.safeParse(raw);
      const job = m.success ? this.ttyJob(m.data) : null;
      if (!job || !m.success) return;
      job.tty!.inflight = Math.max(0, job.tty!.inflight - m.data.bytes);
      this.flow(job);
    });
  }

  /** A terminal job: its output is live only (not numbered, not kept), sent within a window the controller acknowledges. */
  start(job: Job, runtime: Runtime, exit: JobCallbacks['exit'], unusable: (problem: DeviceProblem) => void): RunningTty {
    const { jobId, fence } = job.order;
    const run = runtime.runTty(
      job.order,
      {
        output: (data) => {
          job.watchdog?.activity();
          if (!job.tty) return;
          job.tty.inflight += data.length;
          // While disconnected socket.io keeps it; the terminal is paused meanwhile, so that is bounded.
          this.link.socket.emit(WorkerEvent.ttyOutput, { jobId, fence, data });
          this.flow(job);
        },
        exit,
      },
      unusable,
    );
    job.tty = { run, inflight: 0, held: false };
    this.flow(job);
    return run;
  }

  private ttyJob(ref: TtyJobRef): Job | null {
    const job = this.jobs.get(ref.jobId);
    return job?.tty && job.order.fence === ref.fence ? job : null;
  }

  private hold(raw: unknown, held: boolean): void {
    const m = TtyJobRef.safeParse(raw);
    const job = m.success ? this.ttyJob(m.data) : null;
    if (!job) return;
    job.tty!.held = held;
    this.flow(job);
  }

  private flow(job: Job): void {
    const t = job.tty;
    if (!t) return;
    if (!this.link.ready || t.held || t.inflight >= TTY_WORKER_WINDOW) t.run.pause();
    else t.run.resume();
  }

  /** Every terminal after the connection came or went. */
  flowAll(resetWindow: boolean): void {
    for (const job of this.jobs.values()) {
      if (!job.tty) continue;
      // A controller that restarted has forgotten its pause; it pauses again when it must.
      if (resetWindow) {
        job.tty.inflight = 0;
        job.tty.held = false;
      }
      this.flow(job);
    }
  }
}

// Where a job's time goes on the worker (issue 31), for benchmarks: with
// RC_JOB_PHASES=<file> each job's moments are appended to the file as one
// JSON line when its end is acknowledged: { jobId, order, recorded, spawned,
// firstByte, exited, ended, cleaned, reported }, each in ms of the wall clock
// (performance.timeOrigin + performance.now(), comparable with another process
// on the host), firstByte and exited absent where they did not happen.
// Without the variable nothing is kept.
import { appendFileSync } from 'node:fs';

export type JobPhase = 'order' | 'recorded' | 'spawned' | 'firstByte' | 'exited' | 'ended' | 'cleaned' | 'reported';

export class JobPhases {
  private readonly jobs = new Map<string, Partial<Record<JobPhase, number>>>();

  constructor(private readonly file: string | null) {}

  /** The first time of each phase counts. */
  mark(jobId: string, phase: JobPhase): void {
    if (!this.file) return;
    let j = this.jobs.get(jobId);
    if (!j) {
      if (phase !== 'order') return;
      j = {};
      this.jobs.set(jobId, j);
    }
    j[phase] ??= performance.timeOrigin + performance.now();
    if (phase !== 'reported') return;
    this.jobs.delete(jobId);
    try {
      appendFileSync(this.file, `${JSON.stringify({ jobId, ...j })}\n`);
    } catch {
      /* a benchmark's file: never the job's problem */
    }
  }
}

// Output the controller has not yet confirmed storing. Every chunk stays here
// until acknowledged, so after a reconnect (or a controller restart) the worker
// resends exactly what is missing: no chunk lost, none repeated.
import type { JobOutput } from '../protocol/worker';

/** Per job, at most this much unacknowledged output is kept; the oldest goes first. */
const MAX_BYTES_PER_JOB = 64 * 1024 * 1024;

export class OutputOutbox {
  private readonly jobs = new Map<string, { chunks: JobOutput[]; bytes: number }>();

  add(chunk: JobOutput): void {
    const entry = this.jobs.get(chunk.jobId) ?? { chunks: [], bytes: 0 };
    entry.chunks.push(chunk);
    entry.bytes += chunk.data.length;
    while (entry.bytes > MAX_BYTES_PER_JOB && entry.chunks.length > 1) entry.bytes -= entry.chunks.shift()!.data.length;
    this.jobs.set(chunk.jobId, entry);
  }

  /** The controller has stored everything up to `seq`. */
  ack(jobId: string, seq: number): void {
    const entry = this.jobs.get(jobId);
    if (!entry) return;
    while (entry.chunks.length && entry.chunks[0]!.seq <= seq) entry.bytes -= entry.chunks.shift()!.data.length;
  }

  /** Chunks after `seq`, in order: what to resend. */
  after(jobId: string, seq: number): JobOutput[] {
    return (this.jobs.get(jobId)?.chunks ?? []).filter((c) => c.seq > seq);
  }

  jobIds(): string[] {
    return [...this.jobs.keys()];
  }

  forget(jobId: string): void {
    this.jobs.delete(jobId);
  }
}

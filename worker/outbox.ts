// Output the controller has not yet confirmed storing. Every chunk stays here
// until acknowledged, so after a reconnect (or a controller restart) the worker
// resends exactly what is missing: no chunk lost, none repeated. Past the
// bound, the oldest chunks go; what is resent then says which are gone
// (lostFrom), so the controller marks the job's output truncated instead of
// losing them silently.
import type { JobOutput } from '../protocol/worker';

/** Per job, at most this much unacknowledged output is kept by default (RC_OUTPUT_BUFFER_BYTES); the oldest goes first. */
export const MAX_BYTES_PER_JOB = 64 * 1024 * 1024;

export class OutputOutbox {
  private readonly jobs = new Map<string, { chunks: JobOutput[]; bytes: number }>();

  constructor(private readonly maxBytesPerJob = MAX_BYTES_PER_JOB) {}

  add(chunk: JobOutput): void {
    const entry = this.jobs.get(chunk.jobId) ?? { chunks: [], bytes: 0 };
    entry.chunks.push(chunk);
    entry.bytes += chunk.data.length;
    while (entry.bytes > this.maxBytesPerJob && entry.chunks.length > 1) entry.bytes -= entry.chunks.shift()!.data.length;
    this.jobs.set(chunk.jobId, entry);
  }

  /** The controller has stored everything up to `seq`. */
  ack(jobId: string, seq: number): void {
    const entry = this.jobs.get(jobId);
    if (!entry) return;
    while (entry.chunks.length && entry.chunks[0]!.seq <= seq) entry.bytes -= entry.chunks.shift()!.data.length;
  }

  /**
   * Chunks after `seq`, in order: what to resend. A job's chunks are numbered
   * without gaps, so a first chunk past seq + 1 means those between were let go
   * of: it carries lostFrom. null: the controller did not say where it is (all, no lostFrom).
   */
  after(jobId: string, seq: number | null): JobOutput[] {
    const chunks = (this.jobs.get(jobId)?.chunks ?? []).filter((c) => c.seq > (seq ?? 0));
    const first = chunks[0];
    if (seq !== null && first && first.seq > seq + 1) chunks[0] = { ...first, lostFrom: seq + 1 };
    return chunks;
  }

  jobIds(): string[] {
    return [...this.jobs.keys()];
  }

  forget(jobId: string): void {
    this.jobs.delete(jobId);
  }
}

// In-process fan-out of a job's output and lifecycle events to whoever is
// streaming it (rc run, rc attach). Postgres keeps the durable copy.
import { EventEmitter } from 'node:events';
import type { JobEvent } from '../protocol/wire';

export type JobItem = { kind: 'output'; seq: number; stream: 1 | 2; data: Buffer } | { kind: 'event'; event: JobEvent };

export class JobEvents {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  subscribe(jobId: string, listener: (item: JobItem) => void): () => void {
    this.emitter.on(jobId, listener);
    return () => this.emitter.off(jobId, listener);
  }

  output(jobId: string, seq: number, stream: 1 | 2, data: Buffer): void {
    this.emitter.emit(jobId, { kind: 'output', seq, stream, data } satisfies JobItem);
  }

  event(jobId: string, event: JobEvent): void {
    this.emitter.emit(jobId, { kind: 'event', event } satisfies JobItem);
  }
}

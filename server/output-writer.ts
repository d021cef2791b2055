// Stores job output without putting a database round trip on the streaming
// path: chunks that arrive together are written in one INSERT.
import { jobOutput } from '../db/schema';
import type { Db } from './db';

interface Row { jobId: string; seq: number; stream: 1 | 2; data: Buffer }

export class OutputWriter {
  private queue: Row[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;

  constructor(private readonly db: Db, private readonly onError: (err: unknown) => void) {}

  add(row: Row): void {
    this.queue.push(row);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => { this.scheduled = false; void this.flush(); });
    }
  }

  /** Resolves once everything added so far is stored. */
  drain(): Promise<void> {
    return this.queue.length ? this.flush() : this.flushing;
  }

  private flush(): Promise<void> {
    const rows = this.queue;
    this.queue = [];
    this.flushing = this.flushing.then(async () => {
      if (!rows.length) return;
      try {
        await this.db.insert(jobOutput).values(rows).onConflictDoNothing();
      } catch (err) {
        this.onError(err);
      }
    });
    return this.flushing;
  }
}

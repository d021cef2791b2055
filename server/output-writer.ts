// Stores job output without putting a database round trip on the streaming
// path: chunks that arrive together are written in one INSERT.
//
// A chunk counts as stored only once its INSERT committed: the worker is
// acknowledged only after drain() (server/worker-hub.ts), so an INSERT that
// fails (the database restarting, or away) is retried, in order, until it
// commits, and nothing acknowledged is ever lost (rows the database refuses
// for what they are, not for being away, are logged and dropped). Rows wait in memory
// meanwhile; `full` tells the hub to stop taking more (the worker keeps them
// and resends after a reconnect).
import { jobOutput } from '../db/schema';
import { databaseDown, type Db } from './db';

interface Row {
  jobId: string;
  seq: number;
  stream: 1 | 2;
  data: Buffer;
}

/** Bytes of output waiting for the database past which the hub stops taking more. */
export const MAX_PENDING_BYTES = 64 * 1024 * 1024;
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2000;

export class OutputWriter {
  private queue: Row[] = [];
  private pendingBytes = 0;
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;
  private stopped = false;
  private failing = false;

  constructor(
    private readonly db: Db,
    private readonly onError: (err: unknown) => void,
    /** Rows from..to of a job committed: the other controllers' followers are told (server/bus.ts). */
    private readonly onStored: (jobId: string, from: number, to: number) => void = () => {},
  ) {}

  add(row: Row): void {
    this.queue.push(row);
    this.pendingBytes += row.data.length;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.flush();
      });
    }
  }

  /** Too much is waiting for the database: take no more until it has caught up. */
  get full(): boolean {
    return this.pendingBytes >= MAX_PENDING_BYTES;
  }

  /** Resolves once everything added so far is stored (through any retries). */
  drain(): Promise<void> {
    return this.queue.length ? this.flush() : this.flushing;
  }

  /** Stops retrying (the controller is stopping): drain() resolves, what is not stored stays with the workers. */
  stop(): void {
    this.stopped = true;
  }

  private flush(): Promise<void> {
    const rows = this.queue;
    this.queue = [];
    this.flushing = this.flushing.then(() => this.store(rows));
    return this.flushing;
  }

  private async store(rows: Row[]): Promise<void> {
    if (!rows.length) return;
    for (let wait = RETRY_FIRST_MS; ; wait = Math.min(wait * 2, RETRY_MAX_MS)) {
      try {
        await this.db.insert(jobOutput).values(rows).onConflictDoNothing();
        this.failing = false;
        break;
      } catch (err) {
        // Said once per failing spell, not at every retry.
        if (!this.failing) this.onError(err);
        // Only a database that is away is waited for: a refusal of the rows themselves would never pass.
        if (!databaseDown(err)) break;
        this.failing = true;
        if (this.stopped) return;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    const spans = new Map<string, { from: number; to: number }>();
    for (const r of rows) {
      this.pendingBytes -= r.data.length;
      const s = spans.get(r.jobId);
      if (!s) spans.set(r.jobId, { from: r.seq, to: r.seq });
      else {
        s.from = Math.min(s.from, r.seq);
        s.to = Math.max(s.to, r.seq);
      }
    }
    for (const [jobId, s] of spans) this.onStored(jobId, s.from, s.to);
  }
}

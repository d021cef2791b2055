// Stores job output without putting a database round trip on the streaming
// path: chunks that arrive together are written in one INSERT.
//
// A chunk counts as stored only once its INSERT committed: the worker is
// acknowledged only after drain() (server/worker-hub.ts), so an INSERT that
// fails (the database restarting, or away) is retried, in order, until it
// commits, and nothing acknowledged is ever lost (rows the database refuses
// for what they are, not for being away, are logged and dropped). A database
// out of disk space is waited for the same way: its refusal is of the moment,
// not of the rows (it once dropped them, and the worker was told they were
// stored). Rows wait in memory meanwhile; `full` tells the hub to stop taking
// more (the worker keeps them and resends after a reconnect).
import { databaseDown, outOfSpace, type Sql } from './db';

interface Row {
  jobId: string;
  seq: number;
  stream: 1 | 2;
  data: Buffer;
}

/** Bytes of output waiting for the database past which the hub stops taking more (RC_OUTPUT_WAITING_BYTES). */
export const MAX_PENDING_BYTES = 64 * 1024 * 1024;
/** Rows and bytes per INSERT: a bound on one statement's size, and so on the memory it takes while it is built and sent (a chunk is at most 64 KiB). */
const ROWS_PER_INSERT = 2000;
const BYTES_PER_INSERT = 2 * 1024 * 1024;

/** `rows` in pieces of at most ROWS_PER_INSERT rows and BYTES_PER_INSERT bytes (a bigger chunk goes alone). */
function* parts(rows: Row[]): Generator<Row[]> {
  let part: Row[] = [];
  let bytes = 0;
  for (const r of rows) {
    if (part.length && (part.length >= ROWS_PER_INSERT || bytes + r.data.length > BYTES_PER_INSERT)) {
      yield part;
      part = [];
      bytes = 0;
    }
    part.push(r);
    bytes += r.data.length;
  }
  if (part.length) yield part;
}
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2000;

/** What one INSERT stored of a job: its chunks from..to. */
export interface StoredSpan {
  jobId: string;
  from: number;
  to: number;
}

/** Output given up on, not stored: the controller is stopping (the workers still have it). */
export class NotStored extends Error {
  constructor() {
    super('the controller is stopping: output received was not stored (its workers resend it to the next controller)');
  }
}

/** What the writer tells its owner: a failing spell began (once per spell), rows stored, the disk full or not. */
export interface WriterHooks {
  error: (err: unknown) => void;
  /** Chunks committed, per job, once per INSERT: the other controllers' followers are told (server/bus.ts). */
  stored?: (spans: StoredSpan[]) => void;
  /** The database said it is out of disk space (true), or stored again after that (false): once per change. */
  space?: (full: boolean) => void;
}

export class OutputWriter {
  private queue: Row[] = [];
  private pendingBytes = 0;
  /** The INSERT under way; chunks that arrive meanwhile wait for it and go in the next one (one at a time: busy output means big batches, not many small ones). */
  private writing: Promise<void> | null = null;
  private scheduled = false;
  /** Chunks added so far, and how many of them are stored (or given up): drain() waits for the second to reach the first. */
  private added = 0;
  private done = 0;
  private stopped = false;
  private failing = false;
  /** Since when the database has been out of disk space (null: it is not). */
  private noSpaceSince: Date | null = null;
  /** Rows given up on when the writer stopped: drain() rejects from then on. */
  private abandoned = false;
  /** When an INSERT last failed for lack of disk space (0: never). */
  private lastFullAt = 0;

  constructor(
    private readonly sql: Sql,
    private readonly hooks: WriterHooks,
    private readonly maxPendingBytes = MAX_PENDING_BYTES,
  ) {}

  add(row: Row): void {
    this.queue.push(row);
    this.added += 1;
    this.pendingBytes += row.data.length;
    if (!this.scheduled && !this.writing) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.write();
      });
    }
  }

  /** Too much is waiting for the database: take no more until it has caught up. */
  get full(): boolean {
    return this.pendingBytes >= this.maxPendingBytes;
  }

  /** Since when the database is out of disk space (its INSERTs say so); null when it is not. */
  get outOfSpaceSince(): Date | null {
    return this.noSpaceSince;
  }

  /** Bytes received and not yet stored. */
  get waitingBytes(): number {
    return this.pendingBytes;
  }

  /** Whether the database was out of disk space at some moment since `since` (Date.now() time): why output held up since then was lost. */
  fullSince(since: number): boolean {
    return this.lastFullAt >= since;
  }

  /**
   * Resolves once everything added so far is stored (through any retries).
   * Rejects (NotStored) once the writer stopped with rows it gave up on: nothing
   * waiting for it may count them as stored (an acknowledgement, an exit).
   */
  async drain(): Promise<void> {
    const target = this.added;
    while (this.done < target) {
      this.write();
      if (!this.writing) break;
      await this.writing;
    }
    if (this.abandoned) throw new NotStored();
  }

  /** Stops retrying (the controller is stopping): what is not stored stays with the workers, which resend it to the next controller. */
  stop(): void {
    this.stopped = true;
  }

  private write(): void {
    if (this.writing || !this.queue.length) return;
    const rows = this.queue;
    const upTo = this.added;
    this.queue = [];
    // store() does not throw (its hooks are told through tell()): its answer says whether the rows are stored.
    this.writing = this.store(rows).then((stored) => {
      if (!stored) this.abandoned = true;
      this.done = upTo;
      this.writing = null;
      this.write();
    });
  }

  /** False: given up, not stored (the writer stopped while the database was away or full). */
  private async store(rows: Row[]): Promise<boolean> {
    if (!rows.length) return true;
    for (let wait = RETRY_FIRST_MS; ; wait = Math.min(wait * 2, RETRY_MAX_MS)) {
      try {
        // One statement of arrays, whatever the row count (one prepared statement; a query builder's cost per row
        // was most of the controller's time at 20,000 chunks/s). The bytes go as base64 text: postgres.js sends
        // a bytea parameter as hex, twice their size.
        for (const part of parts(rows)) {
          await this.sql`
            insert into job_output (job_id, seq, stream, data)
            select j, s, t, decode(d, 'base64')
            from unnest(${part.map((r) => r.jobId)}::text[], ${part.map((r) => r.seq)}::int[], ${part.map((r) => r.stream)}::int2[],
              ${part.map((r) => r.data.toString('base64'))}::text[]) as u(j, s, t, d)
            on conflict do nothing`;
        }
        this.failing = false;
        this.space(false);
        break;
      } catch (err) {
        const full = outOfSpace(err);
        // Said once per failing spell, not at every retry; a full disk says so itself.
        if (!this.failing && !full) this.tell(() => this.hooks.error(err));
        // Only a database that is away or out of space is waited for: a refusal of the rows themselves would never pass.
        if (!databaseDown(err) && !full) break;
        this.failing = true;
        if (full) this.lastFullAt = Date.now();
        this.space(full);
        if (this.stopped) return false;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    const spans = new Map<string, StoredSpan>();
    for (const r of rows) {
      this.pendingBytes -= r.data.length;
      const s = spans.get(r.jobId);
      if (!s) spans.set(r.jobId, { jobId: r.jobId, from: r.seq, to: r.seq });
      else {
        s.from = Math.min(s.from, r.seq);
        s.to = Math.max(s.to, r.seq);
      }
    }
    this.tell(() => this.hooks.stored?.([...spans.values()]));
    return true;
  }

  private space(full: boolean): void {
    if (full === (this.noSpaceSince !== null)) return;
    this.noSpaceSince = full ? new Date() : null;
    this.tell(() => this.hooks.space?.(full));
  }

  /** A hook that throws (a bug) must not stall the writer, nor make rows count as stored that are not. */
  private tell(hook: () => void): void {
    try {
      hook();
    } catch {
      /* the writer goes on */
    }
  }
}

// A terminal's output through Postgres (the tty_output table): the
// controller that holds the worker's socket appends what the pty printed, and
// whichever controller the client is attached to reads it from there, told by
// the bus. The same rows are the replay of a re-attach, so a controller
// restart keeps the screen and any controller can attach. Each terminal keeps
// about its last `cap` bytes; an ended one keeps nothing.
//
// Appends of one terminal are one at a time and take whatever arrived
// meanwhile in one row: positions are contiguous, and a busy terminal costs
// one INSERT per round trip, not one per pty read.
import type { Sql } from './db';

export interface Span {
  from: number;
  to: number;
}

/** Where one appended chunk went: its own span, and the row it was stored in with others. */
export interface Stored extends Span {
  row: Span;
}

/** What waits for the next INSERT: at most about `cap` bytes are held; older ones are dropped (counted, for positions). */
interface Pending {
  /** The chunks held, the newest last. */
  chunks: Buffer[];
  held: number;
  /** Bytes dropped from the front: a flood outran the INSERTs, and pruning would not keep them anyway. */
  dropped: number;
  /** Every appended chunk's length, dropped ones included, in order, with its waiter. */
  lengths: number[];
  waiters: ((stored: Stored | null) => void)[];
}

/** A batch this big means a flood: the next INSERT waits FLOOD_PAUSE_MS, so a flood costs a few INSERTs a second, each at most `cap`. */
const FLOOD_BATCH = 64 * 1024;
const FLOOD_PAUSE_MS = 200;

interface Tail {
  pending: Pending | null;
  writing: boolean;
  /** Called when the writes in progress are done. */
  idle: (() => void)[];
  /** Where the kept rows start, as far as this controller pruned them. */
  prunedTo: number;
  /** The stored end after this controller's last INSERT; null until one committed (or after one failed). */
  end: number | null;
  /** Bytes appended and not yet committed. */
  queued: number;
}

export class TtyRelay {
  private readonly tails = new Map<string, Tail>();

  constructor(
    private readonly sql: Sql,
    /** Bytes kept per terminal for a re-attach. */
    readonly cap: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Stores output of a terminal whose worker is connected here; resolves with its span once committed (null: not stored). */
  append(jobId: string, data: Buffer): Promise<Stored | null> {
    let tail = this.tails.get(jobId);
    if (!tail) {
      tail = { pending: null, writing: false, idle: [], prunedTo: 0, end: null, queued: 0 };
      this.tails.set(jobId, tail);
    }
    if (!tail.pending) tail.pending = { chunks: [], held: 0, dropped: 0, lengths: [], waiters: [] };
    const pending = tail.pending;
    pending.chunks.push(data);
    pending.held += data.length;
    pending.lengths.push(data.length);
    while (pending.chunks.length > 1 && pending.held - pending.chunks[0]!.length >= this.cap) {
      const old = pending.chunks.shift()!;
      pending.held -= old.length;
      pending.dropped += old.length;
    }
    tail.queued += data.length;
    const done = new Promise<Stored | null>((resolve) => pending.waiters.push(resolve));
    if (!tail.writing) void this.write(jobId, tail);
    return done;
  }

  /**
   * Where the next chunk appended for the terminal will start, when this
   * controller knows (it is the one writer, and has committed once): output
   * can then be passed on before it is stored. Null: wait for the commit.
   */
  expected(jobId: string): number | null {
    const tail = this.tails.get(jobId);
    return tail?.end == null ? null : tail.end + tail.queued;
  }

  /** Resolves once everything appended so far for the terminal is stored (or failed). */
  flushed(jobId: string): Promise<void> {
    const tail = this.tails.get(jobId);
    if (!tail?.writing) return Promise.resolve();
    return new Promise((resolve) => tail.idle.push(resolve));
  }

  /** What the terminal printed after byte `after`, as far as it is kept: where that starts, and the bytes. */
  async since(jobId: string, after: number): Promise<{ offset: number; data: Buffer }> {
    const rows = await this.sql<{ pos: string; data: Buffer }[]>`
      select pos, data from tty_output where job_id = ${jobId} and pos + octet_length(data) > ${after} order by pos`;
    if (!rows.length) return { offset: Math.min(after, await this.end(jobId)), data: Buffer.alloc(0) };
    // From the last hole on (a flood stored only its tail): what is passed on is one run of the stream.
    let start = 0;
    for (let i = 1; i < rows.length; i++) {
      if (Number(rows[i]!.pos) !== Number(rows[i - 1]!.pos) + rows[i - 1]!.data.length) start = i;
    }
    const kept = rows.slice(start);
    const first = Number(kept[0]!.pos);
    const all = Buffer.concat(kept.map((r) => r.data));
    const offset = Math.max(after, first);
    return { offset, data: all.subarray(offset - first) };
  }

  /** The terminal's whole length so far (bytes). */
  async end(jobId: string): Promise<number> {
    const [row] = await this.sql<{ end: string }[]>`
      select coalesce(max(pos + octet_length(data)), 0)::int8 as end from tty_output where job_id = ${jobId}`;
    return Number(row?.end ?? 0);
  }

  /** Rows of terminals that ended (on any controller) go, and what this controller kept of them. */
  async pruneEnded(): Promise<void> {
    for (const [jobId, tail] of this.tails) if (!tail.writing) this.tails.delete(jobId);
    await this.sql`delete from tty_output t using jobs j where j.id = t.job_id and j.state not in ('queued', 'running')`;
  }

  private async write(jobId: string, tail: Tail): Promise<void> {
    tail.writing = true;
    try {
      while (tail.pending) {
        const { chunks, held, dropped, lengths, waiters } = tail.pending;
        tail.pending = null;
        const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        // Only the last `cap` bytes are stored, as pruning would leave them; positions still count every byte.
        const cut = Math.max(0, held - this.cap);
        const skip = dropped + cut;
        const data = cut ? all.subarray(cut) : all;
        const total = dropped + held;
        let span: Span | null = null;
        try {
          // The position is the stored end, read by the INSERT itself: a worker that moved here from
          // another controller continues where that one stopped.
          const [row] = await this.sql<{ pos: string }[]>`
            insert into tty_output (job_id, pos, data)
            select ${jobId}, coalesce((select pos + octet_length(data) from tty_output where job_id = ${jobId} order by pos desc limit 1), 0) + ${skip}, ${data}
            returning pos`;
          const from = Number(row!.pos) - skip;
          span = { from, to: from + total };
          tail.end = span.to;
          // Pruned a quarter of the cap at a time: one DELETE per cap/4 bytes printed, not per row.
          if (span.to - this.cap - tail.prunedTo > this.cap / 4) {
            tail.prunedTo = span.to - this.cap;
            await this.sql`delete from tty_output where job_id = ${jobId} and pos + octet_length(data) <= ${tail.prunedTo}`;
          }
        } catch (err) {
          tail.end = null;
          this.onError(err);
        }
        tail.queued -= total;
        let at = span?.from ?? 0;
        for (const [i, w] of waiters.entries()) {
          const len = lengths[i]!;
          w(span ? { from: at, to: at + len, row: span } : null);
          at += len;
        }
        if (total >= FLOOD_BATCH && tail.pending) await new Promise((r) => setTimeout(r, FLOOD_PAUSE_MS));
      }
    } finally {
      tail.writing = false;
      for (const done of tail.idle.splice(0)) done();
    }
  }
}

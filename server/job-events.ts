// Fan-out of a job's output and lifecycle events to whoever follows it on
// this controller (rc run, rc attach, rc logs -f, terminals), wherever the
// job runs. Postgres keeps the durable copy.
//
// A job whose worker is connected here is fed live by the worker hub. One
// whose worker is connected to another controller is fed from the bus
// (server/bus.ts): its events come as they are, its output as "stored from
// seq A to B", and the chunks are then read from job_output. Per followed job
// a cursor (the last seq passed on) and a chain (one read at a time, events
// after the reads before them) keep every chunk in order, once: a gap (a
// notification missed, or a worker that moved here from a controller that
// died) is filled from the stored rows before anything later is passed on.
// `catchUp` is the backstop for messages lost while the bus was away.
import { EventEmitter } from 'node:events';
import type { JobEvent } from '../protocol/wire';

export type JobItem = { kind: 'output'; seq: number; stream: 1 | 2; data: Buffer } | { kind: 'event'; event: JobEvent };

export interface StoredChunk {
  seq: number;
  stream: 1 | 2;
  data: Buffer;
}

/** What following jobs that run elsewhere needs of the database. */
export interface OutputStore {
  /** Stored chunks with after < seq <= upTo (upTo null: all), in order, at most `limit`. */
  read(jobId: string, after: number, upTo: number | null, limit: number): Promise<StoredChunk[]>;
  /** For each of these jobs, its stored chunks with after < seq <= upTo, in order, at most `limit` each: one query for all. */
  readMany(wanted: readonly { jobId: string; after: number; upTo: number }[], limit: number): Promise<Map<string, StoredChunk[]>>;
  /** For each of these jobs, the last stored seq, and its exit event if it has ended. */
  state(jobIds: string[]): Promise<Map<string, { lastSeq: number; exit: JobEvent | null }>>;
}

/** Where this controller's own events go for the others: the bus, or nowhere (tests). */
export interface EventSink {
  /** `told`: a statement already sent it to the other controllers (a NOTIFY in the dispatch's UPDATE). */
  event(event: JobEvent & { jobId: string }, told: boolean): void;
}

interface Followed {
  /** The last seq passed on; null until known (a follower that joined late learns it from the first notification). */
  cursor: number | null;
  /** Reads and the items after them, one at a time. */
  chain: Promise<void>;
  busy: number;
  exited: boolean;
}

/** Starts kept for a subscriber that is about to come (bounded: most jobs are never followed). */
const UNHEARD_STARTS = 1000;
/** Chunks read per query while filling a gap. */
const PAGE = 64;

export class JobEvents {
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  private readonly followed = new Map<string, Followed>();
  /** Recent starts of jobs nobody here followed yet, oldest first (see deliver). */
  private readonly unheard = new Map<string, JobEvent>();

  constructor(
    private readonly store: OutputStore | null = null,
    private readonly sink: EventSink | null = null,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** `after`: the last seq the listener has, when it knows (a new job: 0), so a late notification cannot leave a gap. */
  subscribe(jobId: string, listener: (item: JobItem) => void, after?: number): () => void {
    let f = this.followed.get(jobId);
    if (!f) {
      f = { cursor: null, chain: Promise.resolve(), busy: 0, exited: false };
      this.followed.set(jobId, f);
      const early = this.unheard.get(jobId);
      if (early) {
        this.unheard.delete(jobId);
        // After what the subscriber writes first (its queued event), before anything later.
        const followed = f;
        this.queue(followed, async () => this.pass(jobId, followed, { kind: 'event', event: early }));
      }
    }
    if (after !== undefined && (f.cursor === null || after < f.cursor)) f.cursor = after;
    this.emitter.on(jobId, listener);
    return () => {
      this.emitter.off(jobId, listener);
      if (this.emitter.listenerCount(jobId) === 0) this.followed.delete(jobId);
    };
  }

  /**
   * A follower has passed on everything up to `seq` itself (a replay from the
   * stored rows). The first follower starts from there. With others already
   * following, the cursor is theirs too: it is never moved past what they got,
   * and the chunks the replay found beyond it are passed on to them now (the
   * replaying follower skips what it has).
   */
  caughtUp(jobId: string, seq: number): void {
    const f = this.followed.get(jobId);
    if (!f) return;
    if (f.cursor === null) f.cursor = seq;
    else if (f.cursor < seq) this.queue(f, () => this.fill(jobId, f, seq));
  }

  /** Live output from a worker connected here. */
  output(jobId: string, seq: number, stream: 1 | 2, data: Buffer): void {
    const f = this.followed.get(jobId);
    if (!f) return;
    const item: JobItem = { kind: 'output', seq, stream, data };
    if (f.busy === 0 && (f.cursor === null || seq <= f.cursor + 1)) return this.pass(jobId, f, item);
    // Behind a read, or after a gap: in order, the gap filled from the stored rows first.
    this.queue(f, async () => {
      if (f.cursor !== null && seq > f.cursor + 1) await this.fill(jobId, f, seq - 1);
      this.pass(jobId, f, item);
    });
  }

  /** A lifecycle event of this controller's: passed on here, and to the other controllers (unless `told` already). */
  event(jobId: string, event: JobEvent, told = false): void {
    this.deliver(jobId, event);
    this.sink?.event({ ...event, jobId } as JobEvent & { jobId: string }, told);
  }

  /** Another controller's event (from the bus): passed on after the output read before it. */
  remoteEvent(jobId: string, event: JobEvent): void {
    this.deliver(jobId, event);
  }

  /**
   * Another controller stored output of several jobs (one INSERT): those
   * followed here are read in one query, each passed on in its own order
   * (what one page does not cover is read after, job by job).
   */
  storedMany(spans: readonly { jobId: string; from: number; to: number }[]): void {
    const store = this.store;
    if (!store) return;
    const wanted: { jobId: string; f: Followed; after: number; upTo: number }[] = [];
    for (const s of spans) {
      const f = this.followed.get(s.jobId);
      if (!f) continue;
      if (f.cursor === null) f.cursor = s.from - 1;
      wanted.push({ jobId: s.jobId, f, after: f.cursor, upTo: s.to });
    }
    if (!wanted.length) return;
    const read = store.readMany(wanted, PAGE);
    read.catch(() => {}); // told by each job's step below
    for (const w of wanted)
      this.queue(w.f, async () => {
        for (const r of (await read).get(w.jobId) ?? []) this.pass(w.jobId, w.f, { kind: 'output', seq: r.seq, stream: r.stream, data: r.data });
        await this.fill(w.jobId, w.f, w.upTo);
      });
  }

  /** Backstop: for every followed job, output stored and exits taken since the last message heard. */
  async catchUp(): Promise<void> {
    if (!this.store || this.followed.size === 0) return;
    const states = await this.store.state([...this.followed.keys()]);
    for (const [jobId, s] of states) {
      const f = this.followed.get(jobId);
      if (!f) continue;
      if (f.cursor !== null && s.lastSeq > f.cursor) this.queue(f, () => this.fill(jobId, f, s.lastSeq));
      if (s.exit) this.deliver(jobId, s.exit);
    }
  }

  private deliver(jobId: string, event: JobEvent): void {
    const f = this.followed.get(jobId);
    if (!f) {
      // A job claimed here for another controller's worker can be started there, and its start told
      // back, before its submitter here has subscribed: kept a moment for it (nothing else would
      // tell it again; a missed exit is caught up with).
      if (event.type === 'started') {
        if (this.unheard.size >= UNHEARD_STARTS) this.unheard.delete(this.unheard.keys().next().value!);
        this.unheard.set(jobId, event);
      }
      return;
    }
    const item: JobItem = { kind: 'event', event };
    if (f.busy === 0) return this.pass(jobId, f, item);
    this.queue(f, async () => this.pass(jobId, f, item));
  }

  private pass(jobId: string, f: Followed, item: JobItem): void {
    if (item.kind === 'output') {
      if (f.cursor !== null && item.seq <= f.cursor) return;
      f.cursor = item.seq;
    } else if (item.event.type === 'exit') {
      // Told once, whichever of the worker's report, the bus and the backstop brings it first.
      if (f.exited) return;
      f.exited = true;
    }
    this.emitter.emit(jobId, item);
  }

  /** Passes on the stored chunks after the cursor up to `upTo`. */
  private async fill(jobId: string, f: Followed, upTo: number): Promise<void> {
    while (this.store && this.followed.get(jobId) === f && (f.cursor ?? 0) < upTo) {
      const rows = await this.store.read(jobId, f.cursor ?? 0, upTo, PAGE);
      if (!rows.length) return;
      for (const r of rows) this.pass(jobId, f, { kind: 'output', seq: r.seq, stream: r.stream, data: r.data });
    }
  }

  private queue(f: Followed, step: () => Promise<void>): void {
    f.busy += 1;
    f.chain = f.chain
      .then(step)
      .catch((err: unknown) => this.onError(err))
      .finally(() => {
        f.busy -= 1;
      });
  }
}

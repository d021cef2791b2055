// Messages between the controllers that share one Postgres, through LISTEN
// and NOTIFY on one channel: a job's lifecycle events, "output of job J is
// stored up to seq N", orders for a worker connected to another controller,
// and "something may have become schedulable". A message is a hint, small
// and lossy by nature (a controller that was not listening misses it): the
// bytes of output stay in their rows, and every controller's periodic passes
// are the backstop. NOTIFY payloads are capped at 8000 bytes by Postgres.
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { sessionAttrs } from './database-url';
import type { JobEvent } from '../core/frames';
import type { LiveChange } from '../protocol/events';
import type { JobKind } from '../protocol/wire';

export const BUS_CHANNEL = 'rc';
/**
 * A poke sent by a statement itself (`pg_notify(BUS_CHANNEL, POKE_FROM_DATABASE)`, at its commit): from no
 * controller, so every controller's pass looks, the sender's too (a job let into the queue by the database).
 */
export const POKE_FROM_DATABASE = JSON.stringify({ from: 'database', m: { t: 'poke' } });
/** Postgres refuses a payload of 8000 bytes or more. */
export const MAX_PAYLOAD_BYTES = 7900;
/** Waits between tries to listen while the database refuses (doubling up to the second). */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2000;

export type BusMessage =
  /** A job's lifecycle event (queued, started, exit), for whoever follows it on any controller. */
  | { t: 'job'; jobId: string; event: JobEvent }
  /** Output is stored, each job's from seq `from` to `to` (one message per INSERT): followers elsewhere read the rows. */
  | { t: 'out'; spans: { jobId: string; from: number; to: number }[] }
  /** A terminal's output from byte `from` to `to` is stored (tty_output): followers elsewhere read the rows. */
  | { t: 'tty'; jobId: string; from: number; to: number }
  /** A job claimed on another controller, for the one that holds `host`'s worker to send (server/scheduler.ts). */
  | {
      t: 'start';
      host: string;
      jobId: string;
      fence: number;
      targets: { index: number; name: string; uuid: string | null }[];
      kind?: JobKind;
      submitter?: string;
    }
  /** A client of token `tokenId` attached to terminal `jobId` on the sending controller: those of another token attached elsewhere are detached (all, without a token: an earlier version's message). */
  | { t: 'tty-attach'; jobId: string; tokenId?: number; who?: string }
  /** Worker process `instance` of `host` was let in on the sending controller: a socket for the host from another process is cut. */
  | { t: 'worker'; host: string; instance: string | null }
  /** For the controller that holds `host`'s worker: send it `event` with `payload`. */
  | { t: 'order'; host: string; event: string; payload: unknown }
  /** A file step for `host`'s worker waits in worker_calls row `id` (server/remote-calls.ts); and its reply. */
  | { t: 'call'; id: string; host: string }
  | { t: 'reply'; id: string }
  /** Something the dashboard shows changed (server/live.ts). */
  | { t: 'live'; change: LiveChange }
  /** Something may have become schedulable (a job queued, a device freed, a worker arrived). */
  | { t: 'poke' }
  /** Token `tokenId` was revoked: every controller cuts its connections (the auth cache would otherwise let it work a moment longer, and an open socket until it closes). */
  | { t: 'cut'; tokenId: number }
  /** Dashboard session `sessionId` was signed out: every controller cuts the sockets it opened. */
  | { t: 'cut-session'; sessionId: number };

interface Envelope {
  /** The controller that sent it: it does not act on its own messages. */
  from: string;
  /**
   * Its number among that controller's messages. NOTIFY delivers equal payloads of one transaction
   * once, and a turn's messages leave in one statement: without it, two identical messages (the same
   * key typed twice into a terminal on another controller's worker) would arrive as one.
   */
  n?: number;
  m: BusMessage;
}

export interface BusOptions {
  url: string;
  log: (msg: string) => void;
}

export class Bus {
  /** This controller, as the others see it in messages. */
  readonly id = randomUUID();
  private readonly sql: postgres.Sql;
  /**
   * The LISTEN connection, kept here rather than by postgres.js's listen(): that one
   * listens again after a cut only once, and gives up for good when that fails (the
   * database still down, or the server reached a standby that refuses LISTEN).
   */
  private readonly listenSql: postgres.Sql;
  private listen: 'idle' | 'trying' | 'listening' | 'stopped' = 'idle';
  private handlers: { onMessage: (m: BusMessage) => void; onListening: () => void } | null = null;
  private retry: NodeJS.Timeout | null = null;

  constructor(private readonly opts: BusOptions) {
    // Its own connection, so NOTIFYs do not wait behind a busy main pool, and one, so they leave in the
    // order they were published.
    this.sql = postgres(opts.url, { ...sessionAttrs(opts.url), max: 1, onnotice: () => {}, connection: { application_name: 'rc-bus' } });
    const listenOptions: postgres.Options<Record<string, never>> & { onnotify: (channel: string, payload: string) => void } = {
      ...sessionAttrs(opts.url),
      max: 1,
      // Never closed for age: a LISTEN lasts as long as its connection.
      max_lifetime: null,
      fetch_types: false,
      onnotice: () => {},
      connection: { application_name: 'rc-bus' },
      onnotify: (channel, payload) => {
        if (channel === BUS_CHANNEL && this.handlers) this.receive(payload, this.handlers.onMessage);
      },
      onclose: () => this.listenLost(),
    };
    this.listenSql = postgres(opts.url, listenOptions);
  }

  /**
   * Listens until stop(), from the first time the database lets it (resolves then).
   * `onMessage` gets every other controller's messages; `onListening` runs each time
   * the listen connection is (re)made: messages sent while it was down are lost, so
   * that is the moment to catch up.
   */
  async start(onMessage: (m: BusMessage) => void, onListening: () => void): Promise<void> {
    let first: () => void = () => {};
    const listening = new Promise<void>((resolve) => {
      first = resolve;
      this.startWaits = resolve;
    });
    this.handlers = {
      onMessage,
      onListening: () => {
        first();
        onListening();
      },
    };
    this.tryListen(RETRY_FIRST_MS);
    await listening;
  }

  /** LISTEN, again and again (backing off) until it holds: the connection is made anew as needed. */
  private tryListen(wait: number): void {
    if (this.listen !== 'idle' || !this.handlers) return;
    this.listen = 'trying';
    this.listenSql`listen ${this.listenSql.unsafe(`"${BUS_CHANNEL}"`)}`.then(
      () => {
        if (this.listen !== 'trying') return;
        if (this.failing || this.cut) this.opts.log('bus: listening again; catching up on what was missed');
        this.failing = false;
        this.cut = false;
        this.listen = 'listening';
        this.handlers?.onListening();
      },
      (err: unknown) => {
        if (this.listen !== 'trying') return;
        if (!this.failing) this.opts.log(`bus: cannot listen (${err instanceof Error ? err.message : String(err)}); trying again until it can`);
        this.failing = true;
        this.listen = 'idle';
        this.retry = setTimeout(() => this.tryListen(Math.min(wait * 2, RETRY_MAX_MS)), wait);
      },
    );
  }

  /** Ends start()'s wait when stop() comes first. */
  private startWaits: () => void = () => {};
  /** Said once per spell of failures. */
  private failing = false;
  /** The listen connection was lost since it last listened. */
  private cut = false;

  /** The listen connection closed (the database restarted, or moved): listen again. */
  private listenLost(): void {
    if (this.listen !== 'listening') return;
    this.listen = 'idle';
    this.cut = true;
    this.tryListen(RETRY_FIRST_MS);
  }

  /**
   * Sends a message to the other controllers; a failure is logged, never
   * thrown (it is a hint). Messages published in one turn of the event loop
   * leave in one statement, in order (a pass that starts a hundred jobs
   * tells them in one round trip).
   */
  publish(m: BusMessage): void {
    if (this.stopped) return;
    const payload = encode({ from: this.id, n: this.sent++, m });
    if (payload === null) {
      this.opts.log(`bus: a ${m.t} message is over ${MAX_PAYLOAD_BYTES} bytes and was not sent`);
      return;
    }
    this.outbox.push(payload);
    if (this.outbox.length === 1) setImmediate(() => this.send());
  }

  private outbox: string[] = [];
  /** The NOTIFYs on their way: stop() lets them leave before it closes the connection. */
  private readonly sending = new Set<Promise<unknown>>();
  private stopped = false;
  /** Messages published so far (each envelope's `n`). */
  private sent = 0;

  private send(): void {
    const payloads = this.outbox;
    this.outbox = [];
    if (payloads.length === 0) return;
    const sent =
      payloads.length === 1
        ? this.sql`select pg_notify(${BUS_CHANNEL}, ${payloads[0]!})`
        : this.sql`select pg_notify(${BUS_CHANNEL}, p) from unnest(${payloads}::text[]) p`;
    const done = sent.catch((err: unknown) => this.opts.log(`bus: could not publish ${payloads.length} message(s): ${String(err)}`));
    this.sending.add(done);
    void done.finally(() => this.sending.delete(done));
  }

  /**
   * The payload of `m` for a NOTIFY that another statement sends (a claim
   * announces its start at its own commit: one round trip less); null when
   * it is too big to send.
   */
  envelope(m: BusMessage): string | null {
    return encode({ from: this.id, n: this.sent++, m });
  }

  /** Sends what was published (the last changes other controllers must hear), then closes. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.listen = 'stopped';
    if (this.retry) clearTimeout(this.retry);
    this.startWaits();
    this.send();
    await Promise.all(this.sending);
    await this.listenSql.end({ timeout: 1 }).catch(() => {});
    await this.sql.end({ timeout: 1 }).catch(() => {});
  }

  private receive(payload: string, onMessage: (m: BusMessage) => void): void {
    let env: Envelope;
    try {
      env = JSON.parse(payload) as Envelope;
    } catch {
      return;
    }
    if (env.from === this.id || !env.m || typeof env.m.t !== 'string') return;
    try {
      onMessage(env.m);
    } catch (err) {
      this.opts.log(`bus: handling a ${env.m.t} message failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

/** The envelope as a NOTIFY payload; a job event's reason is shortened to fit, anything else too big is null. */
export function encode(env: Envelope): string | null {
  let text = JSON.stringify(env);
  if (Buffer.byteLength(text) <= MAX_PAYLOAD_BYTES) return text;
  if (env.m.t === 'job' && 'reason' in env.m.event && env.m.event.reason) {
    const event = { ...env.m.event, reason: `${env.m.event.reason.slice(0, 1000)}…` };
    text = JSON.stringify({ ...env, m: { ...env.m, event } });
    if (Buffer.byteLength(text) <= MAX_PAYLOAD_BYTES) return text;
  }
  return null;
}

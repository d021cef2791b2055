// Whether the database answers and takes writes, judged by a trivial query on
// a connection of its own (a busy pool must not look like a dead database).
// A standby answers reads: in a switchover (Patroni, CloudNativePG) the server
// reached may be one until it is promoted, and a SELECT 1 passes there while
// every write fails, so the check asks whether it is in recovery or read-only.
// A stopped Postgres (SIGSTOP, a stalled disk) accepts connections and answers
// nothing, so only a deadline tells it apart: past it the database counts as
// away. While it is away, requests get 503 at once instead of hanging, and
// anything that judges time by timestamps written to it (host liveness)
// waits until it has answered for long enough again.
import postgres from 'postgres';
import { sessionAttrs } from './database-url';

export interface DbHealthOptions {
  url: string;
  /** How often to ask. */
  everyMs?: number;
  /** An answer later than this means the database is away. */
  deadlineMs?: number;
  log: (msg: string) => void;
}

export class DbHealth {
  private readonly sql: postgres.Sql;
  private readonly everyMs: number;
  private readonly deadlineMs: number;
  private timer: NodeJS.Timeout | null = null;
  /** When the current unbroken run of answers began; null while away. */
  private upSince: number | null = Date.now();
  private asking: { since: number } | null = null;
  private readonly waiters = new Set<() => void>();

  constructor(private readonly opts: DbHealthOptions) {
    this.sql = postgres(opts.url, {
      ...sessionAttrs(opts.url),
      max: 1,
      onnotice: () => {},
      connect_timeout: 5,
      connection: { application_name: 'rc-health' },
      transform: { column: { from: postgres.toCamel } },
    });
    this.everyMs = opts.everyMs ?? 1000;
    this.deadlineMs = opts.deadlineMs ?? 3000;
  }

  start(): void {
    this.timer = setInterval(() => this.check(), this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sql.end({ timeout: 1 }).catch(() => {});
  }

  /** A trivial query on this check's own connection: the pool-wait sample's baseline (server/metrics.ts). */
  async ping(): Promise<void> {
    await this.sql`select 1`;
  }

  get up(): boolean {
    return this.upSince !== null;
  }

  /** Milliseconds the database has answered without a break (0 while away). */
  upForMs(now = Date.now()): number {
    return this.upSince === null ? 0 : now - this.upSince;
  }

  /** Calls fn once when the database is next found away; returns how to stop waiting. */
  onDown(fn: () => void): () => void {
    this.waiters.add(fn);
    return () => {
      this.waiters.delete(fn);
    };
  }

  private check(): void {
    const now = Date.now();
    if (this.asking) {
      if (now - this.asking.since > this.deadlineMs) this.markDown(`it has not answered for ${Math.round((now - this.asking.since) / 1000)}s`);
      return;
    }
    const asking = { since: now };
    this.asking = asking;
    this.sql<{ recovery: boolean; readOnly: string }[]>`select pg_is_in_recovery() as recovery, current_setting('transaction_read_only') as read_only`.then(
      ([row]) => {
        if (this.asking === asking) this.asking = null;
        if (row?.recovery) this.markDown('it is a standby, in recovery: it takes no writes');
        else if (row?.readOnly !== 'off') this.markDown('it is read-only (transaction_read_only is on)');
        else this.markUp();
      },
      (err: unknown) => {
        if (this.asking === asking) this.asking = null;
        this.markDown(`it did not answer: ${(err as Error).message ?? String(err)}`);
      },
    );
  }

  private markDown(why: string): void {
    if (this.upSince === null) return;
    this.upSince = null;
    this.opts.log(`the database cannot be used (${why}); requests get 503 database_unavailable until it is back`);
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const w of waiting) w();
  }

  private markUp(): void {
    if (this.upSince !== null) return;
    this.upSince = Date.now();
    this.opts.log('the database answers again and takes writes');
  }
}

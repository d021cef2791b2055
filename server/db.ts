// One way to reach Postgres: drizzle over postgres.js.
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import * as schema from '../db/schema';
import { sessionAttrs } from './database-url';
import { MIGRATIONS_DIR } from './paths';

export type Db = PostgresJsDatabase<typeof schema>;
/** A transaction or the database itself: use cases accept either. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type DbOrTx = Db | Tx;
/**
 * The raw client, for hot-path SQL: tagged templates are prepared once per connection.
 * Its rows read like drizzle's (`typeof jobs.$inferSelect`): camelCase keys, int8 as
 * numbers, timestamps as Dates, so `sql<JobRow[]>\`select * from jobs\`` needs no mapper.
 */
export type Sql = postgres.Sql<{ int8: number }>;

export interface Database {
  db: Db;
  client: Sql;
  close(): Promise<void>;
  /** Where it connects: the migrator opens its own plain client (runMigrations). */
  url: string;
}

const INT8 = 20;
const TIMESTAMPTZ = 1184;

/** int8 as a number: rc's bigints (ids, seq, fence, counts) stay far below 2^53, and one that did not would be refused, not rounded. */
const int8 = {
  to: INT8,
  from: [INT8],
  serialize: (x: number | bigint | string) => String(x),
  parse: (x: string) => {
    const n = Number(x);
    if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${x} does not fit a JavaScript number exactly`);
    return n;
  },
};

/**
 * Column names only (snake_case in SQL, camelCase in JS, both ways: rows read and
 * `sql(obj)` helpers written). Not postgres.camel itself: that one also renames the
 * top-level keys of json values, which are data (audit details, evidence), not columns.
 */
const camelColumns = { column: { from: postgres.toCamel, to: postgres.fromCamel } };

/** `settings`: run-time parameters of its connections (e.g. a pool whose commits need not wait for the disk). */
export function connect(url: string, max = 10, settings: Record<string, string> = { application_name: 'rc' }): Database {
  const client = postgres(url, {
    ...sessionAttrs(url),
    max,
    onnotice: () => {},
    connection: settings,
    types: { int8 },
    transform: camelColumns,
  });
  const db = drizzle(client, { schema });
  // drizzle's driver makes timestamps come back as text (its columns parse them, and take a Date as well):
  // raw SQL gets them as Dates again, like drizzle's rows. rc stores only timestamptz.
  client.options.parsers[TIMESTAMPTZ] = (x: string) => new Date(x);
  return { db, client, url, close: () => client.end({ timeout: 2 }) };
}

/**
 * Applies the generated SQL migrations; an advisory lock keeps two controllers from racing.
 * drizzle's migrator reads its own table by snake_case key (created_at), so it runs on a
 * plain client of its own, without the camelCase transform (which would hide the last
 * migration applied and skip every new one).
 */
export async function runMigrations(database: Database): Promise<void> {
  const lock = await database.client.reserve();
  const plain = postgres(database.url, { ...sessionAttrs(database.url), max: 1, onnotice: () => {}, connection: { application_name: 'rc-migrate' } });
  try {
    await lock`select pg_advisory_lock(7431001)`;
    await migrate(drizzle(plain), { migrationsFolder: MIGRATIONS_DIR });
  } finally {
    await lock`select pg_advisory_unlock(7431001)`.catch(() => {});
    lock.release();
    await plain.end({ timeout: 2 }).catch(() => {});
  }
}

/** Errors that mean the database is away (refused, closed, restarting) or takes no writes just now (a standby), not that the request was wrong. */
const DOWN_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'DATABASE_STALLED',
]);

export function databaseDown(err: unknown): boolean {
  const code = errorCode(err);
  if (code === null) return false;
  // 57P0x: shutting down or starting up; 08xxx: connection exceptions; 53300: too many connections;
  // 25006: a read-only server (a standby not yet promoted, in a switchover): the write waits for the primary.
  return DOWN_CODES.has(code) || /^(57P0[1-3]|08[0-9A-Z]{3}|53300|25006)$/.test(code);
}

/** Postgres could not write for lack of disk space (53100 disk_full: a table or index could not grow). */
export function outOfSpace(err: unknown): boolean {
  return errorCode(err) === '53100';
}

/** The error's code (SQLSTATE or a connection code), looking through drizzle's wrapper (its `cause`). */
export function errorCode(err: unknown): string | null {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return null;
}

/** Tries a statement that Postgres may pick as a deadlock's victim: it rolled back whole, so running it again is safe. */
export async function retryDeadlock<T>(run: () => Promise<T>, tries = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await run();
    } catch (err) {
      if (i >= tries || errorCode(err) !== '40P01') throw err;
      // Apart a little, so the two that met do not meet again at once.
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * i));
    }
  }
}

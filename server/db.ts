// One way to reach Postgres: drizzle over postgres.js.
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import * as schema from '../db/schema';
import { MIGRATIONS_DIR } from './paths';

export type Db = PostgresJsDatabase<typeof schema>;
/** A transaction or the database itself: use cases accept either. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type DbOrTx = Db | Tx;
/** The raw client, for hot-path SQL: tagged templates are prepared once per connection. */
export type Sql = postgres.Sql;

export interface Database {
  db: Db;
  client: postgres.Sql;
  close(): Promise<void>;
}

export function connect(url: string, max = 10): Database {
  const client = postgres(url, { max, onnotice: () => {}, connection: { application_name: 'rc' } });
  const db = drizzle(client, { schema });
  return { db, client, close: () => client.end({ timeout: 2 }) };
}

/** Applies the generated SQL migrations; an advisory lock keeps two controllers from racing. Needs a pool of 2 or more. */
export async function runMigrations(database: Database): Promise<void> {
  const lock = await database.client.reserve();
  try {
    await lock`select pg_advisory_lock(7431001)`;
    await migrate(database.db, { migrationsFolder: MIGRATIONS_DIR });
  } finally {
    await lock`select pg_advisory_unlock(7431001)`.catch(() => {});
    lock.release();
  }
}

/** Errors that mean the database is away (refused, closed, restarting), not that the request was wrong. */
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
  // 57P0x: shutting down or starting up; 08xxx: connection exceptions; 53300: too many connections.
  return DOWN_CODES.has(code) || /^(57P0[1-3]|08[0-9A-Z]{3}|53300)$/.test(code);
}

/** The error's code (SQLSTATE or a connection code), looking through drizzle's wrapper (its `cause`). */
export function errorCode(err: unknown): string | null {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return null;
}

// A fresh database per test file, cloned from the migrated template that
// scripts/test.mjs prepared: real Postgres, no mocks, no leftovers between files.
import { randomBytes } from 'node:crypto';
import { connect, type Database } from '../../server/db';

export function pgUrl(): string {
  const url = process.env.RC_TEST_PG_URL;
  if (!url) throw new Error('RC_TEST_PG_URL is not set: run the tests with npm test');
  return url;
}

export async function freshDatabase(): Promise<{ url: string; database: Database; drop(): Promise<void> }> {
  const name = `rc_t_${randomBytes(5).toString('hex')}`;
  const admin = connect(pgUrl(), 1);
  await admin.client.unsafe(`create database ${name} template rc_template`);
  await admin.close();
  const url = pgUrl().replace(/\/postgres$/, `/${name}`);
  const database = connect(url, 10);
  return {
    url,
    database,
    drop: async () => {
      await database.close();
      const a = connect(pgUrl(), 1);
      await a.client.unsafe(`drop database if exists ${name} with (force)`);
      await a.close();
    },
  };
}

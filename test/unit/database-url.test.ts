// DATABASE_URL as Postgres clients take it: behind Patroni or CloudNativePG it names
// every server, `host1:5432,host2:5432`, with target_session_attrs=read-write, which
// a WHATWG URL parser refuses (it is not one host).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig as load } from '../../server/config';

const loadConfig = (env: Record<string, string>) => load(env as NodeJS.ProcessEnv);

test('DATABASE_URL takes one server or several, and refuses what no Postgres client would read, saying why', () => {
  for (const url of [
    'postgres://rc:secret@db.internal:5432/rc',
    'postgresql://rc@db.internal/rc',
    'postgres://rc:secret@db1.internal:5432,db2.internal:5433/rc?target_session_attrs=read-write',
    'postgres://rc:s%40cret@10.0.0.1,10.0.0.2,10.0.0.3/rc?target_session_attrs=read-write&sslmode=require',
    'postgres://rc@[::1]:5432,[fd00::2]:5432/rc',
  ])
    assert.equal(loadConfig({ DATABASE_URL: url }).DATABASE_URL, url, url);
  for (const url of [
    'db.internal:5432/rc',
    'http://db.internal/rc',
    'postgres://rc@db1:5432,,db2/rc',
    'postgres://rc@db1:port/rc',
    'postgres://rc@db1:5432,db2:99999/rc',
    'postgres://rc@db1/rc?target_session_attrs=read-writ',
  ])
    assert.throws(() => loadConfig({ DATABASE_URL: url }), /bad environment variable DATABASE_URL: /, url);
  assert.throws(() => loadConfig({ DATABASE_URL: 'http://db.internal/rc' }), /a postgres:\/\/ or postgresql:\/\/ URL/);
  assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://rc@db1:5432,db2:x/rc' }), /db2:x/);
  assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://rc@db1/rc?target_session_attrs=read-writ' }), /target_session_attrs/);
});

// The fleet page's data kept between requests (server/fleet-cache.ts), on a
// real database: what it serves until a change is told, what a change
// refreshes (one host, or all), a change during a load, a host that goes,
// and the age bound that covers a missed notification.
import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import type { Database } from '../../server/db';
import { FleetCache, MAX_AGE_MS } from '../../server/fleet-cache';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;
let clock = 0;

before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  drop = fresh.drop;
});
after(async () => drop());
beforeEach(async () => {
  const sql = db.client;
  await sql`delete from hosts`;
  await sql`insert into hosts (name, status) values ('a', 'online'), ('b', 'online')`;
  await sql`insert into devices (host_name, index) values ('a', 0), ('a', 1), ('b', 0)`;
  clock = 1_000_000;
});

const setStatus = (host: string, status: string) => db.client`update hosts set status = ${status} where name = ${host}`;
const states = async (cache: FleetCache, host?: string) => (await cache.fleet(host)).devices.map((d) => `${d.name}:${d.state}`);

test('served from memory until a change on a host is told; then that host is loaded again, and only it', async () => {
  const cache = new FleetCache(db.client, () => clock);
  assert.deepEqual(await states(cache), ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:free']);
  await setStatus('a', 'offline');
  await setStatus('b', 'offline');
  assert.deepEqual(await states(cache), ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:free'], 'nothing told: the kept fleet');
  cache.changed({ what: 'jobs', jobId: 'j1' });
  cache.changed({ what: 'samples' });
  assert.deepEqual(await states(cache), ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:free'], 'changes of other kinds keep it');
  cache.changed({ what: 'devices', host: 'a' });
  assert.deepEqual(await states(cache), ['a:gpu0:offline', 'a:gpu1:offline', 'b:gpu0:free'], 'a loaded again, b kept');
  cache.changed({ what: 'devices' });
  assert.deepEqual(await states(cache), ['a:gpu0:offline', 'a:gpu1:offline', 'b:gpu0:offline'], 'a change naming no host: all of it');
});

test('the queue is counted every time', async () => {
  const cache = new FleetCache(db.client, () => clock);
  assert.equal((await cache.fleet()).queued, 0);
  await db.client`insert into jobs (id, submitter, argv) values ('jq', 't', '["true"]'::jsonb)`;
  assert.equal((await cache.fleet()).queued, 1);
  await db.client`delete from jobs`;
});

test('a change told while a load runs leaves its host stale for the next request', async () => {
  const cache = new FleetCache(db.client, () => clock);
  await cache.fleet();
  cache.changed({ what: 'devices', host: 'b' });
  const loading = cache.fleet();
  // The load of b is under way (its statement sent, or about to be); b changes again meanwhile.
  await setStatus('b', 'offline');
  cache.changed({ what: 'devices', host: 'b' });
  await loading;
  assert.deepEqual(await states(cache), ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:offline']);
});

test('a host that is gone leaves the fleet; a new one joins when its change is told', async () => {
  const cache = new FleetCache(db.client, () => clock);
  await cache.fleet();
  await db.client`delete from hosts where name = 'b'`;
  await db.client`insert into hosts (name, status) values ('c', 'online')`;
  await db.client`insert into devices (host_name, index) values ('c', 0)`;
  cache.changed({ what: 'devices', host: 'b' });
  cache.changed({ what: 'devices', host: 'c' });
  const f = await cache.fleet();
  assert.deepEqual(
    f.hosts.map((h) => h.name),
    ['a', 'c'],
  );
  assert.deepEqual(await states(cache), ['a:gpu0:free', 'a:gpu1:free', 'c:gpu0:free']);
});

test('one host is read through (and kept); an unknown host is not_found', async () => {
  const cache = new FleetCache(db.client, () => clock);
  await cache.fleet();
  await setStatus('a', 'offline');
  assert.deepEqual(await states(cache, 'a'), ['a:gpu0:offline', 'a:gpu1:offline'], 'one host is always read');
  assert.deepEqual(await states(cache), ['a:gpu0:offline', 'a:gpu1:offline', 'b:gpu0:free'], 'and kept for the whole');
  await assert.rejects(cache.fleet('nope'), /no host is named nope/);
});

test('a missed notification is wrong for at most MAX_AGE_MS', async () => {
  const cache = new FleetCache(db.client, () => clock);
  await cache.fleet();
  await setStatus('a', 'offline');
  clock += MAX_AGE_MS - 1;
  assert.deepEqual((await states(cache))[0], 'a:gpu0:free');
  clock += 2;
  assert.deepEqual((await states(cache))[0], 'a:gpu0:offline');
});

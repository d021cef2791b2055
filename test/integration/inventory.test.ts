// The fleet kept in memory (server/inventory.ts), on a real database: what
// it serves until a change is told, what a change loads again (one host, or
// all), leases applied from job events without a load, a change during a
// load, a host that goes, the age backstop, and the selector cache.
import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { parseSelector } from '../../core/selector';
import type { Database } from '../../server/db';
import { Inventory, MAX_AGE_MS } from '../../server/inventory';
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
const states = async (inv: Inventory, host?: string) => (await inv.fleet(host)).devices.map((d) => `${d.name}:${d.state}`);
const holder = (jobId: string) => ({ jobId, kind: 'run' as const, submitter: 's', since: new Date(0).toISOString() });
const terms = (text: string) => {
  const p = parseSelector(text);
  assert.ok(p.ok);
  return p.terms;
};

test('served from memory until a change on a host is told; then that host is loaded again, and only it', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  assert.deepEqual(await states(inv), ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:free']);
  await setStatus('a', 'offline');
  await setStatus('b', 'offline');
  assert.deepEqual(await states(inv), ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:free'], 'nothing told: the kept fleet');
  inv.changed('a');
  assert.deepEqual(await states(inv), ['a:gpu0:offline', 'a:gpu1:offline', 'b:gpu0:free'], 'a loaded again, b kept');
  assert.deepEqual(await states(inv, 'a'), ['a:gpu0:offline', 'a:gpu1:offline'], 'one host');
  inv.changed();
  assert.deepEqual(await states(inv), ['a:gpu0:offline', 'a:gpu1:offline', 'b:gpu0:offline'], 'a change naming no host: all of it');
});

test('many hosts told at once (a fleet saying hello) are loaded together, not the whole fleet', async () => {
  const names = Array.from({ length: 60 }, (_, i) => `m${String(i).padStart(2, '0')}`);
  await db.client`insert into hosts (name, status) select unnest(${names}::text[]), 'online'`;
  await db.client`insert into devices (host_name, index) select unnest(${names}::text[]), 0`;
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  await inv.fleet();
  await db.client`update hosts set status = 'offline'`;
  for (const n of names) inv.changed(n);
  const after = await states(inv);
  assert.deepEqual(
    after.filter((d) => d.startsWith('m')),
    names.map((n) => `${n}:gpu0:offline`),
    'every host told: loaded again',
  );
  assert.deepEqual(
    after.filter((d) => !d.startsWith('m')),
    ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:free'],
    'the hosts not told are kept as they were (no load of the whole fleet)',
  );
});

test('leases come from job events, without a load: a start makes its devices busy, its end frees them', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  await inv.fleet();
  inv.leased('a', ['a:gpu1'], holder('j1'));
  assert.deepEqual(await states(inv), ['a:gpu0:free', 'a:gpu1:busy', 'b:gpu0:free']);
  assert.equal((await inv.rows()).find((d) => d.name === 'a:gpu1')!.holder?.jobId, 'j1');
  assert.deepEqual(
    (await inv.schedulable((h) => h === 'a')).map((d) => d.name),
    ['a:gpu0'],
    'a pass here sees only the free devices of hosts connected here',
  );
  inv.released('j1');
  assert.deepEqual(await states(inv), ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:free']);
  assert.deepEqual(inv.byState(), { free: 3, busy: 0, off: 0, unhealthy: 0, offline: 0 });
});

test('a device a claim here is taking is free to nobody else here until the claim settles', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  const [a0] = (await inv.candidates([], 'a:gpu0')).matching;
  assert.ok(a0?.view.free);
  inv.reserve([a0.row.id]);
  assert.equal(a0.view.free, false);
  assert.deepEqual(
    (await inv.schedulable(() => true)).map((d) => d.name),
    ['a:gpu1', 'b:gpu0'],
  );
  inv.settle([a0.row.id]);
  assert.equal(a0.view.free, true);
});

test('a load that began before a lease changed keeps the change', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  await inv.fleet();
  inv.changed('a');
  const loading = inv.fleet();
  // The database has no lease (the claim is someone else's test): the event is what the load must not undo.
  inv.leased('a', ['a:gpu0'], holder('j2'));
  await loading;
  assert.deepEqual(await states(inv, 'a'), ['a:gpu0:busy', 'a:gpu1:free']);
});

test('the leases in the database are what a load shows', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  await db.client`insert into jobs (id, submitter, argv, state, host_name) values ('jl', 't', '["true"]'::jsonb, 'running', 'b')`;
  await db.client`insert into leases (device_id, job_id) select id, 'jl' from devices where host_name = 'b'`;
  assert.deepEqual(await states(inv), ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:busy']);
  inv.released('jl');
  assert.deepEqual(await states(inv, 'b'), ['b:gpu0:free'], 'its end, told, frees it');
  await db.client`delete from leases`;
  await db.client`delete from jobs`;
});

test('the queue is counted every time', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  assert.equal((await inv.fleet()).queued, 0);
  await db.client`insert into jobs (id, submitter, argv) values ('jq', 't', '["true"]'::jsonb)`;
  assert.equal((await inv.fleet()).queued, 1);
  await db.client`delete from jobs`;
});

test('a change told while a load runs leaves its host stale for the next request', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  await inv.fleet();
  inv.changed('b');
  const loading = inv.fleet();
  await setStatus('b', 'offline');
  inv.changed('b');
  await loading;
  assert.deepEqual(await states(inv), ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:offline']);
});

test('a host that is gone leaves the fleet; a new one joins when its change is told', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  await inv.fleet();
  await db.client`delete from hosts where name = 'b'`;
  await db.client`insert into hosts (name, status) values ('c', 'online')`;
  await db.client`insert into devices (host_name, index) values ('c', 0)`;
  inv.changed('b');
  inv.changed('c');
  const f = await inv.fleet();
  assert.deepEqual(
    f.hosts.map((h) => h.name),
    ['a', 'c'],
  );
  assert.deepEqual(await states(inv), ['a:gpu0:free', 'a:gpu1:free', 'c:gpu0:free']);
  assert.equal(await inv.hasHost('b'), false);
  assert.deepEqual((await inv.candidates([], 'b:gpu0')).matching, []);
});

test('a missed notification is wrong for at most MAX_AGE_MS: then a load in the background puts it right', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  await inv.fleet();
  await setStatus('a', 'offline');
  clock += MAX_AGE_MS - 1;
  assert.deepEqual((await states(inv))[0], 'a:gpu0:free');
  clock += 2;
  // This read starts the load in the background (it may or may not be done by the time the read answers).
  await states(inv);
  let now: string | undefined;
  for (let i = 0; i < 100 && now !== 'a:gpu0:offline'; i++) {
    await new Promise((r) => setTimeout(r, 20));
    now = (await states(inv))[0];
  }
  assert.equal(now, 'a:gpu0:offline');
});

test('what a selector matches is kept until the labels change', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  await db.client`insert into labels (host_name, device_index, key, value, source) values ('a', 0, 'vram', '80G', 'detected'), ('b', 0, 'vram', '24G', 'detected')`;
  const big = terms('vram>=40G');
  assert.deepEqual(
    (await inv.candidates(big, null)).matching.map((m) => m.row.name),
    ['a:gpu0'],
  );
  await db.client`update labels set value = '48G' where host_name = 'b'`;
  assert.deepEqual(
    (await inv.candidates(terms('vram>=40G'), null)).matching.map((m) => m.row.name),
    ['a:gpu0'],
    'nothing told',
  );
  inv.changed('b');
  assert.deepEqual(
    (await inv.candidates(terms('vram>=40G'), null)).matching.map((m) => m.row.name),
    ['a:gpu0', 'b:gpu0'],
    'b loaded again: its new label matches',
  );
  assert.deepEqual(
    (await inv.rows(terms('vram<=50G'))).map((d) => d.name),
    ['b:gpu0'],
  );
  await db.client`delete from labels`;
});

test('the most devices a selector finds on one host, not quarantined, kept with the match and counted again when a host is loaded', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  const most = async (text: string) => (await inv.candidates(text ? terms(text) : [], null)).most;
  assert.equal(await most(''), 2, 'a has two');
  inv.leased('a', ['a:gpu0'], holder('j1'));
  assert.equal(await most(''), 2, 'a busy device counts: the job may wait for it');
  await db.client`update devices set unhealthy_since = now(), unhealthy_reason = 'xid 79' where host_name = 'a' and index = 1`;
  assert.equal(await most(''), 2, 'nothing told');
  inv.changed('a');
  assert.equal(await most(''), 1, 'a loaded again: one of its two is quarantined');
  await db.client`insert into labels (host_name, device_index, key, value, source) values ('a', 0, 'vram', '80G', 'detected'), ('a', 1, 'vram', '80G', 'detected')`;
  inv.changed('a');
  assert.equal(await most('vram>=40G'), 1, 'with a selector: the same count over what it matches');
  await db.client`update devices set unhealthy_since = now(), unhealthy_reason = 'xid 79' where host_name = 'a'`;
  inv.changed('a');
  assert.equal(await most('vram>=40G'), 0, 'every match quarantined');
  assert.equal(await most(''), 1, 'b still has one');
  await db.client`delete from labels`;
});

test('the listing (JSON kept per device) follows every change: a lease, its end, a sample, a load', async () => {
  const inv = new Inventory(
    db.client,
    () => {},
    () => clock,
  );
  const listed = async () => (JSON.parse(await inv.listing()) as { devices: { name: string; state: string; gpu: { utilPct: number } | null }[] }).devices;
  assert.deepEqual(
    (await listed()).map((d) => `${d.name}:${d.state}`),
    ['a:gpu0:free', 'a:gpu1:free', 'b:gpu0:free'],
  );
  inv.leased('a', ['a:gpu0'], holder('j3'));
  assert.equal((await listed())[0]!.state, 'busy');
  inv.released('j3');
  assert.equal((await listed())[0]!.state, 'free');
  inv.sampled('b', [{ index: 0, name: 'H100', memTotalMiB: 80, memUsedMiB: 1, utilPct: 42 }], new Date());
  assert.equal((await listed())[2]!.gpu?.utilPct, 42);
  await setStatus('a', 'offline');
  inv.changed('a');
  assert.deepEqual(
    (await listed()).map((d) => d.state),
    ['offline', 'offline', 'free'],
  );
  // The same devices as the rows with details, less the details.
  assert.deepEqual(
    await listed(),
    (await inv.rows()).map(({ labelDetails: _, ...d }) => d),
  );
});

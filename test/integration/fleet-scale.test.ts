// The fleet view at the scale it is meant for: 1,000 hosts, 8,000 devices,
// ~100,000 labels. GET /api/fleet (no label details) and one host's view
// must stay cheap; the numbers are printed for the record.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Database } from '../../server/db';
import { loadDevices } from '../../server/fleet';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;

before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  drop = fresh.drop;
  const sql = db.client;
  await sql`insert into hosts (name, status) select 'h' || lpad(g::text, 4, '0'), 'online' from generate_series(1, 1000) g`;
  await sql`insert into devices (host_name, index) select h.name, i from hosts h, generate_series(0, 7) i`;
  await sql`insert into labels (host_name, device_index, key, value, source)
    select h.name, -1, 'host_' || k, 'v' || k, 'detected' from hosts h, generate_series(1, 5) k`;
  await sql`insert into labels (host_name, device_index, key, value, source)
    select d.host_name, d.index, 'dev_' || k, 'v' || k, 'detected' from devices d, generate_series(1, 12) k`;
  // Keys set on both levels and by both sources: the merge rule decides (a device's own beats its host's, declared beats detected).
  await sql`insert into labels (host_name, device_index, key, value, source)
    select h.name, -1, k, 'host-declared', 'declared' from hosts h, unnest(array['dev_1', 'host_1']) k`;
  await sql`insert into labels (host_name, device_index, key, value, source)
    select d.host_name, d.index, 'dev_2', 'device-declared', 'declared' from devices d where d.index % 2 = 0`;
  await sql`analyze`;
});
after(async () => drop());

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  await fn(); // warm: prepared statements, caches
  const t0 = performance.now();
  const value = await fn();
  return { value, ms: Math.round(performance.now() - t0) };
}

test('the fleet of 1,000 hosts and 8,000 devices loads in well under a second; one host in milliseconds', async () => {
  const fleet = await timed(async () => ({ devices: await loadDevices(db.client, { details: false }) }));
  assert.equal(fleet.value.devices.length, 8000);
  assert.equal(Object.keys(fleet.value.devices[0]!.labels).length, 17);
  const full = await timed(() => loadDevices(db.client));
  const one = await timed(async () => ({ devices: await loadDevices(db.client, { host: 'h0500', details: false }) }));
  assert.equal(one.value.devices.length, 8);
  // The summaries' merged labels are exactly those of the full rows.
  assert.deepEqual(
    fleet.value.devices.map((d) => d.labels),
    full.value.map((d) => d.labels),
  );
  assert.deepEqual(
    { dev_1: full.value[0]!.labels.dev_1, dev_2: full.value[0]!.labels.dev_2, host_1: full.value[0]!.labels.host_1 },
    { dev_1: 'v1', dev_2: 'device-declared', host_1: 'host-declared' },
  );
  console.log(`fleet (summaries): ${fleet.ms} ms; devices with label details: ${full.ms} ms; one host: ${one.ms} ms`);
  assert.ok(fleet.ms < 3000, `the fleet took ${fleet.ms} ms`);
  assert.ok(one.ms < 200, `one host took ${one.ms} ms`);
});

test("a load sees a host's devices with their labels, never the devices alone (one snapshot for both)", async () => {
  const sql = db.client;
  let torn = 0;
  for (let i = 0; i < 200; i++) {
    const name = `t${i}`;
    await sql`insert into hosts (name, status) values (${name}, 'online')`;
    // A hello: the devices and their labels in one transaction, committing while loads run.
    const hello = sql.begin(async (tx) => {
      await tx`insert into devices (host_name, index) values (${name}, 0)`;
      await tx`insert into labels (host_name, device_index, key, value, source) values (${name}, 0, 'gpu_model', 'H100', 'detected')`;
    });
    const loads = await Promise.all([loadDevices(sql, { hosts: [name] }), loadDevices(sql, { hosts: [name] }), hello.then(() => null)]);
    for (const rows of loads) for (const d of rows ?? []) if (d.labels.gpu_model !== 'H100') torn += 1;
  }
  assert.equal(torn, 0, `${torn} loads saw a device without its labels`);
});

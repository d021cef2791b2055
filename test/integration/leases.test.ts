// The lease rules against a real Postgres: one active lease per device, held
// by the database itself; claims that race; fences that refuse stale reports.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { claimDevices } from '../../server/jobs/claim';
import { finishFromExit, finishJob } from '../../server/jobs/finish';
import { submitJob } from '../../server/jobs/submit';
import type { Database } from '../../server/db';
import type { Identity } from '../../server/auth';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;
const who: Identity = { tokenId: 1, kind: 'client', name: 't', hostName: null };
let deviceId = 0;

before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  drop = fresh.drop;
  await db.client`insert into hosts (name, status) values ('h', 'online')`;
  const [d] = await db.client<{ id: string }[]>`insert into devices (host_name, index) values ('h', 0) returning id`;
  await db.client`insert into devices (host_name, index) values ('h', 1)`;
  deviceId = Number(d!.id);
});
after(async () => drop());

const submit = async () => (await submitJob(db.client, who, { kind: 'run', argv: ['true'], selector: '', submitter: 's', gpus: 1, priority: 0, wait: true })).job;

test('the database refuses a second active lease on a device, whatever the code does', async () => {
  const a = await submit();
  const b = await submit();
  await db.client`insert into leases (device_id, job_id) values (${deviceId}, ${a.id})`;
  await assert.rejects(db.client`insert into leases (device_id, job_id) values (${deviceId}, ${b.id})`, /leases_one_active_per_device/);
  await db.client`update leases set released_at = now() where job_id = ${a.id}`;
  await db.client`insert into leases (device_id, job_id) values (${deviceId}, ${b.id})`;
  await db.client`update leases set released_at = now()`;
});

test('two claims racing for one device: exactly one wins, every round', async () => {
  for (let round = 0; round < 50; round++) {
    const [x, y] = [await submit(), await submit()];
    const results = await Promise.all([
      claimDevices(db.client, x.id, 'h', [{ id: deviceId, name: 'h:gpu0' }]),
      claimDevices(db.client, y.id, 'h', [{ id: deviceId, name: 'h:gpu0' }]),
    ]);
    const winners = results.filter((r) => r !== null);
    assert.equal(winners.length, 1, `round ${round}`);
    const loser = results[0] === null ? x.id : y.id;
    const [l] = await db.client<{ state: string }[]>`select state from jobs where id = ${loser}`;
    assert.equal(l!.state, 'queued', 'the loser stays queued, untouched');
    await finishJob(db.client, winners[0]!.id, winners[0]!.fence, { state: 'succeeded', exitCode: 0, reason: null });
    await finishJob(db.client, loser, null, { state: 'cancelled', exitCode: null, reason: 'test' });
  }
  const [row] = await db.client<{ n: number }[]>`select count(*)::int as n from leases where released_at is null`;
  assert.equal(row!.n, 0);
});

test('a multi-device claim is all or nothing', async () => {
  const holder = await submit();
  const c = await claimDevices(db.client, holder.id, 'h', [{ id: deviceId, name: 'h:gpu0' }]);
  assert.ok(c);
  const [other] = await db.client<{ id: string }[]>`select id from devices where index = 1`;
  const wide = await submit();
  const r = await claimDevices(db.client, wide.id, 'h', [{ id: Number(other!.id), name: 'h:gpu1' }, { id: deviceId, name: 'h:gpu0' }]);
  assert.equal(r, null);
  const [row] = await db.client<{ n: number }[]>`select count(*)::int as n from leases where job_id = ${wide.id}`;
  assert.equal(row!.n, 0, 'no lease on the free device either');
  await finishJob(db.client, holder.id, null, { state: 'succeeded', exitCode: 0, reason: null });
  await finishJob(db.client, wide.id, null, { state: 'cancelled', exitCode: null, reason: 'test' });
});

test('an exit report with a stale fence changes nothing; the current one ends the job and frees the device', async () => {
  const j = await submit();
  const claimed = await claimDevices(db.client, j.id, 'h', [{ id: deviceId, name: 'h:gpu0' }]);
  assert.ok(claimed?.fence);
  assert.equal(await finishFromExit(db.client, j.id, claimed.fence - 1, 0, null), null);
  const [still] = await db.client<{ state: string }[]>`select state from jobs where id = ${j.id}`;
  assert.equal(still!.state, 'running');
  const ended = await finishFromExit(db.client, j.id, claimed.fence, 7, null);
  assert.equal(ended?.state, 'failed');
  assert.equal(ended?.exitCode, 7);
  const [row] = await db.client<{ n: number }[]>`select count(*)::int as n from leases where job_id = ${j.id} and released_at is null`;
  assert.equal(row!.n, 0);
});

test('a kill asked for before the exit turns the outcome into killed, with its reason', async () => {
  const j = await submit();
  const claimed = await claimDevices(db.client, j.id, 'h', [{ id: deviceId, name: 'h:gpu0' }]);
  await db.client`update jobs set kill_requested_by = 'killed by s' where id = ${j.id}`;
  const ended = await finishFromExit(db.client, j.id, claimed!.fence!, null, 'SIGTERM');
  assert.deepEqual([ended?.state, ended?.exitCode, ended?.reason], ['killed', 143, 'killed by s']);
});

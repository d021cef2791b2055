// The lease rules against a real Postgres: one active lease per device, held
// by the database itself; claims that race; fences that refuse stale reports.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { claimBatch, claimDevices, type PlannedClaim } from '../../server/jobs/claim';
import { ended, outcome, type StopRequest } from '../../core/job-state';
import { JobEvents } from '../../server/job-events';
import { EndBatcher } from '../../server/jobs/end-batch';
import { endJob, endJobs } from '../../server/jobs/finish';
import { storeHeartbeats } from '../../server/heartbeat';
import { submitJob } from '../../server/jobs/submit';
import { Inventory } from '../../server/inventory';
import type { Database } from '../../server/db';
import type { Identity } from '../../server/auth';
import type { TransactionSql } from 'postgres';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;
const who: Identity = { tokenId: 1, kind: 'client', name: 't', hostName: null, submitter: null };
let deviceId = 0;

before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  drop = fresh.drop;
  // Away: its devices are not free, so submits queue and these tests claim by hand.
  // The tests of the start at submit (at the end) bring it online.
  await db.client`insert into hosts (name, status) values ('h', 'away')`;
  const [d] = await db.client<{ id: number }[]>`insert into devices (host_name, index) values ('h', 0) returning id`;
  await db.client`insert into devices (host_name, index) values ('h', 1)`;
  deviceId = d!.id;
});
after(async () => drop());

const body = { kind: 'run' as const, argv: ['true'], selector: '', submitter: 's', gpus: 1, priority: 0, wait: true };
/** Each submit sees the database as it is now (a fleet loaded afresh): these tests change it by hand. */
const fresh = () => ({ sql: db.client, inventory: new Inventory(db.client) });
const submit = async () => (await submitJob(fresh(), who, body)).job;

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
    await endJob(deps(), winners[0]!.id, outcome(0, null, null), { from: ['running'], fence: winners[0]!.fence });
    await endJob(deps(), loser, ended('cancelled', 'killed', 'test'), { from: ['queued'] });
  }
  const [row] = await db.client<{ n: number }[]>`select count(*)::int as n from leases where released_at is null`;
  assert.equal(row!.n, 0);
});

test('a multi-device claim is all or nothing', async () => {
  const holder = await submit();
  const c = await claimDevices(db.client, holder.id, 'h', [{ id: deviceId, name: 'h:gpu0' }]);
  assert.ok(c);
  const [other] = await db.client<{ id: number }[]>`select id from devices where index = 1`;
  const wide = await submit();
  const r = await claimDevices(db.client, wide.id, 'h', [
    { id: other!.id, name: 'h:gpu1' },
    { id: deviceId, name: 'h:gpu0' },
  ]);
  assert.equal(r, null);
  const [row] = await db.client<{ n: number }[]>`select count(*)::int as n from leases where job_id = ${wide.id}`;
  assert.equal(row!.n, 0, 'no lease on the free device either');
  await endJob(deps(), holder.id, outcome(0, null, null), { from: ['running'] });
  await endJob(deps(), wide.id, ended('cancelled', 'killed', 'test'), { from: ['queued'] });
});

test('an exit report with a stale fence changes nothing; the current one ends the job and frees the device', async () => {
  const j = await submit();
  const claimed = await claimDevices(db.client, j.id, 'h', [{ id: deviceId, name: 'h:gpu0' }]);
  assert.ok(claimed?.fence);
  assert.equal(await endJob(deps(), j.id, outcome(0, null, null), { from: ['running'], fence: claimed.fence - 1 }), null);
  const [still] = await db.client<{ state: string }[]>`select state from jobs where id = ${j.id}`;
  assert.equal(still!.state, 'running');
  const done = await endJob(deps(), j.id, outcome(7, null, null), { from: ['running'], fence: claimed.fence });
  assert.equal(done?.state, 'failed');
  assert.equal(done?.exitCode, 7);
  assert.equal(done?.endCause, 'exit');
  const [row] = await db.client<{ n: number }[]>`select count(*)::int as n from leases where job_id = ${j.id} and released_at is null`;
  assert.equal(row!.n, 0);
});

test('a kill asked for before the exit turns the outcome into killed, with its reason', async () => {
  const j = await submit();
  const claimed = await claimDevices(db.client, j.id, 'h', [{ id: deviceId, name: 'h:gpu0' }]);
  await db.client`update jobs set kill_requested_by = 'killed by s', kill_cause = 'killed' where id = ${j.id}`;
  const done = await endJob(deps(), j.id, outcome(null, 'SIGTERM', null), { from: ['running'], fence: claimed!.fence! });
  assert.deepEqual([done?.state, done?.exitCode, done?.reason, done?.endCause], ['killed', 143, 'killed by s', 'killed']);
});

test("the statement that ends a job agrees with core's outcome(): a stop asked for earlier wins, whatever the command did", async () => {
  const reports: [number | null, string | null][] = [
    [0, null],
    [1, null],
    [127, null],
    [null, 'SIGTERM'],
    [null, 'SIGKILL'],
    [null, 'SIGSEGV'],
    [null, null],
  ];
  const stops: (StopRequest | null)[] = [
    null,
    { cause: 'killed', reason: 'killed by s' },
    { cause: 'max_runtime', reason: 'max_runtime exceeded' },
    { cause: 'idle', reason: 'idle: no output for 1m' },
    { cause: 'released', reason: 'released by s' },
  ];
  for (const [code, signal] of reports) {
    for (const asked of stops) {
      for (const reported of [null, ...stops]) {
        const j = await submit();
        const claimed = await claimDevices(db.client, j.id, 'h', [{ id: deviceId, name: 'h:gpu0' }]);
        if (asked) await db.client`update jobs set kill_requested_by = ${asked.reason}, kill_cause = ${asked.cause} where id = ${j.id}`;
        const done = await endJob(deps(), j.id, outcome(code, signal, reported), { from: ['running'], fence: claimed!.fence! });
        // What core says: the stop asked for first (in the database) wins over one the worker reports with its exit.
        const want = outcome(code, signal, asked ?? reported);
        const what = `exit ${code} ${signal}, asked ${asked?.cause}, reported ${reported?.cause}`;
        assert.deepEqual([done?.state, done?.exitCode, done?.endCause, done?.reason], [want.state, want.exitCode, want.cause, want.reason], what);
      }
    }
  }
});

/** Devices of a host made for one test (away, so submits queue): their ids and names. */
async function hostWithDevices(name: string, n: number): Promise<{ id: number; name: string }[]> {
  await db.client`insert into hosts (name, status) values (${name}, 'away')`;
  const out: { id: number; name: string }[] = [];
  for (let i = 0; i < n; i++) {
    const [d] = await db.client<{ id: number }[]>`insert into devices (host_name, index) values (${name}, ${i}) returning id`;
    out.push({ id: d!.id, name: `${name}:gpu${i}` });
  }
  return out;
}

/** `n` jobs submitted one after another (queued: no device is free): their ids in queue order. */
async function submitMany(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await submit()).id);
  return ids;
}

/** One claim per device, planned for the jobs `planned` in turn, each able to take any of `alternates`. */
function planOn(host: string, devices: { id: number; name: string }[], planned: string[], alternates: readonly string[]): PlannedClaim[] {
  return devices.map((d, i) => ({ jobId: planned[i]!, hostName: host, devices: [d], alternates }));
}

test('two batch claims that planned the same head of the queue on their own devices both start jobs: the next ones in order, each once', async () => {
  const a = await hostWithDevices('ba', 4);
  const b = await hostWithDevices('bb', 4);
  for (let round = 0; round < 20; round++) {
    const queued = await submitMany(12);
    // Both passes read the same queue and planned its first four jobs, each on its own host's devices.
    const [bx, by] = await Promise.all([claimBatch(db.client, planOn('ba', a, queued, queued)), claimBatch(db.client, planOn('bb', b, queued, queued))]);
    const [x, y] = [bx.claimed, by.claimed];
    assert.deepEqual([bx.unusable, by.unusable], [[], []], 'no claim refused for its devices');
    assert.equal(x.length + y.length, 8, `round ${round}: every device got a job (${x.length} + ${y.length})`);
    const started = [...x, ...y].map((c) => c.job.id);
    assert.equal(new Set(started).size, 8, 'no job started twice');
    assert.deepEqual([...started].sort(), queued.slice(0, 8).sort(), 'the first eight in queue order');
    for (const c of [...x, ...y])
      assert.deepEqual(
        c.job.devices,
        c.claim.devices.map((d) => d.name),
        'each job runs on the devices of the claim it took',
      );
    const leases = await activeLeases();
    assert.equal(new Set(leases.map((l) => l.deviceId)).size, leases.length, 'one active lease per device');
    assert.equal(leases.length, 8);
    await endEverything();
  }
});

test('a batch claim: a planned job ended meanwhile gives its devices to the next of its kind; a quarantined device takes no job', async () => {
  const devices = await hostWithDevices('bc', 3);
  const queued = await submitMany(5);
  await endJob(deps(), queued[0]!, ended('cancelled', 'killed', 'test'), { from: ['queued'] });
  await db.client`update devices set unhealthy_since = now() where id = ${devices[2]!.id}`;
  const { claimed: got, unusable } = await claimBatch(db.client, planOn('bc', devices, queued, queued));
  assert.deepEqual(
    unusable.map((c) => c.devices[0]!.name),
    ['bc:gpu2'],
    'the quarantined device is what was not as planned',
  );
  assert.deepEqual(
    got.map((c) => [c.job.id, c.claim.devices[0]!.name]),
    [
      [queued[1], 'bc:gpu0'],
      [queued[2], 'bc:gpu1'],
    ],
  );
  const [left] = await db.client<{ n: number }[]>`select count(*)::int as n from jobs where state = 'queued'`;
  assert.equal(left!.n, 2, 'the jobs that got no device stay queued');
  await endEverything();
});

test('a batch claim without alternates claims only the planned jobs', async () => {
  const devices = await hostWithDevices('bd', 2);
  const queued = await submitMany(3);
  await endJob(deps(), queued[0]!, ended('cancelled', 'killed', 'test'), { from: ['queued'] });
  const { claimed: got, unusable } = await claimBatch(
    db.client,
    planOn('bd', devices, queued, []).map(({ alternates: _, ...c }) => c),
  );
  assert.deepEqual(
    got.map((c) => c.job.id),
    [queued[1]],
  );
  assert.deepEqual(unusable, [], 'a claim whose job was gone is not refused for its devices');
  await endEverything();
});

test('exit reports ended together (one statement for many): each job ends as endJob alone would end it, a second report of one ends nothing', async () => {
  const devices = await hostWithDevices('be', 30);
  const queued: string[] = [];
  for (let i = 0; i < 30; i++) queued.push((await submit()).id);
  const { claimed } = await claimBatch(db.client, planOn('be', devices, queued, queued));
  assert.equal(claimed.length, 30);
  const fenceOf = new Map(claimed.map((c) => [c.job.id, c.job.fence!]));
  // A stop asked for before the exit: it wins, as with endJob.
  await db.client`update jobs set kill_requested_by = 'rc kill by t', kill_cause = 'killed' where id = ${queued[3]!}`;
  const batcher = new EndBatcher(deps(), 1, 8);
  const reports = queued.map((id, i) => batcher.end({ jobId: id, end: outcome(i % 3, null, null), fence: fenceOf.get(id)!, host: 'be' }));
  // Late and wrong ones: a second report of a job, a stale fence, another host.
  const second = batcher.end({ jobId: queued[0]!, end: outcome(9, null, null), fence: fenceOf.get(queued[0]!)!, host: 'be' });
  const stale = batcher.end({ jobId: queued[1]!, end: outcome(9, null, null), fence: fenceOf.get(queued[1]!)! - 1, host: 'be' });
  const elsewhere = batcher.end({ jobId: queued[2]!, end: outcome(9, null, null), fence: fenceOf.get(queued[2]!)!, host: 'h' });
  const rows = await Promise.all(reports);
  assert.deepEqual(await Promise.all([second, stale, elsewhere]), [null, null, null]);
  for (const [i, row] of rows.entries()) {
    assert.ok(row, `job ${i} ended`);
    if (i === 3) {
      assert.equal(row.state, 'killed');
      assert.equal(row.reason, 'rc kill by t');
    } else {
      assert.equal(row.state, i % 3 === 0 ? 'succeeded' : 'failed');
      assert.equal(row.exitCode, i % 3);
    }
  }
  const stored = await db.client<{ id: string; state: string; exitCode: number | null }[]>`select id, state, exit_code from jobs where id = any(${queued})`;
  assert.deepEqual(new Map(stored.map((r) => [r.id, [r.state, r.exitCode]])), new Map(rows.map((r) => [r!.id, [r!.state, r!.exitCode]])), 'stored as returned');
  assert.equal((await activeLeases()).length, 0, 'every lease released');
  await endEverything();
});

test('a heartbeat never waits on a lease another transaction holds (an end being stored): its samples are stored, that lease keeps its idle streak for the next beat', async () => {
  const devices = await hostWithDevices('hb', 2);
  const queued = await submitMany(2);
  const { claimed } = await claimBatch(db.client, planOn('hb', devices, queued, queued));
  assert.equal(claimed.length, 2);
  const leaseOf = async (deviceId: number) =>
    (await db.client<{ id: number; idleSeenAt: Date | null }[]>`select id, idle_seen_at from leases where device_id = ${deviceId} and released_at is null`)[0]!;
  const locked = await leaseOf(devices[0]!.id);
  const idle = (index: number) => ({ index, name: 'H100', memTotalMiB: 81559, memUsedMiB: 0, utilPct: 0, procs: 0 });
  const { release, done: tx } = await holdInTransaction((t) => t`select id from leases where id = ${locked.id} for update`);
  try {
    const stored = await Promise.race([
      storeHeartbeats(db.client, [{ host: 'hb', gpus: [idle(0), idle(1)] }]).then(() => 'stored'),
      new Promise((r) => setTimeout(() => r('waited'), 3000)),
    ]);
    assert.equal(stored, 'stored', 'the heartbeat did not wait for the lock');
    assert.equal((await leaseOf(devices[0]!.id)).idleSeenAt, null, 'the locked lease was left for the next beat');
    assert.ok((await leaseOf(devices[1]!.id)).idleSeenAt, 'the other lease got its sample');
  } finally {
    release();
    await tx;
  }
  // The beat brought it online: away again, so the next tests' submits queue.
  await db.client`update hosts set status = 'away' where name = 'hb'`;
  await endEverything();
});

test('a batch of ends that Postgres picks as a deadlock victim is tried again: every job ends, once', async () => {
  const devices = await hostWithDevices('bf', 2);
  const queued = await submitMany(2);
  const { claimed } = await claimBatch(db.client, planOn('bf', devices, queued, queued));
  assert.equal(claimed.length, 2);
  const [a, b] = [...claimed].sort((x, y) => (x.job.id < y.job.id ? -1 : 1)).map((c) => c.job);
  // Another transaction holds b's lease, then asks for a's row, which the batch holds while it waits for that lease: a deadlock.
  // Its deadlock_timeout is longer than the batch's, so the batch's check finds the cycle and the batch is the victim.
  const { release, done: tx } = await holdInTransaction(
    async (t) => {
      await t`set local deadlock_timeout = '20s'`;
      await t`select id from leases where job_id = ${b!.id} and released_at is null for update`;
    },
    (t) => t`select id from jobs where id = ${a!.id} for update`,
  );
  const ends = endJobs(
    deps(),
    [a!, b!].map((j) => ({ jobId: j.id, end: outcome(0, null, null), fence: j.fence!, host: 'bf' })),
    { from: ['running'] },
  );
  // The batch waits for b's lease.
  for (let i = 0; i < 100; i++) {
    const [w] = await db.client<{ n: number }[]>`select count(*)::int as n from pg_locks where not granted and locktype in ('transactionid', 'tuple')`;
    if (w!.n > 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  release();
  const rows = await ends;
  await tx;
  assert.deepEqual(rows.map((r) => [r.id, r.state]).sort(), [
    [a!.id, 'succeeded'],
    [b!.id, 'succeeded'],
  ]);
  assert.equal((await activeLeases()).length, 0, 'both leases released');
  await endEverything();
});

/**
 * Runs `lock` in a transaction of its own and resolves once it has, the transaction still open: `release()` lets
 * it go on to `then` and commit; `done` is its end.
 */
async function holdInTransaction(
  lock: (t: TransactionSql<{ int8: number }>) => Promise<unknown>,
  then: (t: TransactionSql<{ int8: number }>) => Promise<unknown> = async () => {},
): Promise<{ release: () => void; done: Promise<unknown> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => {
    locked = r;
  });
  const done = db.client.begin(async (t) => {
    await lock(t);
    locked();
    await released;
    await then(t);
  });
  await Promise.race([isLocked, done]);
  return { release, done };
}

/** endJob's dependencies: this file's database, and events nobody listens to. */
function deps() {
  return { sql: db.client, events: new JobEvents() };
}

async function activeLeases(): Promise<{ deviceId: number; jobId: string }[]> {
  return db.client<{ deviceId: number; jobId: string }[]>`select device_id, job_id from leases where released_at is null`;
}

async function endEverything(): Promise<void> {
  const open = await db.client<{ id: string }[]>`select id from jobs where state in ('queued', 'running')`;
  for (const j of open) await endJob(deps(), j.id, ended('cancelled', 'killed', 'test'), { from: ['queued', 'running'] });
}

/** Runs `fn` with host h online (its devices free) and no job open, then puts things back. */
async function withHostOnline(fn: () => Promise<void>): Promise<void> {
  await endEverything();
  await db.client`update hosts set status = 'online' where name = 'h'`;
  try {
    await fn();
  } finally {
    await endEverything();
    await db.client`update hosts set status = 'away' where name = 'h'`;
  }
}

test('on an idle fleet a submit claims a free device in the same statement: running, leased, fenced', () =>
  withHostOnline(async () => {
    const s = await submitJob(fresh(), who, { ...body, device: 'h:gpu0' });
    assert.equal(s.job.state, 'running');
    assert.ok(s.job.fence && s.job.startedAt);
    assert.deepEqual(s.job.devices, ['h:gpu0']);
    assert.deepEqual(s.targets, [{ index: 0, name: 'h:gpu0', uuid: null }]);
    assert.equal(s.position, 0);
    assert.deepEqual(
      (await activeLeases()).map((l) => [l.deviceId, l.jobId]),
      [[deviceId, s.job.id]],
    );
    // Its device is taken now: the next one for it waits in the queue.
    const next = await submitJob(fresh(), who, { ...body, device: 'h:gpu0' });
    assert.equal(next.job.state, 'queued');
    assert.equal(next.targets, null);
    assert.equal((await activeLeases()).length, 1);
  }));

test('a submit does not jump the queue: with any job queued it queues too, even when a device is free', () =>
  withHostOnline(async () => {
    const busy = await submitJob(fresh(), who, { ...body, device: 'h:gpu0' });
    assert.equal(busy.job.state, 'running');
    const waiting = await submitJob(fresh(), who, { ...body, device: 'h:gpu0' });
    assert.equal(waiting.job.state, 'queued');
    // h:gpu1 is free, but a job is queued: the scheduler decides who goes first.
    const later = await submitJob(fresh(), who, { ...body, priority: 5 });
    assert.equal(later.job.state, 'queued');
    assert.equal(later.targets, null);
    assert.equal((await activeLeases()).length, 1);
  }));

test('submits racing for one free device: exactly one starts, the others queue, one lease, every round', () =>
  withHostOnline(async () => {
    for (let round = 0; round < 20; round++) {
      const all = await Promise.all(Array.from({ length: 4 }, () => submitJob(fresh(), who, { ...body, device: 'h:gpu0' })));
      const running = all.filter((s) => s.job.state === 'running');
      assert.equal(running.length, 1, `round ${round}: ${all.map((s) => s.job.state).join(',')}`);
      assert.equal(all.filter((s) => s.job.state === 'queued' && s.targets === null).length, 3);
      assert.deepEqual(
        (await activeLeases()).map((l) => l.jobId),
        [running[0]!.job.id],
      );
      await endEverything();
    }
  }));

test('a hold started at submit ends its TTL after its start', () =>
  withHostOnline(async () => {
    const s = await submitJob(fresh(), who, { ...body, kind: 'hold', argv: [], ttlS: 600 });
    assert.equal(s.job.state, 'running');
    assert.equal(s.job.expiresAt!.getTime() - s.job.startedAt!.getTime(), 600_000);
  }));

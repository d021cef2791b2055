// Jobs on provider machines (issue 34, seed 002 "How rrun picks", "Idle
// machines and --keep", "Spot"), with the local provider on real Docker and
// one joined host (CPU slots): a --cloud-only job launches the cheapest fitting
// offer (a failed launch moves to the next), runs there and exits with its
// code; the next job takes the kept machine at least 5× faster than the cold
// launch; keep expiry deletes the container; a free joined host is taken before
// any launch, and an `any` job gets a machine only while it is busy; a spot
// machine taken back starts the job over on another.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Docker from 'dockerode';
import { STOCK_IMAGE, stockImageSkip, removeContainersByPrefix } from '../helpers/docker';
import { Stack } from '../helpers/stack';
import { untilAsync } from '../helpers/until';

const ROOT = join(import.meta.dirname, '..', '..');
const docker = new Docker();
const skip = stockImageSkip('the machine pass test');

const PREFIX = `rcm${process.pid}`;
const h100 = { gpuModel: 'H100', gpuCount: 1, vramGiB: 80, cpus: 4, ramGiB: 16, diskGiB: 50 };
const CONFIG = {
  prefix: PREFIX,
  image: STOCK_IMAGE,
  offers: [
    { offerId: 'dear', ...h100, pricePerHour: 4.5 },
    { offerId: 'cheap', ...h100, pricePerHour: 2.1 },
    { offerId: 'mid', ...h100, pricePerHour: 3 },
    // Cheaper, but no H100: never taken for --gpu H100.
    { offerId: 'a100', ...h100, gpuModel: 'A100', pricePerHour: 1 },
    // Cheaper, but its launch fails: the next offer is taken.
    { offerId: 'broken', ...h100, pricePerHour: 1.5 },
    // The cheapest, but spot: only with --spot. The first one launched is taken back after SPOT_LIFETIME_MS.
    { offerId: 'spotty', ...h100, spot: true, pricePerHour: 0.5 },
  ],
  failLaunch: ['broken'],
  spotLifetimeMs: 6000,
  spotTakeBacks: 1,
};

type Support = typeof import('../../test/support');
let stack: Stack;
let database: ReturnType<Support['connect']>;

before(async () => {
  if (skip) return;
  const support = (await import(join(ROOT, 'dist/test-support.js'))) as Support;
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }], controllerEnv: { RC_LOCAL_PROVIDER: JSON.stringify(CONFIG) } });
  database = support.connect(stack.dbUrl, 2);
});
after(async () => {
  if (skip) return;
  await database.close();
  await stack.stop();
  // After the controller: a launch still in flight when it stopped made its container too.
  await removeContainersByPrefix(PREFIX);
});

interface JobRow {
  id: string;
  hostName: string | null;
  startMs: number | null;
}
const jobRow = async (id: string) =>
  (
    await database.client<JobRow[]>`
      select id, host_name, (extract(epoch from started_at - created_at) * 1000)::float8 as start_ms from jobs where id = ${id}`
  )[0]!;
const lastJob = async () => (await database.client<{ id: string }[]>`select id from jobs order by seq desc limit 1`)[0]!.id;

interface MachineRow {
  id: string;
  offerId: string;
  hostName: string;
  instanceName: string;
  state: string;
  jobId: string | null;
  idleUntil: Date | null;
  terminatedWhy: string | null;
}
const machineOn = async (host: string) =>
  (
    await database.client<MachineRow[]>`
      select id, offer->>'offerId' as offer_id, host_name, instance_name, state, job_id, idle_until, terminated_why from machines where host_name = ${host}`
  )[0];
const machineCount = async () => (await database.client<{ n: number }[]>`select count(*)::int as n from machines`)[0]!.n;
const containerGone = (name: string) =>
  docker
    .getContainer(name)
    .inspect()
    .then(
      () => false,
      () => true,
    );

test('a --cloud-only job on the cheapest fitting offer (a failed launch moves on), exiting with its code; the next takes the kept machine ≥5× faster; keep expiry deletes it', {
  skip,
  timeout: 240_000,
}, async () => {
  const cold = await stack.cli(['run', '--cloud-only', '--gpu', 'H100', '--keep', '2m', '--', 'sh', '-c', 'nvidia-smi -L; exit 3'], {
    timeoutMs: 120_000,
  });
  assert.equal(cold.code, 3, cold.stderr);
  // The machine's GPU as its job sees it: the offer's (a fake nvidia-smi in the local provider's container).
  assert.match(cold.stdout, /^GPU 0: NVIDIA H100 \(UUID: GPU-/);
  const first = await jobRow(await lastJob());
  const machine = (await machineOn(first.hostName!))!;
  assert.ok(machine, `job ran on ${first.hostName}, a provider machine`);
  // broken (1.50) failed, a100 does not fit, spotty is spot: cheap (2.10).
  assert.equal(machine.offerId, 'cheap');
  const broken = await database.client<{ why: string }[]>`select terminated_why as why from machines where offer->>'offerId' = 'broken'`;
  assert.equal(broken.length, 1);
  assert.match(broken[0]!.why, /^launch failed/);
  // The job ended: the machine is idle for its --keep (2m), and its container still runs.
  const idle = await untilAsync(async () => {
    const m = await machineOn(machine.hostName);
    return m?.state === 'idle' && m.jobId === null ? m : undefined;
  }, 'the machine idle after its job');
  const keptFor = (idle.idleUntil!.getTime() - Date.now()) / 1000;
  assert.ok(keptFor > 100 && keptFor <= 120, `idle until about 2 minutes from now, not ${keptFor} s`);
  assert.equal(await containerGone(machine.instanceName), false);

  const kept = await stack.cli(['run', '--cloud-only', '--gpu', 'H100', '--keep', '3s', '--', 'true'], { timeoutMs: 60_000 });
  assert.equal(kept.code, 0, kept.stderr);
  const second = await jobRow(await lastJob());
  assert.equal(second.hostName, machine.hostName, 'the kept machine took the next job');
  console.log(`cold launch to start: ${Math.round(first.startMs!)} ms; kept machine to start: ${Math.round(second.startMs!)} ms`);
  assert.ok(first.startMs! >= 5 * second.startMs!, `kept ${second.startMs} ms is not 5× faster than cold ${first.startMs} ms`);
  // --keep 3s: then it is deleted, its container with it, audited with why.
  const gone = await untilAsync(async () => {
    const m = await machineOn(machine.hostName);
    return m?.state === 'terminated' ? m : undefined;
  }, 'the kept machine deleted once its keep is over');
  assert.equal(gone.terminatedWhy, 'keep expired');
  assert.equal(await containerGone(machine.instanceName), true);
  const audit = await database.client<{ action: string; why: string | null }[]>`
    select action, detail->>'why' as why from audit where target = ${machine.id} order by id`;
  assert.deepEqual(
    audit.map((a) => `${a.action} ${a.why ?? ''}`.trim()),
    ['machine.launch', 'machine.terminate keep expired'],
  );
});

test('a free joined host is taken before any launch; while it is busy an `any` job gets a machine, deleted at once with --keep 0', {
  skip,
  timeout: 240_000,
}, async () => {
  const before = await machineCount();
  const joined = await stack.cli(['run', '--', 'true']);
  assert.equal(joined.code, 0, joined.stderr);
  assert.equal((await jobRow(await lastJob())).hostName, 'alpha');
  // Wait past the pass's grace for `any` jobs: still no machine.
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(await machineCount(), before, 'no machine was launched while alpha was free');
  // --reserved-only never launches: with alpha busy it waits.
  const busy = await stack.cli(['run', '--detach', '--', 'sleep', '120']);
  assert.equal(busy.code, 0, busy.stderr);
  const reserved = await stack.cli(['run', '--detach', '--reserved-only', '--', 'true']);
  assert.equal(reserved.code, 0, reserved.stderr);
  const elsewhere = await stack.cli(['run', '--keep', '0', '--', 'true'], { timeoutMs: 120_000 });
  assert.equal(elsewhere.code, 0, elsewhere.stderr);
  const ran = await jobRow(await lastJob());
  const machine = await machineOn(ran.hostName!);
  assert.ok(machine, `the any job ran on a provider machine, not ${ran.hostName}`);
  // It asks for no model: the cheapest on-demand offer with a GPU (a100, 1.00; broken failed lately).
  assert.equal(machine.offerId, 'a100');
  assert.equal((await stack.job(reserved.stdout.trim())).state, 'queued', 'the --reserved-only job waits for alpha');
  assert.equal(await machineCount(), before + 1, 'one machine, for the any job only');
  const gone = await untilAsync(async () => {
    const m = await machineOn(ran.hostName!);
    return m?.state === 'terminated' ? m : undefined;
  }, 'the --keep 0 machine deleted');
  assert.equal(gone.terminatedWhy, 'keep expired');
  await stack.cli(['kill', busy.stdout.trim()]);
  const done = await stack.cli(['wait', reserved.stdout.trim()], { timeoutMs: 60_000 });
  assert.equal(done.code, 0, done.stderr);
  assert.equal((await jobRow(reserved.stdout.trim())).hostName, 'alpha');
});

test('a spot machine taken back ends the attempt preempted (cause spot) and the job starts over on another machine', { skip, timeout: 240_000 }, async () => {
  const r = await stack.cli(['run', '--cloud-only', '--spot', '--gpu', 'H100', '--keep', '0', '--', 'sh', '-c', 'sleep 12; echo done'], {
    timeoutMs: 180_000,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /done/);
  const id = await lastJob();
  const attempts = await database.client<{ attempt: number; state: string; endCause: string; hostName: string }[]>`
    select attempt, state, end_cause, host_name from job_attempts where job_id = ${id} order by attempt`;
  assert.equal(attempts.length, 1, JSON.stringify(attempts));
  assert.deepEqual([attempts[0]!.state, attempts[0]!.endCause], ['preempted', 'spot']);
  const [restarts] = await database.client<{ restarts: number }[]>`select restarts from jobs where id = ${id}`;
  assert.equal(restarts!.restarts, 10, '--spot: 10 restarts by default');
  const taken = (await machineOn(attempts[0]!.hostName))!;
  assert.equal(taken.offerId, 'spotty');
  assert.match(taken.terminatedWhy ?? '', /^preempted/);
  const last = await jobRow(id);
  assert.notEqual(last.hostName, taken.hostName, 'the next attempt ran on another machine');
  assert.equal((await machineOn(last.hostName!))?.offerId, 'spotty');
});

test('rc machines rm of a busy machine: its job ends the attempt lost and starts over on another machine (--restarts 1)', {
  skip,
  timeout: 240_000,
}, async () => {
  const r = await stack.cli(['run', '--detach', '--cloud-only', '--gpu', 'H100', '--restarts', '1', '--keep', '0', '--', 'sleep', '120']);
  assert.equal(r.code, 0, r.stderr);
  const id = r.stdout.trim();
  const onMachine = async (not?: string) => {
    const j = await jobRow(id);
    const state = (await stack.job(id)).state;
    return state === 'running' && j.hostName && j.hostName !== not && (await machineOn(j.hostName)) ? j.hostName : undefined;
  };
  const host = await untilAsync(() => onMachine(), 'the job running on a machine');
  const machine = (await machineOn(host))!;
  const rm = await stack.cli(['machines', 'rm', machine.id], { env: { RC_TOKEN: stack.adminToken } });
  assert.equal(rm.code, 0, rm.stderr);
  const [attempt] = await database.client<{ state: string; reason: string }[]>`select state, reason from job_attempts where job_id = ${id}`;
  assert.deepEqual({ ...attempt }, { state: 'lost', reason: `its machine ${machine.id} was deleted` });
  assert.equal(await containerGone(machine.instanceName), true);
  const next = await untilAsync(() => onMachine(host), 'the job running again on another machine', 60_000);
  assert.notEqual(next, host);
  await stack.cli(['kill', id]);
});

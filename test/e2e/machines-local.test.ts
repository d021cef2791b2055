// Machines from the local provider, on real Docker (issue 34's first slice):
// a machine is recorded before its container exists, the container's worker
// joins the controller with its fake GPUs, terminating removes it (with why,
// audited); the sweeper deletes a prefixed container no machine owns within a
// period and never another; a launch cut off by kill -9 leaves no container
// once the controller has looked again; a failed launch leaves none either;
// a wrong RC_LOCAL_PROVIDER stops the controller at start-up.
// The launching side runs in this test's process (or, for kill -9, in a child
// of it): placement, which calls it inside the controller, comes later.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Docker from 'dockerode';
import { STOCK_IMAGE, stockImageSkip } from '../helpers/docker';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
const IMAGE = STOCK_IMAGE;
const docker = new Docker();
const skip = stockImageSkip('the machines test');

// A prefix of this test's own: the controller's sweeper here never meets another test's containers.
const PREFIX = `rct${process.pid}`;
const CONFIG = {
  prefix: PREFIX,
  image: IMAGE,
  offers: [
    { offerId: 'h100x2', gpuModel: 'H100', gpuCount: 2, vramGiB: 80, cpus: 8, ramGiB: 64, diskGiB: 200, cuda: '12.4', pricePerHour: 4.5 },
    { offerId: 'broken', gpuModel: 'A100', gpuCount: 1, vramGiB: 40, cpus: 4, ramGiB: 32, diskGiB: 100, pricePerHour: 1.2 },
    { offerId: 'slow', gpuModel: 'L4', gpuCount: 1, vramGiB: 24, cpus: 4, ramGiB: 16, diskGiB: 50, pricePerHour: 0.7 },
  ],
  failLaunch: ['broken'],
};
const SLOW = { ...CONFIG, launchDelayMs: 60_000 };
const LAUNCH_TIMEOUT_S = 3;

type Support = typeof import('../../test/support');
let support: Support;
let stack: Stack;
let database: ReturnType<Support['connect']>;
const made = new Set<string>();

before(async () => {
  if (skip) return;
  support = (await import(join(ROOT, 'dist/test-support.js'))) as Support;
  stack = await Stack.start({
    workers: [],
    controllerEnv: { RC_LOCAL_PROVIDER: JSON.stringify(CONFIG), RC_SWEEP_S: '1', RC_LAUNCH_TIMEOUT_S: String(LAUNCH_TIMEOUT_S) },
  });
  database = support.connect(stack.dbUrl, 2);
});
after(async () => {
  if (skip) return;
  // Every container this test may have made, by its exact name.
  for (const name of made)
    await docker
      .getContainer(name)
      .remove({ force: true })
      .catch(() => {});
  await database.close();
  await stack.stop();
});

function deps(config: object = CONFIG) {
  const parsed = support.parseLocalProviderConfig(JSON.stringify(config));
  assert.ok('config' in parsed);
  const provider = new support.LocalProvider(parsed.config);
  return {
    provider,
    deps: {
      db: database.db,
      sql: database.client,
      providers: new Map([[provider.account, provider]]),
      controllerUrl: stack.controllerUrl,
      launchTimeoutS: LAUNCH_TIMEOUT_S,
      log: () => {},
    },
  };
}

async function containerExists(name: string): Promise<boolean> {
  return docker
    .getContainer(name)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

async function offer(id: string, config: object = CONFIG) {
  const o = (await deps(config).provider.offers({})).find((x) => x.offerId === id);
  assert.ok(o, id);
  return o;
}

const audits = (target: string) =>
  database.client<{ action: string; actor: string; detail: { why?: string } }[]>`select action, actor, detail from audit where target = ${target} order by id`;

test("a machine: its row before its container; its worker joins with the offer's GPUs; terminate removes it, says why, audited", {
  skip,
  timeout: 120_000,
}, async () => {
  const { deps: d } = deps();
  const h100 = await offer('h100x2');
  assert.equal(h100.simulated, true);
  // The row is there before launch() is called: the provider is wrapped to look when it is asked.
  const provider = d.providers.get('local')!;
  let rowAtLaunch: unknown = null;
  const launch = provider.launch.bind(provider);
  provider.launch = async (spec) => {
    made.add(spec.name);
    rowAtLaunch = (await database.client`select state from machines where instance_name = ${spec.name}`)[0] ?? null;
    assert.equal(await containerExists(spec.name), false);
    return launch(spec);
  };
  const t0 = performance.now();
  const m = await support.launchMachine(d, h100);
  const launchedMs = performance.now() - t0;
  assert.deepEqual(rowAtLaunch, { state: 'provisioning' });
  assert.equal(m.state, 'booting');
  assert.equal(m.instanceName, `${PREFIX}-${m.id}`);
  assert.match(m.id, /^m[0-9a-v]{10}$/);
  const c = await docker.getContainer(m.instanceName).inspect();
  assert.equal(c.Config.Labels['rc.account'], 'local');
  // Its worker joins as the machine's host, with two fake H100s; the controller's reconcile makes it idle.
  await stack.waitFor(
    async () => (await stack.devices()).filter((x) => x.name.startsWith(`${m.hostName}:`) && x.state === 'free').length === 2,
    "the machine's two GPUs to be free",
    60_000,
  );
  const joinedMs = performance.now() - t0;
  const devs = (await stack.api('GET', '/api/devices')).body as { devices: { name: string; hostName: string; model?: string; gpuModel?: string }[] };
  const mine = devs.devices.filter((x) => x.hostName === m.hostName);
  assert.equal(mine.length, 2);
  assert.match(JSON.stringify(mine), /H100/);
  await stack.waitFor(async () => (await support.machineRow(database.client, m.id))?.state === 'idle', 'the machine to be idle');
  console.log(`# cold launch: launch() answered in ${Math.round(launchedMs)} ms; worker joined, GPUs free after ${Math.round(joinedMs)} ms`);

  const gone = await support.terminateMachine(d, m.id, 'rm', 'admin-test');
  assert.equal(gone.state, 'terminated');
  assert.equal(gone.terminatedWhy, 'rm');
  assert.equal(await containerExists(m.instanceName), false);
  const [row] = await database.client<{ terminated: boolean; ready: boolean }[]>`
    select terminated_at is not null as terminated, ready_at is not null as ready from machines where id = ${m.id}`;
  assert.deepEqual(row, { terminated: true, ready: true });
  const log = await audits(m.id);
  assert.deepEqual(
    log.map((a) => [a.action, a.actor, a.detail.why ?? null]),
    [
      ['machine.launch', 'controller', null],
      ['machine.terminate', 'admin-test', 'rm'],
    ],
  );
  // Its host's credential is revoked: the instance's key opens nothing once it is gone.
  const [tok] = await database.client<{ n: number }[]>`select count(*)::int as n from tokens where host_name = ${m.hostName} and revoked_at is null`;
  assert.equal(tok!.n, 0);
});

test('the sweeper deletes a prefixed container no machine owns within a period, and never one without the prefix', { skip, timeout: 60_000 }, async () => {
  const stray = `${PREFIX}-m0000000000`;
  const other = `x-${PREFIX}-m0000000001`; // carries the prefix, but not at its start
  for (const name of [stray, other]) {
    made.add(name);
    const c = await docker.createContainer({ name, Image: IMAGE, Cmd: ['sleep', '300'] });
    await c.start();
  }
  const t0 = performance.now();
  await stack.waitFor(async () => !(await containerExists(stray)), 'the sweeper to delete the stray container', 10_000);
  console.log(`# sweeper: the stray container deleted ${Math.round(performance.now() - t0)} ms after it was made (RC_SWEEP_S=1)`);
  const [a] = await audits(stray);
  assert.equal(a?.action, 'machine.sweep');
  assert.equal(a?.detail.why, 'sweeper: no machine owns it');
  // Two more periods: the other is still there.
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(await containerExists(other), true);
  assert.equal((await audits(other)).length, 0);
  await docker.getContainer(other).remove({ force: true });
  made.delete(other);
  // One pass's cost, measured here against the same Docker and database (nothing to delete).
  const { provider } = deps();
  const t1 = performance.now();
  const names = await provider.list(`${PREFIX}-`);
  await database.client`select instance_name from machines where account = 'local' and state <> 'terminated'`;
  console.log(`# one sweep pass (list + ownership query, ${names.length} instances): ${(performance.now() - t1).toFixed(1)} ms`);
});

test('a failed launch: the machine is terminated with why, audited, and no container is left', { skip, timeout: 30_000 }, async () => {
  const { deps: d } = deps();
  const m = await support.launchMachine(d, await offer('broken'));
  made.add(m.instanceName);
  assert.equal(m.state, 'terminated');
  assert.match(m.terminatedWhy ?? '', /^launch failed: local: the launch of broken failed/);
  assert.equal(await containerExists(m.instanceName), false);
  assert.deepEqual(
    (await audits(m.id)).map((a) => a.action),
    ['machine.launch', 'machine.terminate'],
  );
});

test('kill -9 of the launching controller mid-launch: once the controller looks again, no container is left', { skip, timeout: 60_000 }, async () => {
  // The launch runs in a child process (standing for the controller that launched), which is killed while launch() waits.
  const script = `
    const s = await import(${JSON.stringify(join(ROOT, 'dist/test-support.js'))});
    const parsed = s.parseLocalProviderConfig(${JSON.stringify(JSON.stringify(SLOW))});
    const provider = new s.LocalProvider(parsed.config);
    const database = s.connect(${JSON.stringify(stack.dbUrl)}, 2);
    const offer = (await provider.offers({})).find((o) => o.offerId === 'slow');
    const deps = { db: database.db, sql: database.client, providers: new Map([['local', provider]]), controllerUrl: ${JSON.stringify(stack.controllerUrl)}, launchTimeoutS: 3, log: () => {} };
    await s.launchMachine(deps, offer);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
  let name = '';
  await stack.waitFor(async () => {
    const [r] = await database.client<{ name: string }[]>`select instance_name as name from machines where offer->>'offerId' = 'slow'`;
    if (r) name = r.name;
    return r !== undefined && (await containerExists(r.name));
  }, 'the slow launch to have made its container');
  made.add(name);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  // The controller restarts too (kill -9), and on its own finds the machine and deletes it.
  await stack.stopController('SIGKILL');
  await stack.startController();
  await stack.waitFor(async () => !(await containerExists(name)), "the interrupted machine's container to be deleted", 20_000);
  const [row] = await database.client<{ state: string; why: string }[]>`select state, terminated_why as why from machines where instance_name = ${name}`;
  assert.equal(row?.state, 'terminated');
  assert.match(row!.why, /^launch interrupted: /);
  const containers = await docker.listContainers({ all: true, filters: { name: [PREFIX] } });
  assert.deepEqual(
    containers.map((c) => c.Names[0]),
    [],
  );
});

test('a wrong RC_LOCAL_PROVIDER stops the controller at start-up, saying what is wrong', { skip, timeout: 30_000 }, async () => {
  for (const [value, said] of [
    ['{"offers": []}', /RC_LOCAL_PROVIDER.*offers/],
    [
      '{"offers": [{"offerId": "x", "gpuModel": "H100", "gpuCount": 1, "vramGiB": 80, "cpus": 4, "ramGiB": 8, "diskGiB": 10, "pricePerHour": -1}]}',
      /pricePerHour/,
    ],
    ['/no/such/file.json', /neither JSON nor a file that exists/],
    ['{not json', /does not parse/],
  ] as const) {
    const r = spawnSync(process.execPath, [join(ROOT, 'dist/server.js')], {
      env: {
        ...process.env,
        DATABASE_URL: stack.dbUrl,
        RC_DATA_DIR: stack.dataDir,
        PORT: '0',
        RC_LOCAL_WORKER: '0',
        RC_DASHBOARD: '0',
        RC_LOCAL_PROVIDER: value,
      },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.notEqual(r.status, 0, value);
    assert.match(r.stderr + r.stdout, said, value);
  }
});

// kill -9 of the controller while it launches a machine for a job (issue 34):
// the machine was recorded before the provider was asked, so after the restart
// it is found still provisioning past RC_LAUNCH_TIMEOUT_S and deleted, its
// container with it: nothing is left running that nobody pays attention to.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Docker from 'dockerode';
import { STOCK_IMAGE, stockImageSkip } from '../helpers/docker';
import { Stack } from '../helpers/stack';
import { untilAsync } from '../helpers/until';

const ROOT = join(import.meta.dirname, '..', '..');
const docker = new Docker();
const skip = stockImageSkip('the machine crash test');
const PREFIX = `rck${process.pid}`;
const CONFIG = {
  prefix: PREFIX,
  image: STOCK_IMAGE,
  offers: [{ offerId: 'h100', gpuModel: 'H100', gpuCount: 1, vramGiB: 80, cpus: 4, ramGiB: 16, diskGiB: 50, pricePerHour: 2.1 }],
  // The container is made, then the launch call takes a minute to answer: the controller is killed in between.
  launchDelayMs: 60_000,
};

type Support = typeof import('../../test/support');
let stack: Stack;
let database: ReturnType<Support['connect']>;

before(async () => {
  if (skip) return;
  const support = (await import(join(ROOT, 'dist/test-support.js'))) as Support;
  stack = await Stack.start({ workers: [], controllerEnv: { RC_LOCAL_PROVIDER: JSON.stringify(CONFIG), RC_LAUNCH_TIMEOUT_S: '3' } });
  database = support.connect(stack.dbUrl, 2);
});
after(async () => {
  if (skip) return;
  for (const c of await ours())
    await docker
      .getContainer(c)
      .remove({ force: true })
      .catch(() => {});
  await database.close();
  await stack.stop();
});

/** This test's containers, by their prefix. */
const ours = async () =>
  (await docker.listContainers({ all: true })).flatMap((c) => c.Names.map((n) => n.replace(/^\//, ''))).filter((n) => n.startsWith(`${PREFIX}-`));

test('kill -9 of the controller mid-launch: after the restart the machine is deleted, and no container is left', { skip, timeout: 180_000 }, async () => {
  const r = await stack.cli(['run', '--detach', '--cloud-only', '--gpu', 'H100', '--keep', '0', '--', 'sleep', '60']);
  assert.equal(r.code, 0, r.stderr);
  const job = r.stdout.trim();
  // The container exists and its machine is still provisioning: the launch call has not answered.
  const machine = await untilAsync(async () => {
    const [m] = await database.client<{ id: string; state: string; instanceName: string }[]>`
      select id, state, instance_name from machines where job_id = ${job}`;
    return m && (await ours()).includes(m.instanceName) ? m : undefined;
  }, 'the container of a machine being launched');
  assert.equal(machine.state, 'provisioning');
  await stack.stopController('SIGKILL');
  await stack.startController();
  // Nobody wants its machine any more: the job is cancelled, so no new machine is launched for it.
  const kill = await stack.cli(['kill', job]);
  assert.equal(kill.code, 0, kill.stderr);
  const [gone] = await untilAsync(async () => {
    const rows = await database.client<{ state: string; why: string }[]>`select state, terminated_why as why from machines where id = ${machine.id}`;
    return rows[0]?.state === 'terminated' ? rows : undefined;
  }, 'the interrupted launch deleted');
  assert.match(gone!.why, /^launch interrupted: no answer from the provider within 3 s/);
  await untilAsync(async () => ((await ours()).length === 0 ? true : undefined), 'no container of this test left');
  const live = await database.client`select id from machines where state <> 'terminated'`;
  assert.equal(live.length, 0, 'no machine is left live');
});

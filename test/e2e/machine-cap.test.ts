// RC_MAX_MACHINES and two controllers (issue 34): 50 --cloud-only jobs
// submitted at once through two controllers on one database, with launches
// slow enough to overlap: never more than RC_MAX_MACHINES machines live, never
// two machines for one job; the jobs past the cap say what they wait on.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { STOCK_IMAGE, stockImageSkip, removeContainersByPrefix } from '../helpers/docker';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
const skip = stockImageSkip('the machine cap test');
const CONFIG = {
  prefix: `rcq${process.pid}`,
  image: STOCK_IMAGE,
  offers: [{ offerId: 'h100', gpuModel: 'H100', gpuCount: 1, vramGiB: 80, cpus: 4, ramGiB: 16, diskGiB: 50, pricePerHour: 2.1 }],
  // Each launch takes a moment: passes on both controllers overlap while they are in flight.
  launchDelayMs: 1000,
};
const MAX = 2;

type Support = typeof import('../../test/support');
let one: Stack;
let two: Stack;
let database: ReturnType<Support['connect']>;

before(async () => {
  if (skip) return;
  const support = (await import(join(ROOT, 'dist/test-support.js'))) as Support;
  const controllerEnv = { RC_LOCAL_PROVIDER: JSON.stringify(CONFIG), RC_MAX_MACHINES: String(MAX) };
  one = await Stack.start({ workers: [], controllerEnv });
  two = await Stack.start({ workers: [], databaseUrl: one.dbUrl, controllerEnv });
  database = support.connect(one.dbUrl, 2);
});
after(async () => {
  if (skip) return;
  await database.close();
  await two.stop();
  await one.stop();
  // After the controllers: a launch still in flight when they stopped made its container too.
  await removeContainersByPrefix(CONFIG.prefix);
});

test(`RC_MAX_MACHINES=${MAX} holds under 50 concurrent submits through two controllers, and no job gets two machines`, { skip, timeout: 180_000 }, async () => {
  const body = { kind: 'run', argv: ['sleep', '300'], submitter: 'tester', placement: 'cloud', keepS: 0, wait: true };
  const submitted = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? two : one).api('POST', '/api/jobs', body)));
  assert.ok(
    submitted.every((r) => r.status === 201 || r.status === 200),
    JSON.stringify(submitted.find((r) => r.status >= 300)?.body),
  );
  let most = 0;
  let running = 0;
  const end = Date.now() + 60_000;
  // Until MAX jobs run on their machines, and a while after: the live count never passes MAX.
  while (Date.now() < end) {
    const [live] = await database.client<{ n: number }[]>`select count(*)::int as n from machines where state <> 'terminated'`;
    most = Math.max(most, live!.n);
    running = (await database.client<{ n: number }[]>`select count(*)::int as n from jobs where state = 'running'`)[0]!.n;
    if (running === MAX && Date.now() > end - 50_000) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  // Their workers join while the launch is still answering (launchDelayMs): the machine's job is theirs from the start.
  assert.equal(running, MAX, `${MAX} jobs run, one on each machine`);
  assert.ok(most <= MAX, `at most ${MAX} live machines, saw ${most}`);
  const twice = await database.client`select job_id from machines group by job_id having count(*) > 1`;
  assert.equal(twice.length, 0, 'no job got two machines');
  const queue = (await one.api('GET', '/api/queue')).body as { jobs: { why: { text: string } }[] };
  assert.equal(queue.jobs.length, 50 - MAX);
  assert.ok(
    queue.jobs.every((j) => j.why.text === `waiting for a provider machine: ${MAX} are live, RC_MAX_MACHINES allows ${MAX}`),
    queue.jobs[0]?.why.text,
  );
  // rc ps says the same beside the job's place in line, with no bound from the joined fleet's devices.
  const ps = (await two.api('GET', '/api/ps')).body as { jobs: { state: string; waits?: string; freesBy?: unknown }[] };
  const queuedPs = ps.jobs.filter((j) => j.state === 'queued');
  assert.equal(queuedPs.length, 50 - MAX);
  assert.ok(queuedPs.every((j) => j.waits === `waiting for a provider machine: ${MAX} are live, RC_MAX_MACHINES allows ${MAX}` && j.freesBy == null));
  for (const { id } of await database.client<{ id: string }[]>`select id from jobs where state in ('queued', 'running')`)
    await one.api('POST', `/api/jobs/${id}/kill`, {});
});

// A job's placement and machine flags, and the provider machine it ran on
// (issue 34), wherever a job is shown: rc describe <job> (a `placement:` line,
// a `machine:` line), its --json (JobView's placement, machine and ranOn,
// parsed with the strict schemas), rc jobs --json (the flags, no machine: the
// lists read no more per job), and the job's page in a real Chromium
// (screenshots under /tmp/jobview-shots/). The controller has a local provider
// whose image is absent, so a --cloud-only job stays queued and nothing
// launches; the machine a job ran on is a machines row inserted for its host.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { JobListSchema, OneJobSchema } from '../../protocol/cli-json';
import { launchChromium, noChromium, screenshot, openSignedIn } from '../helpers/browser';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
// A price table whose image is absent: a launch fails at once (no container is made), so no Docker image is needed.
const CONFIG = {
  prefix: `rcv${process.pid}`,
  image: 'rc-absent:none',
  offers: [{ offerId: 'h100', gpuModel: 'H100', gpuCount: 1, vramGiB: 80, cpus: 4, ramGiB: 16, diskGiB: 50, pricePerHour: 2.1 }],
};
const MACHINE = 'm00000ran01';
const SHOTS = '/tmp/jobview-shots';

type Support = typeof import('../../test/support');
let stack: Stack;
let database: ReturnType<Support['connect']>;
let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
let context: BrowserContext;
const pageErrors: string[] = [];
// The jobs the tests share: a --cloud-only one (queued), a --reserved-only one and a plain one (both ran on alpha).
const ids = { cloud: '', reserved: '', plain: '' };

before(
  async () => {
    const support = (await import(join(ROOT, 'dist/test-support.js'))) as Support;
    stack = await Stack.start({
      dashboard: !noChromium,
      workers: [{ name: 'alpha', devices: 1 }],
      controllerEnv: { RC_LOCAL_PROVIDER: JSON.stringify(CONFIG) },
    });
    database = support.connect(stack.dbUrl, 2);
    const cloud = await stack.cli([
      'run',
      '--detach',
      '--cloud-only',
      '--cloud',
      'local',
      '--max-price',
      '$2.50',
      '--spot',
      '--cpus',
      '2',
      '--ram',
      '8',
      '--cuda',
      '12.4',
      '--keep',
      '90s',
      '--',
      'true',
    ]);
    assert.equal(cloud.code, 0, cloud.stderr);
    ids.cloud = cloud.stdout.trim();
    for (const [key, args] of [
      ['reserved', ['--reserved-only']],
      ['plain', []],
    ] as const) {
      const r = await stack.cli(['run', '--detach', ...args, '--', 'true']);
      assert.equal(r.code, 0, r.stderr);
      ids[key] = r.stdout.trim();
      await stack.waitFor(async () => (await stack.job(ids[key])).state === 'succeeded', `${key} job to succeed`);
    }
    if (!noChromium) {
      browser = await launchChromium();
      context = browser.context;
      context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
      mkdirSync(SHOTS, { recursive: true });
    }
  },
  { timeout: 660_000 },
);

after(async () => {
  await browser?.close();
  await database?.close();
  await stack?.stop();
});

const describeJson = async (id: string) => {
  const r = await stack.cli(['describe', id, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return OneJobSchema.parse(JSON.parse(r.stdout)).job;
};

test("rc describe and --json show a job's placement and machine flags; nothing for a plain job", { timeout: 60_000 }, async () => {
  const cloud = await stack.cli(['describe', ids.cloud]);
  assert.equal(cloud.code, 0, cloud.stderr);
  assert.match(cloud.stdout, /^placement: cloud \(--cloud local, --max-price \$2\.50\/h, --spot, --keep 1m30s, at least 2 CPUs, 8 GiB RAM, CUDA 12\.4\)$/m);
  assert.doesNotMatch(cloud.stdout, /^machine:/m, 'it has run on no machine');
  const job = await describeJson(ids.cloud);
  assert.equal(job.placement, 'cloud');
  assert.deepEqual(job.machine, { cloud: 'local', maxPrice: 2.5, spot: true, keepS: 90, min: { cpus: 2, ramGiB: 8, cuda: '12.4' } });
  assert.equal(job.ranOn, undefined);

  const reserved = await stack.cli(['describe', ids.reserved]);
  assert.match(reserved.stdout, /^placement: reserved only$/m);
  assert.deepEqual((({ placement, machine }) => ({ placement, machine }))(await describeJson(ids.reserved)), { placement: 'reserved', machine: null });

  // A plain job: no line, and the JSON stays small (machine null).
  const plain = await stack.cli(['describe', ids.plain]);
  assert.equal(plain.code, 0, plain.stderr);
  assert.doesNotMatch(plain.stdout, /^placement:/m);
  assert.doesNotMatch(plain.stdout, /^machine:/m, 'alpha is a joined host');
  const p = await describeJson(ids.plain);
  assert.deepEqual({ placement: p.placement, machine: p.machine, ranOn: p.ranOn }, { placement: 'any', machine: null, ranOn: undefined });

  // The list shows the flags from each job's own row.
  const list = await stack.cli(['jobs', '--json']);
  assert.equal(list.code, 0, list.stderr);
  const jobs = JobListSchema.parse(JSON.parse(list.stdout)).jobs;
  assert.deepEqual(jobs.find((j) => j.id === ids.cloud)?.machine, job.machine);
  assert.equal(jobs.find((j) => j.id === ids.plain)?.machine, null);
});

test('a job whose host is a provider machine says which: rc describe, its --json, not the lists', { timeout: 60_000 }, async () => {
  // alpha stands for a provider machine's host: the machine, since deleted, whose worker joined as alpha.
  await database.client`
    insert into machines (id, account, instance_name, offer, price_per_hour, spot, simulated, state, host_name, terminated_why, terminated_at)
    values (${MACHINE}, 'local', ${`${CONFIG.prefix}-${MACHINE}`}, ${JSON.stringify({ ...CONFIG.offers[0], account: 'local', spot: false, simulated: true })}::text::jsonb,
      2.1, false, true, 'terminated', 'alpha', 'keep expired', now())`;
  const r = await stack.cli(['describe', ids.plain]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^machine: {3}${MACHINE} \\(local, 1× H100, \\$2\\.10/h simulated\\), now terminated \\(keep expired\\)$`, 'm'));
  const job = await describeJson(ids.plain);
  assert.deepEqual(job.ranOn, {
    id: MACHINE,
    account: 'local',
    state: 'terminated',
    gpuModel: 'H100',
    gpuCount: 1,
    pricePerHour: 2.1,
    spot: false,
    simulated: true,
    terminatedWhy: 'keep expired',
  });
  // The queued --cloud-only job has no host: no machine.
  assert.equal((await describeJson(ids.cloud)).ranOn, undefined);
  // Lists build many views: they read no machine.
  const list = JobListSchema.parse((await stack.api('GET', '/api/jobs')).body).jobs;
  assert.ok(list.some((j) => j.id === ids.plain));
  assert.ok(list.every((j) => j.ranOn === undefined));
});

const open = (path: string): Promise<Page> => openSignedIn(context, stack.controllerUrl, stack.clientToken, path);

async function shot(page: Page, name: string): Promise<void> {
  copyFileSync(await screenshot(page, `jobview-${name}`), `${SHOTS}/${name}.png`);
}

test("the job's page shows its placement and the machine it ran on, linked to Machines", { skip: noChromium, timeout: 120_000 }, async () => {
  const cloud = await open(`/jobs/${ids.cloud}`);
  await cloud.locator('[data-placement]').waitFor();
  assert.equal(
    await cloud.locator('[data-placement]').textContent(),
    'cloud (--cloud local, --max-price $2.50/h, --spot, --keep 1m30s, at least 2 CPUs, 8 GiB RAM, CUDA 12.4)',
  );
  assert.equal(await cloud.locator('[data-ran-on]').count(), 0);
  await shot(cloud, 'cloud-job');

  const plain = await open(`/jobs/${ids.plain}`);
  const ranOn = plain.locator('[data-ran-on]');
  await ranOn.waitFor();
  assert.equal(await ranOn.textContent(), `${MACHINE} (local, 1× H100, $2.10/h simulated), now terminated (keep expired)`);
  assert.equal(await ranOn.locator('a').getAttribute('href'), '/machines');
  assert.equal(await plain.locator('[data-placement]').count(), 0, 'a plain job asked nothing');
  await shot(plain, 'ran-on-machine');
  await ranOn.locator('a').click();
  await plain.waitForURL(`${stack.controllerUrl}/machines`);
  assert.deepEqual(pageErrors, [], 'no page threw');
});

// The dashboard's Machines page (issue 34) in a real Chromium: two machines
// launched from the local provider on real Docker (their launch backdated, so
// their cost is known) with state, account, GPU, price, the job one is for (a
// link), when the idle one is deleted, cost so far, simulated prices marked
// with a badge, and the total; below, cost per team (idle apart) and the
// dearest jobs. An admin deletes one through the page (after a confirm), a
// client session sees no Delete button. Screenshots go under /tmp/costs-shots/.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { after, afterEach, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { launchChromium, noChromium, screenshot, signIn } from '../helpers/browser';
import { STOCK_IMAGE, stockImageSkip } from '../helpers/docker';
import { Stack } from '../helpers/stack';

const IMAGE = STOCK_IMAGE;
const skip = noChromium || stockImageSkip('the Machines page test');
const docker = new Docker();
const ids: Record<string, string> = {};
const SHOTS = '/tmp/costs-shots';
const JOB = 'j0000pagejob';
const NEXT = 'j0000nextjob';
const PREFIX = `rcp${process.pid}`;
let stack: Stack;
let sql: postgres.Sql;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
const pageErrors: string[] = [];

before(
  async () => {
    if (skip) return;
    const config = {
      prefix: PREFIX,
      image: IMAGE,
      offers: [
        { offerId: 'h100x2', gpuModel: 'H100', gpuCount: 2, vramGiB: 80, cpus: 8, ramGiB: 64, diskGiB: 200, pricePerHour: 4.5 },
        { offerId: 'l4', gpuModel: 'L4', gpuCount: 1, vramGiB: 24, cpus: 4, ramGiB: 16, diskGiB: 50, pricePerHour: 0.7, spot: true },
      ],
    };
    stack = await Stack.start({ dashboard: true, workers: [], controllerEnv: { RC_LOCAL_PROVIDER: JSON.stringify(config) } });
    sql = postgres(stack.dbUrl, { max: 2 });
    const support = (await import(join(import.meta.dirname, '..', '..', 'dist/test-support.js'))) as typeof import('../support');
    const parsed = support.parseLocalProviderConfig(JSON.stringify(config));
    assert.ok('config' in parsed, JSON.stringify(parsed));
    const provider = new support.LocalProvider(parsed.config);
    const db = support.connect(stack.dbUrl, 2);
    const deps = {
      db: db.db,
      sql: db.client,
      providers: new Map([[provider.account, provider]]),
      controllerUrl: stack.controllerUrl,
      launchTimeoutS: 600,
      log: () => {},
    };
    for (const o of await provider.offers({})) {
      const m = await support.launchMachine(deps, o);
      ids[o.offerId] = m.id;
      // Launched two hours (the H100s) or one hour (the L4) ago: their cost so far is known.
      await sql`update machines set created_at = now() - make_interval(secs => ${o.offerId === 'l4' ? 3600 : 7200}) where id = ${m.id}`;
    }
    await db.close();
    // A job of team vision ran an hour on the H100s (from 90 to 30 minutes ago: $4.50) and the machine is for it;
    // the L4 idles until 4½ minutes from now. The rest of their time is idle: no team's.
    await sql`insert into teams (name) values ('vision')`;
    const [token] = await sql<{ id: number }[]>`insert into tokens (kind, name, hash, team) values ('client', 'vis', 'page-test-hash', 'vision') returning id`;
    await sql`insert into jobs (id, submitter, token_id, argv, name, state, host_name, started_at, ended_at)
      select ${JOB}, 'vis', ${token!.id}, '["train.py"]'::jsonb, 'train-big', 'succeeded', host_name, now() - interval '90 minutes', now() - interval '30 minutes'
      from machines where id = ${ids.h100x2!}`;
    // The H100s are now for the next job, queued (its -d names a device no host has, so it stays queued: the
    // machine pass keeps a machine for a queued job, and frees one whose job ended).
    await sql`insert into jobs (id, submitter, token_id, argv, name, state, device_name)
      values (${NEXT}, 'vis', ${token!.id}, '["train.py"]'::jsonb, 'next-up', 'queued', 'nowhere:gpu0')`;
    await sql`update machines set job_id = ${NEXT} where id = ${ids.h100x2!}`;
    await sql`update machines set idle_until = now() + interval '270 seconds' where id = ${ids.l4!}`;
    browser = await launchChromium();
    context = browser.context;
    context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
    mkdirSync(SHOTS, { recursive: true });
  },
  { timeout: 660_000 },
);

afterEach(() => {
  assert.deepEqual(pageErrors.splice(0), [], 'no page threw');
});

after(async () => {
  for (const id of Object.values(ids))
    await docker
      .getContainer(`${PREFIX}-${id}`)
      .remove({ force: true })
      .catch(() => {});
  await browser?.close();
  await sql?.end();
  await stack?.stop();
});

async function machinesPage(token: string): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize({ width: 1400, height: 700 });
  await signIn(page, stack.controllerUrl, token);
  await page.goto(`${stack.controllerUrl}/machines`);
  await page
    .locator(`[data-machine="${ids.h100x2}"]`)
    .waitFor()
    .catch(async (e: unknown) => {
      copyFileSync(await screenshot(page, 'machines-failed'), `${SHOTS}/machines-failed.png`);
      throw e;
    });
  return page;
}

test('the machines with state, GPU, price and cost so far, simulated marked, and the total; a client has no Delete', { skip }, async () => {
  const page = await machinesPage(stack.clientToken);
  assert.equal(await page.getByRole('link', { name: 'Machines' }).getAttribute('aria-current'), 'page');
  const h1 = (await page.locator(`[data-machine="${ids.h100x2}"]`).textContent()) ?? '';
  assert.match(h1, /booting|idle/);
  assert.match(h1, /2× H100/);
  assert.match((await page.locator(`[data-machine="${ids.h100x2}"] [data-price]`).textContent()) ?? '', /^4\.50simulated$/);
  // Two hours at $4.50: $9.00 (a few seconds more by the time it is read).
  assert.match((await page.locator(`[data-machine="${ids.h100x2}"] [data-cost]`).textContent()) ?? '', /^\$9\.0\d$/);
  assert.equal(await page.locator(`[data-machine="${ids.h100x2}"] [data-simulated]`).count(), 2, 'its price and its cost say simulated');
  // JOB: the job it is for, a link to its page; IDLE UNTIL: none while it is for a job.
  assert.equal(await page.locator(`[data-machine="${ids.h100x2}"] a[data-job]`).getAttribute('href'), `/jobs/${NEXT}`);
  assert.equal(await page.locator(`[data-machine="${ids.h100x2}"] [data-idle-until]`).textContent(), '–');
  assert.match((await page.locator(`[data-machine="${ids.l4}"]`).textContent()) ?? '', /idle.*1× L4.*spot/);
  assert.match((await page.locator(`[data-machine="${ids.l4}"] [data-idle-until]`).textContent()) ?? '', /^\d\d:\d\d:\d\d \(in [1-4]m\)$/);
  assert.match((await page.locator('[data-listed-total]').textContent()) ?? '', /^\$9\.7\dsimulated$/);
  // Every machine's cost: vision's hour on the H100s ($4.50), the rest idle ($5.2x: an hour of H100s and an hour of L4); the total.
  assert.match((await page.locator('[data-total]').textContent()) ?? '', /^\$9\.7\d$/);
  assert.match((await page.locator('[data-costs-by-team] [data-team="vision"]').textContent()) ?? '', /^vision\$4\.50simulated$/);
  assert.match((await page.locator('[data-costs-by-team] [data-team-idle]').textContent()) ?? '', /^idle\$5\.2\dsimulated$/);
  const dearest = page.locator(`[data-costs-by-job] [data-job-cost="${JOB}"]`);
  assert.match((await dearest.textContent()) ?? '', new RegExp(`^${JOB}train-bigvision\\$4\\.50simulated$`));
  assert.equal(await dearest.locator('a').getAttribute('href'), `/jobs/${JOB}`);
  assert.equal(await page.getByRole('button', { name: /Delete machine/ }).count(), 0);
  copyFileSync(await screenshot(page, 'machines-client'), `${SHOTS}/machines-client.png`);
  await page.close();
});

test('an admin deletes a machine through the page after a confirm; it is terminated, with why, and audited', { skip }, async () => {
  const page = await machinesPage(stack.adminToken);
  copyFileSync(await screenshot(page, 'machines-admin'), `${SHOTS}/machines-admin.png`);
  let asked = '';
  page.once('dialog', (d) => {
    asked = d.message();
    void d.accept();
  });
  await page.getByRole('button', { name: `Delete machine ${ids.l4}` }).click();
  await page.locator(`[data-machine="${ids.l4}"]`).waitFor({ state: 'detached', timeout: 15_000 });
  assert.match(asked, new RegExp(`Delete machine ${ids.l4}`));
  const [m] = await sql<{ state: string; why: string }[]>`select state, terminated_why as why from machines where id = ${ids.l4!}`;
  assert.equal(m!.state, 'terminated');
  assert.match(m!.why, /^rm by /);
  const [a] = await sql<{ actor: string }[]>`select actor from audit where target = ${ids.l4!} and action = 'machine.terminate'`;
  assert.match(a!.actor, /^admin:/);
  await page.getByLabel('terminated ones too').check();
  await page.locator(`[data-machine="${ids.l4}"]`).waitFor();
  copyFileSync(await screenshot(page, 'machines-all'), `${SHOTS}/machines-all.png`);
  await page.close();
});

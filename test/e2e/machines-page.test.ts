// The dashboard's Machines page (issue 34) in a real Chromium: two machines
// launched from the local provider on real Docker (their launch backdated, so
// their cost is known) with state, account, GPU, price
// and cost so far, simulated prices marked, and the total; an admin deletes one
// through the page (after a confirm), a client session sees no Delete button.
// Screenshots go under /tmp/machines-shots/.
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
const SHOTS = '/tmp/machines-shots';
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
  assert.match(h1, /4\.50\*/);
  // Two hours at $4.50: $9.00 (a few seconds more by the time it is read).
  assert.match((await page.locator(`[data-machine="${ids.h100x2}"] [data-cost]`).textContent()) ?? '', /^\$9\.0\d\*$/);
  assert.match((await page.locator(`[data-machine="${ids.l4}"]`).textContent()) ?? '', /idle.*1× L4.*spot/);
  assert.match((await page.locator('[data-total]').textContent()) ?? '', /^\$9\.7\d\*$/);
  assert.match((await page.textContent('body')) ?? '', /simulated price/);
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

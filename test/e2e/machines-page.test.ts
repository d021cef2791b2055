// The dashboard's Machines page (issue 34) in a real Chromium: machines (rows
// inserted as the local provider's would be) with state, account, GPU, price
// and cost so far, simulated prices marked, and the total; an admin deletes one
// through the page (after a confirm), a client session sees no Delete button.
// Screenshots go under /tmp/machines-shots/.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { after, afterEach, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { launchChromium, noChromium, screenshot, signIn } from '../helpers/browser';
import { Stack } from '../helpers/stack';

const skip = noChromium;
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
    // The provider is configured so that a delete asks it; no container of these names exists, so each is gone at once.
    const provider = {
      prefix: PREFIX,
      image: 'rc-job:stock',
      offers: [{ offerId: 'l4', gpuModel: 'L4', gpuCount: 1, vramGiB: 24, cpus: 4, ramGiB: 16, diskGiB: 50, pricePerHour: 0.7 }],
    };
    stack = await Stack.start({ dashboard: true, workers: [], controllerEnv: { RC_LOCAL_PROVIDER: JSON.stringify(provider) } });
    sql = postgres(stack.dbUrl, { max: 2 });
    const row = (id: string, gpu: string, count: number, price: number, state: string, hoursAgo: number, spot = false) =>
      sql`insert into machines (id, account, instance_name, offer, price_per_hour, spot, simulated, state, host_name, created_at)
        values (${id}, 'local', ${`${PREFIX}-${id}`}, ${JSON.stringify({ gpuModel: gpu, gpuCount: count })}::text::jsonb, ${price}, ${spot}, true, ${state}, ${`${PREFIX}-${id}`},
          now() - make_interval(secs => ${hoursAgo * 3600}))`;
    await row('m00000000h1', 'H100', 2, 4.5, 'busy', 2);
    await row('m00000000l4', 'L4', 1, 0.7, 'idle', 1, true);
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
  await browser?.close();
  await sql?.end();
  await stack?.stop();
});

async function machinesPage(token: string): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize({ width: 1400, height: 700 });
  await signIn(page, stack.controllerUrl, token);
  await page.goto(`${stack.controllerUrl}/machines`);
  await page.locator('[data-machine="m00000000h1"]').waitFor();
  return page;
}

test('the machines with state, GPU, price and cost so far, simulated marked, and the total; a client has no Delete', { skip }, async () => {
  const page = await machinesPage(stack.clientToken);
  assert.equal(await page.getByRole('link', { name: 'Machines' }).getAttribute('aria-current'), 'page');
  const h1 = (await page.locator('[data-machine="m00000000h1"]').textContent()) ?? '';
  assert.match(h1, /busy/);
  assert.match(h1, /2× H100/);
  assert.match(h1, /4\.50\*/);
  // Two hours at $4.50: $9.00 (a few seconds more by the time it is read).
  assert.match((await page.locator('[data-machine="m00000000h1"] [data-cost]').textContent()) ?? '', /^\$9\.0\d\*$/);
  assert.match((await page.locator('[data-machine="m00000000l4"]').textContent()) ?? '', /idle.*1× L4.*spot/);
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
  await page.getByRole('button', { name: 'Delete machine m00000000l4' }).click();
  await page.locator('[data-machine="m00000000l4"]').waitFor({ state: 'detached', timeout: 15_000 });
  assert.match(asked, /Delete machine m00000000l4/);
  const [m] = await sql<{ state: string; why: string }[]>`select state, terminated_why as why from machines where id = 'm00000000l4'`;
  assert.equal(m!.state, 'terminated');
  assert.match(m!.why, /^rm by /);
  const [a] = await sql<{ actor: string }[]>`select actor from audit where target = 'm00000000l4' and action = 'machine.terminate'`;
  assert.match(a!.actor, /^admin:/);
  await page.getByLabel('terminated ones too').check();
  await page.locator('[data-machine="m00000000l4"]').waitFor();
  copyFileSync(await screenshot(page, 'machines-all'), `${SHOTS}/machines-all.png`);
  await page.close();
});

// What a newcomer meets in the dashboard, in a real Chromium beside the CLI:
// a simulated device (bench/simulator, as npm run demo has) offers no Terminal
// button but says why, on the fleet, host and device pages, while a real
// worker's device keeps its button; and a queued job's place in line is the
// same in rc ps, rc describe and on the Queue page (#1: next). Screenshots in
// /tmp/firstcontact-shots.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { type Fleet, startFleet } from '../../bench/simulator/fleet';
import { uniformHost } from '../../bench/simulator/spec';
import { launchChromium, noChromium, screenshot, openSignedIn } from '../helpers/browser';
import { Stack } from '../helpers/stack';

const skip = noChromium;
const SHOTS = '/tmp/firstcontact-shots';
let stack: Stack;
let fleet: Fleet | null = null;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
const pageErrors: string[] = [];

before(
  async () => {
    if (skip) return;
    stack = await Stack.start({ dashboard: true, workers: [{ name: 'alpha', devices: 1 }] });
    fleet = await startFleet({ url: stack.controllerUrl, adminToken: stack.adminToken, hosts: [uniformHost('sim-a', 'A100-80GB', 2)], killGraceS: 1 });
    browser = await launchChromium();
    context = browser.context;
    context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
    mkdirSync(SHOTS, { recursive: true });
  },
  { timeout: 660_000 },
);

after(async () => {
  await browser?.close();
  await fleet?.stop();
  await stack?.stop();
});

const open = (path: string): Promise<Page> => openSignedIn(context, stack.controllerUrl, stack.clientToken, path);

async function shot(page: Page, name: string): Promise<void> {
  copyFileSync(await screenshot(page, `firstcontact-${name}`), `${SHOTS}/${name}.png`);
}

const terminalButton = (page: Page, device: string) => page.getByRole('button', { name: `Open a terminal on ${device}` });

test('a simulated device offers no Terminal button and says why; a real device keeps its button', { skip, timeout: 120_000 }, async () => {
  // The fleet page: a row per device.
  const fleetPage = await open('/');
  const simRow = fleetPage.locator('tr[data-device="sim-a:gpu0"]');
  await simRow.waitFor();
  await fleetPage.locator('tr[data-device="alpha:gpu0"]').waitFor();
  assert.equal(await terminalButton(fleetPage, 'sim-a:gpu0').count(), 0, 'no Terminal button on a simulated device');
  assert.equal((await simRow.locator('[data-no-terminal]').textContent())?.trim(), 'no terminal (simulated)');
  assert.match((await simRow.locator('[data-no-terminal]').getAttribute('title')) ?? '', /simulated device .* runs jobs as local processes, not shells/);
  assert.equal(await terminalButton(fleetPage, 'alpha:gpu0').count(), 1, 'a real device keeps its button');
  await shot(fleetPage, 'fleet');
  await fleetPage.setViewportSize({ width: 390, height: 844 });
  await shot(fleetPage, 'fleet-phone');
  await fleetPage.setViewportSize({ width: 1400, height: 900 });
  // Filtered to simulated devices only, the "Open terminal" on any match says the same; filtered to all, it is a button.
  await fleetPage.getByLabel('Filter devices by selector').fill('simulated=true');
  await fleetPage.locator('tr[data-device="alpha:gpu0"]').waitFor({ state: 'detached' });
  assert.equal(await fleetPage.getByRole('button', { name: 'Open a terminal on any device matching the filter' }).count(), 0);
  await shot(fleetPage, 'fleet-simulated-only');
  await fleetPage.getByLabel('Filter devices by selector').fill('');
  await fleetPage.getByRole('button', { name: 'Open a terminal on any device matching the filter' }).waitFor();

  // The host page and the device page.
  const host = await open('/hosts/sim-a');
  await host.locator('tr[data-device="sim-a:gpu1"] [data-no-terminal]').waitFor();
  assert.equal(await terminalButton(host, 'sim-a:gpu1').count(), 0);
  await shot(host, 'host');
  const device = await open(`/devices/${encodeURIComponent('sim-a:gpu0')}`);
  await device.locator('[data-no-terminal]').waitFor();
  assert.equal(await terminalButton(device, 'sim-a:gpu0').count(), 0);
  await shot(device, 'device');
  const real = await open(`/devices/${encodeURIComponent('alpha:gpu0')}`);
  await terminalButton(real, 'alpha:gpu0').waitFor();
  assert.equal(await real.locator('[data-no-terminal]').count(), 0);
  assert.deepEqual(pageErrors, [], 'no page threw');
});

test('a queued job has the same place in line in rc ps, rc describe and on the Queue page, from #1', { skip, timeout: 120_000 }, async () => {
  const holder = await stack.cli(['run', '-d', 'alpha:gpu0', '--detach', '--', 'sleep', '60']);
  assert.equal(holder.code, 0, holder.stderr);
  const holderId = holder.stdout.trim();
  await stack.waitFor(async () => new RegExp(`^${holderId} +running`, 'm').test((await stack.cli(['ps'])).stdout), 'the holder to run');
  const first = (await stack.cli(['run', '-d', 'alpha:gpu0', '--detach', '--name', 'first-in-line', '--', 'true'])).stdout.trim();
  const second = (await stack.cli(['run', '-d', 'alpha:gpu0', '--detach', '--name', 'second-in-line', '--', 'true'])).stdout.trim();
  const ps = (await stack.cli(['ps'])).stdout;
  assert.match(ps, new RegExp(`^${first} +queued #1 `, 'm'), ps);
  assert.match(ps, new RegExp(`^${second} +queued #2 `, 'm'), ps);
  assert.match((await stack.cli(['describe', first])).stdout, /^waits: +#1 in line: /m);
  // The API's position stays the count of jobs ahead.
  const api = (await stack.api('GET', '/api/ps')).body as { jobs: { id: string; position: number | null }[] };
  assert.deepEqual(
    [first, second].map((id) => api.jobs.find((j) => j.id === id)!.position),
    [0, 1],
  );

  const queue = await open('/queue');
  await queue.locator(`li[data-job="${second}"] [data-place]`).waitFor();
  assert.equal((await queue.locator(`li[data-job="${first}"] [data-place]`).textContent())?.trim(), '#1');
  assert.equal((await queue.locator(`li[data-job="${second}"] [data-place]`).textContent())?.trim(), '#2');
  await shot(queue, 'queue');
  for (const id of [second, first, holderId]) assert.equal((await stack.cli(['kill', id])).code, 0);
  assert.deepEqual(pageErrors, [], 'no page threw');
});

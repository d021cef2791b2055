// The dashboard's arrays (rc run --array) in a real Chromium: the Jobs page
// groups an array's tasks into one row with counts by state (opened, a row per
// task), the Queue page shows its queued tasks as one card, and the array's
// page lists every task with a link to its job. Screenshots in /tmp/arrays-shots.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, noChromium, screenshot, openSignedIn } from '../helpers/browser';
import { Stack } from '../helpers/stack';

const skip = noChromium;
const SHOTS = '/tmp/arrays-shots';
let stack: Stack;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
const pageErrors: string[] = [];

before(
  async () => {
    if (skip) return;
    stack = await Stack.start({ dashboard: true, workers: [{ name: 'alpha', devices: 2 }] });
    browser = await launchChromium();
    context = browser.context;
    context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
    mkdirSync(SHOTS, { recursive: true });
  },
  { timeout: 660_000 },
);

after(async () => {
  await browser?.close();
  await stack?.stop();
});

const open = (path: string): Promise<Page> => openSignedIn(context, stack.controllerUrl, stack.clientToken, path);

async function shot(page: Page, name: string): Promise<void> {
  copyFileSync(await screenshot(page, `arrays-${name}`), `${SHOTS}/${name}.png`);
}

test('an array on the Jobs, Queue and array pages: grouped with counts, each task linked', { skip, timeout: 120_000 }, async () => {
  // An array that has ended, and one with two tasks running (two devices, %2) and four waiting on its cap.
  const done = await stack.cli(['run', '--array', '0-1', '--name', 'quick', '--', 'true'], { timeoutMs: 60_000 });
  assert.equal(done.code, 0, done.stderr);
  const r = await stack.cli(['run', '--array', '0-5%2', '--detach', '--name', 'sweep', '--', 'sleep', '60']);
  assert.equal(r.code, 0, r.stderr);
  const id = r.stdout.trim();
  await stack.waitFor(async () => {
    const a = (await stack.api('GET', `/api/arrays/${id}`)).body as { array: { counts: { running: number } } };
    return a.array.counts.running === 2;
  }, 'two tasks to run');

  const jobs = await open('/jobs');
  const row = jobs.locator(`tr[data-array="${id}"]`);
  await row.waitFor();
  assert.match((await row.textContent()) ?? '', /array, 6 tasks/);
  assert.match((await row.textContent()) ?? '', /running\s*2/);
  assert.match((await row.textContent()) ?? '', /queued\s*4/);
  assert.equal(await jobs.locator('tr[data-job]').count(), 0, 'tasks are folded into their arrays');
  await shot(jobs, 'jobs');
  await row.getByRole('button', { name: 'Show its tasks' }).click();
  await jobs.locator('tr[data-job]').first().waitFor();
  assert.equal(await jobs.locator(`tr[data-job]`).filter({ hasText: id }).count(), 6);
  await shot(jobs, 'jobs-open');

  const queue = await open('/queue');
  const card = queue.locator(`li[data-array="${id}"]`);
  await card.waitFor();
  assert.match((await card.textContent()) ?? '', /array: 4 tasks queued \(index 2–5\)/);
  await shot(queue, 'queue');

  const page = await open(`/arrays/${id}`);
  await page.locator('[data-array-counts]').waitFor();
  assert.match((await page.locator('[data-array-counts]').textContent()) ?? '', /2 running/);
  await page.locator('tr[data-job]').nth(5).waitFor();
  assert.equal(await page.locator('tr[data-job]').count(), 6);
  assert.match((await page.locator('main').textContent()) ?? '', /0-5%2: 6 tasks, at most 2 at once/);
  await shot(page, 'array');
  // A task's link goes to its job's page.
  const first = page.locator('tr[data-job] a').first();
  const href = await first.getAttribute('href');
  assert.match(href ?? '', /^\/jobs\/j[0-9a-v]{10}$/);

  assert.equal((await stack.cli(['kill', id])).code, 0);
  assert.deepEqual(pageErrors, [], 'no page threw');
});

test('a job waiting on another in the Queue (no place in line, its reason); a retried job lists its attempts with their exit codes', {
  skip,
  timeout: 120_000,
}, async () => {
  // Both devices busy for a minute: a job --after the first of them waits on it, not on a device.
  const sleepers = (await stack.cli(['run', '--array', '0-1', '--detach', '--', 'sleep', '60'])).stdout.trim();
  const tasks = ((await stack.api('GET', `/api/jobs?array=${sleepers}`)).body as { jobs: { id: string }[] }).jobs;
  await stack.waitFor(
    async () => ((await stack.api('GET', `/api/arrays/${sleepers}`)).body as { array: { counts: { running: number } } }).array.counts.running === 2,
    'both to run',
  );
  const waiter = (await stack.cli(['run', '--detach', '--after', tasks[0]!.id, '--', 'true'])).stdout.trim();
  const queue = await open('/queue');
  const card = queue.locator(`li[data-job="${waiter}"]`);
  await card.waitFor();
  assert.match((await card.textContent()) ?? '', new RegExp(`–.*after ${tasks[0]!.id} \\(running\\)`, 's'));
  assert.equal(await card.locator('[data-until]').count(), 0, 'no until-when for a job not in line');
  await shot(queue, 'queue-after');
  assert.equal((await stack.cli(['kill', sleepers])).code, 0);
  // A command that always fails, retried twice: three attempts, each exit 3.
  const retried = await stack.cli(['run', '--retries', '2', '--', 'sh', '-c', 'exit 3'], { timeoutMs: 60_000 });
  assert.equal(retried.code, 3, retried.stderr);
  assert.match(retried.stderr, /retrying: attempt 2 of 3 after exit 3/);
  const id = /job (j[0-9a-v]{10})/.exec(retried.stderr)![1]!;
  const page = await open(`/jobs/${id}`);
  const attempts = page.locator('[data-attempts]');
  await attempts.waitFor();
  assert.equal(await attempts.locator('tbody tr').count(), 3);
  // Every attempt, the last one too, with its exit code.
  assert.equal(await attempts.locator('tbody tr', { hasText: 'exit 3' }).count(), 3);
  assert.match((await page.locator('main').textContent()) ?? '', /retries: 2 of 2 used after a non-zero exit/);
  await shot(page, 'job-retried');
  assert.deepEqual(pageErrors, [], 'no page threw');
});

// The Queue page says until when each job waits at the latest (core/until.ts),
// beside why: a device held by a job with --max-runtime 10m bounds one job,
// a device whose job has no limit gives none. Saved as a screenshot
// (test-results/screenshots/queue-until.png; RC_SHOTS_DIR: a copy there too).
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { launchChromium, noChromium, screenshot, signIn } from '../helpers/browser';
import { Stack } from '../helpers/stack';

const skip = noChromium;
let stack: Stack;
let browser: Awaited<ReturnType<typeof launchChromium>>;

before(
  async () => {
    if (skip) return;
    stack = await Stack.start({ dashboard: true, workers: [{ name: 'gpubox', devices: 2 }] });
    browser = await launchChromium();
  },
  { timeout: 900_000 },
);
after(async () => {
  await browser?.close();
  await stack?.stop();
});

test('the Queue page gives each waiting job its bound, or says none is known', { skip, timeout: 60_000 }, async () => {
  const run = async (args: string[]) => {
    const r = await stack.cli(['run', '--detach', ...args, '--', 'sleep', '3600']);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim();
  };
  const running = [await run(['-d', 'gpubox:gpu0', '--max-runtime', '10m']), await run(['-d', 'gpubox:gpu1'])];
  const bounded = await run(['-d', 'gpubox:gpu0', '--max-runtime', '1m']);
  const open = await run(['-d', 'gpubox:gpu1', '--max-runtime', '1m']);
  const page = await browser.context.newPage();
  await signIn(page, stack.controllerUrl, stack.clientToken);
  await page.goto(`${stack.controllerUrl}/queue`);
  const until = (id: string) => page.locator(`[data-job="${id}"] [data-until]`);
  await until(bounded).waitFor({ timeout: 5000 });
  assert.match(
    (await until(bounded).textContent()) ?? '',
    /^Until: a matching device frees by \d\d:\d\d:\d\d \(in (9m\d+s|10m)\) at the latest, if nothing else changes$/,
  );
  assert.match((await until(open).textContent()) ?? '', /^Until: no bound is known/);
  const shot = await screenshot(page, 'queue-until');
  if (process.env.RC_SHOTS_DIR) {
    mkdirSync(process.env.RC_SHOTS_DIR, { recursive: true });
    copyFileSync(shot, join(process.env.RC_SHOTS_DIR, 'queue-until.png'));
  }
  for (const id of [bounded, open, ...running]) await stack.cli(['kill', id]);
});

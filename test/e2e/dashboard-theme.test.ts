// The dashboard's look in a real Chromium against a real stack: it follows
// the system's dark or light preference before the first paint and while
// open, the header's switch overrides it and is remembered across a reload;
// an empty list says what matched nothing and clears its filters; an unknown
// address or an unknown job, device or host gets the 404 page with status
// 404. Every page is saved in both themes, at desktop and (a few) at phone
// width, under /tmp/uitheme-shots/ (RC_SHOTS_DIR) for people to look at.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { launchChromium, noChromium, signIn } from '../helpers/browser';
import { fakeNvidiaSmiDir, setGpuMemoryUsed, setGpuUtilisation } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

const skip = noChromium;
const SHOTS = process.env.RC_SHOTS_DIR ?? '/tmp/uitheme-shots';
const DESKTOP = { width: 1400, height: 900 };
const PHONE = { width: 390, height: 844 };
let stack: Stack;
let sql: postgres.Sql;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
const pageErrors: string[] = [];
const smi = fakeNvidiaSmiDir();
/** Made in before(): a job that printed in colour, one that failed, and an array. */
let colourJob = '';
let arrayId = '';
/** The CLIs left running (the long job, the queued one, the hold). */
const running: ChildProcess[] = [];

before(
  async () => {
    if (skip) return;
    stack = await Stack.start({ dashboard: true, workers: [] });
    await stack.startWorker('gpubox', 2, { PATH: `${smi}:${process.env.PATH}` });
    await stack.startWorker('cpubox', 1);
    sql = postgres(stack.dbUrl, { max: 2 });
    browser = await launchChromium();
    context = browser.context;
    context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
    mkdirSync(SHOTS, { recursive: true });
    setGpuUtilisation(smi, 0, 63);
    setGpuMemoryUsed(smi, 0, 700);

    // Something on every page: jobs that ended (one in colour, one failed), an array, a running job with one
    // queued behind it, a hold, and a team with a fortnight of use for its chart.
    const colour = stack.runJob(['-d', 'cpubox:gpu0'], `printf '\\033[31mred\\033[0m \\033[32mgreen\\033[0m \\033[1;34mbold blue\\033[0m plain\\n'`);
    colourJob = await colour.id;
    assert.equal((await colour.done).code, 0);
    assert.equal((await stack.cli(['run', '-d', 'cpubox:gpu0', '--', 'sh', '-c', 'echo no such file >&2; exit 3'])).code, 3);
    const arr = await stack.cli(['run', '--array', '0-3', '--detach', '--name', 'sweep', '-d', 'cpubox:gpu0', '--', 'true']);
    assert.equal(arr.code, 0, arr.stderr);
    arrayId = arr.stdout.trim();
    // Left running while the tests look (ended in after()): a long job, one queued behind it, a hold.
    const keep = { timeoutMs: 900_000, onSpawn: (c: ChildProcess) => void running.push(c) };
    void stack.cli(['run', '-d', 'gpubox:gpu0', '--name', 'train-7', '--', 'sleep', '900'], keep);
    await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === 'gpubox:gpu0')?.state === 'busy', 'the long job to run');
    void stack.cli(['run', '-d', 'gpubox:gpu0', '--', 'true'], keep);
    void stack.cli(['hold', '-d', 'gpubox:gpu1', '--ttl', '2h'], keep);
    await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === 'gpubox:gpu1')?.holder != null, 'the hold');
    const team = await stack.api('POST', '/api/admin/teams', { name: 'vision', share: 2 }, stack.adminToken);
    assert.ok(team.status < 300, JSON.stringify(team.body));
    const token = (await stack.api('POST', '/api/admin/tokens', { name: 'agent-a', team: 'vision' }, stack.adminToken)).body as { id: number };
    const [device] = await sql<{ id: number }[]>`select id from devices where host_name = 'gpubox' order by index limit 1`;
    for (let day = 1; day <= 12; day++) {
      const id = `jfabvision${String(day).padStart(2, '0')}`;
      await sql`insert into jobs (id, submitter, argv, state, kind, token_id, started_at, ended_at)
        values (${id}, 'agent-a', '["true"]'::jsonb, 'succeeded', 'run', ${token.id}, now() - make_interval(hours => ${day * 24}), now() - make_interval(hours => ${day * 24 - 5}))`;
      await sql`insert into leases (device_id, job_id, acquired_at, released_at, idle_s, idle_seen_at)
        values (${device!.id}, ${id}, now() - make_interval(hours => ${day * 24}), now() - make_interval(hours => ${day * 24 - 5}), ${day % 3 ? 3600 : 0}, now())`;
    }
  },
  { timeout: 660_000 },
);

afterEach(async () => {
  for (const p of context?.pages() ?? []) await p.close();
  const errors = pageErrors.splice(0);
  assert.deepEqual(errors, [], 'no page threw');
});

after(async () => {
  for (const c of running) c.kill('SIGKILL');
  await browser?.close();
  await sql?.end();
  await stack?.stop();
});

/** A signed-in page whose system prefers `scheme`. */
async function open(scheme: 'light' | 'dark', token = stack.adminToken): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize(DESKTOP);
  await page.emulateMedia({ colorScheme: scheme });
  await signIn(page, stack.controllerUrl, token);
  await page.locator('[data-device="gpubox:gpu0"]').waitFor();
  return page;
}

const isDark = (page: Page) => page.evaluate(() => document.documentElement.classList.contains('dark'));
/** The lightness (0–1) of an element's computed colour, whatever notation Chromium gives it in (painted on a canvas to read). */
const lightness = (page: Page, selector: string, property: 'color' | 'background-color') =>
  page.evaluate(
    ([s, p]) => {
      const ctx = document.createElement('canvas').getContext('2d')!;
      ctx.fillStyle = getComputedStyle(document.querySelector(s!)!).getPropertyValue(p!);
      ctx.fillRect(0, 0, 1, 1);
      const [r, g, b] = ctx.getImageData(0, 0, 1, 1).data;
      return (0.2126 * r! + 0.7152 * g! + 0.0722 * b!) / 255;
    },
    [selector, property],
  );

test("the theme follows the system's preference: set before the page's scripts run, and changed live", { skip, timeout: 60_000 }, async () => {
  const page = await open('dark');
  assert.equal(await isDark(page), true);
  assert.ok((await lightness(page, 'body', 'background-color')) < 0.25, 'a dark page');
  assert.ok((await lightness(page, 'main', 'color')) > 0.7, 'with light text');
  assert.ok(
    (await lightness(page, 'section[aria-label=Totals] > div', 'background-color')) > (await lightness(page, 'body', 'background-color')),
    'cards a step above the page',
  );
  // The system turns light while the page is open: the page follows, no reload.
  await page.emulateMedia({ colorScheme: 'light' });
  await page.waitForFunction(() => !document.documentElement.classList.contains('dark'));
  assert.ok((await lightness(page, 'body', 'background-color')) > 0.9, 'a light page');

  // No flash of the wrong theme: with none of Next's scripts allowed to load, the head's own script still sets it.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.route('**/_next/static/**/*.js', (r) => r.abort());
  await page.goto(`${stack.controllerUrl}/jobs`);
  assert.equal(await isDark(page), true, 'dark before any bundle ran');
});

test('the header switch overrides the system, is remembered across a reload, and System goes back to it', { skip, timeout: 60_000 }, async () => {
  const page = await open('dark');
  const theme = page.getByRole('combobox', { name: 'Theme' });
  assert.equal(await theme.inputValue(), 'system');
  await theme.selectOption('light');
  assert.equal(await isDark(page), false);
  await page.reload();
  await page.locator('[data-device="gpubox:gpu0"]').waitFor();
  assert.equal(await isDark(page), false, 'still light after a reload, though the system is dark');
  assert.equal(await theme.inputValue(), 'light');
  // Another page of the same dashboard keeps it too, and a system change does not undo a choice.
  const other = await context.newPage();
  await other.emulateMedia({ colorScheme: 'dark' });
  await other.goto(`${stack.controllerUrl}/queue`);
  assert.equal(await isDark(other), false);
  await page.emulateMedia({ colorScheme: 'light' });
  await page.emulateMedia({ colorScheme: 'dark' });
  assert.equal(await isDark(page), false);

  await theme.selectOption('dark');
  assert.equal(await isDark(page), true);
  await page.emulateMedia({ colorScheme: 'light' });
  await page.reload();
  await page.locator('[data-device="gpubox:gpu0"]').waitFor();
  assert.equal(await isDark(page), true, 'dark chosen, on a light system, after a reload');

  await theme.selectOption('system');
  assert.equal(await isDark(page), false, 'the system (light) again');
  assert.equal(await page.evaluate(() => localStorage.getItem('rc-theme')), null, 'no choice kept');
});

test('an empty list says what matched nothing and how to clear it; an empty page says what would fill it', { skip, timeout: 60_000 }, async () => {
  const page = await open('light');
  await page.goto(`${stack.controllerUrl}/jobs?state=lost&submitter=nobody`);
  const empty = page.locator('[data-empty]');
  await empty.waitFor();
  assert.match((await empty.textContent()) ?? '', /No job matches state=lost, submitter=nobody\./);
  await shot(page, 'light-jobs-empty-filter');
  await empty.getByRole('button', { name: 'Clear the filters' }).click();
  await page.locator(`[data-job="${colourJob}"]`).waitFor();
  assert.equal(new URL(page.url()).search, '', 'the address has no filters left');
  assert.equal(await page.getByRole('combobox', { name: 'State' }).inputValue(), '');

  await page.goto(stack.controllerUrl);
  const filter = page.getByRole('textbox', { name: 'Filter devices by selector' });
  await filter.fill('gpu_model=B200');
  await page.locator('[data-empty]').filter({ hasText: 'No device matches gpu_model=B200' }).waitFor();
  await shot(page, 'light-fleet-empty-filter');
  await page.getByRole('button', { name: 'Clear the filter' }).click();
  await page.locator('[data-device="gpubox:gpu0"]').waitFor();
  assert.equal(await filter.inputValue(), '');

  await page.goto(`${stack.controllerUrl}/machines`);
  assert.match((await page.locator('[data-empty]').textContent()) ?? '', /No machine is live\. rc run --cloud-only/);
  await page.goto(`${stack.controllerUrl}/audit`);
  await page.getByRole('textbox', { name: 'Who' }).fill('nobody-at-all');
  await page.locator('[data-empty]').filter({ hasText: 'No entry matches who=nobody-at-all.' }).waitFor();
  await page.getByRole('button', { name: 'Clear the filters' }).click();
  await page.locator('[data-empty]').waitFor({ state: 'detached' });
});

test('an unknown address, job, device or host gets the 404 page, with status 404, in the frame, with the way back', { skip, timeout: 60_000 }, async () => {
  const page = await open('light');
  for (const [path, heading] of [
    ['/no/such/page', 'No such page'],
    ['/jobs/j0000000000', 'No job j0000000000'],
    ['/devices/gpubox:gpu9', 'No device gpubox:gpu9'],
    ['/hosts/nowhere', 'No host nowhere'],
    ['/arrays/a0000000000', 'No array a0000000000'],
  ] as const) {
    const res = await page.goto(`${stack.controllerUrl}${path}`);
    assert.equal(res?.status(), 404, `${path} answers 404`);
    await page.getByRole('heading', { name: heading }).waitFor();
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).count(), 1, `${path}: in the signed-in frame`);
  }
  await page.goto(`${stack.controllerUrl}/jobs/j0000000000`);
  await page.getByRole('heading', { name: 'No job j0000000000' }).waitFor();
  await shot(page, 'light-404-job');
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForFunction(() => document.documentElement.classList.contains('dark'));
  // Loaded afresh too (Next builds this document in the browser, where the head's script does not run).
  await page.reload();
  await page.getByRole('heading', { name: 'No job j0000000000' }).waitFor();
  await page.waitForFunction(() => document.documentElement.classList.contains('dark'), null, { timeout: 5000 });
  await shot(page, 'dark-404-job');
  await page.setViewportSize(PHONE);
  await shot(page, 'dark-404-job-phone');
  await page.setViewportSize(DESKTOP);
  await page.getByRole('navigation', { name: 'Back' }).getByRole('link', { name: 'Jobs' }).click();
  await page.getByRole('heading', { name: 'Jobs' }).waitFor();
  // A known job is no 404.
  assert.equal((await page.goto(`${stack.controllerUrl}/jobs/${colourJob}`))?.status(), 200);
});

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

test('every page in both themes, at desktop width and some at phone width (screenshots)', { skip, timeout: 300_000 }, async () => {
  const pages: [name: string, path: string, ready: (p: Page) => Promise<unknown>, phone?: boolean][] = [
    ['fleet', '/', (p) => p.locator('[data-device="gpubox:gpu0"] svg path').first().waitFor({ state: 'attached' }), true],
    ['device', '/devices/gpubox:gpu0', (p) => p.locator('.uplot canvas').first().waitFor()],
    ['host', '/hosts/gpubox', (p) => p.getByRole('heading', { name: 'gpubox' }).waitFor()],
    ['jobs', '/jobs', (p) => p.locator(`[data-job="${colourJob}"]`).waitFor(), true],
    [
      'job',
      `/jobs/${colourJob}`,
      (p) =>
        p
          .getByRole('status', { name: 'Output status' })
          .filter({ hasText: /^ended/ })
          .waitFor(),
      true,
    ],
    ['queue', '/queue', (p) => p.locator('[data-why]').first().waitFor(), true],
    ['holds', '/holds', (p) => p.locator('[data-hold]').waitFor()],
    ['machines', '/machines', (p) => p.locator('[data-empty]').waitFor()],
    // The chart as well as the table: its series is a request of its own.
    ['usage', '/usage', (p) => p.getByRole('region', { name: 'Usage over time' }).locator('canvas').first().waitFor()],
    ['teams', '/teams', (p) => p.locator('[data-team="vision"] [data-team-chart] canvas').waitFor(), true],
    ['audit', '/audit', (p) => p.getByRole('table').waitFor()],
    ['array', `/arrays/${arrayId}`, (p) => p.getByRole('heading', { name: /Array/ }).waitFor()],
    ['terminal', '/terminal?device=cpubox:gpu0', (p) => p.getByRole('button').first().waitFor()],
  ];
  for (const scheme of ['light', 'dark'] as const) {
    const page = await open(scheme);
    for (const [name, path, ready, phone] of pages) {
      await page.setViewportSize(DESKTOP);
      await page.goto(`${stack.controllerUrl}${path}`);
      await ready(page);
      assert.equal(await isDark(page), scheme === 'dark', `${name} in ${scheme}`);
      await shot(page, `${scheme}-${name}`);
      if (phone) {
        await page.setViewportSize(PHONE);
        await shot(page, `${scheme}-${name}-phone`);
      }
    }
    // The sign-in page (it shows its form to a signed-in browser too).
    const login = await context.newPage();
    await login.emulateMedia({ colorScheme: scheme });
    await login.setViewportSize(DESKTOP);
    await login.goto(`${stack.controllerUrl}/login`);
    await login.locator('input[name=token]').waitFor();
    assert.equal(await isDark(login), scheme === 'dark');
    await shot(login, `${scheme}-login`);
    await login.setViewportSize(PHONE);
    await shot(login, `${scheme}-login-phone`);
    await login.close();
    await page.close();
  }
});

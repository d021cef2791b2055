// The operator's dashboard in a real Chromium against a real controller,
// Postgres and workers (a fake nvidia-smi stands in for the GPUs): the fleet
// page follows what the CLI does without a reload, a job's output arrives
// live with its colours, Kill and Release work from the page, holds count
// down, a silent host goes offline, a terminal starts only from a button, and
// the page reconnects by itself after a controller restart. Each page is
// saved as a screenshot under test-results/screenshots/.
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, lines, noChromium, screenshot, signIn, untilLine } from '../helpers/browser';
import { fakeNvidiaSmiDir, setGpuMemoryUsed, setGpuUtilisation } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

const skip = noChromium;
let stack: Stack;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
const pageErrors: string[] = [];
const smi = fakeNvidiaSmiDir();
/** The dashboard's submitter for the local client token: its jobs are the ones it may stop. */
let webName = '';

before(
  async () => {
    if (skip) return;
    stack = await Stack.start({ dashboard: true, workers: [], hostTimeoutS: 3, controllerEnv: { RC_TTY_GRACE_S: '3' } });
    await stack.startWorker('gpubox', 2, { PATH: `${smi}:${process.env.PATH}` });
    await stack.startWorker('cpubox', 1);
    webName = `web:${((await stack.api('GET', '/api/whoami')).body as { name: string }).name}`;
    browser = await launchChromium();
    context = browser.context;
    // An uncaught error in a page fails the test it happened in.
    context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
  },
  { timeout: 660_000 },
);

afterEach(async () => {
  for (const p of context?.pages() ?? []) await p.close();
  const errors = pageErrors.splice(0);
  assert.deepEqual(errors, [], 'no page threw');
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

async function fleetPage(): Promise<Page> {
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  await signIn(page, stack.controllerUrl, stack.clientToken);
  await page.locator('[data-device="gpubox:gpu0"]').waitFor();
  await page.getByRole('status', { name: 'live updates connected' }).waitFor();
  return page;
}

test('the fleet page: totals, models, sparklines; a job started with rc run shows within 1 s, and its end too', { skip, timeout: 90_000 }, async () => {
  // Under the worker's 1 GiB threshold: memory left over a job's end quarantines its device.
  setGpuUtilisation(smi, 0, 37);
  setGpuMemoryUsed(smi, 0, 700);
  const page = await fleetPage();
  assert.equal(await page.locator('[data-total=free]').textContent(), '3');
  assert.match((await page.getByRole('region', { name: 'By model' }).textContent()) ?? '', /H100.*RTX ?4090/s);
  // Human units: the H100's 81559 MiB shows in GiB, its exact bytes on hover.
  const row = page.locator('[data-device="gpubox:gpu0"]');
  assert.match((await row.textContent()) ?? '', /79\.6 GiB/);
  await page.waitForFunction(() => /37%/.test(document.querySelector('[data-device="gpubox:gpu0"]')?.textContent ?? ''), null, { timeout: 20_000 });
  assert.equal(await page.getByRole('img', { name: /utilisation of gpubox:gpu0/ }).count(), 1);

  // The jobs list, open in another tab, follows too.
  const jobsPage = await context.newPage();
  await jobsPage.goto(`${stack.controllerUrl}/jobs`);
  await jobsPage.getByRole('heading', { name: 'Jobs' }).waitFor();
  const job = stack.runJob(['-d', 'gpubox:gpu0'], 'sleep 3');
  const id = await job.id;
  await page.locator('[data-device="gpubox:gpu0"][data-state=busy]').waitFor({ timeout: 5000 });
  const seen = Date.now();
  await jobsPage.locator(`[data-job="${id}"]`).getByText('running').waitFor({ timeout: 5000 });
  const listed = Date.now();
  const startedAt = Date.parse(((await stack.api('GET', `/api/jobs/${id}`)).body as { job: { startedAt: string } }).job.startedAt);
  assert.ok(seen - startedAt < 1000, `the fleet page showed the job ${seen - startedAt} ms after it started`);
  assert.ok(listed - startedAt < 1000, `the jobs list showed it ${listed - startedAt} ms after it started`);
  await jobsPage.close();
  assert.match((await row.textContent()) ?? '', new RegExp(`tester · ${id}`));
  // A GPU with a sample is never shown as having no GPU signal (that is a CPU slot's), even before its lease's first sample.
  assert.doesNotMatch((await row.textContent()) ?? '', /no GPU signal/);
  assert.equal(await page.locator('[data-total=busy]').textContent(), '1');
  await screenshot(page, 'fleet');
  await page.setViewportSize({ width: 390, height: 844 });
  await screenshot(page, 'fleet-phone');
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.equal((await job.done).code, 0);
  await page.locator('[data-device="gpubox:gpu0"][data-state=free]').waitFor({ timeout: 2000 });
});

test('the filter takes the CLI selector syntax, with its errors as you type', { skip, timeout: 60_000 }, async () => {
  const page = await fleetPage();
  const filter = page.getByRole('textbox', { name: 'Filter devices by selector' });
  await filter.fill('gpu_model=H100');
  await page.getByText('1 of 3 devices on 1 host').waitFor();
  assert.equal(await page.locator('[data-device]').count(), 1);
  await filter.fill('vram>>40G');
  const alert = page.locator('#fleet-filter-help[role=alert]');
  await alert.waitFor();
  assert.match((await alert.textContent()) ?? '', /unknown operator ">>" in term "vram>>40G" at column 1/);
  assert.equal(await filter.getAttribute('aria-invalid'), 'true');
  await filter.fill('');
  await page.getByText('3 of 3 devices on 2 hosts').waitFor();
});

test("a job's output arrives live with its colours; Kill stops it (the client may stop its own jobs only)", { skip, timeout: 90_000 }, async () => {
  const page = await fleetPage();
  const mine = stack.cli(
    [
      'run',
      '-d',
      'gpubox:gpu1',
      '--comment',
      'sweep 3 of 8 (ticket RC-42)',
      '--',
      'sh',
      '-c',
      `printf '\\033[31mred-line\\033[0m\\n'; i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.3; done`,
    ],
    {
      env: { RC_SUBMITTER: webName },
    },
  );
  await page.locator('[data-device="gpubox:gpu1"][data-state=busy]').waitFor();
  const jobId = (await page.locator('[data-device="gpubox:gpu1"] a[href^="/jobs/"]').getAttribute('href'))!.split('/').pop()!;
  await page.locator('[data-device="gpubox:gpu1"] a[href^="/jobs/"]').click();
  await page.getByRole('heading', { name: new RegExp(`Job ${jobId}`) }).waitFor();
  // rc run --comment shows on the job's page.
  await page.getByText('sweep 3 of 8 (ticket RC-42)').waitFor();
  // Replayed from the start, then followed: the red line, then ticks that keep coming.
  await page.waitForFunction(() => /red-line/.test(document.querySelector('.xterm-rows')?.textContent ?? ''), null, { timeout: 10_000 });
  const red = await page.evaluate(() => [...document.querySelectorAll('.xterm-rows span')].find((s) => s.textContent?.includes('red-line'))?.className ?? '');
  assert.match(red, /xterm-fg-1\b/, `the red line is drawn red (classes: ${red})`);
  const ticks = async () => Math.max(0, ...(await lines(page)).map((l) => Number(/^tick (\d+)/.exec(l)?.[1] ?? 0)));
  const first = await ticks();
  await page.waitForFunction(
    (n) => [...(document.querySelector('.xterm-rows')?.textContent ?? '').matchAll(/tick (\d+)/g)].some((m) => Number(m[1]) > n + 2),
    first,
    {
      timeout: 10_000,
    },
  );
  await screenshot(page, 'job-running');
  await page.getByRole('button', { name: `Kill job ${jobId}` }).click();
  const done = await mine;
  assert.ok(done.code === 143 || done.code === 137, `rc run reports the kill: ${done.code} ${done.stderr}`);
  assert.match(done.stderr, /was killed: killed by web:/);
  await page
    .getByRole('status', { name: 'Output status' })
    .getByText(/ended: killed/)
    .waitFor({ timeout: 5000 });
  await page
    .getByText(/killed by web:/)
    .first()
    .waitFor();
  await screenshot(page, 'job-killed');

  // Someone else's job: no Kill button for a client token, and the API refuses it too.
  const other = stack.runJob(['-d', 'gpubox:gpu1'], 'sleep 30');
  const otherId = await other.id;
  await page.goto(`${stack.controllerUrl}/jobs/${otherId}`);
  await page.getByRole('heading', { name: new RegExp(`Job ${otherId}`) }).waitFor();
  assert.equal(await page.getByRole('button', { name: /^Kill/ }).count(), 0);
  const refused = await page.evaluate(async (id) => {
    const r = await fetch(`/api/jobs/${id}/kill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ submitter: 'web:x' }),
    });
    return { status: r.status, body: await r.json() };
  }, otherId);
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'not_job_owner');
  await stack.cli(['kill', otherId]);
  await other.done;
});

test('holds: the time left counts down; Extend and Release from the page', { skip, timeout: 90_000 }, async () => {
  const holder = stack.cli(['hold', '-d', 'cpubox:gpu0', '--ttl', '10m'], { env: { RC_SUBMITTER: webName }, timeoutMs: 60_000 });
  const page = await fleetPage();
  await page.locator('[data-device="cpubox:gpu0"][data-state=held]').waitFor({ timeout: 10_000 });
  await page.getByRole('link', { name: 'Holds' }).click();
  const row = page.locator('[data-hold]');
  await row.waitFor();
  const left = async () => (await row.locator('[data-ttl]').textContent()) ?? '';
  const first = await left();
  assert.match(first, /^9:\d\d/);
  // It counts down by itself, without a fetch.
  await page.waitForFunction((was) => (document.querySelector('[data-ttl]')?.textContent ?? was) !== was, first, { timeout: 3000 });
  await page.getByRole('textbox', { name: /New time to live/ }).fill('2h');
  await page.getByRole('button', { name: /Extend hold/ }).click();
  await page.waitForFunction(() => /^1:59:\d\d/.test(document.querySelector('[data-ttl]')?.textContent ?? ''), null, { timeout: 5000 });
  await screenshot(page, 'holds');
  await page.getByRole('button', { name: /Release job/ }).click();
  await page.getByText('No device is held.').waitFor({ timeout: 5000 });
  await holder;
  assert.equal((await stack.devices()).find((d) => d.name === 'cpubox:gpu0')?.state, 'free');
});

test('the queue shows each waiting job, its place and why it waits, live', { skip, timeout: 60_000 }, async () => {
  const page = await fleetPage();
  await page.goto(`${stack.controllerUrl}/queue`);
  await page.getByText(/Nothing is waiting/).waitFor();
  const a = stack.runJob(['-d', 'gpubox:gpu0'], 'sleep 20');
  const aId = await a.id;
  const waiting = stack.cli(['run', '-d', 'gpubox:gpu0', '--', 'true'], { timeoutMs: 60_000 });
  const entry = page.locator('[data-job]');
  await entry.waitFor({ timeout: 3000 });
  assert.match((await entry.textContent()) ?? '', /#1/);
  assert.match((await entry.locator('[data-why]').textContent()) ?? '', /busy/);
  await screenshot(page, 'queue');
  await stack.cli(['kill', aId]);
  await page.getByText(/Nothing is waiting/).waitFor({ timeout: 5000 });
  assert.equal((await waiting).code, 0);
  await a.done;
});

test('a host whose heartbeat stops goes offline on the open page, and comes back', { skip, timeout: 60_000 }, async () => {
  const page = await fleetPage();
  process.kill(stack.workers.get('cpubox')!.pid!, 'SIGSTOP');
  try {
    await page.locator('[data-device="cpubox:gpu0"][data-state=offline]').waitFor({ timeout: 10_000 });
    await screenshot(page, 'fleet-offline');
  } finally {
    process.kill(stack.workers.get('cpubox')!.pid!, 'SIGCONT');
  }
  await page.locator('[data-device="cpubox:gpu0"][data-state=free]').waitFor({ timeout: 15_000 });
});

test('a terminal starts from a button press, never from loading its URL', { skip, timeout: 90_000 }, async () => {
  const page = await fleetPage();
  const ttyJobs = async () => ((await stack.api('GET', '/api/jobs?kind=tty')).body as { jobs: unknown[] }).jobs.length;
  const before = await ttyJobs();
  await page.goto(`${stack.controllerUrl}/terminal?device=gpubox:gpu1`);
  await page.getByRole('button', { name: 'Open terminal' }).waitFor();
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(await ttyJobs(), before, 'loading the URL took no device');
  assert.equal((await stack.devices()).find((d) => d.name === 'gpubox:gpu1')?.state, 'free');
  await page.goto(`${stack.controllerUrl}/`);
  await page.getByRole('button', { name: 'Open a terminal on gpubox:gpu1' }).click();
  await page.waitForFunction(() => /^job j[0-9a-v]{10} on gpubox:gpu1/.test(document.querySelector('[data-testid=terminal-status]')?.textContent ?? ''), null, {
    timeout: 20_000,
  });
  assert.equal(await ttyJobs(), before + 1);
  await untilLine(page, (l) => l.trim() !== '', 'the prompt');
  await screenshot(page, 'terminal');
  await page.click('[data-testid=terminal]');
  await page.keyboard.type('exit 3');
  await page.keyboard.press('Enter');
  await page
    .getByTestId('terminal-status')
    .getByText(/ended: failed/)
    .waitFor({ timeout: 10_000 });
});

test('a job run again after its host was lost shows each attempt and how it ended; the list marks it', { skip, timeout: 120_000 }, async () => {
  // A host first by name, so the first attempt starts there (cpubox is the other cpu slot).
  await stack.startWorker('a-spare', 1);
  await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === 'a-spare:gpu0')?.state === 'free', 'a-spare to be free');
  const run = stack.runJob(['--restarts', '1', '--select', 'kind=cpu-slot'], 'sleep 4; echo done', { timeoutMs: 100_000 });
  const id = await run.id;
  assert.deepEqual((await stack.job(id)).devices, ['a-spare:gpu0']);
  await stack.stopWorker('a-spare', 'SIGKILL');
  assert.equal((await run.done).code, 0);
  const page = await fleetPage();
  await page.goto(`${stack.controllerUrl}/jobs/${id}`);
  const attempts = page.locator('[data-attempts]');
  await attempts.waitFor();
  const rows = await attempts.locator('tbody tr').allTextContents();
  assert.equal(rows.length, 2);
  assert.match(rows[0]!, /^1a-spare:gpu0.*lost.*host a-spare stopped answering/);
  assert.match(rows[1]!, /^2cpubox:gpu0.*succeeded/);
  assert.match((await page.getByText('Restarts').locator('..').textContent()) ?? '', /up to 1 when its host is lost/);
  await screenshot(page, 'job-attempts');
  await page.goto(`${stack.controllerUrl}/jobs`);
  await page.locator(`[data-job="${id}"]`).getByText('attempt 2').waitFor();
  // a-spare comes back, its lost attempt's lease is let go, and the fleet is whole again for the next test.
  await stack.startWorker('a-spare', 1);
  await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === 'a-spare:gpu0')?.state === 'free', 'a-spare to be free again', 30_000);
});

test('the usage page: the idle share of leased GPU time, device time by submitter, and the leases behind a row', { skip, timeout: 60_000 }, async () => {
  // An idle GPU (the fake reports 0% and no process unless told otherwise) held for a few seconds by a submitter of its own.
  const r = await stack.cli(['run', '-d', 'gpubox:gpu1', '--', 'sleep', '4'], { env: { RC_SUBMITTER: 'usage-tester' } });
  assert.equal(r.code, 0, r.stderr);
  const page = await fleetPage();
  await page.getByRole('link', { name: 'Usage' }).click();
  await page.getByRole('heading', { name: 'Usage' }).waitFor();
  const headline = page.locator('[data-idle-share]');
  await headline.waitFor();
  assert.match((await headline.textContent()) ?? '', /^\d+%$/);
  const row = page.locator('[data-usage="usage-tester"]');
  await row.waitFor();
  const cells = await row.locator('td').allTextContents();
  assert.match(cells[1]!, /^\d+ s$/, 'leased');
  assert.match(cells[6]!, /^\d+%$/, 'its idle share');
  await row.getByRole('button', { name: 'usage-tester' }).click();
  const leases = page.locator('[data-leases] tbody tr');
  await leases.first().waitFor();
  assert.match((await leases.first().textContent()) ?? '', /gpubox:gpu1/);
  await screenshot(page, 'usage');
});

test('after a controller restart the page reconnects by itself and follows again', { skip, timeout: 120_000 }, async () => {
  const page = await fleetPage();
  await stack.stopController();
  await page.getByRole('status', { name: 'live updates reconnecting' }).waitFor({ timeout: 5000 });
  await stack.startController(3);
  await page.getByRole('status', { name: 'live updates connected' }).waitFor({ timeout: 30_000 });
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state !== 'offline'), 'the workers to reconnect', 30_000);
  const job = stack.runJob(['-d', 'gpubox:gpu0'], 'sleep 2');
  await job.id;
  await page.locator('[data-device="gpubox:gpu0"][data-state=busy]').waitFor({ timeout: 3000 });
  assert.equal((await job.done).code, 0);
});

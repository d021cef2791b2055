// The dashboard's operator side in a real Chromium: the usage sheet editor
// (source beside a live preview, a stale edit refused), a sheet full of XSS
// running nothing, the read-only view refusing edits in the page and at the
// API, clearing a quarantine (reason and evidence first, a reason required),
// and the audit page listing all of it with who and from where. Every page
// is saved as a screenshot under test-results/screenshots/.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, afterEach, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, noChromium, screenshot, signIn } from '../helpers/browser';
import { fakeNvidiaSmiDir, setGpuMemoryUsed } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

const skip = noChromium;
let stack: Stack;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
const pageErrors: string[] = [];
const smi = fakeNvidiaSmiDir();

before(
  async () => {
    if (skip) return;
    stack = await Stack.start({ dashboard: true, workers: [] });
    await stack.startWorker('gpubox', 2, { PATH: `${smi}:${process.env.PATH}`, RC_GPU_SETTLE_S: '0.5', RC_GPU_MEM_THRESHOLD_MIB: '1024' });
    browser = await launchChromium();
    context = browser.context;
    // An uncaught error in a page fails the test it happened in.
    context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
  },
  { timeout: 660_000 },
);

afterEach(() => {
  const errors = pageErrors.splice(0);
  assert.deepEqual(errors, [], 'no page threw');
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

async function pageAs(token: 'admin' | 'client'): Promise<Page> {
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  await signIn(page, stack.controllerUrl, token === 'admin' ? stack.adminToken : stack.clientToken);
  await page.locator('[data-device="gpubox:gpu0"]').waitFor();
  return page;
}

/** Types into CodeMirror as a person does (select all, then the new text). */
async function typeSource(page: Page, text: string): Promise<void> {
  const editor = page.getByRole('textbox', { name: 'usage sheet source (Markdown)' });
  await editor.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
}

const XSS = [
  '# Rules for gpubox',
  '',
  'Ask **#infra** first.',
  '',
  '<script>window.__xss = "script"</script>',
  '',
  '<img src="x" onerror="window.__xss = \'img\'">',
  '',
  '[a link](javascript:window.__xss=%22link%22)',
  '',
  '<svg onload="window.__xss = \'svg\'"><circle r="4"/></svg>',
  '',
  'inline <img src=x onerror="window.__xss=\'inline\'"> and <a href="javascript:window.__xss=1">raw link</a>',
  '',
  '![pic](javascript:window.__xss=%22pic%22)',
  '',
  'ANSI: \u001b[31mred?\u001b[0m',
  '',
].join('\n');

test('an admin edits the usage sheet with a live preview; the XSS corpus in it runs nothing, for the editor or for readers', {
  skip,
  timeout: 120_000,
}, async () => {
  const page = await pageAs('admin');
  await page.goto(`${stack.controllerUrl}/hosts/gpubox`);
  await page.getByText('No usage sheet yet.').waitFor();
  await page.getByRole('button', { name: 'Edit the usage sheet' }).click();
  await typeSource(page, XSS);
  const preview = page.getByRole('region', { name: 'Preview' });
  await preview.getByRole('heading', { name: 'Rules for gpubox' }).waitFor();
  await screenshot(page, 'sheet-editor');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText(/updated just now by admin:/).waitFor();

  const reader = await pageAs('client');
  await reader.goto(`${stack.controllerUrl}/hosts/gpubox`);
  await reader.getByRole('heading', { name: 'Rules for gpubox' }).waitFor();
  await reader.getByText('a link').click();
  await new Promise((r) => setTimeout(r, 300));
  for (const p of [page, reader]) {
    const found = await p.evaluate(() => {
      const md = document.querySelector('.rc-markdown')!;
      return {
        xss: (window as unknown as { __xss?: string }).__xss ?? null,
        scripts: md.querySelectorAll('script').length,
        handlers: [...md.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
        svgs: md.querySelectorAll('svg').length,
        hrefs: [...md.querySelectorAll('a, img')].map((a) => a.getAttribute('href') ?? a.getAttribute('src') ?? ''),
        text: md.textContent ?? '',
        rawLinks: [...md.querySelectorAll('a')].filter((a) => a.textContent?.includes('raw link')).length,
      };
    });
    assert.equal(found.xss, null, 'nothing of the corpus ran');
    assert.equal(found.scripts, 0);
    assert.equal(found.handlers, 0);
    assert.equal(found.svgs, 0, 'raw HTML is not rendered at all');
    assert.equal(found.rawLinks, 0, 'the raw <a> is plain text');
    assert.ok(
      found.hrefs.every((h) => !/^\s*javascript:/i.test(h)),
      `no javascript: link or image: ${found.hrefs.join(', ')}`,
    );
    assert.match(found.text, /Ask #infra first\./);
  }
  await screenshot(reader, 'host');
  await reader.close();
  await page.close();
});

test('a sheet edited elsewhere shows on an open page; saving over it is refused, and their version can be loaded', { skip, timeout: 90_000 }, async () => {
  const page = await pageAs('admin');
  await page.goto(`${stack.controllerUrl}/hosts/gpubox`);
  await page.getByRole('button', { name: 'Edit the usage sheet' }).click();
  await typeSource(page, '# my edit');
  // Meanwhile another admin saves with the CLI's API (last write wins there).
  const put = await stack.api('PUT', '/api/hosts/gpubox/sheet', { body: '# their edit\n\nsaved meanwhile' }, stack.adminToken);
  assert.equal(put.status, 200);
  await page.getByRole('button', { name: 'Save' }).click();
  const alert = page.getByRole('alert').filter({ hasText: 'conflict' });
  await alert.waitFor();
  assert.match((await alert.textContent()) ?? '', /conflict/);
  await page.getByRole('button', { name: 'Load their version' }).click();
  await page.getByRole('region', { name: 'Preview' }).getByRole('heading', { name: 'their edit' }).waitFor();
  await page.getByRole('button', { name: 'Cancel' }).click();

  // A reader with the page open sees the next edit within a second, without a reload.
  const reader = await pageAs('client');
  await reader.goto(`${stack.controllerUrl}/hosts/gpubox`);
  await reader.getByRole('heading', { name: 'their edit' }).waitFor();
  const t0 = Date.now();
  await stack.api('PUT', '/api/hosts/gpubox/sheet', { body: '# third edit' }, stack.adminToken);
  await reader.getByRole('heading', { name: 'third edit' }).waitFor({ timeout: 3000 });
  assert.ok(Date.now() - t0 < 1500, `shown ${Date.now() - t0} ms after the save`);
  await reader.close();
  await page.close();
});

test('the read-only view: no edit controls for a client token, and the API refuses its cookie writes', { skip, timeout: 60_000 }, async () => {
  const page = await pageAs('client');
  await page.goto(`${stack.controllerUrl}/hosts/gpubox`);
  await page.getByRole('heading', { name: 'third edit' }).waitFor();
  assert.equal(await page.getByRole('button', { name: /Edit/ }).count(), 0);
  await page.goto(`${stack.controllerUrl}/devices/gpubox:gpu0`);
  await page.getByRole('heading', { name: /gpubox:gpu0/ }).waitFor();
  assert.equal(await page.getByRole('button', { name: /Edit|Clear/ }).count(), 0);
  // The last hour's samples, drawn (uPlot, loaded with the page's chart).
  await page.locator('.uplot canvas').waitFor({ timeout: 10_000 });
  await page.getByRole('heading', { name: 'third edit' }).waitFor();
  await screenshot(page, 'device');
  // From the page itself: its own origin, its session cookie, JSON (the CSRF-safe path), and still refused.
  const tries = await page.evaluate(() =>
    Promise.all(
      (
        [
          ['PUT', '/api/hosts/gpubox/sheet', { body: 'defaced' }],
          ['PUT', '/api/devices/gpubox:gpu0/note', { body: 'defaced' }],
          ['POST', '/api/admin/devices/gpubox:gpu0/clear', { reason: 'because' }],
          ['POST', '/api/admin/hosts/gpubox/off', { reason: 'because' }],
          ['POST', '/api/admin/hosts/gpubox/on', {}],
          ['DELETE', '/api/admin/hosts/gpubox', undefined],
        ] as const
      ).map(([method, path, body]) =>
        fetch(path, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) }).then(
          async (r) => [r.status, ((await r.json()) as { error?: { code: string } }).error?.code ?? null],
        ),
      ),
    ),
  );
  assert.deepEqual(tries, [
    [403, 'forbidden'],
    [403, 'forbidden'],
    [403, 'forbidden'],
    [403, 'forbidden'],
    [403, 'forbidden'],
    [403, 'forbidden'],
  ]);
  assert.equal(((await stack.api('GET', '/api/hosts')).body as { hosts: { name: string; off: unknown }[] }).hosts.find((h) => h.name === 'gpubox')?.off, null);
  const sheet = (await stack.api('GET', '/api/hosts/gpubox/sheet')).body as { sheet: { body: string } };
  assert.equal(sheet.sheet.body, '# third edit');
  await page.close();
});

test('an admin clears a quarantine: reason and evidence first, a reason required; the fleet page follows', { skip, timeout: 90_000 }, async () => {
  const job = await stack.cli(['run', '-d', 'gpubox:gpu0', '--', 'sh', '-c', `echo 4096 > ${smi}/state/used.0; echo trained`]);
  assert.equal(job.code, 0, job.stderr);
  await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === 'gpubox:gpu0')?.state === 'unhealthy', 'the quarantine');
  const fleet = await pageAs('client');
  await fleet.locator('[data-device="gpubox:gpu0"][data-state=unhealthy]').waitFor();
  const page = await pageAs('admin');
  await page.goto(`${stack.controllerUrl}/devices/gpubox:gpu0`);
  const panel = page.getByRole('region', { name: 'Quarantine' });
  await panel.waitFor();
  assert.match((await panel.textContent()) ?? '', /GPU memory still held after job j\w+ ended: 4096 MiB used/);
  assert.match((await panel.textContent()) ?? '', /"memUsedMiB": 4096/);
  const clear = page.getByRole('button', { name: 'Clear quarantine' });
  assert.equal(await clear.isDisabled(), true, 'no reason, no clearing');
  await screenshot(page, 'device-quarantined');
  setGpuMemoryUsed(smi, 0, 0);
  await panel.getByRole('textbox').fill('memory freed by hand after checking nvidia-smi');
  await clear.click();
  await page.getByTestId('device-state').getByText('free').waitFor({ timeout: 5000 });
  await fleet.locator('[data-device="gpubox:gpu0"][data-state=free]').waitFor({ timeout: 3000 });
  await fleet.close();
  await page.close();
});

test('an admin turns a host off and on, and removes it, from its page; the fleet page follows; a client sees no buttons', {
  skip,
  timeout: 90_000,
}, async () => {
  await stack.startWorker('sparebox', 1);
  const go = `${stack.dataDir}/spare-go`;
  const job = stack.runJob(['-d', 'sparebox:gpu0'], `while [ ! -e ${go} ]; do sleep 0.05; done`);
  await job.id;
  const fleet = await pageAs('client');
  // A client sees the panel without its buttons (pages of one browser share the session: the admin signs in after).
  await fleet.goto(`${stack.controllerUrl}/hosts/sparebox`);
  await fleet.getByRole('region', { name: 'Service' }).getByText('In service').waitFor();
  assert.equal(await fleet.getByRole('region', { name: 'Service' }).getByRole('button').count(), 0);
  await fleet.goto(stack.controllerUrl);
  await fleet.locator('[data-device="sparebox:gpu0"]').waitFor();
  const page = await pageAs('admin');
  await page.goto(`${stack.controllerUrl}/hosts/sparebox`);
  const panel = page.getByRole('region', { name: 'Service' });
  await panel.getByText('In service').waitFor();
  await panel.getByRole('textbox').fill('swapping a fan');
  await panel.getByRole('button', { name: 'Turn off' }).click();
  await panel.getByText('Off (busy)').waitFor({ timeout: 5000 });
  assert.match((await panel.textContent()) ?? '', /Turned off by admin:.*: swapping a fan\. No new jobs start here; the running job finishes\./);
  await page.locator('[data-device="sparebox:gpu0"]').getByText('off (busy)').waitFor();
  await screenshot(page, 'host-off-busy');
  // The fleet page, open meanwhile, follows: the host's badge, the device's state.
  await fleet.locator('[data-host="sparebox"]').getByText('off · swapping a fan').waitFor({ timeout: 5000 });
  await fleet.locator('[data-device="sparebox:gpu0"]').getByText('off (busy)').waitFor();
  await fleet.locator('[data-host="sparebox"]').scrollIntoViewIfNeeded();
  await screenshot(fleet, 'fleet-host-off');
  // Removing a busy host is refused, and says why.
  await panel.getByRole('button', { name: 'Remove…' }).click();
  await panel.getByRole('button', { name: 'Remove sparebox for good' }).click();
  await panel
    .getByRole('alert')
    .getByText(/still runs a job: j\w+; turn it off/)
    .waitFor({ timeout: 5000 });
  await panel.getByRole('button', { name: 'Keep it' }).click();
  writeFileSync(go, '');
  assert.equal((await job.done).code, 0);
  await fleet.locator('[data-device="sparebox:gpu0"][data-state=off]').waitFor({ timeout: 5000 });
  await panel.getByRole('button', { name: 'Turn on' }).click();
  await panel.getByText('In service').waitFor({ timeout: 5000 });
  await fleet.locator('[data-device="sparebox:gpu0"][data-state=free]').waitFor({ timeout: 5000 });
  const exited = new Promise<number | null>((r) => stack.workers.get('sparebox')!.once('exit', (code) => r(code)));
  await panel.getByRole('button', { name: 'Remove…' }).click();
  await panel.getByRole('button', { name: 'Remove sparebox for good' }).click();
  await panel
    .getByText('Removed', { exact: true })
    .waitFor({ timeout: 5000 })
    .catch(async (err: unknown) => {
      throw new Error(`${String(err)}; the panel says: ${await panel.textContent()}`);
    });
  await screenshot(page, 'host-removed');
  assert.equal(await exited, 78);
  await fleet.locator('[data-host="sparebox"]').waitFor({ state: 'detached', timeout: 5000 });
  await fleet.close();
  await page.close();
});

test('the audit page lists those actions: who (token and submitter), what, when, from where; filterable', { skip, timeout: 60_000 }, async () => {
  const page = await pageAs('admin');
  await page.getByRole('link', { name: 'Audit' }).click();
  await page.locator('[data-audit="device.clear"]').waitFor();
  const text = (await page.locator('table').textContent()) ?? '';
  for (const what of ['sheet.write', 'device.clear', 'device.quarantine', 'host.off', 'host.on', 'host.remove'])
    assert.ok(text.includes(what), `${what} is listed`);
  const clearRow = (await page.locator('[data-audit="device.clear"]').first().textContent()) ?? '';
  assert.match(clearRow, /admin:/);
  assert.match(clearRow, /gpubox:gpu0/);
  assert.match(clearRow, /dashboard/);
  await screenshot(page, 'audit');
  await page.getByRole('textbox', { name: 'What' }).fill('sheet.write');
  await page.waitForFunction(() => [...document.querySelectorAll('[data-audit]')].every((r) => r.getAttribute('data-audit') === 'sheet.write'), null, {
    timeout: 5000,
  });
  assert.ok((await page.locator('[data-audit]').count()) >= 2);
  // The other pages, for the eye.
  await page.goto(`${stack.controllerUrl}/jobs`);
  await page.locator('[data-job]').first().waitFor();
  await screenshot(page, 'jobs');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${stack.controllerUrl}/login`);
  await screenshot(page, 'login');
  const after = await page.evaluate(async () => (await fetch('/api/whoami')).status);
  assert.equal(after, 401, 'signed out: the cookie is gone');
  await page.close();
});

test('a token revoked while its dashboard is open: the page goes to the sign-in page by itself', { skip, timeout: 60_000 }, async () => {
  const made = await stack.api('POST', '/api/admin/tokens', { name: 'soon-revoked' }, stack.adminToken);
  const { id, token } = made.body as { id: number; token: string };
  const page = await context.newPage();
  await signIn(page, stack.controllerUrl, token);
  await page.getByRole('status', { name: 'live updates connected' }).waitFor();
  assert.equal((await stack.api('POST', `/api/admin/tokens/${id}/revoke`, undefined, stack.adminToken)).status, 200);
  // Its live socket is cut at once; the reconnect is refused, and the page asks who it is.
  await page.waitForURL(`${stack.controllerUrl}/login`, { timeout: 15_000 });
  await page.close();
});

// The dashboard's pictures in a real Chromium against a real controller,
// Postgres and worker (a fake nvidia-smi stands in for the GPUs): the Usage
// page's chart of leased and idle time by its grouping, the device chart's
// axes inside its canvas, the audit log's exact times and its CSV and JSON
// export of every filtered entry, and the fleet table's column headers. Each
// page is saved at desktop (1400×900) and phone (390×844) widths under
// test-results/screenshots/charts-*.png.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, afterEach, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import type { AuditEntry } from '../../protocol/wire';
import { launchChromium, noChromium, screenshot, signIn } from '../helpers/browser';
import { fakeNvidiaSmiDir, setGpuUtilisation } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

const skip = noChromium;
let stack: Stack;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
const pageErrors: string[] = [];
const smi = fakeNvidiaSmiDir();
const DESKTOP = { width: 1400, height: 900 };
const PHONE = { width: 390, height: 844 };

before(
  async () => {
    if (skip) return;
    setGpuUtilisation(smi, 0, 0);
    setGpuUtilisation(smi, 1, 80);
    stack = await Stack.start({ dashboard: true, workers: [] });
    await stack.startWorker('gpubox', 2, { PATH: `${smi}:${process.env.PATH}` });
    // Two submitters' jobs at once: alice's on the idle GPU, bob's on the busy one.
    await Promise.all(
      [
        ['alice', 'gpubox:gpu0', 'sleep 4'],
        ['bob', 'gpubox:gpu1', 'sleep 3'],
      ].map(async ([who, device, script]) => {
        const r = await stack.cli(['run', '-d', device!, '--', 'sh', '-c', script!], { env: { RC_SUBMITTER: who! } });
        assert.equal(r.code, 0, r.stderr);
      }),
    );
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

async function pageAs(token: 'admin' | 'client'): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize(DESKTOP);
  await signIn(page, stack.controllerUrl, token === 'admin' ? stack.adminToken : stack.clientToken);
  await page.locator('[data-device="gpubox:gpu0"]').waitFor();
  return page;
}

/** The page at both widths, saved; `ready` waits for what must be drawn again after the resize. */
async function shots(page: Page, name: string, ready: () => Promise<unknown> = async () => {}): Promise<void> {
  await page.setViewportSize(DESKTOP);
  await ready();
  await screenshot(page, `charts-${name}-desktop`);
  await page.setViewportSize(PHONE);
  await ready();
  await screenshot(page, `charts-${name}-phone`);
  // Nothing on the page is wider than a phone's screen: a wide table scrolls inside its own box.
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(wide <= PHONE.width, `${name}: the page is ${wide} px wide on a ${PHONE.width} px phone`);
  await page.setViewportSize(DESKTOP);
}

/** Whether any pixel of the canvas's rightmost columns is drawn: a label cut off at the edge leaves ink there. */
const inkAtRightEdge = (page: Page, selector: string) =>
  page.evaluate((sel) => {
    const canvas = document.querySelector(sel) as HTMLCanvasElement;
    const ctx = canvas.getContext('2d')!;
    const { data } = ctx.getImageData(canvas.width - 2, 0, 2, canvas.height);
    for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) return true;
    return false;
  }, selector);

test('the Usage page charts leased and idle time by its grouping, with a legend, and follows the window and grouping', { skip, timeout: 120_000 }, async () => {
  const page = await pageAs('client');
  await page.goto(`${stack.controllerUrl}/usage`);
  await page
    .locator('label', { hasText: /^Window/ })
    .locator('select')
    .selectOption('24h');
  const chart = page.locator('[data-usage-chart]');
  await chart.locator('canvas').waitFor();
  const legend = chart.locator('[data-usage-legend]');
  await legend.locator('[data-series=alice]').waitFor();
  assert.match((await legend.locator('[data-series=alice]').textContent()) ?? '', /^alice\s*\d+ s leased, (\d+ s|0) idle$/);
  assert.match((await legend.locator('[data-series=bob]').textContent()) ?? '', /^bob\s*\d+ s leased, 0 idle$/);
  // The bars are drawn: some of the plot's pixels are the series' colours.
  const drawn = await page.evaluate(() => {
    const c = document.querySelector('[data-usage-chart] canvas') as HTMLCanvasElement;
    const { data } = c.getContext('2d')!.getImageData(0, 0, c.width, c.height);
    let n = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] === 0x02 && data[i + 1] === 0x84 && data[i + 2] === 0xc7) n++;
    return n;
  });
  assert.ok(drawn > 0, 'alice’s bar is drawn in her colour');
  assert.ok(!(await inkAtRightEdge(page, '[data-usage-chart] canvas')), 'no axis label runs off the right edge');
  // The y axis counts in a unit that suits the bars (seconds for these short jobs), and says which.
  assert.equal(await chart.getAttribute('data-unit'), 'GPU-seconds');
  assert.equal(await chart.getAttribute('aria-label'), 'Leased and idle GPU-seconds over time, by submitter');

  // The chart's legend agrees with the table below it, which stays.
  const table = page.getByRole('table', { name: 'Usage by submitter' });
  assert.match((await table.locator('[data-usage=alice]').textContent()) ?? '', /^alice/);
  await shots(page, 'usage', () => chart.locator('canvas').waitFor());

  // Another grouping redraws the chart by it.
  await page.locator('label', { hasText: /^By/ }).locator('select').selectOption('host');
  await legend.locator('[data-series=gpubox]').waitFor();
  assert.equal(await legend.locator('[data-series=alice]').count(), 0);
  // Hovering a bar names its bucket.
  const box = (await chart.locator('.u-over').boundingBox())!;
  await page.mouse.move(box.x + box.width - 3, box.y + box.height / 2);
  await chart.locator('[data-hovered]').waitFor();
  // A window with nothing in it: no chart.
  await page.locator('label', { hasText: /^By/ }).locator('select').selectOption('submitter');
  await page
    .locator('label', { hasText: /^Window/ })
    .locator('select')
    .selectOption('7d');
  await legend.locator('[data-series=alice]').waitFor();
});

test('the device chart keeps both axes inside its canvas, at desktop and phone widths', { skip, timeout: 90_000 }, async () => {
  const page = await pageAs('client');
  await page.goto(`${stack.controllerUrl}/devices/${encodeURIComponent('gpubox:gpu0')}`);
  const canvas = page.locator('[data-gpu-chart] canvas');
  await canvas.waitFor({ timeout: 30_000 });
  const fits = async () => {
    await canvas.waitFor();
    // The layout settles after a resize: uPlot redraws on the ResizeObserver's next frame.
    await page.waitForFunction(() => {
      const c = document.querySelector('[data-gpu-chart] canvas') as HTMLCanvasElement | null;
      const box = document.querySelector('[data-gpu-chart]') as HTMLElement | null;
      return !!c && !!box && Math.abs(c.getBoundingClientRect().width - box.clientWidth) < 2;
    });
    assert.ok(!(await inkAtRightEdge(page, '[data-gpu-chart] canvas')), 'the memory axis’s labels end inside the canvas');
    const [chart, card] = await page.evaluate(() => {
      const el = document.querySelector('[data-gpu-chart]')!;
      return [el.getBoundingClientRect().right, el.closest('section')!.getBoundingClientRect().right];
    });
    assert.ok(chart <= card, `the chart (right edge ${chart}) inside its card (${card})`);
  };
  await fits();
  await shots(page, 'device', fits);
});

test('the audit log: exact local times on hover and to a screen reader; CSV and JSON exports hold every filtered entry, quoted', {
  skip,
  timeout: 120_000,
}, async () => {
  // More entries than one page of the route holds (500), straight into the log, so the export must page back; one of
  // them with a target a spreadsheet would run as a formula.
  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  let hostEntries: number;
  try {
    await sql`insert into audit (actor, action, target, detail)
      select 'admin:bulk', 'host.probe', 'box' || g, jsonb_build_object('n', g) from generate_series(1, 620) g`;
    await sql`insert into audit (actor, action, target) values ('admin:bulk', 'host.probe', '=HYPERLINK("x")')`;
    hostEntries = (await sql<{ n: number }[]>`select count(*)::int as n from audit where action like 'host.%'`)[0]!.n;
  } finally {
    await sql.end();
  }
  // Then, newest, an entry whose detail holds a comma, quotes and a line break (and sparebox's registration).
  assert.equal((await stack.api('POST', '/api/admin/hosts', { name: 'sparebox' }, stack.adminToken)).status, 201);
  const reason = 'disk swap, "bay 3"\nback by noon';
  assert.equal((await stack.api('POST', '/api/admin/hosts/sparebox/off', { reason }, stack.adminToken)).status, 200);
  hostEntries += 2;
  const page = await pageAs('admin');
  // A time zone that is not the machine's: the title must be in the browser's own, and name it.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Emulation.setTimezoneOverride', { timezoneId: 'Asia/Tokyo' });
  await page.goto(`${stack.controllerUrl}/audit`);
  const off = page.locator('[data-audit="host.off"]');
  await off.waitFor();
  const entries = ((await stack.api('GET', '/api/audit?action=host.off', undefined, stack.adminToken)).body as { entries: AuditEntry[] }).entries;
  const at = entries[0]!.at;
  const title = (await off.locator('time').getAttribute('title')) ?? '';
  assert.match(title, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+09:00 \(Asia\/Tokyo\)$/);
  assert.equal(Date.parse(title.replace(/ \(.*\)$/, '')), Math.floor(Date.parse(at) / 1000) * 1000, 'the same instant as recorded');
  assert.match((await off.locator('time').textContent()) ?? '', /ago|just now/);
  assert.equal((await off.locator('time .sr-only').textContent())?.trim(), `(${title})`, 'a screen reader hears it too');

  // All of host.* (the registrations, the off, the bulk): far more than the 100 on screen.
  assert.ok(hostEntries > 620);
  await page.getByLabel('What', { exact: true }).fill('host.*');
  await page.locator('[data-audit="host.probe"]').first().waitFor();
  await page.getByRole('button', { name: 'Older entries' }).waitFor();
  const [csvDownload] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
  assert.match(csvDownload.suggestedFilename(), /^rc-audit-.*\.csv$/);
  const csv = parseCsv(readFileSync((await csvDownload.path())!, 'utf8'));
  assert.deepEqual(csv[0], ['id', 'at', 'actor', 'action', 'target', 'origin', 'tokenId', 'detail']);
  const rows = csv.slice(1);
  assert.equal(rows.length, hostEntries, 'every host.* entry, not only the pages on screen');
  assert.ok(
    rows.every((r) => r[3]!.startsWith('host.')),
    'only what the filter matches',
  );
  const offRow = rows.find((r) => r[3] === 'host.off')!;
  assert.equal(offRow[1], at);
  assert.equal(offRow[4], 'sparebox');
  assert.equal((JSON.parse(offRow[7]!) as { reason: string }).reason, reason, 'the comma, quotes and line break survive');
  assert.ok(
    rows.some((r) => r[4] === `'=HYPERLINK("x")`),
    'a target a spreadsheet would run as a formula is kept as text',
  );
  await page
    .getByRole('status')
    .filter({ hasText: `${hostEntries} entries exported as CSV` })
    .waitFor();

  const [jsonDownload] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export JSON' }).click()]);
  const json = JSON.parse(readFileSync((await jsonDownload.path())!, 'utf8')) as AuditEntry[];
  assert.equal(json.length, hostEntries);
  assert.deepEqual(
    json.find((e) => e.action === 'host.off'),
    entries[0],
    'the entry as the API has it',
  );
  await page.getByLabel('What', { exact: true }).fill('');
  await page.locator('[data-audit="host.off"]').waitFor();
  await shots(page, 'audit');
});

test('the fleet table shows its column headers, the sparklines’ too, and fits a phone', { skip, timeout: 60_000 }, async () => {
  const page = await pageAs('client');
  const host = page.locator('[data-host=gpubox]');
  for (const name of ['Device', 'State', 'Holder', 'Model', 'Memory']) assert.ok(await host.getByRole('columnheader', { name, exact: true }).isVisible(), name);
  const spark = host.getByRole('columnheader', { name: /Utilisation and memory, last 10 minutes/ });
  assert.ok(await spark.isVisible());
  assert.match((await spark.textContent()) ?? '', /GPU util · 10 min.*memory used · 10 min/);
  await shots(page, 'fleet');
  await page.setViewportSize(PHONE);
  assert.ok(await host.getByRole('columnheader', { name: 'State', exact: true }).isVisible(), 'the headers show on a phone too');
  assert.ok(!(await host.getByRole('columnheader', { name: 'Model', exact: true }).isVisible()), 'the columns a phone hides, their headers too');
});

/** RFC 4180, as a spreadsheet reads it: quoted fields may hold commas, doubled quotes and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += c;
  }
  return rows;
}

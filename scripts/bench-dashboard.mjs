// The fleet page at scale (issue 13, item 9): a controller with the dashboard,
// 1,000 simulated hosts of 8 GPUs each (bench/simulator, the real worker
// protocol), and Debian's Chromium. It measures, interleaved and repeated:
//   - navigation → interactive: from page.goto('/') until the host list and the
//     totals of all 8,000 devices are on screen (a fresh page each time);
//   - a live change: a job submitted through the API until its device shows
//     busy on the open page, then killed until it shows free again;
//   - typing a filter: each keystroke of a selector until the page has
//     re-rendered the filtered list (measured inside the page: the input
//     event to the next animation frame after the count changed);
//   - the first load's JavaScript, compressed as sent and as parsed.
// Usage: npm run bench:dashboard [-- --hosts 1000 --devices 8 --rounds 5]
import { join } from 'node:path';
import { report, root, startFleet, until } from './bench-fleet.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const HOSTS = arg('hosts', 1000);
const DEVICES = arg('devices', 8);
const ROUNDS = arg('rounds', 5);
const MODELS = ['H100', 'A100-80GB', 'RTX4090', 'L40S', 'A100', 'L4'];

const fleet = await startFleet({ localWorker: false, dashboard: true });
const { startFleet: startSimulated, uniformHost } = await import(join(root, 'dist/simulator.js'));
const t0 = Date.now();
const sim = await startSimulated({
  url: fleet.controller,
  adminToken: fleet.adminToken,
  hosts: Array.from({ length: HOSTS }, (_, i) => uniformHost(`sim-${String(i).padStart(4, '0')}`, MODELS[i % MODELS.length], DEVICES)),
});
console.log(`${HOSTS} simulated hosts, ${sim.deviceCount} devices, online in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
const api = async (method, path, body, token = fleet.clientToken) => {
  const res = await fetch(fleet.controller + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return res.json();
};
await until(async () => (await api('GET', '/api/fleet')).devices.filter((d) => d.state === 'free').length === HOSTS * DEVICES, 'every device free', 120_000);

const { chromium } = await import('playwright-core');
const { mkdtempSync, rmSync } = await import('node:fs');
const { tmpdir } = await import('node:os');
const profile = mkdtempSync(join(tmpdir(), 'rc-bench-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.RC_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1440, height: 900 },
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
try {
  const login = await context.newPage();
  await login.goto(`${fleet.controller}/login`);
  await login.fill('input[name=token]', fleet.clientToken);
  await Promise.all([login.waitForURL(`${fleet.controller}/`), login.click('button[type=submit]')]);
  await login.close();

  // What the page waits for first: the fleet's JSON, as any client gets it.
  const fleetMs = [];
  let fleetBytes = 0;
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    const res = await fetch(`${fleet.controller}/api/fleet`, { headers: { authorization: `Bearer ${fleet.clientToken}` } });
    fleetBytes = (await res.arrayBuffer()).byteLength;
    fleetMs.push(performance.now() - t);
  }
  const interactive = [];
  const fleetInPage = [];
  const liveOn = [];
  const liveAfterStart = [];
  const liveOff = [];
  const typing = [];
  let js = null;
  for (let round = 0; round < ROUNDS; round++) {
    // 1. Navigation → interactive, on a fresh page.
    const page = await context.newPage();
    const sent = performance.now();
    await page.goto(`${fleet.controller}/`);
    await page.waitForFunction((n) => document.querySelector('#fleet-filter-help')?.textContent?.startsWith(`${n} of ${n} devices`), HOSTS * DEVICES, {
      timeout: 60_000,
      polling: 'raf',
    });
    await page.locator('[data-device="sim-0000:gpu0"]').waitFor();
    interactive.push(performance.now() - sent);
    // Of which: the fleet's answer, from its request to its last byte, in the page's own timing.
    fleetInPage.push(
      await page.evaluate(() => {
        const e = performance.getEntriesByType('resource').find((r) => new URL(r.name).pathname === '/api/fleet');
        return e ? e.responseEnd - e.startTime : Number.NaN;
      }),
    );
    if (!js) js = await page.evaluate(firstLoadScripts);

    // 2. A live change: a job on a device on screen, then its kill.
    await page.getByRole('status', { name: 'live updates connected' }).waitFor();
    for (let i = 0; i < 4; i++) {
      const device = `sim-000${i % 2}:gpu${(round * 4 + i) % DEVICES}`;
      const row = `[data-device="${device}"]`;
      const t = performance.now();
      const { job } = await api('POST', '/api/jobs', { argv: ['sleep', '60'], device, submitter: 'bench' });
      await page.locator(`${row}[data-state=busy]`).waitFor({ timeout: 10_000 });
      const seen = Date.now();
      liveOn.push(performance.now() - t);
      // The same from the job's start as the database has it: the submit's own cost (it checks the fleet) left out.
      liveAfterStart.push(seen - Date.parse(job.startedAt));
      const k = performance.now();
      await api('POST', `/api/jobs/${job.id}/kill`, { submitter: 'bench' });
      await page.locator(`${row}[data-state=free]`).waitFor({ timeout: 20_000 });
      liveOff.push(performance.now() - k);
    }

    // 3. Typing a selector into the filter, measured in the page.
    typing.push(...(await page.evaluate(typeSelector, round % 2 ? 'gpu_model=H100,vram>=80G' : 'gpu_model=RTX4090')));
    await page.close();
  }
  report(`fleet page interactive after navigation (${HOSTS * DEVICES} devices)`, interactive);
  report('  of which GET /api/fleet, in the page', fleetInPage);
  report(`GET /api/fleet from a script (${(fleetBytes / 1024).toFixed(0)} KiB)`, fleetMs);
  report('live: job submitted → its device busy on the page', liveOn);
  report('live: job started → its device busy on the page', liveAfterStart);
  report('live: job killed → its device free on the page', liveOff);
  report('typing the filter: keystroke → list re-rendered', typing);
  console.log(`first load of /: ${js.count} scripts, ${(js.encoded / 1024).toFixed(1)} KiB as sent (compressed), ${(js.decoded / 1024).toFixed(1)} KiB parsed`);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  await sim.stop();
  await fleet.stop();
}

/** In the page: the scripts the first load fetched, their sizes as sent and decoded. */
function firstLoadScripts() {
  const scripts = performance.getEntriesByType('resource').filter((e) => e.initiatorType === 'script' || e.name.endsWith('.js'));
  return {
    count: scripts.length,
    encoded: scripts.reduce((n, e) => n + e.encodedBodySize, 0),
    decoded: scripts.reduce((n, e) => n + e.decodedBodySize, 0),
  };
}

/** In the page: types `text` into the filter one key at a time; per key, ms until the list shows that filter (its data-filtered) and a frame was drawn. */
async function typeSelector(text) {
  const input = document.querySelector('#fleet-filter');
  const list = document.querySelector('[data-filtered]');
  const setValue = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
  const out = [];
  for (let i = 1; i <= text.length; i++) {
    const value = text.slice(0, i);
    const t = performance.now();
    setValue.call(input, value);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    while (list.dataset.filtered !== value && performance.now() < t + 5000) await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => requestAnimationFrame(r));
    out.push(performance.now() - t);
  }
  setValue.call(input, '');
  input.dispatchEvent(new Event('input', { bubbles: true }));
  return out;
}

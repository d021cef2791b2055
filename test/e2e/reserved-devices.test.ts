// A free device held back for a multi-GPU job waiting at the head of the
// queue is `reserved`, not free, and says for which job: in GET /api/devices
// and the fleet, rc devices (and --json), rc describe, rc run --explain (not
// counted free), and on the dashboard (its own badge, the job named; the
// page follows without a reload). When the job starts, its devices are busy.
// A real controller, worker and Chromium; the fleet page is saved as a
// screenshot under test-results/screenshots/.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchChromium, noChromium, screenshot, signIn } from '../helpers/browser';
import { fakeNvidiaSmiDir } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';
import type { DeviceDescription, DeviceSummary, Explanation, Fleet, JobView } from '../../protocol/wire';

let stack: Stack;
let browser: Awaited<ReturnType<typeof launchChromium>> | null = null;
const smi = fakeNvidiaSmiDir();

before(
  async () => {
    // Multi-GPU jobs hold devices back at once (RC_RESERVE_AFTER_S=0).
    stack = await Stack.start({ dashboard: !noChromium, workers: [], controllerEnv: { RC_RESERVE_AFTER_S: '0' } });
    await stack.startWorker('gpubox', 2, { PATH: `${smi}:${process.env.PATH}` });
    if (!noChromium) browser = await launchChromium();
  },
  { timeout: 660_000 },
);

after(async () => {
  await browser?.close();
  await stack?.stop();
});

async function submit(body: Record<string, unknown>): Promise<string> {
  const r = await stack.api('POST', '/api/jobs', { submitter: 'tester', ...body });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return (r.body as { job: JobView }).job.id;
}

async function device(name: string): Promise<DeviceSummary> {
  const r = await stack.api('GET', '/api/devices');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body as { devices: DeviceSummary[] }).devices.find((d) => d.name === name)!;
}

/** rc devices' line for a device, its columns split on runs of spaces. */
async function devicesLine(name: string): Promise<string[]> {
  const r = await stack.cli(['devices']);
  assert.equal(r.code, 0, r.stderr);
  const line = r.stdout.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `rc devices lists ${name}:\n${r.stdout}`);
  return line.trim().split(/\s{2,}/);
}

test('a free device held back for a waiting two-GPU job is reserved for it everywhere, and busy once it starts', { timeout: 120_000 }, async () => {
  // gpubox:gpu0 is held, gpubox:gpu1 free.
  const hold = await submit({ kind: 'hold', ttlS: 600, device: 'gpubox:gpu0' });
  await stack.waitFor(async () => (await stack.job(hold)).state === 'running', 'the hold to start');
  assert.equal((await device('gpubox:gpu1')).state, 'free');

  // The fleet page, open before the reservation: it follows without a reload (no event tells of a reservation).
  const page = browser ? await browser.context.newPage() : null;
  const pageErrors: string[] = [];
  page?.on('pageerror', (e) => pageErrors.push(e.message));
  if (page) {
    await signIn(page, stack.controllerUrl, stack.clientToken);
    await page.locator('[data-device="gpubox:gpu1"][data-state=free]').waitFor();
    await page.getByRole('status', { name: 'live updates connected' }).waitFor();
  }

  const big = await submit({ argv: ['sleep', '60'], gpus: 2 });
  const reservedFor = { jobId: big, submitter: 'tester', gpus: 2, why: 'multi_gpu' };
  try {
    assert.equal((await stack.job(big)).state, 'queued');
    // The API: reserved, for the job and its submitter; the busy device stays busy with its holder.
    const free = await device('gpubox:gpu1');
    assert.equal(free.state, 'reserved');
    assert.deepEqual(free.reservedFor, reservedFor);
    const held = await device('gpubox:gpu0');
    assert.equal(held.state, 'busy');
    assert.equal(held.holder?.jobId, hold);
    assert.equal(held.reservedFor, null);
    const details = (await stack.api('GET', '/api/devices?details=1&select=kind%3Dgpu')).body as { devices: DeviceSummary[] };
    assert.deepEqual(
      details.devices.map((d) => [d.name, d.state]),
      [
        ['gpubox:gpu0', 'busy'],
        ['gpubox:gpu1', 'reserved'],
      ],
    );
    const fleet = (await stack.api('GET', '/api/fleet?host=gpubox')).body as Fleet;
    assert.deepEqual(fleet.devices.find((d) => d.name === 'gpubox:gpu1')?.reservedFor, reservedFor);
    const described = (await stack.api('GET', '/api/devices/gpubox:gpu1')).body as DeviceDescription;
    assert.equal(described.device.state, 'reserved');
    assert.deepEqual(described.device.reservedFor, reservedFor);

    // rc devices: the state column, and the job it is held for in the holder column; --json is the API's.
    const line = await devicesLine('gpubox:gpu1');
    assert.equal(line[1], 'reserved', line.join(' | '));
    assert.equal(line[2], `for tester (${big})`);
    const asJson = await stack.cli(['devices', '--json']);
    assert.equal(asJson.code, 0, asJson.stderr);
    const listed = (JSON.parse(asJson.stdout) as { devices: DeviceSummary[] }).devices.find((d) => d.name === 'gpubox:gpu1')!;
    assert.equal(listed.state, 'reserved');
    assert.deepEqual(listed.reservedFor, reservedFor);

    // rc describe: the state, and who it is held back for.
    const desc = await stack.cli(['describe', 'gpubox:gpu1']);
    assert.equal(desc.code, 0, desc.stderr);
    assert.match(desc.stdout, /^gpubox:gpu1 {2}reserved\n/);
    assert.match(
      desc.stdout,
      new RegExp(`\nreserved: for job ${big} \\(tester\\): it waits for 2 devices on this host; jobs behind it in the queue may not take this one\n`),
    );

    // rc run --explain: a reserved device is not free for another job.
    const explained = (await stack.api('POST', '/api/explain', { selector: '', device: 'gpubox:gpu1' })).body as Explanation;
    assert.equal(explained.free, 0);
    assert.deepEqual(explained.matching, [{ name: 'gpubox:gpu1', state: 'reserved', holder: null, reservedFor }]);
    const explain = await stack.cli(['run', '--explain', '-d', 'gpubox:gpu1', '--', 'true']);
    assert.equal(explain.code, 0, explain.stderr);
    assert.match(explain.stdout, /1 device\(s\) match, 0 free now/);
    assert.match(explain.stdout, new RegExp(`match {2}gpubox:gpu1 {2}reserved \\(held back for tester's job ${big}: not free for this job\\)`));

    if (page) {
      // The page open since before: the badge changes by itself, and names the job.
      const row = page.locator('[data-device="gpubox:gpu1"][data-state=reserved]');
      await row.waitFor({ timeout: 10_000 });
      assert.equal(await row.getByText('reserved', { exact: true }).count(), 1);
      const link = row.locator(`[data-reserved-for="${big}"]`);
      assert.equal((await link.textContent())?.replace(/\s+/g, ' '), `for tester · ${big}`);
      assert.equal(await link.getAttribute('href'), `/jobs/${big}`);
      assert.equal(
        await link.getAttribute('title'),
        `held back for job ${big} (tester): it waits for 2 devices on this host; jobs behind it in the queue may not take this one`,
      );
      assert.equal(await page.locator('[data-total=reserved]').textContent(), '1');
      assert.equal(await page.locator('[data-total=free]').textContent(), '0');
      await screenshot(page, 'fleet-reserved');
      // The device's own page says it too.
      const devPage = await browser!.context.newPage();
      devPage.on('pageerror', (e) => pageErrors.push(e.message));
      await devPage.goto(`${stack.controllerUrl}/devices/gpubox:gpu1`);
      await devPage.getByTestId('device-state').getByText('reserved').waitFor();
      assert.match((await devPage.getByTestId('device-reserved').textContent()) ?? '', new RegExp(`for tester · ${big}it waits for 2 devices on this host`));
      await screenshot(devPage, 'device-reserved');
      await devPage.close();
    }

    // The hold ends: the job starts on both devices, which are busy with it, reserved for nobody.
    assert.equal((await stack.api('POST', `/api/jobs/${hold}/kill`, { submitter: 'tester' })).status, 200);
    await stack.waitFor(async () => (await stack.job(big)).state === 'running', 'the two-GPU job to start');
    for (const name of ['gpubox:gpu0', 'gpubox:gpu1']) {
      const d = await device(name);
      assert.equal(d.state, 'busy', name);
      assert.equal(d.holder?.jobId, big);
      assert.equal(d.reservedFor, null);
      const cols = await devicesLine(name);
      assert.deepEqual(cols.slice(1, 3), ['busy', `tester (${big})`]);
    }
    if (page) {
      await page.locator('[data-device="gpubox:gpu1"][data-state=busy]').waitFor({ timeout: 5000 });
      assert.equal(await page.locator('[data-total=reserved]').textContent(), '0');
    }
    assert.deepEqual(pageErrors, [], 'no page threw');
  } finally {
    await page?.close();
    for (const id of [big, hold]) await stack.api('POST', `/api/jobs/${id}/kill`, { submitter: 'tester' });
  }
});

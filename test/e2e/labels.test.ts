// Finding a device: labels from a (fake) nvidia-smi, selectors through the CLI,
// --explain, describe, usage sheets, and refusals, against a real stack.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fakeNvidiaSmiDir } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [] });
  await stack.startWorker('gpubox', 2, { PATH: `${fakeNvidiaSmiDir()}:${process.env.PATH}` });
  await stack.startWorker('cpubox', 1);
});
after(async () => stack.stop());

const names = async (sel: string) =>
  (JSON.parse((await stack.cli(['devices', '--select', sel, '--json'])).stdout) as { devices: { name: string }[] }).devices.map((d) => d.name);

test('nvidia-smi names become canonical models, and every spelling selects the same device', async () => {
  const all = await stack.cli(['devices']);
  assert.match(all.stdout, /gpubox:gpu0\s+free\s+-\s+(?:-|\d+% \d+\/\d+G)\s+gpu_model=H100 vram=80G kind=gpu/);
  assert.match(all.stdout, /gpubox:gpu1\s+free\s+-\s+(?:-|\d+% \d+\/\d+G)\s+gpu_model=RTX4090/);
  for (const sel of ['gpu_model=4090', 'gpu_model=RTX4090', "gpu_model='RTX 4090'", 'gpu_model=rtx4090']) {
    assert.deepEqual(await names(sel), ['gpubox:gpu1'], sel);
  }
  const a100 = await stack.cli(['run', '--select', 'gpu_model=A100-80GB', '--', 'true']);
  assert.equal(a100.code, 201);
});

test('sizes, numbers and the missing-label rule hold through the CLI', async () => {
  assert.deepEqual(await names('vram>=40G'), ['gpubox:gpu0']);
  assert.deepEqual(await names('vram<=40G'), ['gpubox:gpu1']);
  assert.deepEqual(await names('vendor=nvidia,kind=gpu'), ['gpubox:gpu0', 'gpubox:gpu1']);
  assert.deepEqual(await names('vendor!=amd'), ['gpubox:gpu0', 'gpubox:gpu1'], 'cpubox has no vendor label, so != does not match it');
  assert.deepEqual(await names('kind=cpu-slot'), ['cpubox:gpu0']);
  assert.equal((await names('cpus>=1')).length, 3, 'host-wide labels apply to every device of the host');
});

test('--explain says what matches, what is free, the queue, and why each other device does not match', async () => {
  const r = await stack.cli(['run', '--select', 'vram>=40G,rack!=b12', '--explain']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^selector vram>=40G,rack!=b12: 0 device\(s\) match, 0 free now, 0 job\(s\) queued for them/);
  assert.match(r.stdout, /no {5}gpubox:gpu1 {2}vram=~?24G < 40G; rack: label missing/);
  assert.match(r.stdout, /no {5}cpubox:gpu0 {2}vram: label missing; rack: label missing/);
  assert.match(r.stdout, /nothing matches/);
  const ok = await stack.cli(['run', '--select', 'vram>=40G', '--explain']);
  assert.match(ok.stdout, /1 device\(s\) match, 1 free now, 0 job\(s\) queued/);
  assert.match(ok.stdout, /match {2}gpubox:gpu0 {2}free/);
});

test('--explain counts the queue in front of the matching devices', async () => {
  let id = '';
  const holder = stack.cli(['run', '-d', 'gpubox:gpu0', '--', 'sh', '-c', 'echo $RC_JOB_ID; sleep 1.5'], {
    onSpawn: (c) =>
      c.stdout!.on('data', (d: Buffer) => {
        id ||= d.toString().trim();
      }),
  });
  await stack.waitFor(() => id !== '', 'the holder to start');
  const waiter = stack.cli(['run', '--select', 'vram>=40G', '--', 'true']);
  await stack.waitFor(async () => /1 job\(s\) queued/.test((await stack.cli(['run', '--select', 'gpu_model=H100', '--explain'])).stdout), 'the queue to show');
  const r = await stack.cli(['run', '--select', 'gpu_model=H100', '--explain']);
  assert.match(r.stdout, /1 device\(s\) match, 0 free now, 1 job\(s\) queued/);
  assert.match(r.stdout, /match {2}gpubox:gpu0 {2}busy \(held by tester, job j/);
  await Promise.all([holder, waiter]);
});

test('refusals: nothing could ever match, a device that does not exist, a malformed selector', async () => {
  const none = await stack.cli(['run', '--select', 'vram>=200G', '--', 'true']);
  assert.deepEqual([none.code, none.stderr], [201, 'rc: no_matching_device: no device matches the selector: vram>=200G\n']);
  const dev = await stack.cli(['run', '-d', 'gpubox:gpu7', '--', 'true']);
  assert.equal(dev.code, 201);
  for (const [sel, col] of [
    ['vram>=40Q', 1],
    ['a=1,,b=2', 5],
    ['a=1,', 4],
    ['my key=1', 1],
  ] as const) {
    const r = await stack.cli(['run', '--select', sel, '--', 'true']);
    assert.equal(r.code, 212, sel);
    assert.match(r.stderr, new RegExp(`^rc: bad_selector: .*column ${col}`), `${sel}: ${r.stderr}`);
  }
});

test('describe shows labels with source and age, the usage sheet with its age, and recent jobs', async () => {
  const sheet = '# gpubox: shared training box\n\nScratch is /scratch, wiped Sundays.\n';
  const denied = await stack.api('PUT', '/api/hosts/gpubox/sheet', { body: sheet });
  assert.equal(denied.status, 403, 'a client token cannot replace a sheet');
  const put = await stack.api('PUT', '/api/hosts/gpubox/sheet', { body: sheet }, stack.adminToken);
  assert.equal(put.status, 200);
  const big = await stack.api('PUT', '/api/hosts/gpubox/sheet', { body: 'x'.repeat(64 * 1024 + 1) }, stack.adminToken);
  assert.equal(big.status, 400);
  const missing = await stack.api('PUT', '/api/hosts/nohost/sheet', { body: 'x' }, stack.adminToken);
  assert.equal(missing.status, 404);
  const read = await stack.api('GET', '/api/hosts/gpubox/sheet');
  assert.equal((read.body as { sheet: { body: string } }).sheet.body, sheet);
  await stack.api('PUT', '/api/devices/gpubox:gpu1/note', { body: 'fan is loud' }, stack.adminToken);
  await stack.cli(['run', '-d', 'gpubox:gpu0', '--', 'sh', '-c', 'exit 3']);

  const r = await stack.cli(['describe', 'gpubox:gpu0']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^gpubox:gpu0 {2}free\n/);
  assert.match(r.stdout, /gpu_model +H100 +detected \(nvidia-smi\) +\d+s/);
  // vram is the card's nominal 80 GB; what it reports is vram_total_bytes.
  assert.match(r.stdout, /vram +80G \(85899345920\) +detected \(nvidia-smi\)/);
  assert.match(r.stdout, /vram_total_bytes +79\.6G \(85520809984\) +detected \(nvidia-smi\)/);
  assert.match(r.stdout, /cuda_version +12\.4 +detected \(nvidia-smi\)/);
  assert.match(r.stdout, /disk_free_bytes +[\d.]+[KMGT]? \(\d+\) +detected \(host\)/);
  assert.match(r.stdout, /cpus +\d+ +detected \(host\) +\d+s +host-wide/);
  assert.match(r.stdout, /host-wide note, updated \d+s ago by admin:/);
  assert.match(r.stdout, /Scratch is \/scratch, wiped Sundays\./);
  assert.match(r.stdout, /RECENT JOBS\n.*\n {2}j[0-9a-v]{10} +failed +3 +tester/);
  const json = JSON.parse((await stack.cli(['describe', 'gpubox:gpu1', '--json'])).stdout) as {
    note: { body: string };
    device: { labelDetails: { key: string; source: string; probe: string; seenAt: string }[] };
  };
  assert.equal(json.note.body, 'fan is loud');
  const model = json.device.labelDetails.find((l) => l.key === 'gpu_model')!;
  assert.deepEqual([model.source, model.probe], ['detected', 'nvidia-smi']);
  assert.ok(Date.now() - Date.parse(model.seenAt) < 60_000);
  const nope = await stack.cli(['describe', 'gpubox:gpu9']);
  assert.equal(nope.code, 208);
  assert.match(nope.stderr, /^rc: not_found: no device is named gpubox:gpu9/);
});

test('an operator can ask a worker to re-probe; an unknown host is a clear error', async () => {
  const ok = await stack.api('POST', '/api/admin/hosts/gpubox/probe', {}, stack.adminToken);
  assert.equal(ok.status, 200);
  const unknown = await stack.api('POST', '/api/admin/hosts/nohost/probe', {}, stack.adminToken);
  assert.equal(unknown.status, 404);
  assert.equal((unknown.body as { error: { code: string } }).error.code, 'not_found');
  await stack.api('POST', '/api/admin/hosts', { name: 'gone' }, stack.adminToken);
  const off = await stack.api('POST', '/api/admin/hosts/gone/probe', {}, stack.adminToken);
  assert.equal(off.status, 409);
  assert.match((off.body as { error: { message: string } }).error.message, /gone is not connected/);
  const client = await stack.api('POST', '/api/admin/hosts/gpubox/probe', {});
  assert.equal(client.status, 403);
});

test('declared labels, site probes and stale labels reach describe, and a re-probe refreshes them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-site-'));
  const probes = join(dir, 'probes');
  const script = (name: string, body: string) => {
    writeFileSync(join(probes, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(probes, name), 0o755);
  };
  mkdirSync(probes);
  writeFileSync(join(dir, 'counter'), '1');
  script('infiniband', `echo "ib=true"; echo "gpu0.slot=$(cat ${join(dir, 'counter')})"`);
  script('broken', 'echo fine=1; exit 3');
  writeFileSync(
    join(dir, 'worker.json'),
    JSON.stringify({ labels: { rack: 'b12', cpus: '999' }, devices: { 0: { labels: { class: 'train' } } }, probesDir: probes }),
  );
  await stack.startWorker('declbox', 1, { RC_WORKER_CONFIG: join(dir, 'worker.json') });

  assert.deepEqual(await names('rack=b12,class=train,ib=true'), ['declbox:gpu0']);
  assert.deepEqual(await names('rack!=b12'), [], 'only declbox has a rack label, and it is b12');
  assert.deepEqual(await names('cpus=999'), ['declbox:gpu0'], 'the declared cpus beats the detected one');

  const text = (await stack.cli(['describe', 'declbox:gpu0'])).stdout;
  assert.match(text, /rack +b12 +declared +\d+s +host-wide/);
  assert.match(text, /class +train +declared +\d+s/);
  assert.match(text, /ib +true +detected \(infiniband\) +\d+s +host-wide/);
  assert.match(text, /cpus +\d+ +detected \(host\) +\d+s +host-wide, overridden/);
  assert.doesNotMatch(text, /fine/, 'a failing probe applies none of its output');

  writeFileSync(join(dir, 'counter'), '2');
  const r = await stack.api('POST', '/api/admin/hosts/declbox/probe', {}, stack.adminToken);
  assert.equal(r.status, 200);
  await stack.waitFor(async () => (await names('slot=2')).length === 1, 'the re-probed label');
  script('infiniband', 'echo "this is not a label"');
  await stack.api('POST', '/api/admin/hosts/declbox/probe', {}, stack.adminToken);
  await stack.waitFor(
    async () =>
      /ib +true +detected \(infiniband\) +\d+s +host-wide, STALE: line 1 is not key=value/.test((await stack.cli(['describe', 'declbox:gpu0'])).stdout),
    'the garbage probe to mark its labels stale',
  );
  assert.deepEqual(await names('ib=true'), ['declbox:gpu0'], 'a stale label keeps its last value');
  await stack.stopWorker('declbox');
});

test('bad input to describe, --explain, sheets, notes and probes: clear errors', async () => {
  const bad = await stack.api('POST', '/api/explain', { selector: 'vram>>1' });
  assert.equal(bad.status, 400);
  assert.equal((bad.body as { error: { code: string } }).error.code, 'bad_selector');
  assert.equal((await stack.api('POST', '/api/explain', { selector: '', surprise: 1 })).status, 400);
  assert.equal((await stack.api('POST', '/api/explain', { device: 'nonsense' })).status, 409);
  const explainBad = await stack.cli(['run', '--select', 'a=1,', '--explain']);
  assert.equal(explainBad.code, 212);
  assert.equal((await stack.api('PUT', '/api/devices/not-a-device/note', { body: 'x' }, stack.adminToken)).status, 404);
  assert.equal((await stack.api('PUT', '/api/devices/nohost:gpu0/note', { body: 'x' }, stack.adminToken)).status, 404);
  assert.equal((await stack.api('PUT', '/api/hosts/gpubox/sheet', { text: 'wrong field' }, stack.adminToken)).status, 400);
  assert.equal((await stack.api('GET', '/api/hosts/nohost/sheet')).status, 404);
  for (const args of [
    ['describe'],
    ['describe', 'a:gpu0', 'b:gpu1'],
    ['admin', 'probe'],
    ['admin', 'sheet', 'set', 'gpubox'],
    ['admin', 'note', 'set', 'gpubox:gpu0'],
    ['admin', 'sheet', 'set', 'gpubox', '/nonexistent/sheet.md'],
  ]) {
    const r = await stack.cli(args, { env: { RC_TOKEN: stack.adminToken } });
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, /^rc: usage: /, args.join(' '));
  }
  const noFile = await stack.cli(['admin', 'sheet', 'set', 'gpubox', '/nonexistent/sheet.md'], { env: { RC_TOKEN: stack.adminToken } });
  assert.match(noFile.stderr, /cannot read \/nonexistent\/sheet\.md: ENOENT/);
});

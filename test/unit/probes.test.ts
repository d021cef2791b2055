import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { Inventory, type ReportedLabel } from '../../protocol/worker';
import { loadWorkerConfig } from '../../worker/config';
import { Prober, type ProberOptions } from '../../worker/inventory';
import { applyProbeResult, buildInventory, declaredLabels, fitInventory } from '../../worker/labels';
import { parseCudaVersion, parseSiteProbeOutput } from '../../worker/probes/parse';
import { CPU_SLOT_NOTE, runCommand } from '../../worker/probes/run';
import { readWorkerConfigFile, WorkerConfigError } from '../../worker/worker-config';

const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rc-probes-test-'));
  roots.push(dir);
  return dir;
}

function script(dir: string, name: string, body: string, mode = 0o755): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, mode);
  return path;
}

const T1 = new Date('2025-03-01T10:00:00.000Z');
const T2 = new Date('2025-03-01T10:05:00.000Z');

/** A fake nvidia-smi in the real output formats: two different GPUs, and a failure when FAKE_SMI_FAIL is set. */
function fakeNvidiaSmi(): string {
  const bin = tempDir();
  script(
    bin,
    'nvidia-smi',
    `
if [ -n "$FAKE_SMI_FAIL" ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
  exit 9
fi
case "$1" in
  --query-gpu=*)
    echo "0, GPU-1111aaaa-2222-3333-4444-555566667777, NVIDIA H100 80GB HBM3, 81559, 550.54.15"
    echo "1, GPU-8888bbbb-9999-aaaa-bbbb-ccccddddeeee, NVIDIA GeForce RTX 4090, 24564, 550.54.15"
    ;;
  "")
    cat <<'EOF2'
Sat Mar  1 10:00:00 2025
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
| N/A   31C    P0             70W /  700W |       1MiB /  81559MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
EOF2
    ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac`,
  );
  return bin;
}

interface Harness {
  prober: Prober;
  logs: string[];
  env: NodeJS.ProcessEnv;
  setNow(d: Date): void;
}

function harness(opts: Partial<ProberOptions> & { gpus?: boolean } = {}): Harness {
  const logs: string[] = [];
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (opts.gpus) env.PATH = `${fakeNvidiaSmi()}:${process.env.PATH ?? ''}`;
  let now = T1;
  const prober = new Prober({
    workspace: tempDir(),
    fakeDevices: 2,
    configFile: null,
    env,
    // With no fake on PATH, a path that does not exist: the host has no nvidia-smi.
    nvidiaSmi: opts.gpus ? 'nvidia-smi' : join(tempDir(), 'no-nvidia-smi-here'),
    log: (m) => logs.push(m),
    now: () => now,
    ...opts,
  });
  return {
    prober,
    logs,
    env,
    setNow: (d) => {
      now = d;
    },
  };
}

const byKey = (labels: ReportedLabel[]) => Object.fromEntries(labels.map((l) => [l.key, l]));
const values = (labels: ReportedLabel[]) => Object.fromEntries(labels.map((l) => [l.key, l.value]));
const hostLabel = (inv: Inventory, key: string) => inv.hostLabels.find((l) => l.key === key && l.source === 'detected');

test('a fake nvidia-smi with two different GPUs gives detected GPU labels with cuda_version', async () => {
  const { prober } = harness({ gpus: true });
  const inv = await prober.run();
  Inventory.parse(inv); // what the controller accepts
  assert.equal(inv.devices.length, 2);
  const [h100, rtx] = inv.devices as [Inventory['devices'][number], Inventory['devices'][number]];
  assert.equal(h100.index, 0);
  assert.equal(h100.uuid, 'GPU-1111aaaa-2222-3333-4444-555566667777');
  assert.deepEqual(values(h100.labels), {
    kind: 'gpu',
    vendor: 'nvidia',
    gpu_model: 'H100',
    gpu_family: 'H100',
    gpu_name: 'NVIDIA H100 80GB HBM3',
    gpu_uuid: 'GPU-1111aaaa-2222-3333-4444-555566667777',
    gpu_index: '0',
    driver_version: '550.54.15',
    // Its nominal 80 GiB; what it reports (79.6 GiB) in its own label.
    vram: String(80 * 1024 ** 3),
    vram_total_bytes: String(81559 * 1024 * 1024),
    cuda_version: '12.4',
  });
  assert.equal(rtx.uuid, 'GPU-8888bbbb-9999-aaaa-bbbb-ccccddddeeee');
  assert.equal(values(rtx.labels).gpu_model, 'RTX4090');
  assert.equal(values(rtx.labels).gpu_name, 'NVIDIA GeForce RTX 4090');
  assert.equal(values(rtx.labels).vram, String(24 * 1024 ** 3));
  assert.equal(values(rtx.labels).vram_total_bytes, String(24564 * 1024 * 1024));
  assert.equal(values(rtx.labels).cuda_version, '12.4');
  for (const l of [...h100.labels, ...rtx.labels]) {
    assert.deepEqual([l.source, l.probe, l.seenAt, l.stale], ['detected', 'nvidia-smi', T1.toISOString(), null], l.key);
  }
  // Host-wide labels from the host probe.
  for (const key of ['hostname', 'cpus', 'mem_total_bytes', 'disk_free_bytes']) {
    const l = hostLabel(inv, key);
    assert.ok(l, key);
    assert.equal(l.probe, 'host');
    assert.equal(l.seenAt, T1.toISOString());
  }
  assert.match(hostLabel(inv, 'disk_free_bytes')!.value, /^\d+$/);
  assert.ok(Number(hostLabel(inv, 'disk_free_bytes')!.value) > 0);
  // No CPU slots on a GPU host.
  assert.ok(inv.devices.every((d) => values(d.labels).kind === 'gpu'));
});

test('no nvidia-smi: the host offers RC_FAKE_DEVICES CPU slots from the host probe', async () => {
  const { prober } = harness();
  const inv = await prober.run();
  Inventory.parse(inv);
  assert.deepEqual(
    inv.devices.map((d) => [d.index, d.uuid]),
    [
      [0, null],
      [1, null],
    ],
  );
  for (const d of inv.devices) {
    const l = byKey(d.labels);
    assert.equal(l.kind?.value, 'cpu-slot');
    assert.equal(l.gpu_model?.value, 'none');
    assert.match(l.note!.value, /^not a GPU: /);
    assert.ok(d.labels.every((x) => x.probe === 'host' && x.source === 'detected'));
  }
  const none = await harness({ fakeDevices: 0 }).prober.run();
  assert.deepEqual(none.devices, []);
  assert.ok(none.hostLabels.length >= 4);
});

test('nvidia-smi failing after a good run: the GPUs keep their labels, stale with the reason and the old seenAt', async () => {
  const h = harness({ gpus: true });
  await h.prober.run();
  h.env.FAKE_SMI_FAIL = '1';
  h.setNow(T2);
  const inv = await h.prober.run();
  assert.equal(inv.devices.length, 2);
  const reason = "nvidia-smi exited 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.";
  for (const d of inv.devices) {
    for (const l of d.labels) assert.deepEqual([l.stale, l.seenAt], [reason, T1.toISOString()], l.key);
  }
  assert.equal(values(inv.devices[0]!.labels).gpu_model, 'H100');
  assert.equal(inv.devices[0]!.uuid, 'GPU-1111aaaa-2222-3333-4444-555566667777');
  // The host probe still works: fresh.
  assert.deepEqual([hostLabel(inv, 'cpus')!.seenAt, hostLabel(inv, 'cpus')!.stale], [T2.toISOString(), null]);
  assert.ok(
    h.logs.some((m) => m.includes(reason) && m.includes('stale')),
    h.logs.join('\n'),
  );

  // It works again: fresh labels, and the log says so.
  delete h.env.FAKE_SMI_FAIL;
  const back = await h.prober.run();
  assert.ok(back.devices[0]!.labels.every((l) => l.stale === null && l.seenAt === T2.toISOString()));
  assert.ok(h.logs.some((m) => m === 'probe nvidia-smi works again'));
});

test('nvidia-smi failing on the very first run: no devices, and the log says why', async () => {
  const h = harness({ gpus: true });
  h.env.FAKE_SMI_FAIL = '1';
  const inv = await h.prober.run();
  assert.deepEqual(inv.devices, []);
  assert.ok(inv.hostLabels.length > 0);
  assert.ok(
    h.logs.some((m) => /nvidia-smi exited 9/.test(m) && /offers no GPUs/.test(m)),
    h.logs.join('\n'),
  );
});

test('site probe: host-wide and gpuN. labels, comments and blank lines, detected with the probe name', async () => {
  const dir = tempDir();
  script(
    dir,
    '10-rack',
    [
      'echo "# where this box is"',
      'echo',
      'echo rack=b12',
      'echo gpu0.ib=up',
      'echo "gpu1.ib=down"',
      'echo "motd=a=b"',
      'echo "gpu7.ghost=yes"',
      'echo "cwd=$(pwd)"',
    ].join('\n'),
  );
  const h = harness({ probesDir: dir });
  const inv = await h.prober.run();
  Inventory.parse(inv);
  const rack = hostLabel(inv, 'rack')!;
  assert.deepEqual(rack, { key: 'rack', value: 'b12', source: 'detected', probe: '10-rack', seenAt: T1.toISOString(), stale: null });
  assert.equal(hostLabel(inv, 'motd')!.value, 'a=b');
  assert.equal(hostLabel(inv, 'cwd')!.value, dir);
  assert.equal(byKey(inv.devices[0]!.labels).ib?.value, 'up');
  assert.equal(byKey(inv.devices[0]!.labels).ib?.probe, '10-rack');
  assert.equal(byKey(inv.devices[1]!.labels).ib?.value, 'down');
  // gpu7 does not exist: not reported, and logged.
  assert.equal(inv.devices.length, 2);
  assert.ok(
    h.logs.some((m) => m.includes('10-rack labels device(s) 7')),
    h.logs.join('\n'),
  );
});

/** A site probe that works once, then is replaced by `broken`; returns the second inventory. */
async function goodThenBroken(broken: string, extra: Partial<ProberOptions> = {}) {
  const dir = tempDir();
  script(dir, 'rackinfo', 'echo rack=b12\necho gpu0.ib=up');
  script(dir, 'other', 'echo other=1');
  const h = harness({ probesDir: dir, ...extra });
  const first = await h.prober.run();
  assert.equal(hostLabel(first, 'rack')!.value, 'b12');
  script(dir, 'rackinfo', broken);
  h.setNow(T2);
  const started = Date.now();
  const inv = await h.prober.run();
  return { inv, h, ms: Date.now() - started };
}

function assertKeptStale(inv: Inventory, reason: string): void {
  const rack = hostLabel(inv, 'rack')!;
  assert.deepEqual([rack.value, rack.stale, rack.seenAt, rack.probe], ['b12', reason, T1.toISOString(), 'rackinfo']);
  const ib = byKey(inv.devices[0]!.labels).ib!;
  assert.deepEqual([ib.value, ib.stale, ib.seenAt], ['up', reason, T1.toISOString()]);
  // Nothing of the failed run is applied.
  assert.equal(hostLabel(inv, 'new'), undefined);
  // Other probes are unaffected.
  assert.deepEqual([hostLabel(inv, 'other')!.stale, hostLabel(inv, 'other')!.seenAt], [null, T2.toISOString()]);
}

test('site probe exiting non-zero: last labels kept, stale "exited 3"; its output is not applied', async () => {
  const { inv, h } = await goodThenBroken('echo rack=c7\necho new=1\nexit 3');
  assertKeptStale(inv, 'exited 3');
  assert.ok(h.logs.some((m) => m.includes('probe rackinfo failed: exited 3')));
});

test('site probe exiting non-zero says its first stderr line', async () => {
  const { inv } = await goodThenBroken('echo "no infiniband here" >&2\nexit 4');
  assertKeptStale(inv, 'exited 4: no infiniband here');
});

test('site probe printing a garbage line: all or nothing, stale with the line', async () => {
  const { inv } = await goodThenBroken('echo rack=c7\necho "this is not a label"\necho new=1');
  assertKeptStale(inv, 'line 2 is not key=value: "this is not a label"');
});

test('site probe timing out: killed, stale "timed out after …"', async () => {
  const { inv, ms } = await goodThenBroken('echo rack=c7\nsleep 5\necho new=1', { timeoutMs: 300 });
  assertKeptStale(inv, 'timed out after 0.3s');
  assert.ok(ms < 3000, `the run took ${ms} ms`);
});

test('a site probe that fails on its first run adds nothing and throws nothing', async () => {
  const dir = tempDir();
  script(dir, 'bad', 'exit 1');
  script(dir, 'garbage', 'echo "::::"');
  const h = harness({ probesDir: dir });
  const inv = await h.prober.run();
  assert.ok(inv.hostLabels.every((l) => l.probe === 'host'));
  assert.equal(inv.devices.length, 2);
  assert.ok(h.logs.some((m) => m.includes('probe bad failed: exited 1')));
  assert.ok(h.logs.some((m) => m.includes('probe garbage failed: line 1 is not key=value: "::::"')));
});

test('non-executable files, dotfiles and folders in the probes folder are not run', async () => {
  const dir = tempDir();
  script(dir, 'plain.txt', 'echo plain=1', 0o644);
  script(dir, '.hidden', 'echo hidden=1');
  mkdirSync(join(dir, 'sub'));
  script(dir, 'ok', 'echo ok=1');
  const h = harness({ probesDir: dir });
  const inv = await h.prober.run();
  assert.equal(hostLabel(inv, 'ok')!.value, '1');
  assert.equal(hostLabel(inv, 'plain'), undefined);
  assert.equal(hostLabel(inv, 'hidden'), undefined);
  assert.ok(
    h.logs.some((m) => m.includes('plain.txt is not run as a probe: not executable')),
    h.logs.join('\n'),
  );
  assert.ok(h.logs.some((m) => m.includes('sub is not run as a probe: not a regular file')));
  assert.ok(!h.logs.some((m) => m.includes('.hidden')));
  // Logged once, not at every run.
  await h.prober.run();
  assert.equal(h.logs.filter((m) => m.includes('plain.txt')).length, 1);
});

test("a missing probes folder is logged, not fatal; after a good run its probes' labels go stale", async () => {
  const missing = join(tempDir(), 'nope');
  const h = harness({ probesDir: missing });
  const inv = await h.prober.run();
  assert.equal(inv.devices.length, 2);
  assert.ok(h.logs.some((m) => m.includes(`the probes folder ${missing} does not exist`)));

  const dir = join(tempDir(), 'probes');
  mkdirSync(dir);
  script(dir, 'rackinfo', 'echo rack=b12');
  const h2 = harness({ probesDir: dir });
  await h2.prober.run();
  rmSync(dir, { recursive: true });
  h2.setNow(T2);
  const inv2 = await h2.prober.run();
  const rack = hostLabel(inv2, 'rack')!;
  assert.deepEqual([rack.value, rack.seenAt, rack.stale], ['b12', T1.toISOString(), `the probes folder ${dir} does not exist`]);
});

test('a site probe that is removed takes its labels with it', async () => {
  const dir = tempDir();
  script(dir, 'rackinfo', 'echo rack=b12');
  const h = harness({ probesDir: dir });
  await h.prober.run();
  rmSync(join(dir, 'rackinfo'));
  assert.equal(hostLabel(await h.prober.run(), 'rack'), undefined);
});

test('declared labels from the config file; a relative probesDir is relative to the file', async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'probes'));
  script(join(dir, 'probes'), 'rackinfo', 'echo rack=detected-rack\necho gpu0.fan=loud');
  const file = join(dir, 'worker.json');
  writeFileSync(file, JSON.stringify({ labels: { rack: 'b12', class: 'train' }, devices: { 0: { labels: { note: 'fan noisy' } } }, probesDir: 'probes' }));
  const h = harness({ configFile: file });
  const inv = await h.prober.run();
  Inventory.parse(inv);
  const rack = inv.hostLabels.filter((l) => l.key === 'rack');
  // Both are reported; the controller prefers the declared one.
  assert.deepEqual(rack, [
    { key: 'rack', value: 'b12', source: 'declared', probe: null, seenAt: T1.toISOString(), stale: null },
    { key: 'rack', value: 'detected-rack', source: 'detected', probe: 'rackinfo', seenAt: T1.toISOString(), stale: null },
  ]);
  assert.equal(inv.hostLabels.find((l) => l.key === 'class')?.source, 'declared');
  const notes = inv.devices[0]!.labels.filter((l) => l.key === 'note');
  assert.deepEqual(
    notes.map((l) => [l.source, l.probe, l.value]),
    [
      ['detected', 'host', CPU_SLOT_NOTE],
      ['declared', null, 'fan noisy'],
    ],
  );
  assert.equal(inv.devices[0]!.labels.find((l) => l.key === 'fan')?.value, 'loud');
  assert.ok(!inv.devices[1]!.labels.some((l) => l.source === 'declared'));

  // The file is read again before each run; once broken, its last labels stay, stale.
  writeFileSync(file, '{ "labels": { "rack": 12 } }');
  h.setNow(T2);
  const inv2 = await h.prober.run();
  const declared = inv2.hostLabels.find((l) => l.key === 'rack' && l.source === 'declared')!;
  assert.equal(declared.seenAt, T1.toISOString());
  assert.equal(declared.stale, `config file ${file}: labels.rack: a label value must be a string`);
  // The probes folder of the last good config still runs.
  assert.equal(inv2.hostLabels.find((l) => l.key === 'rack' && l.source === 'detected')?.seenAt, T2.toISOString());
});

test('RC_PROBES_DIR (the probesDir option) wins over the config file', async () => {
  const dir = tempDir();
  const fromFile = join(dir, 'a');
  const fromEnv = join(dir, 'b');
  mkdirSync(fromFile);
  mkdirSync(fromEnv);
  script(fromFile, 'p', 'echo from=file');
  script(fromEnv, 'p', 'echo from=env');
  const file = join(dir, 'worker.json');
  writeFileSync(file, JSON.stringify({ probesDir: fromFile }));
  const inv = await harness({ configFile: file, probesDir: fromEnv }).prober.run();
  assert.equal(hostLabel(inv, 'from')?.value, 'env');
});

test('invalid config files give one clear message naming the file', () => {
  const dir = tempDir();
  const cases: [string, string][] = [
    ['{"labels":{"bad key":"x"}}', 'labels: "bad key" is not a valid label key'],
    ['{"labels":{"rack":12}}', 'labels.rack: a label value must be a string'],
    [JSON.stringify({ labels: { long: 'x'.repeat(1001) } }), 'labels.long: a label value is at most 1000 characters'],
    ['{"devices":{"first":{}}}', 'devices: "first" is not a device index'],
    ['{"lables":{}}', 'unknown field "lables"'],
    ['[1]', 'expected a JSON object'],
    ['{"labels":', 'not valid JSON'],
  ];
  for (const [text, expected] of cases) {
    const file = join(dir, 'worker.json');
    writeFileSync(file, text);
    assert.throws(
      () => readWorkerConfigFile(file),
      (err: unknown) => {
        assert.ok(err instanceof WorkerConfigError);
        assert.ok(err.message.startsWith(`${file}: ${expected}`), err.message);
        return true;
      },
    );
  }
  const missing = join(dir, 'missing.json');
  assert.throws(() => readWorkerConfigFile(missing), { message: `${missing}: cannot read it: no such file` });
});

test('rc-worker with an invalid config file exits 2 with one line, no stack', () => {
  const file = join(tempDir(), 'worker.json');
  writeFileSync(file, '{"labels":{"rack":12}}');
  const main = fileURLToPath(new URL('../../worker/main.ts', import.meta.url));
  const r = spawnSync(process.execPath, ['--import', 'tsx', main], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, RC_CONTROLLER: 'http://127.0.0.1:9', RC_HOST_TOKEN: 'rc_h_0123456789abcdef', RC_WORKER_CONFIG: file, RC_WORKSPACE: tempDir() },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stderr, `rc-worker: ${file}: labels.rack: a label value must be a string\n`);
});

test('worker env: the config file, probes folder and interval', () => {
  const base = { RC_CONTROLLER: 'http://127.0.0.1:8080', RC_HOST_TOKEN: 'rc_h_0123456789abcdef' };
  const env = (vars: Record<string, string>) => vars as unknown as NodeJS.ProcessEnv;
  const c = loadWorkerConfig(env(base));
  assert.equal(c.RC_PROBE_INTERVAL_S, 300);
  assert.equal(c.RC_WORKER_CONFIG, undefined);
  assert.equal(c.RC_PROBES_DIR, undefined);
  const d = loadWorkerConfig(env({ ...base, RC_WORKER_CONFIG: '/etc/rc/worker.json', RC_PROBES_DIR: '/etc/rc/probes', RC_PROBE_INTERVAL_S: '30' }));
  assert.deepEqual([d.RC_WORKER_CONFIG, d.RC_PROBES_DIR, d.RC_PROBE_INTERVAL_S], ['/etc/rc/worker.json', '/etc/rc/probes', 30]);
  assert.throws(() => loadWorkerConfig(env({ ...base, RC_PROBE_INTERVAL_S: '4' })), /RC_PROBE_INTERVAL_S/);
  assert.equal(loadWorkerConfig(env({ ...base, RC_WORKER_CONFIG: '' })).RC_WORKER_CONFIG, undefined);
});

test('runs never overlap: requests during a run coalesce into one more run', async () => {
  const dir = tempDir();
  const counter = join(tempDir(), 'count');
  writeFileSync(counter, '');
  script(dir, 'count', `echo x >> "${counter}"\nsleep 0.2\necho n=$(wc -l < "${counter}")`);
  const h = harness({ probesDir: dir });
  let runs = 0;
  h.prober.onInventory = () => {
    runs += 1;
  };
  const results = await Promise.all([h.prober.run(), h.prober.run(), h.prober.run(), h.prober.run()]);
  assert.equal(runs, 2);
  assert.equal(hostLabel(results[0]!, 'n')?.value.trim(), '1');
  assert.equal(hostLabel(results[3]!, 'n')?.value.trim(), '2');
  assert.equal(h.prober.latest, results[3]);
});

test('runCommand: a missing command and too much output are results, not exceptions', async () => {
  const missing = await runCommand(join(tempDir(), 'nothing'), [], { env: process.env, timeoutMs: 1000, maxBytes: 100 });
  assert.equal(missing.kind, 'not-started');
  const dir = tempDir();
  const loud = script(dir, 'loud', 'i=0; while [ $i -lt 100 ]; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; i=$((i+1)); done');
  assert.deepEqual(await runCommand(loud, [], { env: process.env, timeoutMs: 5000, maxBytes: 1024 }), { kind: 'too-much-output', maxBytes: 1024 });
  const exited = await runCommand(script(dir, 'ok', 'echo hi; echo err >&2; exit 5'), [], { env: process.env, timeoutMs: 5000, maxBytes: 1024 });
  assert.deepEqual(exited, { kind: 'exited', code: 5, stdout: 'hi\n', stderr: 'err\n' });
});

test('parseSiteProbeOutput: forms, errors and limits', () => {
  const ok = parseSiteProbeOutput('# c\n\n  rack=b12  \ngpu3.ib=up\r\nempty=\nrack=b13\n');
  assert.ok(ok.ok);
  assert.deepEqual(ok.found.host, [
    { key: 'rack', value: 'b13' },
    { key: 'empty', value: '' },
  ]);
  assert.deepEqual([...ok.found.devices], [[3, [{ key: 'ib', value: 'up' }]]]);
  const bad = (text: string) => {
    const r = parseSiteProbeOutput(text);
    assert.ok(!r.ok);
    return r.reason;
  };
  assert.equal(bad('a=1\nnope\n'), 'line 2 is not key=value: "nope"');
  assert.equal(bad('bad key=1'), 'line 1 is not key=value: "bad key=1"');
  assert.equal(bad('=1'), 'line 1 is not key=value: "=1"');
  assert.equal(bad('gpu0.=1'), 'line 1 is not key=value: "gpu0.=1"');
  assert.equal(bad('gpu1000.x=1'), 'line 1: device index 1000 is over 999');
  assert.equal(bad(`k=${'v'.repeat(1001)}`), 'line 1: the value of k is longer than 1000 characters');
  assert.match(bad(`${'k'.repeat(101)}=1`), /^line 1: the key is longer than 100 characters$/);
  assert.deepEqual(parseSiteProbeOutput(''), { ok: true, found: { host: [], devices: new Map() } });
});

test('parseCudaVersion reads the banner', () => {
  assert.equal(parseCudaVersion('| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4     |'), '12.4');
  assert.equal(parseCudaVersion('no banner'), null);
});

test('labels: a failed run keeps the old labels stale with their seenAt; a good one refreshes', () => {
  const good = applyProbeResult(
    undefined,
    { probe: 'p', ok: true, found: { host: [{ key: 'a', value: '1' }], devices: new Map([[0, [{ key: 'b', value: '2' }]]]) } },
    T1,
  );
  const failed = applyProbeResult(good, { probe: 'p', ok: false, reason: 'exited 3' }, T2);
  assert.deepEqual(failed.host, [{ key: 'a', value: '1', source: 'detected', probe: 'p', seenAt: T1.toISOString(), stale: 'exited 3' }]);
  assert.equal(failed.devices.get(0)![0]!.stale, 'exited 3');
  const again = applyProbeResult(failed, { probe: 'p', ok: false, reason: 'x'.repeat(600) }, T2);
  assert.equal(again.host[0]!.stale!.length, 500);
  const none = applyProbeResult(undefined, { probe: 'p', ok: false, reason: 'exited 1' }, T1);
  assert.deepEqual([none.host, none.devices.size], [[], 0]);
});

test('buildInventory: devices come from device probes; the first probe wins a detected key', () => {
  const state = new Map([
    [
      'host',
      applyProbeResult(
        undefined,
        { probe: 'host', ok: true, found: { host: [{ key: 'cpus', value: '8' }], devices: new Map([[0, [{ key: 'kind', value: 'cpu-slot' }]]]) } },
        T1,
      ),
    ],
    [
      'site',
      applyProbeResult(
        undefined,
        {
          probe: 'site',
          ok: true,
          found: {
            host: [{ key: 'cpus', value: '999' }],
            devices: new Map([
              [0, [{ key: 'x', value: '1' }]],
              [4, [{ key: 'y', value: '2' }]],
            ]),
          },
        },
        T1,
      ),
    ],
  ]);
  const declared = declaredLabels({ host: [{ key: 'cpus', value: '7' }], devices: new Map() }, T1);
  const inv = buildInventory(state, declared, ['nvidia-smi', 'host']);
  assert.deepEqual(
    inv.hostLabels.map((l) => [l.source, l.value]),
    [
      ['detected', '8'],
      ['declared', '7'],
    ],
  );
  assert.deepEqual(
    inv.devices.map((d) => [d.index, d.labels.map((l) => l.key)]),
    [[0, ['kind', 'x']]],
  );
});

test('buildInventory: past the 1,000 labels a device may carry, the declared and site-probe ones are cut, not the detected ones', () => {
  const many = Array.from({ length: 1000 }, (_, i) => ({ key: `k${i}`, value: 'v' }));
  const state = new Map([
    ['host', applyProbeResult(undefined, { probe: 'host', ok: true, found: { host: [], devices: new Map([[0, [{ key: 'kind', value: 'cpu-slot' }]]]) } }, T1)],
    ['site', applyProbeResult(undefined, { probe: 'site', ok: true, found: { host: [], devices: new Map([[0, [{ key: 'rack', value: 'b1' }]]]) } }, T1)],
  ]);
  const inv = buildInventory(state, declaredLabels({ host: many, devices: new Map([[0, many]]) }, T1), ['nvidia-smi', 'host']);
  const labels = inv.devices[0]!.labels;
  assert.equal(labels.length, 1000);
  assert.deepEqual(labels[0], { key: 'kind', value: 'cpu-slot', source: 'detected', probe: 'host', seenAt: T1.toISOString(), stale: null });
  assert.equal(labels.filter((l) => l.source === 'declared').length, 999);
  assert.equal(inv.hostLabels.length, 1000);
});

test('fitInventory: within the limit nothing changes; past it the largest declared and site-probe labels go first, never detected ones', () => {
  const label = (key: string, size: number, from: 'declared' | string): ReportedLabel =>
    from === 'declared' ? { key, value: 'v'.repeat(size), source: 'declared' } : { key, value: 'v'.repeat(size), source: 'detected', probe: from };
  const inventory: Inventory = {
    hostLabels: [label('hostname', 10, 'host'), label('site_big', 3000, 'declared'), label('rack', 5, 'declared')],
    devices: [
      { index: 0, uuid: null, labels: [label('kind', 3, 'nvidia-smi'), label('ib_big', 2000, '20-ib'), label('ib_small', 50, '20-ib')] },
      { index: 1, uuid: null, labels: [label('kind', 3000, 'nvidia-smi'), label('note', 1000, 'declared')] },
    ],
  };
  const size = Buffer.byteLength(JSON.stringify(inventory));
  const same = fitInventory(inventory, size, ['nvidia-smi', 'host']);
  assert.equal(same.inventory, inventory);
  assert.equal(same.trimmed, null);

  // 2,500 bytes over: the 3,000-byte declared label alone covers it (the 3,000-byte detected one is never a candidate).
  const one = fitInventory(inventory, size - 2500, ['nvidia-smi', 'host']);
  assert.deepEqual(
    one.inventory.hostLabels.map((l) => l.key),
    ['hostname', 'rack'],
  );
  assert.deepEqual(one.inventory.devices, inventory.devices);
  assert.deepEqual(one.trimmed, { bytes: size, dropped: new Map([['config file', 1]]) });
  assert.ok(Buffer.byteLength(JSON.stringify(one.inventory)) <= size - 2500);

  // Over by more than every candidate: all of them go, largest first, and every detected label stays.
  const all = fitInventory(inventory, 100, ['nvidia-smi', 'host']);
  assert.deepEqual(
    all.inventory.hostLabels.map((l) => l.key),
    ['hostname'],
  );
  assert.deepEqual(
    all.inventory.devices.map((d) => d.labels.map((l) => l.key)),
    [['kind'], ['kind']],
  );
  assert.deepEqual(
    all.trimmed!.dropped,
    new Map([
      ['config file', 3],
      ['20-ib', 2],
    ]),
  );
});

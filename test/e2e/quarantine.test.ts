// Quarantine and GPU samples against a real stack, with the fake nvidia-smi
// reporting what a test (or a job) writes into its state folder.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { fakeNvidiaSmiDir, setGpuMemoryUsed, setGpuProcesses, setGpuUtilisation } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

let stack: Stack;
const smi = fakeNvidiaSmiDir();
const strays: ChildProcess[] = [];
// Heartbeats (and with them GPU samples) every second: the host timeout is 3 s.
before(async () => {
  stack = await Stack.start({ workers: [], hostTimeoutS: 3 });
  await stack.startWorker('gpubox', 2, { PATH: `${smi}:${process.env.PATH}`, RC_GPU_SETTLE_S: '0.5', RC_GPU_MEM_THRESHOLD_MIB: '1024' });
});
after(async () => {
  for (const p of strays) p.kill('SIGKILL');
  await stack.stop();
});

interface Dev {
  name: string;
  state: string;
  unhealthy: { reason: string; evidence: Record<string, unknown> } | null;
  gpu: { name: string; memUsedMiB: number; memTotalMiB: number; utilPct: number | null } | null;
}
const device = async (name: string): Promise<Dev> => ((await stack.api('GET', `/api/devices/${name}`)).body as { device: Dev }).device;

test('heartbeats carry GPU samples: describe and the device list show memory and utilisation', async () => {
  setGpuMemoryUsed(smi, 1, 777);
  setGpuUtilisation(smi, 1, 42);
  await stack.waitFor(async () => (await device('gpubox:gpu1')).gpu?.memUsedMiB === 777, 'a sample with 777 MiB used');
  const d = await device('gpubox:gpu1');
  assert.deepEqual(d.gpu && { name: d.gpu.name, total: d.gpu.memTotalMiB, util: d.gpu.utilPct }, { name: 'NVIDIA GeForce RTX 4090', total: 24564, util: 42 });
  const text = await stack.cli(['describe', 'gpubox:gpu1']);
  assert.match(text.stdout, /gpu: +NVIDIA GeForce RTX 4090, memory 777 \/ 24564 MiB used, utilisation 42%/);
  assert.match((await stack.cli(['devices'])).stdout, /gpubox:gpu1\s+free\s+-\s+42% 1\/24G/);
  setGpuMemoryUsed(smi, 1, 0);
});

test('a host without nvidia-smi sends no samples and is not an error', async () => {
  await stack.startWorker('cpubox', 1);
  await new Promise((r) => setTimeout(r, 1500));
  const d = await device('cpubox:gpu0');
  assert.equal(d.gpu, null);
  assert.equal(d.state, 'free');
});

test('memory still held after a job quarantines the device as the job ends: a queued job does not get it; only an admin clears it', async () => {
  // The job itself leaves 4096 MiB "held" on its GPU.
  const holder = stack.cli(['run', '-d', 'gpubox:gpu0', '--', 'sh', '-c', `sleep 0.5; echo 4096 > ${smi}/state/used.0; echo trained`]);
  await stack.waitFor(async () => (await device('gpubox:gpu0')).state === 'busy', 'the holder to start');
  let waiterOut = '';
  const waiter = stack.cli(['run', '-d', 'gpubox:gpu0', '--', 'echo', 'second'], {
    timeoutMs: 60_000,
    onSpawn: (c) =>
      c.stdout!.on('data', (b: Buffer) => {
        waiterOut += b.toString();
      }),
  });
  const h = await holder;
  assert.equal(h.code, 0, h.stderr);
  assert.equal(h.stdout, 'trained\n');
  const d = await device('gpubox:gpu0');
  assert.equal(d.state, 'unhealthy', 'quarantined by the same report that ended the job');
  assert.match(d.unhealthy!.reason, /GPU memory still held after job j\w+ ended: 4096 MiB used \(threshold 1024 MiB\)/);
  assert.equal(d.unhealthy!.evidence.memUsedMiB, 4096);
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(waiterOut, '', 'the queued job must not run on a quarantined device');

  const refused = await stack.cli(['run', '-d', 'gpubox:gpu0', '--', 'true']);
  assert.equal(refused.code, 213);
  assert.match(refused.stderr, /quarantined.*4096 MiB.*pick another device/);
  const described = await stack.cli(['describe', 'gpubox:gpu0']);
  assert.match(described.stdout, /^gpubox:gpu0 +unhealthy/);
  assert.match(described.stdout, /QUARANTINED for .*: GPU memory still held/);
  assert.match(described.stdout, /evidence: .*"memUsedMiB":4096/);
  assert.match((await stack.cli(['devices'])).stdout, /gpubox:gpu0\s+unhealthy\s+\(GPU memory still held/);

  const byClient = await stack.cli(['admin', 'clear', 'gpubox:gpu0', '--reason', 'looks fine to me']);
  assert.equal(byClient.code, 206, 'a client token cannot clear a quarantine');
  assert.match(byClient.stderr, /admin token/);
  const noReason = await stack.cli(['admin', 'clear', 'gpubox:gpu0'], { env: { RC_TOKEN: stack.adminToken } });
  assert.equal(noReason.code, 2);
  assert.equal((await device('gpubox:gpu0')).state, 'unhealthy');

  setGpuMemoryUsed(smi, 0, 0);
  const cleared = await stack.cli(['admin', 'clear', 'gpubox:gpu0', '--reason', 'killed the leftover process; memory is back to 0'], {
    env: { RC_TOKEN: stack.adminToken },
  });
  assert.equal(cleared.code, 0, cleared.stderr);
  assert.match(cleared.stdout, /gpubox:gpu0 cleared; it was quarantined since .*: GPU memory still held/);
  const w = await waiter;
  assert.equal(w.code, 0, w.stderr);
  assert.equal(w.stdout, 'second\n', 'the queued job runs once the device is cleared');
  const admin = { env: { RC_TOKEN: stack.adminToken } };
  const unknown = await stack.cli(['admin', 'clear', 'nosuch:gpu0', '--reason', 'checked it'], admin);
  assert.equal(unknown.code, 208);
  assert.match(unknown.stderr, /no device is named nosuch:gpu0/);
  const notADevice = await stack.cli(['admin', 'clear', 'gpubox', '--reason', 'checked it'], admin);
  assert.equal(notADevice.code, 2);
  assert.match(notADevice.stderr, /is not a device name/);
  const shortReason = await stack.api('POST', '/api/admin/devices/gpubox:gpu0/clear', { reason: 'ok' }, stack.adminToken);
  assert.equal(shortReason.status, 400);
  assert.match(JSON.stringify(shortReason.body), /say why the device is fine again/);
  const again = await stack.cli(['admin', 'clear', 'gpubox:gpu0', '--reason', 'twice'], { env: { RC_TOKEN: stack.adminToken } });
  assert.equal(again.code, 211);
  assert.match(again.stderr, /not quarantined/);

  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ actor: string; action: string; target: string; detail: Record<string, unknown> }[]>`
      select actor, action, target, detail from audit where target = 'gpubox:gpu0' order by id`;
    assert.deepEqual(
      rows.map((r) => r.action),
      ['device.quarantine', 'device.clear'],
    );
    assert.equal(rows[0]!.actor, 'host:gpubox');
    assert.match(rows[1]!.actor, /^admin:/);
    assert.equal(rows[1]!.detail.reason, 'killed the leftover process; memory is back to 0');
    assert.match(String(rows[1]!.detail.was), /GPU memory still held/);
  } finally {
    await sql.end();
  }
});

test('on a held device people work directly: their processes are not foreign, and samples keep coming', async () => {
  let out = '';
  const hold = stack.cli(['hold', '-d', 'gpubox:gpu0', '--ttl', '1m'], {
    onSpawn: (c) =>
      c.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
      }),
  });
  await stack.waitFor(() => out.includes('\n'), 'the hold');
  const person: ChildProcess = spawn('sleep', ['4715'], { stdio: 'ignore', env: { PATH: process.env.PATH } as unknown as NodeJS.ProcessEnv });
  strays.push(person);
  setGpuProcesses(smi, [{ gpu: 0, pid: person.pid!, usedMiB: 333, name: 'python' }]);
  setGpuMemoryUsed(smi, 0, 333);
  await stack.waitFor(async () => (await device('gpubox:gpu0')).gpu?.memUsedMiB === 333, 'a sample of the held GPU');
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal((await device('gpubox:gpu0')).state, 'busy', 'held, not quarantined');
  person.kill('SIGKILL');
  setGpuProcesses(smi, []);
  setGpuMemoryUsed(smi, 0, 0);
  await stack.cli(['release', /^hold (j\w+)/.exec(out)![1]!]);
  await hold;
  await stack.waitFor(async () => (await device('gpubox:gpu0')).state === 'free', 'the device to be free again');
});

test('a process rc did not start on a GPU quarantines it; the running job’s own process does not', async () => {
  let jobPid = '';
  const job = stack.cli(['run', '-d', 'gpubox:gpu0', '--', 'sh', '-c', 'echo $$; exec sleep 4713'], {
    onSpawn: (c) =>
      c.stdout!.on('data', (b: Buffer) => {
        jobPid += b.toString();
      }),
  });
  await stack.waitFor(() => /^\d+\n/.test(jobPid), 'the job to print its pid');
  const squatter: ChildProcess = spawn('sleep', ['4714'], { stdio: 'ignore', env: { PATH: process.env.PATH } as unknown as NodeJS.ProcessEnv });
  strays.push(squatter);
  setGpuProcesses(smi, [
    { gpu: 0, pid: Number(jobPid.trim()), usedMiB: 2000, name: 'sleep' },
    { gpu: 1, pid: squatter.pid!, usedMiB: 500, name: 'sleep' },
  ]);
  await stack.waitFor(async () => (await device('gpubox:gpu1')).state === 'unhealthy', 'gpu1 to be quarantined', 20_000);
  const d1 = await device('gpubox:gpu1');
  assert.match(d1.unhealthy!.reason, new RegExp(`pid ${squatter.pid} \\(sleep, 500 MiB\\) uses the GPU and rc did not start it`));
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal((await device('gpubox:gpu0')).state, 'busy', 'the job’s own process is not foreign');
  setGpuProcesses(smi, []);
  const jobId = (await stack.devices()).find((d) => d.name === 'gpubox:gpu0')!.holder!.jobId;
  await stack.cli(['kill', jobId]);
  await job;
});

test('a probe reporting the GPU failing quarantines it, with the probe as evidence', async () => {
  const probes = mkdtempSync(join(tmpdir(), 'rc-probes-'));
  writeFileSync(join(probes, 'ecc'), '#!/bin/sh\necho "gpu0.health=failing: 12 uncorrectable ECC errors"\necho "gpu1.health=ok"\n');
  chmodSync(join(probes, 'ecc'), 0o755);
  await stack.startWorker('eccbox', 2, { PATH: `${fakeNvidiaSmiDir()}:${process.env.PATH}`, RC_PROBES_DIR: probes });
  await stack.waitFor(async () => (await device('eccbox:gpu0')).state === 'unhealthy', 'eccbox:gpu0 to be quarantined');
  const d = await device('eccbox:gpu0');
  assert.equal(d.unhealthy!.reason, 'probe ecc reports health=failing: 12 uncorrectable ECC errors');
  assert.equal(d.unhealthy!.evidence.probe, 'ecc');
  assert.equal((await device('eccbox:gpu1')).state, 'free');
  const sel = await stack.cli(['run', '--select', "health='failing: 12 uncorrectable ECC errors'", '--', 'true']);
  assert.equal(sel.code, 213, 'every matching device is quarantined: refused, not queued forever');
  assert.match(sel.stderr, /every device matching .* is quarantined \(eccbox:gpu0\)/);
});

// GPU names as people say them, through a real stack: workers whose (fake)
// nvidia-smi reports the real names and memory of A100 80GB cards (no 40 GB
// one), an H100 80GB HBM3, an RTX 4090 and an L4. `--gpu A100` takes an
// 80 GB card, `vram>=80G` takes the H100 (79.6 GiB reported), an unknown
// family is refused with nothing submitted; --no-wait names the busy
// choices; --explain says how each choice matched and which host is drained.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Explanation } from '../../protocol/wire';
import { fakeGpus, fakeNvidiaSmiDir } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

let stack: Stack;
const gates = mkdtempSync(join(tmpdir(), 'rc-gpu-names-'));

before(async () => {
  stack = await Stack.start({ workers: [] });
  const withGpus = (host: string, name: string, n: number, memMiB: number) =>
    stack.startWorker(host, n, { PATH: `${fakeNvidiaSmiDir(fakeGpus(host, name, n, memMiB))}:${process.env.PATH}` });
  await withGpus('sxm', 'NVIDIA A100-SXM4-80GB', 1, 81920);
  await withGpus('pcie', 'NVIDIA A100 80GB PCIe', 1, 81920);
  await withGpus('hop', 'NVIDIA H100 80GB HBM3', 1, 81559);
  await withGpus('rtx', 'NVIDIA GeForce RTX 4090', 1, 24564);
  await withGpus('inf', 'NVIDIA L4', 1, 23034);
  await stack.waitFor(async () => (await stack.devices()).filter((d) => d.state === 'free').length === 5, 'the five GPUs to be free');
});
after(async () => stack.stop());

const admin = (args: string[]) => stack.cli(['admin', ...args], { env: { RC_TOKEN: stack.adminToken } });
const names = async (sel: string) =>
  (JSON.parse((await stack.cli(['devices', '--select', sel, '--json'])).stdout) as { devices: { name: string }[] }).devices.map((d) => d.name);
const jobCount = async () => ((await stack.api('GET', '/api/jobs?limit=500')).body as { jobs: unknown[] }).jobs.length;

/** A job on `-d device` that runs until its gate file appears; resolves once it runs. */
async function occupy(device: string): Promise<{ release: () => Promise<void> }> {
  const gate = join(gates, device.replace(':', '-'));
  const r = stack.runJob(['-d', device], `while [ ! -e ${gate} ]; do sleep 0.05; done`);
  await r.id;
  return {
    release: async () => {
      writeFileSync(gate, '');
      assert.equal((await r.done).code, 0);
      await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === device)?.state === 'free', `${device} to be free again`);
    },
  };
}

test('the labels: exact model, family, nominal vram and the reported total', async () => {
  const devices = ((await stack.api('GET', '/api/devices')).body as { devices: { name: string; labels: Record<string, string> }[] }).devices;
  const labels = Object.fromEntries(devices.map((d) => [d.name, d.labels]));
  const pick = (name: string) => {
    const l = labels[name]!;
    return [l.gpu_model, l.gpu_family, l.vram, l.vram_total_bytes];
  };
  const [GiB, MiB] = [1024 ** 3, 1024 ** 2];
  assert.deepEqual(pick('sxm:gpu0'), ['A100-80GB', 'A100', String(80 * GiB), String(81920 * MiB)]);
  assert.deepEqual(pick('pcie:gpu0'), ['A100-80GB', 'A100', String(80 * GiB), String(81920 * MiB)]);
  assert.deepEqual(pick('hop:gpu0'), ['H100', 'H100', String(80 * GiB), String(81559 * MiB)]);
  assert.deepEqual(pick('rtx:gpu0'), ['RTX4090', 'RTX4090', String(24 * GiB), String(24564 * MiB)]);
  assert.deepEqual(pick('inf:gpu0'), ['L4', 'L4', String(24 * GiB), String(23034 * MiB)]);
  assert.match((await stack.cli(['devices'])).stdout, /hop:gpu0\s+free\s+-\s+(?:-|\d+% \d+\/\d+G)\s+gpu_model=H100 vram=80G/);
});

test('vram>=80G matches every 80 GB card, the H100 included; gpu_family=A100 both A100s', async () => {
  assert.deepEqual(await names('vram>=80G'), ['hop:gpu0', 'pcie:gpu0', 'sxm:gpu0']);
  assert.deepEqual(await names('vram_total_bytes>=80G'), ['pcie:gpu0', 'sxm:gpu0']);
  assert.deepEqual(await names('gpu_family=A100'), ['pcie:gpu0', 'sxm:gpu0']);
  const r = stack.runJob(['--select', 'vram>=80G,gpu_family=H100'], 'true');
  const id = await r.id;
  assert.equal((await r.done).code, 0);
  assert.deepEqual(((await stack.api('GET', `/api/jobs/${id}`)).body as { job: { devices: string[] } }).job.devices, ['hop:gpu0']);
});

test('rc run --gpu A100 starts on a fleet of A100 80GB cards; A100-80GB only on that model; A100-40GB is never met', async () => {
  for (const [gpu, devices] of [
    ['A100', ['sxm:gpu0', 'pcie:gpu0']],
    ['A100-80GB', ['sxm:gpu0', 'pcie:gpu0']],
    ['a100:1', ['sxm:gpu0', 'pcie:gpu0']],
  ] as const) {
    const r = stack.runJob(['--gpu', gpu], 'true');
    const id = await r.id;
    assert.equal((await r.done).code, 0, gpu);
    const job = ((await stack.api('GET', `/api/jobs/${id}`)).body as { job: { devices: string[] } }).job;
    assert.ok((devices as readonly string[]).includes(job.devices[0]!), `${gpu} ran on ${job.devices}`);
  }
  const before = await jobCount();
  const never = await stack.cli(['run', '--gpu', 'A100-40GB', '--', 'true']);
  assert.deepEqual(
    [never.code, never.stderr],
    [
      201,
      'rc: no_matching_device: no device could ever satisfy --gpu A100-40GB (no A100-40GB device); drop that choice from --gpu (rc devices lists the models)\n',
    ],
  );
  assert.equal(await jobCount(), before, 'nothing was submitted');
});

test('gpu_model=A100 is the exact model: refused with a hint to write gpu_family=A100, in rc run and --explain', async () => {
  const before = await jobCount();
  const r = await stack.cli(['run', '--select', 'gpu_model=A100', '--', 'true']);
  assert.equal(r.code, 201);
  assert.equal(
    r.stderr,
    'rc: no_matching_device: no device matches the selector: gpu_model=A100; gpu_model is the exact model (A100-40GB or A100-80GB): did you mean gpu_family=A100 (any A100)?\n',
  );
  assert.equal(await jobCount(), before);
  const ex = await stack.cli(['run', '--select', 'gpu_model=A100', '--explain']);
  assert.match(ex.stdout, /nothing matches/);
  assert.match(ex.stdout, /^gpu_model is the exact model \(A100-40GB or A100-80GB\): did you mean gpu_family=A100 \(any A100\)\?$/m);
});

test('an unknown family is a clear error at submit: the names rc knows, nothing submitted; in the CLI, the API and --explain', async () => {
  const before = await jobCount();
  const r = await stack.cli(['run', '--gpu', 'A100,Z999:2', '--', 'true']);
  assert.equal(r.code, 2, r.stderr);
  assert.match(
    r.stderr,
    /^rc: bad_gpu: --gpu Z999:2: no GPU family or model is called Z999; rc knows .*A100 \(any of A100-40GB, A100-80GB\), A100-40GB, A100-80GB, H100.*\n$/,
  );
  const api = await stack.api('POST', '/api/jobs', { argv: ['true'], submitter: 'tester', gpu: 'H200X' });
  assert.equal(api.status, 400);
  assert.equal((api.body as { error: { code: string } }).error.code, 'bad_gpu');
  assert.equal(await jobCount(), before, 'nothing was submitted');
  const ex = await stack.api('POST', '/api/explain', { gpu: 'Z999' });
  assert.deepEqual([ex.status, (ex.body as { error: { code: string } }).error.code], [400, 'bad_gpu']);
});

test('--explain says how each choice matched (family or exact model) and which devices', async () => {
  const r = await stack.cli(['run', '--gpu', 'A100,A100-80GB,L4', '--explain']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^choice 1, A100 \(family: gpu_family=A100\): 2 device\(s\) match, 2 free now/m);
  assert.match(r.stdout, /^ {2}match {2}pcie:gpu0 {2}A100-80GB {2}free$/m);
  assert.match(r.stdout, /^choice 2, A100-80GB \(exact model: gpu_model=A100-80GB\): 2 device\(s\) match/m);
  assert.match(r.stdout, /^choice 3, L4 \(family: gpu_family=L4\): 1 device\(s\) match/m);
  const api = (await stack.api('POST', '/api/explain', { gpu: 'A100:2,A100-80GB' })).body as Explanation;
  assert.deepEqual(
    api.choices?.map((c) => [c.choice, c.by, c.term, c.matching.map((m) => `${m.name}=${m.gpuModel}`).sort()]),
    [
      ['A100:2', 'family', 'gpu_family=A100', ['pcie:gpu0=A100-80GB', 'sxm:gpu0=A100-80GB']],
      ['A100-80GB', 'model', 'gpu_model=A100-80GB', ['pcie:gpu0=A100-80GB', 'sxm:gpu0=A100-80GB']],
    ],
  );
});

test('--no-wait --gpu with its choices busy names them, and counts the free devices that match none', async () => {
  const busy = await Promise.all(['sxm:gpu0', 'pcie:gpu0', 'hop:gpu0'].map(occupy));
  const r = await stack.cli(['run', '--no-wait', '--gpu', 'A100,H100', '--', 'true']);
  assert.equal(r.code, 202, r.stderr);
  assert.match(
    r.stderr,
    /--gpu A100,H100: every A100 and H100 device is busy \(2 other devices are free but match no choice\); the job could not be queued \(--no-wait\)/,
  );
  await Promise.all(busy.map((b) => b.release()));
});

test('--explain says when a matching host is drained, and how many matching devices it has', async () => {
  const off = await admin(['host', 'off', 'inf', '--reason', 'driver upgrade']);
  assert.equal(off.code, 0, off.stderr);
  try {
    await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === 'inf:gpu0')?.state === 'off', 'inf:gpu0 to be off');
    const r = await stack.cli(['run', '--select', 'vram<=30G', '--explain']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^host inf \(1 matching device\) is drained \(driver upgrade\): nothing new starts there until an operator runs rc admin host on inf$/m,
    );
    const withGpu = await stack.cli(['run', '--gpu', 'L4,RTX4090', '--explain']);
    assert.match(withGpu.stdout, /^choice 1, L4 .*\n {2}match {2}inf:gpu0 {2}L4 {2}off\n {2}host inf \(1 matching device\) is drained \(driver upgrade\)/m);
    const api = (await stack.api('POST', '/api/explain', { selector: 'vram<=30G' })).body as Explanation;
    assert.deepEqual(api.hostsOff, [{ host: 'inf', devices: 1, status: 'off', reason: 'driver upgrade' }]);
    // A host that takes jobs is not listed.
    assert.deepEqual(((await stack.api('POST', '/api/explain', { selector: 'gpu_family=RTX4090' })).body as Explanation).hostsOff, []);
  } finally {
    await admin(['host', 'on', 'inf']);
  }
});

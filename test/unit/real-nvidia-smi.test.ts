// What nvidia-smi printed on a real GPU host (one NVIDIA H200, driver
// 580.159.04, 2026-12-04, captured by scripts/gpu-check.ts on a lent device
// machine), run through the worker's parsers and rules. The fake nvidia-smi
// of the other tests prints these formats; these are the originals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gpuIdle } from '../../core/idle';
import { foreignProcesses, heldAfterJob } from '../../worker/gpu-health';
import { parseGpuCsv } from '../../worker/inventory';
import { parseComputeApps, parseCudaVersion, parseGpuSamples } from '../../worker/probes/parse';
import { FAKE_GPUS } from '../helpers/fake-nvidia-smi';

const UUID = 'GPU-cb4d5805-695f-2497-bbc3-b86b49c0e68d';
const H200 = {
  probe: '0, GPU-cb4d5805-695f-2497-bbc3-b86b49c0e68d, NVIDIA H200, 143771, 580.159.04\n',
  banner: [
    'Fri Dec  4 11:25:06 2026       ',
    '+-----------------------------------------------------------------------------------------+',
    '| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |',
    '+-----------------------------------------+------------------------+----------------------+',
    '| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |',
    '|   0  NVIDIA H200                    On  |   00000000:00:06.0 Off |                    0 |',
    '| N/A   37C    P0             77W /  700W |       0MiB / 143771MiB |      0%      Default |',
  ].join('\n'),
  sampleIdle: '0, 143771, 0, 0, NVIDIA H200\n',
  // No process on the GPU: the compute-apps query prints nothing at all.
  appsIdle: '',
  // A PyTorch process multiplying bf16 matrices.
  sampleBusy: '0, 143771, 3059, 98, NVIDIA H200\n',
  appsBusy: 'GPU-cb4d5805-695f-2497-bbc3-b86b49c0e68d, 582, 3050, python3\n',
  // A PyTorch process holding 2 GiB and computing nothing.
  sampleHold: '0, 143771, 2705, 0, NVIDIA H200\n',
  appsHold: 'GPU-cb4d5805-695f-2497-bbc3-b86b49c0e68d, 666, 2696, python3\n',
};

const sampleWithProcs = (sample: string, apps: string) => {
  const [s] = parseGpuSamples(sample);
  return { ...s!, procs: parseComputeApps(apps).filter((p) => p.gpuUuid === UUID).length };
};

test('the probe query of a real H200 gives its model, memory, driver and UUID; the banner its CUDA version', () => {
  const [d] = parseGpuCsv(H200.probe);
  assert.equal(d!.uuid, UUID);
  assert.deepEqual(Object.fromEntries(d!.labels.map((l) => [l.key, l.value])), {
    kind: 'gpu',
    vendor: 'nvidia',
    gpu_model: 'H200',
    gpu_family: 'H200',
    gpu_name: 'NVIDIA H200',
    gpu_uuid: UUID,
    gpu_index: '0',
    driver_version: '580.159.04',
    // Sold as 141 GB; it reports 140.4 GiB.
    vram: String(141 * 1024 ** 3),
    vram_total_bytes: String(143771 * 1024 * 1024),
  });
  assert.equal(parseCudaVersion(H200.banner), '13.0');
});

test('real samples: idle reads idle, a computing process and a process only holding memory both read busy', () => {
  assert.equal(gpuIdle(sampleWithProcs(H200.sampleIdle, H200.appsIdle)), true);
  const busy = sampleWithProcs(H200.sampleBusy, H200.appsBusy);
  assert.deepEqual(busy, { index: 0, name: 'NVIDIA H200', memTotalMiB: 143771, memUsedMiB: 3059, utilPct: 98, procs: 1 });
  assert.equal(gpuIdle(busy), false);
  const hold = sampleWithProcs(H200.sampleHold, H200.appsHold);
  assert.equal(hold.utilPct, 0);
  assert.equal(gpuIdle(hold), false, 'a process holding the GPU is someone’s work even at 0%');
});

test('real compute apps: a process without the job tag is foreign; memory held after a job is caught with its pid', () => {
  const devices = [{ index: 0, uuid: UUID }];
  const procs = parseComputeApps(H200.appsHold);
  assert.deepEqual(procs, [{ gpuUuid: UUID, pid: 666, usedMiB: 2696, name: 'python3' }]);
  const [q] = foreignProcesses(
    devices,
    procs,
    () => 'job-1',
    () => null,
  );
  assert.equal(q!.reason, 'pid 666 (python3, 2696 MiB) uses the GPU and rc did not start it');
  assert.deepEqual(
    foreignProcesses(
      devices,
      parseComputeApps(H200.appsBusy),
      () => 'job-1',
      () => 'job-1',
    ),
    [],
  );
  const [held] = heldAfterJob('job-1', devices, parseGpuSamples(H200.sampleHold), procs, 512);
  assert.match(held!.reason, /2705 MiB used \(threshold 512 MiB\), by pid 666 \(python3\)/);
  assert.deepEqual(heldAfterJob('job-1', devices, parseGpuSamples(H200.sampleIdle), [], 512), []);
});

test("the tests' fake nvidia-smi prints the real probe line's shape", () => {
  const fake = `${FAKE_GPUS[0]!.index}, ${FAKE_GPUS[0]!.uuid}, ${FAKE_GPUS[0]!.name}, ${FAKE_GPUS[0]!.memMiB}, 550.54.15`;
  const shape = (line: string) => line.split(', ').map((c) => (/^\d+$/.test(c) ? 'n' : c.startsWith('GPU-') ? 'uuid' : /^[\d.]+$/.test(c) ? 'v' : 's'));
  assert.deepEqual(shape(fake), shape(H200.probe.trim()));
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseGpuCsv } from '../../worker/inventory';

test('nvidia-smi CSV becomes devices with canonical models and byte sizes', () => {
  const csv =
    '0, GPU-1111aaaa-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, 81559, 550.54.15\n1, GPU-2222bbbb-0000-0000-0000-000000000000, NVIDIA A100-PCIE-40GB, 40960, 550.54.15\n';
  const devices = parseGpuCsv(csv);
  assert.equal(devices.length, 2);
  const labels = (i: number) => Object.fromEntries(devices[i]!.labels.map((l) => [l.key, l.value]));
  assert.equal(labels(0).gpu_model, 'H100');
  assert.equal(labels(0).vram, String(80 * 1024 ** 3), 'its nominal 80 GB');
  assert.equal(labels(0).vram_total_bytes, String(81559 * 1024 * 1024));
  assert.equal(labels(1).gpu_model, 'A100-40GB');
  assert.equal(labels(1).gpu_family, 'A100');
  assert.equal(devices[1]!.uuid, 'GPU-2222bbbb-0000-0000-0000-000000000000');
  assert.ok(devices[0]!.labels.every((l) => l.source === 'detected' && l.probe === 'nvidia-smi'));
});

test('garbage lines are skipped, not fatal', () => {
  assert.deepEqual(parseGpuCsv('No devices were found\n\n,,,\n'), []);
});

test('a UUID that is not GPU-… is kept as a label but not used as the device UUID', () => {
  const [d] = parseGpuCsv('0, [N/A], NVIDIA GeForce RTX 4090, 24564, 550.54.15\n');
  assert.equal(d!.uuid, null);
  assert.equal(d!.labels.find((l) => l.key === 'gpu_uuid')?.value, '[N/A]');
  assert.equal(d!.labels.find((l) => l.key === 'gpu_model')?.value, 'RTX4090');
});

// A job's placement, machine flags and the provider machine it ran on, in words (rc describe <job>, the job's page).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { placementText, ranOnText } from '../../core/machine-text';

const none = { cloud: null, maxPrice: null, spot: false, keepS: null, min: null };

test("a job's placement and machine flags in one line; nothing for a plain job", () => {
  assert.equal(placementText({ placement: 'any', machine: null }), null);
  assert.equal(placementText({ placement: 'reserved', machine: null }), 'reserved only');
  assert.equal(placementText({ placement: 'cloud', machine: none }), 'cloud');
  assert.equal(
    placementText({
      placement: 'cloud',
      machine: { cloud: 'local', maxPrice: 2.5, spot: true, keepS: 90, min: { cpus: 2, ramGiB: 8, cuda: '12.4' } },
    }),
    'cloud (--cloud local, --max-price $2.50/h, --spot, --keep 1m30s, at least 2 CPUs, 8 GiB RAM, CUDA 12.4)',
  );
  // An any job may ask a machine's price or shape too (for when it gets one).
  assert.equal(placementText({ placement: 'any', machine: { ...none, min: { cpus: 1, diskGiB: 200 } } }), 'any (at least 1 CPU, 200 GiB disk)');
  assert.equal(placementText({ placement: 'any', machine: { ...none, keepS: 0 } }), 'any (--keep 0)');
});

test('the machine a job ran on: its shape, price (simulated said) and state now', () => {
  const m = {
    id: 'm0000000001',
    account: 'local',
    state: 'busy' as const,
    gpuModel: 'H100',
    gpuCount: 1,
    pricePerHour: 2.1,
    spot: false,
    simulated: true,
    terminatedWhy: null,
  };
  assert.equal(ranOnText(m), 'm0000000001 (local, 1× H100, $2.10/h simulated), now busy');
  assert.equal(
    ranOnText({ ...m, account: 'runpod/lab', simulated: false, spot: true, gpuCount: 2, state: 'terminated', terminatedWhy: 'keep expired' }),
    'm0000000001 (runpod/lab, 2× H100, $2.10/h, spot), now terminated (keep expired)',
  );
});

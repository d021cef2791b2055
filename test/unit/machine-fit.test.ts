// core/machine-fit.ts: whether an offer (or an idle machine launched from one)
// fits a job, by every rule seed 002's "How rrun picks" names.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type MachineWants, offerFits, queryOf } from '../../core/machine-fit';
import { parseSelector } from '../../core/selector';
import type { OfferView } from '../../protocol/wire';

const offer = (o: Partial<OfferView> = {}): OfferView => ({
  account: 'local',
  offerId: 'o',
  gpuModel: 'H100',
  gpuCount: 1,
  vramGiB: 80,
  cpus: 8,
  ramGiB: 64,
  diskGiB: 200,
  cuda: '12.4',
  region: null,
  spot: false,
  pricePerHour: 2.1,
  simulated: true,
  ...o,
});
const terms = (text: string) => {
  const p = parseSelector(text);
  assert.ok(p.ok);
  return p.terms;
};
const wants = (w: Partial<MachineWants> = {}): MachineWants => ({
  gpus: 1,
  choices: null,
  terms: [],
  cloud: null,
  spot: false,
  maxPricePerHour: null,
  min: null,
  ...w,
});

test('GPUs: at least the count of any model, or one of the --gpu choices (a model or its family), a machine with none never', () => {
  assert.equal(offerFits(offer(), wants()), true);
  assert.equal(offerFits(offer({ gpuCount: 1 }), wants({ gpus: 2 })), false);
  assert.equal(offerFits(offer({ gpuCount: 4 }), wants({ gpus: 2 })), true, 'an idle machine with more of them fits too');
  assert.equal(offerFits(offer({ gpuModel: null, gpuCount: 0, vramGiB: 0 }), wants()), false);
  const choices = [
    { model: 'A100', count: 2 },
    { model: 'H100', count: 1 },
  ];
  assert.equal(offerFits(offer(), wants({ choices })), true);
  assert.equal(offerFits(offer({ gpuModel: 'A100-80GB', gpuCount: 1 }), wants({ choices })), false, 'A100 needs two');
  assert.equal(offerFits(offer({ gpuModel: 'A100-80GB', gpuCount: 2 }), wants({ choices })), true, 'a model of the family');
  assert.equal(offerFits(offer({ gpuModel: 'L4' }), wants({ choices })), false);
});

test("the selector holds on the labels the offer's GPUs will have; a key they will not have never matches", () => {
  assert.equal(offerFits(offer(), wants({ terms: terms('vram>=40G') })), true);
  assert.equal(offerFits(offer({ gpuModel: 'L4', vramGiB: 24 }), wants({ terms: terms('vram>=40G') })), false);
  assert.equal(offerFits(offer(), wants({ terms: terms('gpu_family=H100') })), true);
  assert.equal(offerFits(offer(), wants({ terms: terms('rack=b12') })), false);
});

test('CPUs, RAM, disk and CUDA at least; the account --cloud names; --max-price; spot only with --spot', () => {
  assert.equal(offerFits(offer(), wants({ min: { cpus: 8, ramGiB: 64, diskGiB: 200, cuda: '12.4' } })), true);
  assert.equal(offerFits(offer(), wants({ min: { cpus: 9 } })), false);
  assert.equal(offerFits(offer(), wants({ min: { ramGiB: 65 } })), false);
  assert.equal(offerFits(offer(), wants({ min: { diskGiB: 201 } })), false);
  assert.equal(offerFits(offer(), wants({ min: { cuda: '12.10' } })), false, '12.10 is after 12.4');
  assert.equal(offerFits(offer({ cuda: null }), wants({ min: { cuda: '11.0' } })), false, 'an unknown CUDA version fits no --cuda');
  assert.equal(offerFits(offer({ account: 'runpod/lab-b' }), wants({ cloud: 'runpod' })), true);
  assert.equal(offerFits(offer({ account: 'runpod/lab-b' }), wants({ cloud: 'runpod/lab-c' })), false);
  assert.equal(offerFits(offer(), wants({ cloud: 'runpod' })), false);
  assert.equal(offerFits(offer(), wants({ maxPricePerHour: 2.1 })), true);
  assert.equal(offerFits(offer(), wants({ maxPricePerHour: 2.09 })), false);
  assert.equal(offerFits(offer({ spot: true }), wants()), false);
  assert.equal(offerFits(offer({ spot: true }), wants({ spot: true })), true);
  assert.equal(offerFits(offer(), wants({ spot: true })), true, 'with --spot, on-demand offers compete too');
});

test("the providers' query says what a provider can filter on, and nothing the job did not ask", () => {
  assert.deepEqual(queryOf(wants()), { minGpus: 1, spot: false });
  assert.deepEqual(queryOf(wants({ choices: [{ model: 'H100', count: 2 }], spot: true, maxPricePerHour: 3, min: { cpus: 4, cuda: '12.4' } })), {
    maxPricePerHour: 3,
    minCpus: 4,
    minCuda: '12.4',
  });
});

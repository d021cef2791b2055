import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decide, parseDeviceName, type DeviceView } from '../../core/schedule';
import { job, terms } from '../helpers/schedule';
import { firstFree } from '../../server/jobs/submit';

const dev = (hostName: string, index: number, labels: Record<string, string> = {}, free = true): DeviceView => ({
  id: hostName.charCodeAt(0) * 100 + index,
  name: `${hostName}:gpu${index}`,
  hostName,
  index,
  labels,
  free,
});

test('jobs start in priority order, then submission order', () => {
  const plan = decide([job('j1'), job('j2', { priority: 5 }), job('j3')], [dev('a', 0)]);
  assert.deepEqual(
    plan.map((a) => a.jobId),
    ['j2'],
  );
  const two = decide([job('j1'), job('j2'), job('j3')], [dev('a', 0), dev('a', 1)]);
  assert.deepEqual(
    two.map((a) => a.jobId),
    ['j1', 'j2'],
  );
});

test('a job that cannot start does not block one behind it that can (backfill)', () => {
  const plan = decide([job('j1', { terms: terms('vram>=80G') }), job('j2')], [dev('a', 0, { vram: String(24 * 2 ** 30) })]);
  assert.deepEqual(
    plan.map((a) => a.jobId),
    ['j2'],
  );
});

test('busy devices are never handed out, and no device goes to two jobs', () => {
  const plan = decide([job('j1'), job('j2'), job('j3')], [dev('a', 0, {}, false), dev('a', 1)]);
  assert.deepEqual(
    plan.map((a) => [a.jobId, a.devices.map((d) => d.name)]),
    [['j1', ['a:gpu1']]],
  );
});

test('-d waits for exactly that device', () => {
  const plan = decide([job('j1', { deviceName: 'a:gpu0' })], [dev('a', 0, {}, false), dev('a', 1)]);
  assert.deepEqual(plan, []);
});

test('multi-GPU jobs get all their devices on one host or none', () => {
  const devices = [dev('a', 0), dev('b', 0), dev('b', 1)];
  const plan = decide([job('j1', { gpus: 2 })], devices);
  assert.deepEqual(
    plan[0]!.devices.map((d) => d.name),
    ['b:gpu0', 'b:gpu1'],
  );
  assert.deepEqual(decide([job('j1', { gpus: 3 })], devices), []);
});

test('device names parse strictly', () => {
  assert.deepEqual(parseDeviceName('gpubox-a:gpu0'), { hostName: 'gpubox-a', index: 0 });
  for (const bad of ['gpubox', 'gpubox:0', ':gpu0', 'a:gpu', 'a:gpu-1', 'a b:gpu0', 'a:gpu0:x']) assert.equal(parseDeviceName(bad), null, bad);
});

test('a multi-GPU job is not starved by one-GPU jobs: after the bounded wait its host is held back for it', () => {
  // Host b has two devices; one is busy. A stream of one-GPU jobs behind the two-GPU job would keep taking b:gpu1.
  const devices = [dev('b', 0, {}, false), dev('b', 1)];
  const early = decide([job('j1', { gpus: 2, waitedS: 5 }), job('j2')], devices, 30);
  assert.deepEqual(
    early.map((a) => a.jobId),
    ['j2'],
    'before the bound, backfill as usual',
  );
  const late = decide([job('j1', { gpus: 2, waitedS: 31 }), job('j2')], devices, 30);
  assert.deepEqual(late, [], 'after it, b:gpu1 waits for the two-GPU job');
  const freed = decide([job('j1', { gpus: 2, waitedS: 40 }), job('j2')], [dev('b', 0), dev('b', 1)], 30);
  assert.deepEqual(
    freed.map((a) => [a.jobId, a.devices.length]),
    [['j1', 2]],
  );
});

test('a reservation holds only the devices the big job can use; others keep backfilling', () => {
  const devices = [dev('a', 0), dev('b', 0, { kind: 'gpu' }, false), dev('b', 1, { kind: 'gpu' })];
  const plan = decide([job('j1', { gpus: 2, waitedS: 60, terms: terms('kind=gpu') }), job('j2'), job('j3')], devices, 30);
  assert.deepEqual(
    plan.map((a) => [a.jobId, a.devices[0]!.name]),
    [['j2', 'a:gpu0']],
  );
});

test('higher priority one-GPU jobs ahead of a reserving job still go first', () => {
  const plan = decide([job('j1', { gpus: 2, waitedS: 60 }), job('j9', { priority: 5 })], [dev('b', 0, {}, false), dev('b', 1)], 30);
  assert.deepEqual(
    plan.map((a) => a.jobId),
    ['j9'],
  );
});

test('a submit decides over the free devices up to the first host with enough (firstFree): the same pick as over all of them', () => {
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (let round = 0; round < 500; round++) {
    const devices: (DeviceView & { uuid: null })[] = [];
    let id = 0;
    for (let h = 0; h < 1 + Math.floor(random() * 6); h++)
      for (let i = 0; i < 1 + Math.floor(random() * 8); i++)
        devices.push({ id: id++, name: `h${h}:gpu${i}`, hostName: `h${h}`, index: i, labels: {}, free: random() < 0.5, uuid: null });
    const gpus = 1 + Math.floor(random() * 4);
    const one = [job('j1', { gpus })];
    const all = decide(
      one,
      devices.filter((d) => d.free),
    );
    const prefix = decide(
      one,
      firstFree(
        devices.map((view) => ({ view })),
        gpus,
      ),
    );
    assert.deepEqual(
      prefix.map((a) => a.devices.map((d) => d.name)),
      all.map((a) => a.devices.map((d) => d.name)),
      `round ${round}`,
    );
  }
});

test("a provider machine's devices go only to the job it is for; a --cloud-only job never takes a joined host's", () => {
  // alpha is joined; m1 is a machine for j3 (its device held for j3, as the pass holds it: forJob).
  const alpha = dev('alpha', 0);
  const machine = { ...dev('m1', 0), forJob: 'j3' };
  const held = new Map([[machine.id, 'j3']]);
  // j1 (any) is first in line: it takes alpha, never the machine; j2 (cloud-only) takes nothing; j3 its machine.
  const plan = decide([job('j1'), job('j2', { cloudOnly: true }), job('j3', { cloudOnly: true })], [alpha, machine], 30, held);
  assert.deepEqual(
    plan.map((a) => [a.jobId, a.devices.map((d) => d.name)]),
    [
      ['j3', ['m1:gpu0']],
      ['j1', ['alpha:gpu0']],
    ],
  );
  // A --cloud-only job alone in line, alpha free: it waits for its machine.
  assert.deepEqual(decide([job('j2', { cloudOnly: true })], [alpha], 30), []);
  // With alpha busy, j1 does not take the machine held for j3, even with j3 not in this pass's window.
  assert.deepEqual(decide([job('j1')], [dev('alpha', 0, {}, false), machine], 30, held), []);
  // An `any` job a machine is for starts on it too (it was busy joined hosts that sent it there).
  assert.deepEqual(
    decide([job('j3')], [dev('alpha', 0, {}, false), machine], 30, held).map((a) => a.devices[0]!.name),
    ['m1:gpu0'],
  );
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { job, terms } from '../helpers/schedule';
import { type DeviceState, type FleetDevice, heldBack, waitReasons } from '../../core/wait-reason';

const dev = (hostName: string, index: number, state: DeviceState, labels: Record<string, string> = { kind: 'gpu' }): FleetDevice => ({
  id: hostName.charCodeAt(0) * 100 + index,
  name: `${hostName}:gpu${index}`,
  hostName,
  index,
  labels,
  state,
});

test('counts the matching devices by state and says it in one sentence', () => {
  const why = waitReasons([job('j1')], [dev('a', 0, 'busy'), dev('a', 1, 'busy'), dev('b', 0, 'unhealthy')], 30).get('j1')!;
  assert.deepEqual(
    { ...why },
    { matching: 3, free: 0, busy: 2, off: 0, unhealthy: 1, offline: 0, reserved: null, text: '2 of 3 matching devices are busy; 1 is quarantined' },
  );
  const all = waitReasons([job('j1')], [dev('a', 0, 'busy'), dev('a', 1, 'busy')], 30).get('j1')!;
  assert.equal(all.text, 'all 2 matching devices are busy');
  const off = waitReasons([job('j1')], [dev('a', 0, 'offline')], 30).get('j1')!;
  assert.equal(off.text, 'its one matching device, a:gpu0, is offline');
});

test('only the devices its selector and -d match count', () => {
  const fleet = [dev('a', 0, 'busy', { kind: 'gpu', vram: '80G' }), dev('a', 1, 'free', { kind: 'gpu', vram: '24G' }), dev('b', 0, 'free', { kind: 'cpu' })];
  const why = waitReasons([job('j1', { terms: terms('vram>=40G') })], fleet, 30).get('j1')!;
  assert.equal(why.matching, 1);
  assert.equal(why.busy, 1);
  const byName = waitReasons([job('j1', { deviceName: 'a:gpu0' })], fleet, 30).get('j1')!;
  assert.equal(byName.matching, 1);
  assert.equal(byName.text, 'its one matching device, a:gpu0, is busy');
});

test('no device matching: it waits until one joins', () => {
  const why = waitReasons([job('j1', { terms: terms('gpu_model=H100') })], [dev('a', 0, 'free')], 30).get('j1')!;
  assert.equal(why.matching, 0);
  assert.equal(why.text, 'no device matches (it will wait until one joins)');
  const named = waitReasons([job('j1', { deviceName: 'z:gpu3' })], [dev('a', 0, 'free')], 30).get('j1')!;
  assert.match(named.text, /no device z:gpu3 matches/);
});

test('a multi-GPU job that no host can hold says so', () => {
  const why = waitReasons([job('j1', { gpus: 4 })], [dev('a', 0, 'free'), dev('a', 1, 'free'), dev('b', 0, 'free')], 30).get('j1')!;
  assert.equal(why.text, 'it needs 4 devices on one host, and no host has more than 2 that match (it will wait until one joins)');
});

test('a job that would start now is next in line; a free device a job ahead takes is not the next one’s', () => {
  const reasons = waitReasons([job('j1'), job('j2')], [dev('a', 0, 'free'), dev('a', 1, 'busy')], 30);
  assert.equal(reasons.get('j1')!.text, 'next in line: a matching device is free');
  assert.equal(reasons.get('j2')!.text, 'the free matching device goes to a job ahead of it; 1 is busy');
});

test('queue order is priority, then submission, whatever order the jobs come in', () => {
  const reasons = waitReasons([job('j1'), job('j2', { priority: 5 })], [dev('a', 0, 'free')], 30);
  assert.match(reasons.get('j2')!.text, /^next in line/);
  assert.match(reasons.get('j1')!.text, /goes to a job ahead/);
});

test('a multi-GPU job waiting past the reserve time holds devices back, and says which', () => {
  const fleet = [dev('a', 0, 'free'), dev('a', 1, 'busy'), dev('b', 0, 'free')];
  const reasons = waitReasons([job('j1', { gpus: 2, waitedS: 60 }), job('j2', { terms: terms('kind=gpu') })], fleet, 30);
  const big = reasons.get('j1')!;
  assert.deepEqual(big.reserved, ['a:gpu0', 'a:gpu1']);
  assert.equal(big.text, '2 of 3 matching devices are free, not 2 on one host; 1 is busy; it holds back a:gpu0 and a:gpu1 until 2 of them are free');
  // The one-GPU job behind it gets b:gpu0, not the held-back a:gpu0.
  assert.equal(reasons.get('j2')!.text, 'next in line: a matching device is free');
  const small = waitReasons([job('j1', { gpus: 2, waitedS: 60 }), job('j2', { deviceName: 'a:gpu0' })], fleet, 30).get('j2')!;
  assert.equal(small.text, 'the free matching device is held back for job j1, which waits for more');
  // Before the reserve time nothing is held back.
  assert.equal(waitReasons([job('j1', { gpus: 2, waitedS: 5 })], fleet, 30).get('j1')!.reserved, null);
});

test('heldBack: the devices a waiting multi-GPU job holds back, for the job ahead first; none a job ahead starts on', () => {
  const fleet = [dev('a', 0, 'free'), dev('a', 1, 'busy'), dev('b', 0, 'free')];
  const id = (d: FleetDevice) => d.id;
  const held = heldBack([job('j1', { gpus: 2, waitedS: 60 }), job('j2', { gpus: 2, waitedS: 60 })], fleet, 30);
  assert.deepEqual(
    [...held].map(([d, h]) => [d, h.jobId, h.gpus]),
    [
      [id(fleet[0]!), 'j1', 2],
      [id(fleet[1]!), 'j1', 2],
    ],
  );
  // A one-GPU job ahead starts on a:gpu0 in this pass: only the busy a:gpu1 is held back.
  const ahead = heldBack([job('j0', { deviceName: 'a:gpu0' }), job('j1', { gpus: 2, waitedS: 60 })], fleet, 30);
  assert.deepEqual([...ahead.keys()], [id(fleet[1]!)]);
  assert.equal(heldBack([job('j1', { gpus: 2, waitedS: 5 })], fleet, 30).size, 0);
});

test('a thousand queued jobs over eight thousand devices are explained quickly', () => {
  const fleet: FleetDevice[] = [];
  for (let h = 0; h < 1000; h++) for (let i = 0; i < 8; i++) fleet.push({ ...dev(`h${h}`, i, 'busy'), id: h * 8 + i });
  const shared = terms('kind=gpu');
  const queue = Array.from({ length: 1000 }, (_, i) => job(`j${i + 1}`, { terms: shared, gpus: 1 + (i % 2), waitedS: 60 }));
  const t0 = performance.now();
  const reasons = waitReasons(queue, fleet, 30);
  assert.equal(reasons.size, 1000);
  assert.ok(performance.now() - t0 < 5000, `took ${Math.round(performance.now() - t0)} ms`);
});

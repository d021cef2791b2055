import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Watchdog } from '../../worker/watchdog';

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('max runtime fires once with its reason', async () => {
  const fired: string[] = [];
  const w = new Watchdog({ maxRuntimeS: 0.05, idleTimeoutS: null }, (r, cause) => fired.push(`${cause}: ${r}`));
  await wait(120);
  w.stop();
  assert.deepEqual(fired, ['max_runtime: max_runtime exceeded']);
});

test('output keeps the idle watchdog quiet; silence fires it', async () => {
  const fired: string[] = [];
  const w = new Watchdog({ maxRuntimeS: null, idleTimeoutS: 0.08 }, (r, cause) => fired.push(`${cause}: ${r}`));
  for (let i = 0; i < 4; i++) {
    await wait(40);
    w.activity();
  }
  assert.deepEqual(fired, [], 'activity every 40 ms beats an 80 ms idle limit');
  await wait(150);
  assert.equal(fired.length, 1);
  assert.match(fired[0]!, /^idle: idle: no output for /);
  w.stop();
});

test('no limits, no timers', async () => {
  const fired: string[] = [];
  const w = new Watchdog({ maxRuntimeS: null, idleTimeoutS: null }, (r) => fired.push(r));
  w.activity();
  await wait(30);
  w.stop();
  assert.deepEqual(fired, []);
});

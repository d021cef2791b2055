// The simulated fleet's GPU samples (bench/simulator/samples.ts) carry the
// idle signal a real card gives: an idle card reads 0-1% with no process, a
// job's card is busy, and a hold's card sits idle most of the time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GPU_MODELS } from '../../bench/simulator/catalog';
import { initialWalk, processesOn, step, toSample } from '../../bench/simulator/samples';
import { gpuIdle } from '../../core/idle';

/** A seeded random source: the same walk every run. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const model = GPU_MODELS.H100;

function idleShare(activity: 'idle' | 'job' | 'hold', beats = 400): number {
  const random = seeded(7);
  let walk = initialWalk(random);
  let idle = 0;
  for (let i = 0; i < beats; i++) {
    walk = step(walk, model, activity, 0, random);
    if (gpuIdle(toSample(0, model, walk, processesOn(activity, walk, 0)))) idle++;
  }
  return idle / beats;
}

test('an idle card reads idle, a job’s card never does, a hold’s card is idle most of the time', () => {
  assert.ok(idleShare('idle') > 0.95, `idle: ${idleShare('idle')}`);
  assert.equal(idleShare('job'), 0);
  const hold = idleShare('hold');
  assert.ok(hold > 0.4 && hold < 0.95, `hold: ${hold}`);
  // A process rc did not start is a process on the card.
  assert.equal(processesOn('idle', initialWalk(seeded(1)), 4096), 1);
});

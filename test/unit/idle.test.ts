import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDuration } from '../../core/duration';
import { gpuIdle, idleText, jobIdleSeconds, parseIdleSetting } from '../../core/idle';

test('a GPU is idle only at ≤1% utilisation with no compute process', () => {
  assert.equal(gpuIdle({ utilPct: 0, procs: 0 }), true);
  assert.equal(gpuIdle({ utilPct: 1, procs: 0 }), true);
  assert.equal(gpuIdle({ utilPct: 1.5, procs: 0 }), false);
  assert.equal(gpuIdle({ utilPct: 95, procs: 0 }), false);
  assert.equal(gpuIdle({ utilPct: 0, procs: 1 }), false);
});

test('no utilisation or no process count is no signal, never idle', () => {
  assert.equal(gpuIdle({ utilPct: null, procs: 0 }), null);
  assert.equal(gpuIdle({ utilPct: 0 }), null);
  assert.equal(gpuIdle({ utilPct: 0, procs: null }), null);
});

test("a job's idle seconds: its shortest streak; null without any signal", () => {
  assert.equal(jobIdleSeconds([]), null);
  assert.equal(jobIdleSeconds([null, null]), null);
  assert.equal(jobIdleSeconds([120, 30]), 30);
  assert.equal(jobIdleSeconds([120, null]), 120);
  assert.equal(jobIdleSeconds([0, 500]), 0);
  assert.equal(idleText(null, String), 'no GPU signal');
  assert.equal(idleText(42.7, String), 'idle 42');
  assert.equal(idleText(0, String), 'busy');
});

test('idle settings: a duration from 1s to 30d, or off', () => {
  assert.deepEqual(parseIdleSetting('30m', parseDuration), { seconds: 1800 });
  assert.deepEqual(parseIdleSetting('2s', parseDuration), { seconds: 2 });
  assert.deepEqual(parseIdleSetting('off', parseDuration), { seconds: null });
  for (const bad of ['0', '0s', '-5m', 'soon', '31d', '']) assert.ok('problem' in parseIdleSetting(bad, parseDuration), bad);
});

test('RC_IDLE_HOLD_WARN and RC_IDLE_HOLD_RELEASE: defaults 30m and off; bad values refused with a sentence', async () => {
  const { loadConfig: load } = await import('../../server/config');
  const loadConfig = (env: Record<string, string>) => load(env as NodeJS.ProcessEnv);
  const d = loadConfig({});
  assert.equal(d.RC_IDLE_HOLD_WARN, 1800);
  assert.equal(d.RC_IDLE_HOLD_RELEASE, null);
  const set = loadConfig({ RC_IDLE_HOLD_WARN: '2s', RC_IDLE_HOLD_RELEASE: '1h' });
  assert.equal(set.RC_IDLE_HOLD_WARN, 2);
  assert.equal(set.RC_IDLE_HOLD_RELEASE, 3600);
  assert.equal(loadConfig({ RC_IDLE_HOLD_WARN: 'off' }).RC_IDLE_HOLD_WARN, null);
  for (const [key, bad] of [
    ['RC_IDLE_HOLD_WARN', '0'],
    ['RC_IDLE_HOLD_WARN', '-1m'],
    ['RC_IDLE_HOLD_RELEASE', '40d'],
    ['RC_IDLE_HOLD_RELEASE', 'later'],
  ] as const)
    assert.throws(() => loadConfig({ [key]: bad }), new RegExp(`bad environment variable ${key}: `), `${key}=${bad}`);
});

// RC_SAMPLES_RAW_DAYS and RC_SAMPLES_COARSE_DAYS: how long GPU samples are kept
// (server/sample-retention.ts), read from the controller's environment.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig as load } from '../../server/config';

const loadConfig = (env: Record<string, string>) => load(env as NodeJS.ProcessEnv);

test('the sample retention settings: defaults 1 and 90 days; whole days in range, coarse at least raw, or a sentence', () => {
  const d = loadConfig({});
  assert.equal(d.RC_SAMPLES_RAW_DAYS, 1);
  assert.equal(d.RC_SAMPLES_COARSE_DAYS, 90);
  const set = loadConfig({ RC_SAMPLES_RAW_DAYS: '3', RC_SAMPLES_COARSE_DAYS: '365' });
  assert.equal(set.RC_SAMPLES_RAW_DAYS, 3);
  assert.equal(set.RC_SAMPLES_COARSE_DAYS, 365);
  assert.equal(loadConfig({ RC_SAMPLES_RAW_DAYS: '7', RC_SAMPLES_COARSE_DAYS: '7' }).RC_SAMPLES_COARSE_DAYS, 7);
  for (const [key, bad] of [
    ['RC_SAMPLES_RAW_DAYS', '0'],
    ['RC_SAMPLES_RAW_DAYS', '1.5'],
    ['RC_SAMPLES_RAW_DAYS', '31'],
    ['RC_SAMPLES_RAW_DAYS', 'a day'],
    ['RC_SAMPLES_COARSE_DAYS', '0'],
    ['RC_SAMPLES_COARSE_DAYS', '3651'],
  ] as const)
    assert.throws(() => loadConfig({ [key]: bad }), new RegExp(`bad environment variable ${key}: `), `${key}=${bad}`);
  assert.throws(
    () => loadConfig({ RC_SAMPLES_RAW_DAYS: '10', RC_SAMPLES_COARSE_DAYS: '5' }),
    /bad environment variable RC_SAMPLES_COARSE_DAYS: must be at least RC_SAMPLES_RAW_DAYS \(10\)/,
  );
});

test('RC_FAIRSHARE_HALF_LIFE: a week unless set; a duration from 1h to 365d, or a sentence naming the setting', () => {
  assert.equal(loadConfig({}).RC_FAIRSHARE_HALF_LIFE, 7 * 86400);
  assert.equal(loadConfig({ RC_FAIRSHARE_HALF_LIFE: '36h' }).RC_FAIRSHARE_HALF_LIFE, 36 * 3600);
  for (const bad of ['0', '30m', '400d', 'a week', '', '-7d'])
    assert.throws(() => loadConfig({ RC_FAIRSHARE_HALF_LIFE: bad }), /bad environment variable RC_FAIRSHARE_HALF_LIFE: a duration from 1h to 365d/, bad);
});

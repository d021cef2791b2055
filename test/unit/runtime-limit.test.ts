// The fleet's bound on long work (core/runtime-limit.ts) and its settings.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundRuntime, defaultedRuntimeNotice } from '../../core/runtime-limit';
import { loadConfig } from '../../server/config';

const limits = { defaultS: 3600, maxS: 86400 };

test('a run without --max-runtime gets the default; one within the maximum keeps its own; over it is refused', () => {
  assert.deepEqual(boundRuntime('run', null, limits), { ok: true, maxRuntimeS: 3600, defaulted: true });
  assert.deepEqual(boundRuntime('run', undefined, limits), { ok: true, maxRuntimeS: 3600, defaulted: true });
  assert.deepEqual(boundRuntime('run', 60, limits), { ok: true, maxRuntimeS: 60, defaulted: false });
  assert.deepEqual(boundRuntime('run', 86400, limits), { ok: true, maxRuntimeS: 86400, defaulted: false });
  const over = boundRuntime('run', 86401, limits);
  assert.equal(over.ok, false);
  if (!over.ok) assert.match(over.message, /over this fleet's maximum of 1d/);
  // A default above the maximum is cut to it; no limits: nothing changes.
  assert.deepEqual(boundRuntime('run', null, { defaultS: 7200, maxS: 600 }), { ok: true, maxRuntimeS: 600, defaulted: true });
  assert.deepEqual(boundRuntime('run', null, { defaultS: null, maxS: null }), { ok: true, maxRuntimeS: null, defaulted: false });
  assert.deepEqual(boundRuntime('run', 10 ** 6, { defaultS: null, maxS: null }), { ok: true, maxRuntimeS: 10 ** 6, defaulted: false });
});

test('holds and terminals are not bounded by it', () => {
  assert.deepEqual(boundRuntime('hold', null, limits), { ok: true, maxRuntimeS: null, defaulted: false });
  assert.deepEqual(boundRuntime('tty', null, limits), { ok: true, maxRuntimeS: null, defaulted: false });
});

test('the notice says the default, that it is enforced, and the maximum', () => {
  assert.equal(
    defaultedRuntimeNotice('j0000000001', 3600, limits),
    "job j0000000001 has no --max-runtime: this fleet's default of 1h applies, and it is killed past it; give --max-runtime to choose (at most 1d)",
  );
});

test('the settings: defaults of a day and a week, 0 for none, bad values refused at start', () => {
  const env = (e: Record<string, string>) => e as unknown as NodeJS.ProcessEnv;
  assert.equal(loadConfig(env({})).RC_MAX_RUNTIME_DEFAULT_S, 86400);
  assert.equal(loadConfig(env({})).RC_MAX_RUNTIME_LIMIT_S, 604800);
  assert.equal(loadConfig(env({ RC_MAX_RUNTIME_DEFAULT_S: '0' })).RC_MAX_RUNTIME_DEFAULT_S, 0);
  for (const bad of ['-1', '1.5', 'a day', String(31 * 86400)]) {
    assert.throws(() => loadConfig(env({ RC_MAX_RUNTIME_DEFAULT_S: bad })), /RC_MAX_RUNTIME_DEFAULT_S/, bad);
    assert.throws(() => loadConfig(env({ RC_MAX_RUNTIME_LIMIT_S: bad })), /RC_MAX_RUNTIME_LIMIT_S/, bad);
  }
});

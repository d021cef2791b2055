// core/dependencies.ts and the retry rule of core/job-state.ts: when a
// waiting job starts, when it never will, and how each is said.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { afterText, type Dependency, dependencyReason, retryNotice, retryText, satisfied, settle } from '../../core/dependencies';
import { EXIT } from '../../core/exit-codes';
import { CAUSES_OF, exitCodeFor, isRetry, JOB_STATES, type JobState, runsAgain } from '../../core/job-state';

const dep = (id: string, state: JobState, any = false, exitCode: number | null = null): Dependency => ({
  id,
  any,
  state,
  exitCode,
  cause: state === 'failed' || state === 'succeeded' ? 'exit' : state === 'queued' || state === 'running' ? null : 'killed',
});

test('--after: released only once every job succeeded; any other end cancels it', () => {
  assert.deepEqual(settle([dep('j1', 'succeeded'), dep('j2', 'succeeded')]), { verdict: 'release' });
  assert.deepEqual(settle([dep('j1', 'succeeded'), dep('j2', 'running')]), { verdict: 'wait', unmet: [dep('j2', 'running')] });
  for (const state of ['failed', 'killed', 'cancelled', 'lost', 'preempted'] as const) {
    const v = settle([dep('j1', 'succeeded'), dep('j2', state, false, state === 'failed' ? 1 : null)]);
    assert.equal(v.verdict, 'cancel', state);
  }
});

test('a broken --after job cancels at once, even while others still run', () => {
  const v = settle([dep('j1', 'running'), dep('j2', 'failed', false, 3)]);
  assert.deepEqual(v, { verdict: 'cancel', on: dep('j2', 'failed', false, 3), reason: 'j2, which it runs after, failed (exit 3)' });
});

test('--after-any: any end will do; a queued one (a retry is queued) still waits', () => {
  for (const state of JOB_STATES) {
    const v = settle([dep('j1', state, true)]);
    assert.equal(v.verdict, state === 'queued' || state === 'running' ? 'wait' : 'release', state);
  }
  assert.equal(satisfied([dep('j1', 'failed', true, 1), dep('j2', 'succeeded')]), true);
  assert.equal(satisfied([dep('j1', 'failed', true, 1), dep('j2', 'queued')]), false);
});

test('the reasons name the job and how it ended', () => {
  assert.equal(dependencyReason({ id: 'j123', state: 'failed', exitCode: 1, cause: 'exit' }), 'j123, which it runs after, failed (exit 1)');
  assert.equal(dependencyReason({ id: 'j1', state: 'killed', exitCode: 143, cause: 'killed' }), 'j1, which it runs after, was killed');
  assert.equal(dependencyReason({ id: 'j1', state: 'lost', exitCode: null, cause: 'lost' }), 'j1, which it runs after, was lost');
  assert.equal(
    dependencyReason({ id: 'j1', state: 'cancelled', exitCode: null, cause: 'dependency' }),
    'j1, which it runs after, was cancelled for its own dependency',
  );
  assert.equal(afterText([dep('j123', 'running')]), 'after j123 (running)');
  assert.equal(afterText([dep('j1', 'running'), dep('j2', 'queued')]), 'after j1 (running), j2 (queued)');
  assert.equal(afterText(['a', 'b', 'c', 'd', 'e'].map((i) => dep(i, 'queued'))), 'after a (queued), b (queued), c (queued) and 2 more');
  assert.equal(retryText(new Date(25_000), new Date(0), 2, 3), 'retry in 25s (attempt 2 of 3)');
  assert.equal(retryNotice(2, 3, 1, 0), 'attempt 2 of 3 after exit 1');
  assert.equal(retryNotice(3, 3, 7, 30), 'attempt 3 of 3 after exit 7, in 30s');
});

test('--retries: a non-zero exit runs again while retries are left; nothing else is retried', () => {
  const job = (retried: number, retries: number, attempt = retried + 1) => ({ attempt, restarts: 0, retryOnPreempt: false, retries, retried });
  assert.equal(runsAgain(job(0, 2), { state: 'failed', cause: 'exit' }), true);
  assert.equal(runsAgain(job(1, 2), { state: 'failed', cause: 'exit' }), true);
  assert.equal(runsAgain(job(2, 2), { state: 'failed', cause: 'exit' }), false);
  assert.equal(runsAgain(job(0, 0), { state: 'failed', cause: 'exit' }), false);
  assert.equal(runsAgain(job(0, 2), { state: 'failed', cause: 'copy_failed' }), false);
  for (const state of ['succeeded', 'killed', 'cancelled'] as const) assert.equal(runsAgain(job(0, 5), { state, cause: 'exit' }), false, state);
  assert.equal(isRetry({ state: 'failed', cause: 'exit' }), true);
  assert.equal(isRetry({ state: 'lost', cause: 'lost' }), false);
});

test('--restarts counts lost attempts only: attempts that --retries used do not use it up', () => {
  // Two retries used (attempts 1 and 2 failed), attempt 3 lost, one restart: it runs again.
  assert.equal(runsAgain({ attempt: 3, restarts: 1, retryOnPreempt: false, retries: 2, retried: 2 }, { state: 'lost' }), true);
  assert.equal(runsAgain({ attempt: 4, restarts: 1, retryOnPreempt: false, retries: 2, retried: 2 }, { state: 'lost' }), false);
});

test('a job cancelled for its dependency: cause dependency, rc exits 218', () => {
  assert.ok(CAUSES_OF.cancelled.includes('dependency'));
  assert.equal(EXIT.dependency, 218);
  assert.equal(exitCodeFor({ state: 'cancelled', cause: 'dependency', exitCode: null }), EXIT.dependency);
  assert.equal(exitCodeFor({ state: 'cancelled', cause: 'dependency', exitCode: null }, true), EXIT.interrupted);
});

// The job state machine (core/job-state.ts): whatever events come, in any
// order, a job moves only along TRANSITIONS, a final state is final, its
// cause fits its state, and a stop asked before the command's end wins.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  CAUSES_OF,
  canMove,
  exitCodeFor,
  FINAL_STATES,
  isFinal,
  type JobLife,
  type LifeEvent,
  outcome,
  STOP_CAUSES,
  type StopRequest,
  step,
  TRANSITIONS,
} from '../../core/job-state';
import { EXIT } from '../../core/exit-codes';

const stop: fc.Arbitrary<StopRequest> = fc.record({ cause: fc.constantFrom(...STOP_CAUSES), reason: fc.string({ maxLength: 20 }) });
const signal = fc.constantFrom(null, 'SIGTERM', 'SIGKILL', 'SIGSEGV', 'SIGINT');
const event: fc.Arbitrary<LifeEvent> = fc.oneof(
  fc.constant({ type: 'claim' as const }),
  fc.constant({ type: 'requeue' as const }),
  stop.map((s) => ({ type: 'stop' as const, stop: s })),
  fc.record({
    type: fc.constant('exit' as const),
    exitCode: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 255 })),
    signal,
    reported: fc.option(stop, { nil: null }),
  }),
  fc.record({
    type: fc.constant('cancel' as const),
    cause: fc.constantFrom('no_wait' as const, 'wait_timeout' as const, 'killed' as const, 'released' as const, 'unattended' as const),
    reason: fc.string({ maxLength: 10 }),
  }),
  fc.record({ type: fc.constant('lose' as const), reason: fc.string({ maxLength: 10 }) }),
  stop.map((s) => ({ type: 'backstop' as const, stop: s })),
);

const fresh: JobLife = { state: 'queued', stop: null, ending: null };

test('property: no sequence of events makes a move TRANSITIONS does not allow, or leaves a final state', () => {
  fc.assert(
    fc.property(fc.array(event, { maxLength: 30 }), (events) => {
      let job = fresh;
      for (const e of events) {
        const next = step(job, e);
        if (next.state !== job.state) assert.ok(canMove(job.state, next.state), `${job.state} → ${next.state} on ${e.type}`);
        if (isFinal(job.state)) assert.deepEqual(next, job, `a ${job.state} job changed on ${e.type}`);
        job = next;
      }
      if (isFinal(job.state)) {
        assert.ok(job.ending, 'a final job has its ending');
        assert.equal(job.ending.state, job.state);
        assert.ok(CAUSES_OF[job.ending.state].includes(job.ending.cause), `${job.ending.state} with cause ${job.ending.cause}`);
      } else {
        assert.equal(job.ending, null);
      }
    }),
    { numRuns: 3000 },
  );
});

test('property: a stop asked while the job runs decides its end over whatever the command and the worker report', () => {
  fc.assert(
    fc.property(stop, fc.option(stop, { nil: null }), fc.option(fc.integer({ min: 0, max: 255 }), { nil: null }), signal, (asked, reported, exitCode, sig) => {
      let job = step(fresh, { type: 'claim' });
      job = step(job, { type: 'stop', stop: asked });
      job = step(job, { type: 'exit', exitCode, signal: sig, reported });
      assert.deepEqual([job.state, job.ending?.cause, job.ending?.reason], [asked.cause === 'preempted' ? 'preempted' : 'killed', asked.cause, asked.reason]);
    }),
  );
});

test("outcome: the command's own end (code or signal) when nothing stopped it", () => {
  assert.deepEqual(outcome(0, null, null), { state: 'succeeded', exitCode: 0, cause: 'exit', reason: null });
  assert.deepEqual(outcome(3, null, null), { state: 'failed', exitCode: 3, cause: 'exit', reason: null });
  assert.deepEqual(outcome(null, 'SIGTERM', null), { state: 'failed', exitCode: 143, cause: 'exit', reason: 'terminated by SIGTERM' });
  assert.deepEqual(outcome(null, 'SIGKILL', { cause: 'max_runtime', reason: 'max_runtime exceeded' }), {
    state: 'killed',
    exitCode: 137,
    cause: 'max_runtime',
    reason: 'max_runtime exceeded',
  });
});

test('TRANSITIONS: final states go nowhere, and every state is listed', () => {
  for (const s of FINAL_STATES) assert.deepEqual(TRANSITIONS[s], []);
  assert.deepEqual(Object.keys(TRANSITIONS).sort(), ['cancelled', 'failed', 'killed', 'lost', 'preempted', 'queued', 'running', 'succeeded']);
});

test("exitCodeFor: rc's exit codes come from the cause, never from the reason", () => {
  const end = (state: string, cause: Parameters<typeof exitCodeFor>[0]['cause'], exitCode: number | null = null) => ({ state, cause, exitCode });
  assert.equal(exitCodeFor(end('succeeded', 'exit', 0)), 0);
  assert.equal(exitCodeFor(end('failed', 'exit', 7)), 7);
  assert.equal(exitCodeFor(end('killed', 'max_runtime', 143)), EXIT.watchdog);
  assert.equal(exitCodeFor(end('killed', 'idle', 143)), EXIT.watchdog);
  assert.equal(exitCodeFor(end('killed', 'killed', 143)), 143);
  assert.equal(exitCodeFor(end('killed', 'killed', 143), true), EXIT.interrupted);
  assert.equal(exitCodeFor(end('lost', 'lost')), EXIT.lost);
  assert.equal(exitCodeFor(end('preempted', 'preempted', 143)), EXIT.preempted);
  assert.equal(exitCodeFor(end('cancelled', 'no_wait')), EXIT.busy);
  assert.equal(exitCodeFor(end('cancelled', 'wait_timeout')), EXIT.wait_timeout);
  assert.equal(exitCodeFor(end('cancelled', 'killed')), EXIT.wait_timeout);
  assert.equal(exitCodeFor(end('cancelled', 'no_wait'), true), EXIT.interrupted);
  // The words do not matter: a reason that reads like a watchdog's is just a reason.
  assert.equal(exitCodeFor({ state: 'killed', cause: 'killed', exitCode: 143, reason: 'max_runtime exceeded' } as never), 143);
});

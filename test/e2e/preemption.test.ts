// Preemptible jobs, with real processes: a --preemptible job holding the only
// device is preempted by a normal job (a short notice, RC_PREEMPT_NOTICE_S=3):
// it sees the notice in $RC_PREEMPT_FILE, gets SIGTERM, ends preempted, and
// with --retry-on-preempt runs again after the normal job; one that ignores
// SIGTERM is SIGKILLed at the deadline and ends preempted (exit 215).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

const NOTICE_S = 3;
let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }], controllerEnv: { RC_PREEMPT_NOTICE_S: String(NOTICE_S) } });
});
after(async () => {
  await stack.stop();
});

const full = async (id: string) =>
  (await stack.api('GET', `/api/jobs/${id}`)).body as {
    job: {
      state: string;
      attempt: number;
      cause: string | null;
      exitCode: number | null;
      attempts?: { state: string; cause: string; reason: string | null }[];
    };
  };

test('a preemptible job is preempted by a normal one: it sees the notice, gets SIGTERM, ends preempted, and runs again with --retry-on-preempt', {
  timeout: 90_000,
}, async () => {
  // Its second attempt finds the mark its first left in the workspace and ends by itself.
  const script = [
    'if [ -e .second-$RC_JOB_ID ]; then echo "second attempt"; exit 0; fi',
    'touch .second-$RC_JOB_ID',
    'trap \'echo "TERM with notice: $(cat "$RC_PREEMPT_FILE" 2>/dev/null || echo none)"; exit 3\' TERM',
    'echo "file $RC_PREEMPT_FILE"',
    'while :; do sleep 0.1; done',
  ].join('\n');
  const batch = stack.runJob(['--preemptible', '--retry-on-preempt'], script, { timeoutMs: 80_000 });
  const id = await batch.id;
  await stack.waitFor(async () => (await stack.job(id)).state === 'running', 'the batch job to run');
  const t0 = Date.now();
  const normal = await stack.cli(['run', '--', 'echo', 'normal job ran'], { timeoutMs: 60_000 });
  assert.equal(normal.code, 0, normal.stderr);
  assert.match(normal.stdout, /normal job ran/);
  assert.ok(Date.now() - t0 < (NOTICE_S + 10) * 1000, 'it did not wait past the notice');
  const done = await batch.done;
  assert.equal(done.code, 0, done.stderr);
  const deadline = /TERM with notice: (\S+)/.exec(done.stdout)?.[1];
  assert.ok(deadline && !Number.isNaN(Date.parse(deadline)), `the notice file held the deadline before the SIGTERM: ${done.stdout}`);
  assert.ok(Math.abs(Date.parse(deadline) - Date.now()) < 60_000);
  assert.match(done.stdout, /file \/\S+\/\.rc-preempt\//);
  assert.match(done.stdout, /second attempt/);
  assert.match(done.stderr, /attempt 1 ended preempted: preempted for job \S+ \(3s of notice\); queued again for attempt 2/);
  const view = (await full(id)).job;
  assert.deepEqual([view.state, view.attempt], ['succeeded', 2]);
  assert.deepEqual(
    view.attempts?.map((a) => [a.state, a.cause]),
    [['preempted', 'preempted']],
  );
});

test('a preemptible job that ignores SIGTERM is SIGKILLed at the deadline and ends preempted, exit 215', { timeout: 90_000 }, async () => {
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'the device to be free');
  const batch = stack.runJob(['--preemptible'], "trap 'echo got TERM' TERM; while :; do sleep 0.1; done", { timeoutMs: 60_000 });
  const id = await batch.id;
  await stack.waitFor(async () => (await stack.job(id)).state === 'running', 'the batch job to run');
  // A second preemptible job does not preempt it: it waits.
  const other = stack.runJob(['--preemptible', '--no-wait'], 'echo never');
  assert.equal((await other.done).code, 202);
  const t0 = Date.now();
  const normal = await stack.cli(['run', '--', 'echo', 'normal'], { timeoutMs: 60_000 });
  assert.equal(normal.code, 0, normal.stderr);
  assert.ok(Date.now() - t0 >= (NOTICE_S - 0.5) * 1000, 'the normal job waited for the notice to run out');
  const done = await batch.done;
  assert.equal(done.code, 215, done.stderr);
  assert.match(done.stdout, /got TERM/);
  assert.match(done.stderr, /rc: preempted: job \S+ was preempted: preempted for job/);
  const view = (await full(id)).job;
  assert.deepEqual([view.state, view.cause, view.exitCode], ['preempted', 'preempted', 137]);
  const listed = await stack.cli(['jobs', '--state', 'preempted']);
  assert.match(listed.stdout, new RegExp(`${id}\\s+preempted`));
});

test('a notice period out of range stops the controller at start-up with a sentence, not a stack', async () => {
  const { loadConfig } = await import('../../server/config');
  for (const bad of ['0', '3601', 'x', '1.5'])
    assert.throws(() => loadConfig({ RC_PREEMPT_NOTICE_S: bad } as unknown as NodeJS.ProcessEnv), /RC_PREEMPT_NOTICE_S/);
  assert.equal(loadConfig({} as unknown as NodeJS.ProcessEnv).RC_PREEMPT_NOTICE_S, 60);
});

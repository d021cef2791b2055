// A device is not leased again while its last job may still be running. When
// the controller ends a job its worker cannot confirm (the worker is stuck:
// a real SIGSTOP; or gone: a real SIGKILL), the job ends but keeps its device
// until the worker says the job's processes are gone.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { processesMatching, Stack } from '../helpers/stack';

let stack: Stack;
const HOST_TIMEOUT_S = 4;
before(async () => {
  stack = await Stack.start({ hostTimeoutS: HOST_TIMEOUT_S, workers: [{ name: 'alpha', devices: 1 }], controllerEnv: { RC_WATCHDOG_GRACE_S: '1' } });
});
after(async () => {
  const w = stack.workers.get('alpha');
  if (w?.pid) {
    try {
      process.kill(w.pid, 'SIGCONT');
    } catch {
      /* gone */
    }
  }
  await stack.stop();
});

const started = (args: string[], script: string) => stack.runJob(['-d', 'alpha:gpu0', ...args], script);

test('a job the controller ends past its limit keeps its device until its stuck worker reports the kill', { timeout: 60_000 }, async () => {
  const first = started(['--max-runtime', '2s'], 'sleep 341');
  const id = await first.id;
  const worker = stack.workers.get('alpha')!;
  // The worker is stuck (not gone: its connection stays up): it cannot kill the job.
  process.kill(worker.pid!, 'SIGSTOP');
  const next = started([], 'echo second');
  const done = await first.done;
  assert.equal(done.code, 204, done.stderr);
  assert.match(done.stderr, /ended by the controller: the worker did not report the kill/);
  assert.equal((await stack.job(id)).state, 'killed');
  // The command may still run: nothing else may be given its device.
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(processesMatching('sleep 341').length, 1, "the first job's command still runs");
  const [device] = await stack.devices();
  assert.equal(device!.holder?.jobId, id, 'the ended job still holds the device');
  const queued = ((await stack.api('GET', '/api/jobs?state=queued')).body as { jobs: { id: string }[] }).jobs;
  assert.equal(queued.length, 1, 'the next job waits');
  // The worker recovers, kills the job (its own watchdog) and reports it: only then is the device handed on.
  process.kill(worker.pid!, 'SIGCONT');
  const second = await next.done;
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, /second/);
  assert.equal(processesMatching('sleep 341').length, 0);
});

test('a host that stops answering: its job ends lost, and its device is not handed on until its worker is back and the job is gone', {
  timeout: 90_000,
}, async () => {
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'the device to be free', 20_000);
  const first = started([], 'sleep 342');
  const id = await first.id;
  await stack.stopWorker('alpha', 'SIGKILL');
  const done = await first.done;
  assert.equal(done.code, 205, done.stderr);
  assert.equal((await stack.job(id)).state, 'lost');
  const [device] = await stack.devices();
  assert.deepEqual([device!.state, device!.holder?.jobId], ['offline', id], 'offline, and still held by the lost job');
  assert.equal(processesMatching('sleep 342').length, 1, "the lost job's command still runs, orphaned");
  // The worker comes back: it kills what its previous run left before it says hello, and its hello
  // (which does not list the job) frees the lease.
  await stack.startWorker('alpha', 1);
  assert.equal(processesMatching('sleep 342').length, 0, 'the orphan was killed before the host came back');
  await stack.waitFor(async () => (await stack.devices())[0]!.state === 'free', 'the device to be free again', 20_000);
  const again = await stack.cli(['run', '-d', 'alpha:gpu0', '--', 'echo', 'ok']);
  assert.equal(again.code, 0, again.stderr);
});

test('a worker stuck past the host timeout comes back over the same connection: its lost job is killed there, and only then is the device free', {
  timeout: 90_000,
}, async () => {
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'the device to be free', 20_000);
  const first = started([], 'sleep 343');
  const id = await first.id;
  const worker = stack.workers.get('alpha')!;
  process.kill(worker.pid!, 'SIGSTOP');
  const done = await first.done;
  assert.equal(done.code, 205, done.stderr);
  assert.equal((await stack.job(id)).state, 'lost');
  assert.equal(processesMatching('sleep 343').length, 1, "the lost job's command still runs on the stuck host");
  process.kill(worker.pid!, 'SIGCONT');
  // Its next heartbeat brings the host back; the controller stops the job it had ended, and its exit frees the device.
  await stack.waitFor(() => processesMatching('sleep 343').length === 0, "the lost job's command to be killed", 20_000);
  await stack.waitFor(async () => (await stack.devices())[0]!.state === 'free', 'the device to be free again', 20_000);
});

// A frozen controller is not a dead host. A controller SIGSTOPped past the
// host timeout, alone, wakes with every host's timestamps stale: it must give
// them a fresh timeout, not lose their jobs. With two controllers, the worker
// of the frozen one notices (its heartbeats go unacknowledged) and moves to
// the other, which does not declare its host dead meanwhile; the job runs on
// and ends with its own exit code. The freezes are the tests' subject: their
// lengths are fixed, everything else is waited for.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Stack } from '../helpers/stack';

/** Short, so the tests are: heartbeats every 2 s, unacknowledged after 3 s. */
const HOST_TIMEOUT_S = 6;

const frozenFor = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The only controller, SIGSTOPped past the host timeout. `withWorker`: its worker too, woken a heartbeat after the
 * controller, so that nothing the worker sent waits to be read when the controller wakes and its timers run (as
 * when the worker's connection broke meanwhile: a worker leaves a controller that stops acknowledging its beats).
 */
async function freezeTheController(withWorker: boolean): Promise<void> {
  const stack = await Stack.start({ workers: [{ name: 'solo', devices: 1 }], hostTimeoutS: HOST_TIMEOUT_S });
  const pids = [stack.controllerPid!, ...(withWorker ? [stack.workers.get('solo')!.pid!] : [])];
  let stopped: number[] = [];
  try {
    const job = stack.runJob(['-d', 'solo:gpu0'], 'echo started; sleep 22; echo finished; exit 7', { timeoutMs: 100_000 });
    const id = await job.id;
    await stack.waitFor(async () => (await stack.job(id)).state === 'running', 'the job to run');
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    stopped = pids;
    await frozenFor(HOST_TIMEOUT_S * 1000 + 5000);
    for (const pid of pids) {
      process.kill(pid, 'SIGCONT');
      stopped = stopped.filter((p) => p !== pid);
      // One heartbeat period: the controller's reaper runs every second.
      if (stopped.length) await frozenFor((HOST_TIMEOUT_S * 1000) / 3);
    }
    const done = await job.done;
    assert.equal(done.code, 7, `${done.stderr}\n--- controller\n${stack.controllerLog}`);
    assert.match(done.stdout, /finished\n$/);
    const row = await stack.job(id);
    assert.equal(row.state, 'failed');
    assert.equal(row.exitCode, 7);
  } finally {
    for (const pid of stopped) process.kill(pid, 'SIGCONT');
    await stack.stop();
  }
}

test(
  'the only controller, SIGSTOPped past the host timeout: on SIGCONT the healthy job runs on and ends with its own exit code',
  {
    timeout: 120_000,
  },
  () => freezeTheController(false),
);

test(
  'the controller and its worker SIGSTOPped past the host timeout, the worker woken a heartbeat later: the job runs on and ends with its own exit code',
  {
    timeout: 120_000,
  },
  () => freezeTheController(true),
);

test('two controllers, one SIGSTOPped: its worker moves to the other, the job is not lost, and is not killed on SIGCONT', { timeout: 150_000 }, async () => {
  const a = await Stack.start({ workers: [], hostTimeoutS: HOST_TIMEOUT_S });
  const b = await Stack.start({ workers: [], hostTimeoutS: HOST_TIMEOUT_S, databaseUrl: a.dbUrl });
  await a.startWorker('ona', 1, { RC_CONTROLLER: `${a.controllerUrl},${b.controllerUrl}` });
  const connectedTo = (url: string) => (a.workerLogs.get('ona') ?? '').includes(`connected to ${url} as ona`);
  assert.ok(connectedTo(a.controllerUrl), a.workerLogs.get('ona'));
  const pid = a.controllerPid!;
  let thawed = true;
  try {
    // Followed through B, which stays awake.
    const job = b.runJob(['-d', 'ona:gpu0'], 'echo started; sleep 30; echo finished; exit 9', { timeoutMs: 100_000 });
    const id = await job.id;
    await b.waitFor(async () => (await b.job(id)).state === 'running', 'the job to run');
    const frozenAt = Date.now();
    process.kill(pid, 'SIGSTOP');
    thawed = false;
    await b.waitFor(() => connectedTo(b.controllerUrl), 'the worker to move to B', 4 * HOST_TIMEOUT_S * 1000);
    const moved = Date.now() - frozenAt;
    console.log(`# a worker left its frozen controller for the other in ${moved} ms (host timeout ${HOST_TIMEOUT_S} s)`);
    // Within the time a worker is given to move (server/reaper.ts: a second host timeout).
    assert.ok(moved < 2 * HOST_TIMEOUT_S * 1000, `the worker took ${moved} ms to move`);
    // A stays frozen well past the host timeout; the host is heard from through B meanwhile.
    await frozenFor(frozenAt + 3 * HOST_TIMEOUT_S * 1000 - Date.now());
    assert.equal((await b.job(id)).state, 'running');
    process.kill(pid, 'SIGCONT');
    thawed = true;
    const done = await job.done;
    assert.equal(done.code, 9, `${done.stderr}\n--- A\n${a.controllerLog}\n--- B\n${b.controllerLog}\n--- ona\n${a.workerLogs.get('ona')}`);
    assert.match(done.stdout, /finished\n$/);
    const row = await b.job(id);
    assert.equal(row.state, 'failed');
    assert.equal(row.exitCode, 9);
  } finally {
    if (!thawed) process.kill(pid, 'SIGCONT');
    await b.stop();
    await a.stop();
  }
});

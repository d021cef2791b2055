// One host credential, one worker. A second worker started with the credential
// of a host whose worker is connected and heartbeating (a cloned machine, a
// worker started by hand beside the service) is refused with host_connected,
// saying from where and since when the host is connected; it tries once more
// after the wait the refusal names, and exits with status 75 (which its
// systemd unit does not restart) when the host is still connected. The first
// worker is never displaced: its job runs on to its end with its output whole.
// A worker replacing one that is gone (stopped, SIGKILLed, or silent past the
// host timeout) is accepted, on the same controller or on another.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { io } from 'socket.io-client';
import { EXIT_HOST_CONNECTED } from '../../protocol/worker';
import { Stack } from '../helpers/stack';

/** Short, so the tests are: heartbeats every 2 s; a silent worker's host may be taken over after 6 s. */
const HOST_TIMEOUT_S = 6;
const ROOT = join(import.meta.dirname, '..', '..');

interface Spawned {
  child: ChildProcess;
  log: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A worker of host `name` with the stack's credential for it, on `controller`, with a state folder and workspace of its own (`tag`). */
function worker(stack: Stack, name: string, tag: string, controller = stack.controllerUrl): Spawned {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'worker.js')], {
    env: {
      ...process.env,
      RC_CONTROLLER: controller,
      RC_HOST_TOKEN: stack.hostCredential(name),
      RC_HOST_NAME: name,
      RC_FAKE_DEVICES: '1',
      RC_WORKSPACE: join(stack.dataDir, `ws-${tag}`),
      RC_STATE_DIR: join(stack.dataDir, `state-${tag}`),
      RC_KILL_GRACE_S: '2',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, log: () => log, exited };
}

/** Resolves with the process's end, or rejects after `ms` with its log. */
async function exitOf(w: Spawned, ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the worker did not exit within ${ms} ms; its log:\n${w.log()}`)), ms);
  });
  try {
    return await Promise.race([w.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

function stop(w: Spawned, signal: NodeJS.Signals = 'SIGTERM'): Promise<unknown> {
  if (w.child.exitCode !== null || w.child.signalCode !== null) return Promise.resolve();
  w.child.kill(signal);
  return w.exited;
}

/** What the controller answers a socket on /worker with `auth`: its refusal (message and data), or 'connected'. */
function handshake(url: string, auth: Record<string, unknown>): Promise<{ message: string; data?: unknown } | 'connected'> {
  const socket = io(`${url}/worker`, { auth, transports: ['websocket'], reconnection: false });
  return new Promise((resolve) => {
    socket.on('connect', () => {
      socket.disconnect();
      resolve('connected');
    });
    socket.on('connect_error', (err: Error & { data?: unknown }) => {
      socket.disconnect();
      resolve({ message: err.message, data: err.data });
    });
  });
}

/** A job on the host's only device that prints 30 numbered lines over about 7 s. */
function countingJob(stack: Stack, host: string) {
  return stack.runJob(['-d', `${host}:gpu0`], 'for i in $(seq 1 30); do echo "line $i"; sleep 0.25; done; echo finished', { timeoutMs: 100_000 });
}

const WHOLE = `${Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n')}\nfinished\n`;

const REFUSAL = new RegExp(
  `host_connected: host alpha is already connected from \\S+ since \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ; stop that worker first, or wait ${HOST_TIMEOUT_S} s after it stops`,
);

const connections = (log: string | undefined) => (log ?? '').match(/connected to \S+ as alpha/g)?.length ?? 0;

test('a second worker with a connected host credential is refused and exits 75; the first keeps its job; a replacement of a stopped or SIGKILLed one is accepted at once', {
  timeout: 120_000,
}, async () => {
  const stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }], hostTimeoutS: HOST_TIMEOUT_S });
  const started: Spawned[] = [];
  try {
    const job = countingJob(stack, 'alpha');
    const id = await job.id;
    await stack.waitFor(async () => (await stack.job(id)).state === 'running', 'the job to run');
    const dup = worker(stack, 'alpha', 'dup');
    started.push(dup);
    const end = await exitOf(dup, 30_000);
    assert.equal(end.code, EXIT_HOST_CONNECTED, dup.log());
    assert.match(dup.log(), REFUSAL);
    assert.match(dup.log(), new RegExp(`trying once more in ${HOST_TIMEOUT_S} s`));
    assert.match(dup.log(), /still connected: stopping/);
    assert.equal(connections(dup.log()), 0, dup.log());
    // The same refusal for a worker that sends no id (an older one), with its code and wait as data; a malformed id is refused.
    const token = stack.hostCredential('alpha');
    const legacy = await handshake(stack.controllerUrl, { token });
    assert.notEqual(legacy, 'connected');
    assert.match((legacy as { message: string }).message, REFUSAL);
    assert.deepEqual((legacy as { data: unknown }).data, { code: 'host_connected', retryAfterS: HOST_TIMEOUT_S });
    const bad = await handshake(stack.controllerUrl, { token, instance: 'x y' });
    assert.notEqual(bad, 'connected');
    assert.match((bad as { message: string }).message, /^bad_request: the worker id \(auth\.instance\) must be 8 to 64 letters, digits or dashes$/);
    assert.match(stack.controllerLog, /refused a second worker for alpha from \S+: host_connected: /);

    const done = await job.done;
    assert.equal(done.code, 0, `${done.stderr}\n--- controller\n${stack.controllerLog}`);
    assert.equal(done.stdout, `${id}\n${WHOLE}`);
    assert.equal(connections(stack.workerLogs.get('alpha')), 1, `the first worker was never displaced:\n${stack.workerLogs.get('alpha')}`);

    // The first stops: the next is accepted at once.
    await stack.stopWorker('alpha');
    const next = worker(stack, 'alpha', 'next');
    started.push(next);
    await stack.waitFor(() => connections(next.log()) === 1, 'the next worker to connect', 20_000);
    assert.doesNotMatch(next.log(), /host_connected/);

    // SIGKILLed (its socket closes with it): a new one on its state folder is accepted at once.
    await stop(next, 'SIGKILL');
    const again = worker(stack, 'alpha', 'next');
    started.push(again);
    await stack.waitFor(() => connections(again.log()) === 1, 'the restarted worker to connect', 20_000);
    assert.doesNotMatch(again.log(), /host_connected/);
    const ran = await stack.cli(['run', '-d', 'alpha:gpu0', '--', 'echo', 'ok']);
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, /^ok$/m);
  } finally {
    for (const w of started) await stop(w, 'SIGKILL');
    await stack.stop();
  }
});

test('with two controllers: a worker on the other one is refused while the host is connected to the first; after it stops, or dies, the next is accepted on either', {
  timeout: 150_000,
}, async () => {
  const a = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }], hostTimeoutS: HOST_TIMEOUT_S });
  const b = await Stack.start({ workers: [], hostTimeoutS: HOST_TIMEOUT_S, databaseUrl: a.dbUrl });
  const started: Spawned[] = [];
  try {
    const job = countingJob(a, 'alpha');
    const id = await job.id;
    await a.waitFor(async () => (await a.job(id)).state === 'running', 'the job to run');
    const dup = worker(a, 'alpha', 'dup', b.controllerUrl);
    started.push(dup);
    const end = await exitOf(dup, 30_000);
    assert.equal(end.code, EXIT_HOST_CONNECTED, dup.log());
    assert.match(dup.log(), REFUSAL);

    const done = await job.done;
    assert.equal(done.code, 0, `${done.stderr}\n--- A\n${a.controllerLog}\n--- B\n${b.controllerLog}`);
    assert.equal(done.stdout, `${id}\n${WHOLE}`);
    assert.equal(connections(a.workerLogs.get('alpha')), 1, a.workerLogs.get('alpha'));

    await a.stopWorker('alpha');
    const onB = worker(a, 'alpha', 'onb', b.controllerUrl);
    started.push(onB);
    await a.waitFor(() => connections(onB.log()) === 1, 'a worker to connect to B', 20_000);
    assert.doesNotMatch(onB.log(), /host_connected/);

    // SIGKILLed on B: a new one on A is accepted at once.
    await stop(onB, 'SIGKILL');
    const onA = worker(a, 'alpha', 'ona');
    started.push(onA);
    await a.waitFor(() => connections(onA.log()) === 1, 'a worker to connect to A', 20_000);
    assert.doesNotMatch(onA.log(), /host_connected/);
    const ran = await b.cli(['run', '-d', 'alpha:gpu0', '--', 'echo', 'ok']);
    assert.equal(ran.code, 0, ran.stderr);
  } finally {
    for (const w of started) await stop(w, 'SIGKILL');
    await b.stop();
    await a.stop();
  }
});

test('a worker whose heartbeats stopped (SIGSTOP) is replaced after the host timeout; woken, it is refused and exits 75', { timeout: 120_000 }, async () => {
  const stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }], hostTimeoutS: HOST_TIMEOUT_S });
  const first = stack.workers.get('alpha')!;
  const started: Spawned[] = [];
  let frozen = false;
  try {
    process.kill(first.pid!, 'SIGSTOP');
    frozen = true;
    const stoppedAt = Date.now();
    const next = worker(stack, 'alpha', 'next');
    started.push(next);
    await stack.waitFor(() => connections(next.log()) === 1, 'the replacement to connect', 4 * HOST_TIMEOUT_S * 1000);
    const took = Date.now() - stoppedAt;
    console.log(`# a worker replaced a silent one ${took} ms after it stopped (host timeout ${HOST_TIMEOUT_S} s)`);
    assert.ok(took < 3 * HOST_TIMEOUT_S * 1000, `the replacement took ${took} ms`);
    assert.doesNotMatch(next.log(), /still connected: stopping/);

    const exited = new Promise<number | null>((resolve) => first.once('exit', (code) => resolve(code)));
    process.kill(first.pid!, 'SIGCONT');
    frozen = false;
    const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still running'), 40_000))]);
    assert.equal(code, EXIT_HOST_CONNECTED, stack.workerLogs.get('alpha'));
    assert.match(stack.workerLogs.get('alpha') ?? '', REFUSAL);
    // The replacement was never displaced, and runs jobs.
    assert.equal(connections(next.log()), 1, next.log());
    const ran = await stack.cli(['run', '-d', 'alpha:gpu0', '--', 'echo', 'ok']);
    assert.equal(ran.code, 0, ran.stderr);
  } finally {
    if (frozen) process.kill(first.pid!, 'SIGCONT');
    for (const w of started) await stop(w, 'SIGKILL');
    await stack.stop();
  }
});

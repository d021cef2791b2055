// Two controller processes on one Postgres, workers spread across them: a
// job submitted through one runs on the other's worker and streams back; a
// kill through one reaches the other's worker; a terminal opened on one drives
// a pty on the other's worker, and a second client of it through the other
// controller attaches beside the first (another token's is refused, through
// either). Then one
// controller is SIGKILLed mid-run: its worker moves to the other (RC_CONTROLLER
// lists both), the running job keeps running, the queued one still runs, and
// the client on the survivor gets every line of output once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { io, type Socket } from 'socket.io-client';
import { Stack } from '../helpers/stack';
import { launchChromium, noChromium, signIn, terminalStarted, typeLine, untilLine } from '../helpers/browser';
import { until } from '../helpers/until';

let a: Stack;
let b: Stack;
before(async () => {
  // A serves the dashboard too, for the browser's terminal (built once per checkout; browser-terminal.test makes it first).
  a = await Stack.start({ workers: [], hostTimeoutS: 6, dashboard: !noChromium });
  b = await Stack.start({ workers: [], hostTimeoutS: 6, databaseUrl: a.dbUrl });
  // Each worker starts on "its" controller and falls back to the other.
  await a.startWorker('ona', 1, { RC_CONTROLLER: `${a.controllerUrl},${b.controllerUrl}` });
  await b.startWorker('onb', 2, { RC_CONTROLLER: `${b.controllerUrl},${a.controllerUrl}` });
});
after(async () => {
  if (process.env.RC_TEST_DEBUG) console.log(`--- A\n${a?.controllerLog}\n--- B\n${b?.controllerLog}\n--- onb\n${b?.workerLogs.get('onb')}`);
  await b?.stop();
  await a?.stop();
});

const connectedTo = (stack: Stack, worker: string, url: string) => (stack.workerLogs.get(worker) ?? '').includes(`connected to ${url} as ${worker}`);

test('each worker is connected to its own controller', () => {
  assert.ok(connectedTo(a, 'ona', a.controllerUrl), a.workerLogs.get('ona'));
  assert.ok(connectedTo(b, 'onb', b.controllerUrl), b.workerLogs.get('onb'));
});

test("a job submitted through A runs on B's worker, and its output streams to the client on A", { timeout: 60_000 }, async () => {
  const t0 = Date.now();
  const r = await a.cli(['run', '-d', 'onb:gpu0', '--', 'sh', '-c', 'i=0; while [ $i -lt 200 ]; do echo "line $i"; i=$((i+1)); done; echo err >&2; exit 3']);
  const took = Date.now() - t0;
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.stdout, Array.from({ length: 200 }, (_, i) => `line ${i}\n`).join(''));
  assert.equal(r.stderr, 'err\n');
  console.log(`# A→B job: rc run took ${took} ms`);
});

test('rc kill through B stops a job whose worker is on A', { timeout: 60_000 }, async () => {
  const job = a.runJob(['-d', 'ona:gpu0'], 'sleep 351');
  const id = await job.id;
  const t0 = Date.now();
  const k = await b.cli(['kill', id]);
  assert.equal(k.code, 0, k.stderr);
  const done = await job.done;
  const took = Date.now() - t0;
  assert.equal(done.code, 143, done.stderr);
  assert.equal((await b.job(id)).state, 'killed');
  // Not at the worker's next hello: through the bus, at once.
  assert.ok(took < 5000, `the kill took ${took} ms`);
  console.log(`# kill through B of a job on A's worker: ${took} ms to the client's exit`);
});

/** A terminal client on `stack`'s controller, signed in with A's client token (the job's owner, whichever controller it reaches). */
function terminal(stack: Stack): Socket {
  return io(`${stack.controllerUrl}/tty`, { auth: { token: a.clientToken }, transports: ['websocket'], reconnection: false });
}

test("a terminal opened on A drives a pty on B's worker; a second client through B gets its screen beside the first; an admin's is refused on either", {
  timeout: 60_000,
}, async (t) => {
  const first = terminal(a);
  let screen = '';
  let jobId = '';
  first.on('output', (d: Uint8Array) => {
    screen += Buffer.from(d).toString();
    first.emit('ack', d.byteLength);
  });
  let started = false;
  first.on('queued', (e: { jobId: string }) => {
    jobId = e.jobId;
  });
  first.on('started', () => {
    started = true;
  });
  t.after(() => first.close());
  first.emit('open', { argv: ['sh'], device: 'onb:gpu0', submitter: 'tester', cols: 100, rows: 30 });
  await until(() => (started ? true : undefined), 'the terminal to start');
  first.emit('input', 'stty size; echo "sum=$((6*7))"\n');
  await until(() => (/sum=42/.test(screen) ? true : undefined), `the answer on the screen (${JSON.stringify(screen)})`);
  assert.match(screen, /30 100/, 'the size set on A reached the pty on B');
  const firstErrors: { code: string }[] = [];
  first.on('error', (e: { code: string }) => firstErrors.push(e));
  let firstExit: { exitCode: number | null } | null = null;
  first.on('exit', (e: { exitCode: number | null }) => {
    firstExit = e;
  });

  // Back through the other controller: the screen so far is replayed, then the terminal goes on.
  const second = terminal(b);
  let replay = '';
  let exit: { exitCode: number | null } | null = null;
  second.on('output', (d: Uint8Array) => {
    replay += Buffer.from(d).toString();
    second.emit('ack', d.byteLength);
  });
  second.on('exit', (e: { exitCode: number | null }) => {
    exit = e;
  });
  t.after(() => {
    second.close();
    // Whatever happened above, the terminal does not keep the device for the tests after it.
    if (!exit) void a.cli(['kill', jobId]);
  });
  second.emit('open', { jobId, cols: 100, rows: 30 });
  await until(() => (/sum=42/.test(replay) ? true : undefined), `the replay on B (${JSON.stringify(replay)})`);
  // Beside the first, still attached through A: what either types, both see.
  second.emit('input', 'echo "b=$((7*6))"\n');
  await until(() => (/b=42/.test(screen) ? true : undefined), `the second's answer on the first's screen (${JSON.stringify(screen)})`);
  first.emit('input', 'echo "a=$((8*8))"\n');
  await until(() => (/a=64/.test(replay) ? true : undefined), `the first's answer on the second's screen (${JSON.stringify(replay)})`);
  // Another token's client is refused, through either controller, naming who holds it.
  for (const [stack, admin] of [
    [b, b.adminToken],
    [a, a.adminToken],
  ] as const) {
    const other = io(`${stack.controllerUrl}/tty`, { auth: { token: admin }, transports: ['websocket'], reconnection: false });
    t.after(() => other.close());
    const refusal = new Promise<{ code: string; message: string }>((resolve) => other.on('error', resolve));
    other.emit('open', { jobId, cols: 80, rows: 24 });
    const r = await refusal;
    other.close();
    assert.equal(r.code, 'terminal_busy');
    assert.match(r.message, new RegExp(`^the terminal ${jobId} is in use by client token "[^"]+" through rc since `));
  }
  second.emit('input', 'exit 5\n');
  const e = await until(() => exit ?? undefined, 'the exit');
  assert.equal(e.exitCode, 5);
  assert.equal((await until(() => firstExit ?? undefined, 'the exit on A')).exitCode, 5);
  assert.deepEqual(firstErrors, [], 'the first client was never detached');
  second.close();
});

test("a browser's terminal on A (Chromium, the dashboard's page) drives a pty on B's worker", { skip: noChromium, timeout: 120_000 }, async (t) => {
  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await browser.context.newPage();
  await signIn(page, a.controllerUrl, a.clientToken);
  await page.goto(`${a.controllerUrl}/devices/onb%3Agpu0`);
  await page.getByRole('button', { name: 'Open a terminal on onb:gpu0' }).click();
  await terminalStarted(page);
  await typeLine(page, 'echo "on-$RC_DEVICES" "$((6*7))"');
  await untilLine(page, (l) => l === 'on-onb:gpu0 42', 'the answer from the pty on B');
  const jobId = /[?&]job=(j[0-9a-v]{10})/.exec(page.url())?.[1];
  assert.ok(jobId, page.url());
  await typeLine(page, 'exit 4');
  await b.waitFor(async () => (await b.job(jobId)).state === 'failed', 'the terminal to end', 20_000);
  assert.equal((await b.job(jobId)).exitCode, 4);
});

test('a job claimed through A for a worker whose controller does not answer goes back in the queue, and runs once when B is back', {
  timeout: 60_000,
}, async () => {
  const bPid = b.controllerPid!;
  // B holds onb's socket but is frozen: it cannot send the start A asks of it.
  process.kill(bPid, 'SIGSTOP');
  let thawed = false;
  try {
    const run = a.cli(['run', '-d', 'onb:gpu0', '--', 'sh', '-c', 'echo "ran once"'], { timeoutMs: 50_000 });
    // Claimed at once (the device is free), then put back when nobody sent it.
    await a.waitFor(
      async () => ((await a.api('GET', '/api/jobs?state=queued')).body as { jobs: unknown[] }).jobs.length === 1,
      'the job to be queued again',
      10_000,
    );
    process.kill(bPid, 'SIGCONT');
    thawed = true;
    // B now reads the start it missed: too late, the job is queued again; its pass starts it instead, once.
    const r = await run;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'ran once\n');
  } finally {
    if (!thawed) process.kill(bPid, 'SIGCONT');
  }
});

test("the live view on A hears what changes through B: a job on B's worker, its devices, a usage sheet", { timeout: 60_000 }, async (t) => {
  const live = io(`${a.controllerUrl}/`, { auth: { token: a.clientToken }, transports: ['websocket'], reconnection: false });
  t.after(() => live.close());
  const heard: { what: string; host?: string; jobId?: string }[] = [];
  live.on('changed', (c: { what: string; host?: string; jobId?: string }) => heard.push(c));
  await until(() => (live.connected ? true : undefined), 'the live view to connect');
  const job = b.runJob(['-d', 'onb:gpu0'], 'true');
  const id = await job.id;
  assert.equal((await job.done).code, 0);
  await until(
    () => (heard.some((c) => c.what === 'jobs' && c.jobId === id) ? true : undefined),
    `A's live view to hear of job ${id} (${JSON.stringify(heard)})`,
  );
  await until(() => (heard.some((c) => c.what === 'devices') ? true : undefined), "A's live view to hear the devices changed");
  const put = await b.api('PUT', '/api/hosts/onb/sheet', { body: '# onb\nbe kind' }, b.adminToken);
  assert.equal(put.status, 200, JSON.stringify(put.body));
  await until(() => (heard.some((c) => c.what === 'sheet' && c.host === 'onb') ? true : undefined), "A's live view to hear of onb's sheet");
});

test('rc cp through A copies to and from a device whose worker is on B, in several pieces', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-cp-two-'));
  try {
    const data = randomBytes(2 * 1024 * 1024 + 12345);
    writeFileSync(join(dir, 'up.bin'), data);
    const up = await a.cli(['cp', join(dir, 'up.bin'), 'onb:gpu0:/workspace/two.bin']);
    assert.equal(up.code, 0, up.stderr);
    const down = await a.cli(['cp', 'onb:gpu0:/workspace/two.bin', join(dir, 'down.bin')]);
    assert.equal(down.code, 0, down.stderr);
    assert.ok(readFileSync(join(dir, 'down.bin')).equals(data), 'the copy back is the same bytes');
    // Nothing is left of the steps in the database.
    const pg = postgres(a.dbUrl, { max: 1, onnotice: () => {} });
    try {
      const [left] = await pg<{ n: number }[]>`select count(*)::int as n from worker_calls`;
      assert.equal(left!.n, 0);
    } finally {
      await pg.end();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a host removed through A stops its worker connected to B: the revocation is told on the bus, not only cut where it was made', {
  timeout: 60_000,
}, async () => {
  await a.startWorker('cutbox', 1, { RC_CONTROLLER: b.controllerUrl });
  assert.ok(connectedTo(a, 'cutbox', b.controllerUrl));
  const worker = a.workers.get('cutbox')!;
  const exited = new Promise<number | null>((r) => worker.once('exit', (code) => r(code)));
  const rm = await a.cli(['admin', 'host', 'rm', 'cutbox'], { env: { RC_TOKEN: a.adminToken } });
  assert.equal(rm.code, 0, rm.stderr);
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 10_000))]);
  assert.equal(code, 78, 'the worker on B was cut off, refused as removed, and stopped for good');
  a.workers.delete('cutbox');
});

test('SIGKILL of a controller mid-run: its worker moves, the running job keeps running, the queued one runs, no chunk lost or repeated', {
  timeout: 120_000,
}, async () => {
  const lines = 300;
  // On B's worker, followed by a client on A: a line every 20 ms, about 6 s in all.
  const running = a.runJob(['-d', 'onb:gpu0'], `i=0; while [ $i -lt ${lines} ]; do echo "n $i"; i=$((i+1)); sleep 0.02; done`, { timeoutMs: 100_000 });
  const id = await running.id;
  // Also followed through B, by a CLI that lists both controllers: it must carry on through A.
  const both = `${b.controllerUrl},${a.controllerUrl}`;
  const attached = b.cli(['attach', id], { env: { RC_CONTROLLER: both, RC_TOKEN: a.clientToken }, timeoutMs: 100_000 });
  // And a terminal through B on B's worker's other device: it re-attaches through A.
  const terminalRun = b.cli(
    ['run', '--tty', '-d', 'onb:gpu1', '--', 'sh', '-c', 'i=0; while [ $i -lt 80 ]; do echo "t$i"; i=$((i+1)); sleep 0.1; done; exit 7'],
    {
      env: { RC_CONTROLLER: both, RC_TOKEN: a.clientToken },
      timeoutMs: 100_000,
    },
  );
  // Queued behind it, through A too.
  const queued = a.cli(['run', '-d', 'onb:gpu0', '--', 'echo', 'queued ran'], { timeoutMs: 100_000 });
  await a.waitFor(async () => ((await a.api('GET', '/api/jobs?state=queued')).body as { jobs: unknown[] }).jobs.length === 1, 'the second job to queue');
  await new Promise((r) => setTimeout(r, 1500));
  const killedAt = Date.now();
  await b.stopController('SIGKILL');
  await a.waitFor(() => connectedTo(b, 'onb', a.controllerUrl), "B's worker to connect to A", 30_000);
  const moved = Date.now() - killedAt;
  const done = await running.done;
  const ranFor = Date.now() - killedAt;
  assert.equal(done.code, 0, done.stderr);
  const got = done.stdout.split('\n').slice(1, -1);
  const want = Array.from({ length: lines }, (_, i) => `n ${i}`);
  const lost = want.filter((l) => !got.includes(l)).length;
  const repeated = got.length - new Set(got).size;
  assert.deepEqual(got, want, `lost ${lost}, repeated ${repeated}`);
  assert.equal((await a.job(id)).state, 'succeeded');
  const q = await queued;
  const queuedFor = Date.now() - killedAt;
  assert.equal(q.code, 0, q.stderr);
  assert.equal(q.stdout, 'queued ran\n');
  // The follower on B reconnected to A (B refuses connections now) and printed every line once.
  const f = await attached;
  assert.equal(f.code, 0, f.stderr);
  assert.deepEqual(f.stdout.split('\n').slice(1, -1), want, 'the follower that was on B');
  assert.match(f.stderr, /reconnecting/);
  // The terminal carried on through A to its end (what B had taken and not stored may be missing: a terminal is live).
  const term = await terminalRun;
  assert.equal(term.code, 7, term.stderr);
  assert.match(term.stdout, /t79/);
  // And any command of that CLI passes over the dead controller.
  const ps = await b.cli(['ps'], { env: { RC_CONTROLLER: both, RC_TOKEN: a.clientToken } });
  assert.equal(ps.code, 0, ps.stderr);
  console.log(
    `# SIGKILL of B: its worker connected to A after ${moved} ms; the running job ended ${ranFor} ms and the queued one ${queuedFor} ms after it; chunks lost ${lost}, repeated ${repeated}`,
  );
});

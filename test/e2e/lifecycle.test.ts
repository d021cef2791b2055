// A job's whole life: watchdogs, wait timeouts, logs, attach, jobs, ps, the
// output bound, and what happens when a worker or the controller goes away.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { processesMatching, Stack } from '../helpers/stack';

let stack: Stack;
const HOST_TIMEOUT_S = 5;
before(async () => {
  stack = await Stack.start({
    hostTimeoutS: HOST_TIMEOUT_S,
    workers: [{ name: 'alpha', devices: 2 }],
    controllerEnv: { RC_OUTPUT_LIMIT_BYTES: '4096', RC_WATCHDOG_GRACE_S: '1' },
  });
});
after(async () => stack.stop());

const allFree = () => stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'every device to be free', 20_000);
const started = (args: string[], script: string) => stack.runJob(args, script);

test('--max-runtime kills the whole group with reason max_runtime exceeded, and rc exits 204', async () => {
  await allFree();
  const r = await stack.cli(['run', '--max-runtime', '1s', '--', 'sh', '-c', 'echo hi; sleep 321 & sleep 322; wait']);
  assert.equal(r.code, 204, r.stderr);
  assert.equal(r.stdout, 'hi\n');
  assert.match(r.stderr, /was killed: max_runtime exceeded/);
  await stack.waitFor(() => processesMatching('sleep 321').length + processesMatching('sleep 322').length === 0, 'no process left');
  const [job] = ((await stack.api('GET', '/api/jobs?state=killed&limit=1')).body as { jobs: { reason: string; state: string }[] }).jobs;
  assert.deepEqual([job!.state, job!.reason], ['killed', 'max_runtime exceeded']);
});

test('--idle-timeout kills a silent job; a chatty one lives; 0 disables it', async () => {
  const quiet = await stack.cli(['run', '--idle-timeout', '1s', '--', 'sh', '-c', 'echo start; sleep 30']);
  assert.equal(quiet.code, 204);
  assert.match(quiet.stderr, /idle: no output for 1s/);
  const chatty = await stack.cli(['run', '--idle-timeout', '1s', '--', 'sh', '-c', 'for i in 1 2 3 4 5; do echo $i; sleep 0.4; done']);
  assert.equal(chatty.code, 0, chatty.stderr);
  const off = await stack.cli(['run', '--idle-timeout', '0', '--', 'sh', '-c', 'sleep 1.2']);
  assert.equal(off.code, 0);
  const bad = await stack.cli(['run', '--max-runtime', 'soon', '--', 'true']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^rc: usage: --max-runtime takes a duration such as 90s/);
});

test('--timeout gives up waiting: the job ends cancelled and rc exits 203', async () => {
  await allFree();
  const hogs = [stack.cli(['run', '--', 'sleep', '2.5']), stack.cli(['run', '--', 'sleep', '2.5'])];
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'busy'), 'both devices busy');
  const r = await stack.cli(['run', '--timeout', '1s', '--', 'true']);
  assert.equal(r.code, 203, r.stderr);
  assert.match(r.stderr, /cancelled: wait timeout: no device within 1s/);
  await Promise.all(hogs);
});

test('rc ps shows running and queued jobs with positions; rc jobs filters; rc logs and rc attach replay output', async () => {
  await allFree();
  const a = started([], 'echo out1; echo err1 >&2; sleep 2; echo out2');
  const b = started([], 'sleep 2');
  const aId = await a.id;
  await b.id;
  const queued = stack.cli(['run', '--priority', '3', '--', 'true']);
  await stack.waitFor(async () => /queued #1/.test((await stack.cli(['ps'])).stdout), 'the queued job in rc ps');
  const ps = (await stack.cli(['ps'])).stdout;
  assert.match(ps, new RegExp(`${aId} +running +alpha:gpu\\d +tester`));
  assert.match(ps, /queued #1 +any device +tester/);

  const snap = await stack.cli(['logs', aId]);
  assert.equal(snap.code, 0);
  assert.equal(snap.stdout, `${aId}\nout1\n`);
  assert.equal(snap.stderr, 'err1\n');
  const attached = await stack.cli(['attach', aId]);
  assert.equal(attached.code, 0);
  assert.equal(attached.stdout, `${aId}\nout1\nout2\n`, 'attach re-streams from the beginning and follows to the end');
  const followed = await stack.cli(['logs', '-f', aId]);
  assert.equal(followed.stdout, `${aId}\nout1\nout2\n`);
  await Promise.all([a.done, b.done, queued]);

  await stack.cli(['run', '--', 'sh', '-c', 'exit 4'], { env: { RC_SUBMITTER: 'filter-me' } });
  const failed = JSON.parse((await stack.cli(['jobs', '--state', 'failed', '--submitter', 'filter-me', '--json'])).stdout) as {
    jobs: { state: string; exitCode: number; submitter: string }[];
  };
  assert.equal(failed.jobs.length, 1);
  assert.deepEqual([failed.jobs[0]!.state, failed.jobs[0]!.exitCode], ['failed', 4]);
  const onDevice = JSON.parse((await stack.cli(['jobs', '--device', 'alpha:gpu0', '--json', '--limit', '500'])).stdout) as { jobs: { devices: string[] }[] };
  assert.ok(onDevice.jobs.length > 0 && onDevice.jobs.every((j) => j.devices.includes('alpha:gpu0')));
  const table = (await stack.cli(['jobs', '--limit', '3'])).stdout;
  assert.match(table, /^JOB +STATE +EXIT +DEVICE +SUBMITTER +CREATED +NAME +COMMAND\n/);
  const bad = await stack.cli(['jobs', '--state', 'sleeping']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown state sleeping/);
  const missing = await stack.cli(['logs', 'jzzzzzzzzzz']);
  assert.equal(missing.code, 208);
});

test('stored output is bounded with a visible marker; the live stream still gets everything', async () => {
  const r = await stack.cli(['run', '--', 'sh', '-c', 'echo "$RC_JOB_ID"; i=0; while [ $i -lt 300 ]; do printf "%063d\\n" $i; i=$((i+1)); done']);
  assert.equal(r.code, 0);
  const id = r.stdout.split('\n')[0]!;
  assert.equal(r.stdout.length, id.length + 1 + 300 * 64, 'rc run printed all of it');
  const logs = await stack.cli(['logs', id]);
  assert.equal(logs.stdout, r.stdout.slice(0, 4096), 'the first 4 KiB are kept, byte for byte');
  assert.match(logs.stderr, /^rc: output truncated: only the first 4K of job j\w+'s output was kept; the rest was streamed live but not stored\n$/);
  assert.equal(((await stack.job(id)) as unknown as { outputTruncated: boolean }).outputTruncated, true);
});

test('a worker killed with SIGKILL mid-job, right after a heartbeat: the job ends lost at the host timeout, not later; rc exits 205, the device frees', async () => {
  await allFree();
  const job = started([], 'sleep 617');
  const id = await job.id;
  // The kill falls just after a heartbeat lands, the worst case: silence counts from that beat.
  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  try {
    const lastSeen = async () => (await sql<{ at: Date }[]>`select last_seen_at as at from hosts where name = 'alpha'`)[0]!.at.getTime();
    const before = await lastSeen();
    await stack.waitFor(async () => (await lastSeen()) !== before, 'a heartbeat', HOST_TIMEOUT_S * 1000);
    const killedAt = Date.now();
    await stack.stopWorker('alpha', 'SIGKILL');
    const r = await job.done;
    const lostAfter = Date.now() - killedAt;
    assert.equal(r.code, 205, r.stderr);
    assert.match(r.stderr, /rc: lost: job .* was lost: host alpha stopped answering/);
    // By the database's clock: lost at the timeout after the last beat, within a statement's time (a reaper's tick is 1 s).
    const [t] = await sql<{ s: number }[]>`
      select extract(epoch from j.ended_at - h.last_seen_at)::float8 as s from jobs j, hosts h where j.id = ${id} and h.name = 'alpha'`;
    assert.ok(t!.s >= HOST_TIMEOUT_S && t!.s < HOST_TIMEOUT_S + 0.2, `lost ${t!.s.toFixed(3)} s after the last heartbeat`);
    assert.ok(lostAfter < HOST_TIMEOUT_S * 1000 + 1500, `rc exited ${lostAfter} ms after the kill`);
  } finally {
    await sql.end();
  }
  assert.equal((await stack.job(id)).state, 'lost');
  assert.ok(
    (await stack.devices()).every((d) => d.state === 'offline'),
    'an offline host is not scheduled',
  );
  // Its orphaned process is no longer rc's business, but leave nothing behind in the test.
  for (const pid of processesMatching('sleep 617'))
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  await stack.startWorker('alpha', 2);
  await allFree();
});

test('the controller restarted mid-job: the job keeps running, rc run reconnects, no output is lost or repeated', async () => {
  await allFree();
  const job = started([], 'for i in 1 2 3 4 5 6 7 8; do echo line$i; sleep 0.4; done; exit 3');
  const id = await job.id;
  await new Promise((r) => setTimeout(r, 700));
  await stack.stopController('SIGTERM');
  await new Promise((r) => setTimeout(r, 800));
  await stack.startController(HOST_TIMEOUT_S);
  const r = await job.done;
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.stdout, `${id}\n${[1, 2, 3, 4, 5, 6, 7, 8].map((i) => `line${i}\n`).join('')}`);
  const logs = await stack.cli(['logs', id]);
  assert.equal(logs.stdout, r.stdout, 'the stored output is whole, each chunk once');
  assert.equal((await stack.job(id)).state, 'failed');
});

test('the bound on stored output holds across a controller restart', async () => {
  await allFree();
  // 2.5 KiB before the restart and 2.5 KiB after: each half fits in the 4 KiB bound, both do not.
  const half = (from: number) => `i=${from}; while [ $i -lt ${from + 40} ]; do printf "%063d\\n" $i; i=$((i+1)); done`;
  // The second half waits for the test's word: output past the bound is live only, so it must come once rc run is back.
  const go = join(stack.dataDir, `go-${Date.now()}`);
  const job = started([], `${half(0)}; n=0; while [ ! -e ${go} ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done; ${half(40)}`);
  const id = await job.id;
  await stack.waitFor(async () => (await stack.cli(['logs', id])).stdout.length === id.length + 1 + 40 * 64, 'the first half to be stored');
  await stack.stopController('SIGTERM');
  await stack.startController(HOST_TIMEOUT_S);
  // rc run polls every 500 ms to reconnect: well past that, the job goes on.
  await new Promise((r) => setTimeout(r, 2000));
  writeFileSync(go, '');
  const r = await job.done;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.length, id.length + 1 + 80 * 64, 'rc run printed all of it');
  const logs = await stack.cli(['logs', id]);
  assert.equal(logs.stdout, r.stdout.slice(0, 4096), 'the first 4 KiB are kept, and no more');
  assert.match(logs.stderr, /output truncated: only the first 4K/);
});

test('a queued job survives a controller restart and runs afterwards', async () => {
  await allFree();
  const hogs = [started([], 'sleep 2'), started([], 'sleep 2')];
  await Promise.all(hogs.map((h) => h.id));
  const waiting = started([], 'echo ran');
  await stack.waitFor(async () => /queued #1/.test((await stack.cli(['ps'])).stdout), 'the job to queue');
  await stack.stopController('SIGTERM');
  await stack.startController(HOST_TIMEOUT_S);
  const r = await waiting.done;
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /\nran\n$/);
  await Promise.all(hogs.map((h) => h.done));
});

test('a worker that stops answering cannot leave a runaway job counted as running (controller-side watchdog)', async () => {
  await allFree();
  const job = started(['--max-runtime', '1s'], 'sleep 629');
  const id = await job.id;
  const worker = stack.workers.get('alpha')!;
  worker.kill('SIGSTOP');
  try {
    await stack.waitFor(async () => (await stack.job(id)).state !== 'running', 'the controller to end the job');
    assert.equal((await stack.job(id)).state, 'killed', JSON.stringify(await stack.job(id)) + stack.controllerLog.slice(-1500));
    const j = await stack.job(id);
    assert.match(j.reason ?? '', /^max_runtime exceeded \(ended by the controller/);
  } finally {
    worker.kill('SIGCONT');
  }
  const r = await job.done;
  assert.equal(r.code, 204);
  await stack.waitFor(() => processesMatching('sleep 629').length === 0, 'the worker to kill the process once it runs again', 10_000);
});

test('a kill asked for while the worker is away reaches it when it comes back', async () => {
  await allFree();
  const job = started([], 'sleep 641');
  const id = await job.id;
  const worker = stack.workers.get('alpha')!;
  worker.kill('SIGSTOP');
  try {
    await stack.stopController('SIGTERM');
    await stack.startController(HOST_TIMEOUT_S);
    const k = await stack.cli(['kill', id]);
    assert.equal(k.code, 0, k.stderr);
    assert.equal((await stack.job(id)).state, 'running', 'the worker is away: nobody has killed it yet');
  } finally {
    worker.kill('SIGCONT');
  }
  await stack.waitFor(async () => (await stack.job(id)).state === 'killed', 'the worker to get the kill after its hello', 10_000);
  await stack.waitFor(() => processesMatching('sleep 641').length === 0, 'the process to be gone');
  const r = await job.done;
  assert.match(r.stderr, /was killed: killed by tester \(token \d+ local client \(npm start\)\)/);
});

test('bad input to the job commands and routes: clear errors, nothing submitted', async () => {
  const before = ((await stack.api('GET', '/api/jobs?limit=1000')).body as { jobs: unknown[] }).jobs.length;
  for (const args of [
    ['--timeout', '0'],
    ['--timeout', '31d'],
    ['--idle-timeout', '-1'],
    ['--idle-timeout', '5x'],
    ['--max-runtime', ''],
  ]) {
    const r = await stack.cli(['run', ...args, '--', 'true']);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, /^rc: usage: --(timeout|idle-timeout|max-runtime) takes a duration/, args.join(' '));
  }
  for (const body of [
    { argv: ['true'], submitter: 's', maxRuntimeS: 0 },
    { argv: ['true'], submitter: 's', waitTimeoutS: 1.5 },
    { argv: ['true'], submitter: 's', idleTimeoutS: -1 },
  ]) {
    const r = await stack.api('POST', '/api/jobs', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal((r.body as { error: { code: string } }).error.code, 'bad_request');
  }
  for (const q of ['limit=0', 'limit=abc', 'limit=1001', 'state=running,nope']) {
    const r = await stack.api('GET', `/api/jobs?${q}`);
    assert.equal(r.status, 400, q);
  }
  const limit = await stack.cli(['jobs', '--limit', '0']);
  assert.equal(limit.code, 2);
  assert.match(limit.stderr, /limit must be a whole number from 1 to 1000/);
  const anyJob = ((await stack.api('GET', '/api/jobs?limit=1')).body as { jobs: { id: string }[] }).jobs[0]!.id;
  const after = await stack.api('GET', `/api/jobs/${anyJob}/stream?after=-1`);
  assert.equal(after.status, 400);
  assert.match((after.body as { error: { message: string } }).error.message, /after must be a sequence number/);
  assert.equal((await stack.api('GET', '/api/jobs/not-a-job/stream')).status, 404);
  for (const args of [['logs'], ['logs', 'a', 'b'], ['attach'], ['ps', 'extra'], ['jobs', 'extra'], ['kill']]) {
    const r = await stack.cli(args);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, /^rc: usage: /, args.join(' '));
  }
  const afterCount = ((await stack.api('GET', '/api/jobs?limit=1000')).body as { jobs: unknown[] }).jobs.length;
  assert.equal(afterCount, before, 'no bad request created a job');
});

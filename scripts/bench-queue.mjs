// Measures the figures issue 4 names, on a throw-away fleet (embedded Postgres,
// controller, one worker with two CPU slots), driving the REST API directly:
//   - submit→start latency on an idle device, as the client sees it (request
//     sent → its `started` frame), 200 jobs. (The database's created_at and
//     started_at are equal there: an idle fleet's submit claims in the same statement.)
//   - throughput of 300 trivial jobs (`true`) through the two devices;
//   - how long after its worker is SIGKILLed a job is marked lost (median of 5),
//     at the default host timeout, with no worker restart.
//   With --two: two controllers on the database; the worker is connected to
//   the second, the jobs are submitted through the first (every start goes
//   through the bus), and instead of the lost-job figure, how long after a
//   device frees a job queued behind it starts (the database's timestamps).
// Usage: npm run bench:queue [-- --two]
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { api as callApi, report, root, startFleet, streamedJob, until } from './bench-fleet.mjs';
import { descendants } from './proc-tree.mjs';

const two = process.argv.includes('--two');
const fleet = await startFleet({ localWorker: false, second: two });
const { dir, controller, clientToken, adminToken } = fleet;
/** Where the worker connects: the second controller with --two. */
const workerController = two ? fleet.controller2 : controller;
if (two) console.log(`two controllers: jobs submitted through ${controller}, the worker connected to ${workerController}`);
const { credential } = await api('POST', '/api/admin/hosts', { name: 'bench' }, adminToken);
let worker = startWorker();
await until(async () => (await api('GET', '/api/devices')).devices.filter((d) => d.state === 'free').length === 2, 'the worker');

try {
  // 1. Submit→start on an idle device.
  const lat = [];
  for (let i = 0; i < 200; i++) {
    const sent = performance.now();
    let started = 0;
    await runJob(
      ['true'],
      () => {},
      () => {
        started = performance.now();
      },
    );
    lat.push(started - sent);
  }
  report('submit→start, idle device (200 jobs)', lat);

  // 2. Throughput: 300 jobs, 24 submitters at a time, two devices.
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 24 }, async () => {
      while (next < 300) {
        next++;
        await runJob(['true']);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  console.log(`${'throughput, 300 x true through 2 devices'.padEnd(44)} ${(300 / secs).toFixed(1)} jobs/s (${secs.toFixed(2)} s)`);

  if (two) {
    // 3. A queued job's start after its device frees, both on the second controller's worker, through the first.
    const gaps = [];
    for (let i = 0; i < 20; i++) {
      let holderId = null;
      const holder = runJob(['sh', '-c', 'sleep 0.3'], (id) => {
        holderId = id;
      });
      await until(async () => holderId && (await api('GET', `/api/jobs/${holderId}`)).job.state === 'running', 'the holder to run');
      // Both devices busy: the next one queues.
      let otherId = null;
      const other = runJob(['sh', '-c', 'sleep 0.3'], (id) => {
        otherId = id;
      });
      await new Promise((r) => setTimeout(r, 50));
      let waiterId = null;
      const waiter = runJob(['true'], (id) => {
        waiterId = id;
      });
      await Promise.all([holder, other, waiter]);
      const jobs = [holderId, waiterId].map(async (id) => (await api('GET', `/api/jobs/${id}`)).job);
      const [h, w] = await Promise.all(jobs);
      const { job: o } = await api('GET', `/api/jobs/${otherId}`);
      // The waiter took whichever device freed first.
      const freed = Math.min(Date.parse(h.endedAt), Date.parse(o.endedAt));
      gaps.push(Date.parse(w.startedAt) - freed);
    }
    report('queued job starts after a device frees', gaps);
  } else {
    // 3. A worker SIGKILLed mid-job: time until its job is lost.
    const lost = [];
    for (let i = 0; i < 5; i++) {
      const id = await new Promise((resolve) => {
        void runJob(['sleep', '613.5'], resolve);
      });
      await until(async () => (await api('GET', `/api/jobs/${id}`)).job.state === 'running', 'the job to run');
      // Its job's processes, found before the worker dies (they are left behind, orphaned, when it does).
      const orphans = descendants(worker.pid).map((d) => d.pid);
      const t = Date.now();
      worker.kill('SIGKILL');
      await until(async () => (await api('GET', `/api/jobs/${id}`)).job.state === 'lost', 'the job to be lost', 60_000);
      lost.push(Date.now() - t);
      // The orphans of the killed worker, by pid: nothing else.
      for (const pid of orphans) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
      worker = startWorker();
      await until(async () => (await api('GET', '/api/devices')).devices.filter((d) => d.state === 'free').length === 2, 'the worker back');
    }
    report('SIGKILLed worker → job lost (host timeout 15 s)', lost);
  }
} finally {
  worker.kill('SIGTERM');
  await fleet.stop();
}

function startWorker() {
  const w = spawn(process.execPath, [join(root, 'dist/worker.js')], {
    env: { ...process.env, RC_CONTROLLER: workerController, RC_HOST_TOKEN: credential, RC_HOST_NAME: 'bench', RC_WORKSPACE: join(dir, 'ws') },
    stdio: 'ignore',
  });
  return w;
}

/** Submits a job as rc run does (one streamed request) and resolves its id when it ends. */
async function runJob(argv, onId = () => {}, onStarted = () => {}) {
  let id = null;
  await streamedJob(controller, clientToken, { argv, submitter: 'bench' }, (e) => {
    if (e.type === 'queued') {
      id = e.jobId;
      onId(id);
    }
    if (e.type === 'started') onStarted();
  });
  return id;
}

function api(method, path, body, token = clientToken) {
  return callApi(controller, method, path, body, token);
}

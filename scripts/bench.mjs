// Measures the figures issue 2 names, on a throw-away local fleet:
//   - `rc run -- true` through node_modules/.bin/rc, CLI start-up included
//     (beside `node -e 0` and `rc --version` for scale);
//   - how long after a device frees a job queued behind it starts
//     (from the database's own timestamps: the holder's ended_at to the next job's started_at).
// Usage: npm run bench [-- runs]   (default 30 runs each)
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { report, root, startFleet } from './bench-fleet.mjs';

const runs = Number(process.argv[2] ?? 30);
const fleet = await startFleet({ localWorker: true });
const { controller, clientToken } = fleet;
const env = { ...process.env, RC_CONTROLLER: controller, RC_TOKEN: clientToken, RC_SUBMITTER: 'bench' };
const rc = join(root, 'node_modules/.bin/rc');

try {
  console.log(`machine: ${process.env.NODE_EXTRA_CA_CERTS ? 'NODE_EXTRA_CA_CERTS is set (node loads extra CA certificates at every start)' : 'no NODE_EXTRA_CA_CERTS'}`);
  report('node -e 0', timeRuns(() => spawnSync(process.execPath, ['-e', '0'], { env })));
  report('rc --version', timeRuns(() => spawnSync(rc, ['--version'], { env })));
  report('rc run -- true', timeRuns(() => {
    const r = spawnSync(rc, ['run', '--', 'true'], { env });
    if (r.status !== 0) throw new Error(`rc run failed: ${r.stderr}`);
  }));
  const gaps = [];
  for (let i = 0; i < Math.min(runs, 20); i++) {
    const holder = spawnRc(['run', '-d', 'bench:gpu0', '--', 'sh', '-c', 'echo $RC_JOB_ID; sleep 0.3']);
    const holderDone = exited(holder);
    const holderId = await firstLine(holder);
    const waiter = spawnRc(['run', '-d', 'bench:gpu0', '--', 'sh', '-c', 'echo $RC_JOB_ID']);
    const waiterDone = exited(waiter);
    const waiterId = await firstLine(waiter);
    await Promise.all([holderDone, waiterDone]);
    const a = await job(holderId);
    const b = await job(waiterId);
    gaps.push(Date.parse(b.startedAt) - Date.parse(a.endedAt));
  }
  report('queued job starts after the device frees', gaps);
} finally {
  await fleet.stop();
}

function timeRuns(fn) {
  fn();
  const out = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    out.push(performance.now() - t);
  }
  return out;
}

function spawnRc(args) {
  return spawn(rc, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
}
function firstLine(child) {
  return new Promise((resolve) => { let b = ''; child.stdout.on('data', (c) => { b += c; const i = b.indexOf('\n'); if (i >= 0) resolve(b.slice(0, i)); }); });
}
function exited(child) {
  return new Promise((resolve) => child.on('close', resolve));
}
async function job(id) {
  const r = await fetch(`${controller}/api/jobs/${id}`, { headers: { authorization: `Bearer ${clientToken}` } });
  return (await r.json()).job;
}

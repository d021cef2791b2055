// Measures the figures issue 2 names, on a throw-away local fleet:
//   - `rc run -- true` through node_modules/.bin/rc, CLI start-up included
//     (beside `node -e 0` and `rc --version` for scale);
//   - the same job's round trip as the controller and worker see it: from the
//     request's first byte to the exit frame, from a client already running
//     (what the server side costs, without Node's start-up);
//   - how long after a device frees a job queued behind it starts
//     (from the database's own timestamps: the holder's ended_at to the next job's started_at).
// Usage: npm run bench [-- runs [other.cjs]]   (default 30 runs each)
//   other.cjs: a copy of another build's dist/rc.cjs (say, from before a change);
//   its --version and run -- true are timed in turns with this build's, both as
//   `node <file>`, so a noisy moment on the machine weighs on both alike.
import { spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { report, root, startFleet } from './bench-fleet.mjs';

const runs = Number(process.argv[2] ?? 30);
const other = process.argv[3];
const fleet = await startFleet({ localWorker: true });
const { controller, clientToken } = fleet;
const env = { ...process.env, RC_CONTROLLER: controller, RC_TOKEN: clientToken, RC_SUBMITTER: 'bench' };
const rc = join(root, 'node_modules/.bin/rc');

try {
  console.log(
    `machine: ${process.env.NODE_EXTRA_CA_CERTS ? 'NODE_EXTRA_CA_CERTS is set (node loads extra CA certificates at every start)' : 'no NODE_EXTRA_CA_CERTS'}`,
  );
  const rcRun = (cmd, args) => () => {
    const r = spawnSync(cmd, [...args, 'run', '--', 'true'], { env });
    if (r.status !== 0) throw new Error(`rc run failed: ${r.stderr}`);
  };
  const builds = other ? { 'this build': join(root, 'dist/rc.cjs'), [other]: other } : {};
  // Interleaved, so a noisy moment on the machine weighs on all alike.
  const [node, version, run, ...compared] = timeRuns([
    () => spawnSync(process.execPath, ['-e', '0'], { env }),
    () => spawnSync(rc, ['--version'], { env }),
    rcRun(rc, []),
    ...Object.values(builds).flatMap((file) => [() => spawnSync(process.execPath, [file, '--version'], { env }), rcRun(process.execPath, [file])]),
  ]);
  report('node -e 0', node);
  report('rc --version', version);
  report('rc run -- true', run);
  Object.keys(builds).forEach((name, i) => {
    report(`node ${name} --version`, compared[2 * i]);
    report(`node ${name} run -- true`, compared[2 * i + 1]);
  });
  const trips = [];
  for (let i = 0; i <= runs; i++) {
    const t = await serverRoundTrip();
    if (i > 0) trips.push(t);
  }
  report('  of which controller + worker (no CLI start)', trips);
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

/** Times each of `fns` `runs` times, in turns, after one warm-up round. */
function timeRuns(fns) {
  const out = fns.map(() => []);
  for (let i = 0; i <= runs; i++) {
    fns.forEach((fn, j) => {
      const t = performance.now();
      fn();
      if (i > 0) out[j].push(performance.now() - t);
    });
  }
  return out;
}

function spawnRc(args) {
  return spawn(rc, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
}
function firstLine(child) {
  return new Promise((resolve) => {
    let b = '';
    child.stdout.on('data', (c) => {
      b += c;
      const i = b.indexOf('\n');
      if (i >= 0) resolve(b.slice(0, i));
    });
  });
}
function exited(child) {
  return new Promise((resolve) => child.on('close', resolve));
}
/** POST /api/jobs for `true` as rc run sends it, timed to the exit frame. */
function serverRoundTrip() {
  const url = new URL(controller);
  const body = JSON.stringify({ argv: ['true'], selector: '', device: null, cwd: null, gpus: 1, priority: 0, wait: true, submitter: 'bench' });
  const request = `POST /api/jobs HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\nauthorization: Bearer ${clientToken}\r\naccept: application/x-rc-stream\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const socket = connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    let got = '';
    socket.on('data', (d) => {
      got += d.toString('latin1');
      if (got.includes('"type":"exit"')) {
        resolve(performance.now() - t);
        socket.destroy();
      }
    });
    socket.on('error', reject);
    socket.write(request);
  });
}

async function job(id) {
  const r = await fetch(`${controller}/api/jobs/${id}`, { headers: { authorization: `Bearer ${clientToken}` } });
  return (await r.json()).job;
}

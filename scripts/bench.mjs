// Measures the figures issues 2 and 16 name, on a throw-away local fleet:
//   - CLI start-up and `rc run -- true`, interleaved: `node -e 0`, the Node CLI
//     (node_modules/.bin/rc) with and without NODE_EXTRA_CA_CERTS (set on these
//     machines; Node then loads extra CA certificates at every start), the
//     standalone CLI (dist/cli/rc-<platform>, scripts/build-standalone.mjs) and,
//     where Slurm answers, `srun -n1 true` (apt-get install slurm-wlm, then
//     sh bench/slurm-one-node.sh as root);
//   - the same job's round trip as the controller and worker see it: from the
//     request's first byte to the exit frame, from a client already running
//     (what the server side costs, without Node's start-up);
//   - how long after a device frees a job queued behind it starts
//     (from the database's own timestamps: the holder's ended_at to the next job's started_at), and as
//     clients see it (the holder's exit frame to the waiter's started frame);
//   - throughput: 300 × `true` through the local worker's two devices, 24 at a time;
//   - then the guard (scripts/bench-guard.mjs): these figures against the last
//     recorded run on this machine; one more than 30 % behind fails the run.
// Usage: npm run bench [-- runs [other.cjs]] [--record]   (default 30 runs each)
//   other.cjs: a copy of another build's dist/rc.cjs (say, from before a change);
//   its --version and run -- true are timed in turns with this build's, both as
//   `node <file>`, so a noisy moment on the machine weighs on both alike.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { report, root, startFleet, streamedJob } from './bench-fleet.mjs';
import { guard } from './bench-guard.mjs';

const record = process.argv.includes('--record');
const positional = process.argv.slice(2).filter((a) => a !== '--record');
const runs = Number(positional[0] ?? 30);
const other = positional[1];
let exitCode = 0;
const fleet = await startFleet({ localWorker: true });
const { controller, clientToken } = fleet;
const env = { ...process.env, RC_CONTROLLER: controller, RC_TOKEN: clientToken, RC_SUBMITTER: 'bench' };
const rc = join(root, 'node_modules/.bin/rc');

try {
  console.log(
    `machine: ${process.env.NODE_EXTRA_CA_CERTS ? 'NODE_EXTRA_CA_CERTS is set (node loads extra CA certificates at every start)' : 'no NODE_EXTRA_CA_CERTS'}`,
  );
  const bare = { ...env };
  delete bare.NODE_EXTRA_CA_CERTS;
  const ok = (what, r) => {
    if (r.status !== 0) throw new Error(`${what} failed: ${r.stderr}`);
  };
  const time = (name, cmd, args, e = env) => ({ name, fn: () => ok(name, spawnSync(cmd, args, { env: e })) });
  const run = ['run', '--', 'true'];
  const standalone = join(root, 'dist', 'cli', `rc-${process.platform}-${process.arch}`);
  const hasStandalone = existsSync(standalone);
  const hasSrun = spawnSync('srun', ['-n1', 'true'], { timeout: 10_000 }).status === 0;
  const caVariants = process.env.NODE_EXTRA_CA_CERTS
    ? [
        ['', env],
        [' (no NODE_EXTRA_CA_CERTS)', bare],
      ]
    : [['', env]];
  const builds = other ? { 'this build': join(root, 'dist/rc.cjs'), [other]: other } : {};
  // Interleaved, so a noisy moment on the machine weighs on all alike.
  const cases = [
    ...caVariants.flatMap(([tag, e]) => [
      time(`node -e 0${tag}`, process.execPath, ['-e', '0'], e),
      time(`Node rc --version${tag}`, rc, ['--version'], e),
      time(`Node rc run -- true${tag}`, rc, run, e),
    ]),
    ...(hasStandalone
      ? caVariants.flatMap(([tag, e]) => [
          time(`standalone rc --version${tag}`, standalone, ['--version'], e),
          time(`standalone rc run -- true${tag}`, standalone, run, e),
        ])
      : []),
    ...(hasSrun ? [time('srun -n1 true', 'srun', ['-n1', 'true'])] : []),
    ...Object.entries(builds).flatMap(([name, file]) => [
      time(`node ${name} --version`, process.execPath, [file, '--version']),
      time(`node ${name} run -- true`, process.execPath, [file, ...run]),
    ]),
  ];
  const times = timeRuns(cases.map((c) => c.fn));
  for (const [i, c] of cases.entries()) report(c.name, times[i]);
  if (!hasStandalone) console.log('standalone rc: not built (no Bun binary in node_modules)');
  if (!hasSrun) console.log('srun: no answer (apt-get install slurm-wlm, then sudo sh bench/slurm-one-node.sh)');
  const median = (name) => {
    const s = [...times[cases.findIndex((c) => c.name === name)]].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)];
  };
  if (hasSrun)
    for (const name of ['Node rc run -- true', ...(hasStandalone ? ['standalone rc run -- true'] : [])])
      console.log(`${name} / srun -n1 true (p50): ${(median(name) / median('srun -n1 true')).toFixed(2)}×`);
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
  // The same, as clients see it: the holder's exit frame to the waiter's started frame, both streamed here.
  const seen = [];
  for (let i = 0; i < Math.min(runs, 20); i++) {
    let holderStarted;
    const started = new Promise((r) => {
      holderStarted = r;
    });
    let holderExit = 0;
    let waiterStart = 0;
    const holder = submit(['sleep', '0.3'], 'bench:gpu0', (type) => {
      if (type === 'started') holderStarted();
      if (type === 'exit') holderExit = performance.now();
    });
    await started;
    const waiter = submit(['true'], 'bench:gpu0', (type) => {
      if (type === 'started') waiterStart = performance.now();
    });
    await Promise.all([holder, waiter]);
    seen.push(waiterStart - holderExit);
  }
  report('  as its client sees it (exit frame → started)', seen);
  // 300 × true through the two devices, 24 submitters at a time (a warm-up of 30 first), three rounds; where
  // task-spooler is installed (apt-get install task-spooler), its 300 × true through two slots in turns with them.
  const hasTsp = spawnSync('tsp', ['-h'], { stdio: 'ignore' }).error === undefined;
  const tspEnv = { ...process.env, TS_SOCKET: join(fleet.dir, 'tsp.socket'), TMPDIR: fleet.dir, TS_MAXFINISHED: '1000' };
  const tsp = (args) => spawnSync('tsp', args, { env: tspEnv, encoding: 'utf8' });
  if (hasTsp) tsp(['-S', '2']);
  await rcThroughput(30);
  const rates = [];
  const tspRates = [];
  for (let round = 0; round < 3; round++) {
    rates.push(await rcThroughput(300));
    if (hasTsp) tspRates.push(tspThroughput(300));
  }
  if (hasTsp) tsp(['-K']);
  const mid = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `${'throughput, 300 × true through 2 devices'.padEnd(46)} ${mid(rates).toFixed(1)} jobs/s (median of 3: ${rates.map((r) => r.toFixed(1)).join(', ')})`,
  );
  if (hasTsp) {
    console.log(
      `${'tsp, 300 × true through 2 slots'.padEnd(46)} ${mid(tspRates).toFixed(1)} jobs/s (median of 3: ${tspRates.map((r) => r.toFixed(1)).join(', ')})`,
    );
    console.log(`${'rc / tsp'.padEnd(46)} ${(mid(rates) / mid(tspRates)).toFixed(2)}×`);
  } else console.log('tsp: not installed (apt-get install task-spooler)');

  async function rcThroughput(n) {
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 24 }, async () => {
        while (next < n) {
          next++;
          await submit(['true']);
        }
      }),
    );
    return n / ((performance.now() - t0) / 1000);
  }
  /** tsp queues each job with one call of its client (as rc's submits are one request each), then waits for the last. */
  function tspThroughput(n) {
    tsp(['-C']);
    const t0 = performance.now();
    let last = '';
    for (let i = 0; i < n; i++) last = tsp(['true']).stdout.trim();
    tsp(['-w', last]);
    return n / ((performance.now() - t0) / 1000);
  }
  const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  exitCode = guard(
    root,
    {
      'rc --version, Node CLI (p50)': { value: median('Node rc --version'), better: 'lower', unit: 'ms' },
      'rc run -- true, Node CLI (p50)': { value: median('Node rc run -- true'), better: 'lower', unit: 'ms' },
      'controller + worker round trip (p50)': { value: p50(trips), better: 'lower', unit: 'ms' },
      'queued job starts after its device frees (p50)': { value: p50(gaps), better: 'lower', unit: 'ms' },
      'the same, client-seen (p50)': { value: p50(seen), better: 'lower', unit: 'ms' },
      '300 × true through 2 devices': { value: mid(rates), better: 'higher', unit: 'jobs/s' },
    },
    { record },
  );
} finally {
  await fleet.stop();
}
process.exit(exitCode);

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

/** A job submitted as rc run does (one streamed request); `onType` gets each event's type. */
function submit(argv, device = null, onType = null) {
  return streamedJob(controller, clientToken, { argv, submitter: 'bench', ...(device ? { device } : {}) }, onType && ((e) => onType(e.type)));
}

async function job(id) {
  const r = await fetch(`${controller}/api/jobs/${id}`, { headers: { authorization: `Bearer ${clientToken}` } });
  return (await r.json()).job;
}

// Where a job's time goes on the worker, and what it costs end to end (issue 31).
// One controller on a throw-away embedded Postgres; three real workers on
// this host, two CPU slots each, differing only in how a job is followed:
//   ready   job cgroups with shells made ready ahead (the default)
//   cgroup  job cgroups, each job entering its own as it starts (RC_READY_SHELLS=0)
//   plain   no cgroups (RC_CGROUPS=0): process group, session and RC_JOB_ID
// Each worker appends its jobs' phases to a file (RC_JOB_PHASES, worker/job-phases.ts).
//   1. Phases: `--jobs` (100) rounds, one `/bin/echo x` job on each worker in turn
//      (interleaved), one at a time: medians and p90 of each step on the worker
//      (order seen → recorded → spawned → first byte → exited → ended → cleaned → reported),
//      and the client's submit → exit frame.
//   2. Throughput: `--rounds` (3) rounds, in each 300 × `true` through each worker's
//      two slots in turn, 24 submitters at a time: jobs/s (median of the rounds).
// Where cgroup v2 cannot be written here, the ready and cgroup rows are followed by their
// tag (the worker logs why) and say so.
// Usage: npm run bench:phases [-- --jobs 100 --rounds 3]
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { api as callApi, root, startFleet, streamedJob, until } from '../scripts/bench-fleet.mjs';

const { values } = parseArgs({ options: { jobs: { type: 'string', default: '100' }, rounds: { type: 'string', default: '3' } } });
const JOBS = Number(values.jobs);
const ROUNDS = Number(values.rounds);
const KINDS = [
  { name: 'ready', env: {} },
  { name: 'cgroup', env: { RC_READY_SHELLS: '0' } },
  { name: 'plain', env: { RC_CGROUPS: '0' } },
];

const fleet = await startFleet({ localWorker: false });
const { dir, controller, clientToken, adminToken } = fleet;
const workers = [];
const load = [];
const loadTimer = setInterval(() => load.push(loadavg()[0]), 1000);
try {
  for (const kind of KINDS) {
    const host = `bench-${kind.name}`;
    const { credential } = await api('POST', '/api/admin/hosts', { name: host }, adminToken);
    const config = join(dir, `${host}.json`);
    writeFileSync(config, JSON.stringify({ labels: { bench: kind.name } }));
    const phases = join(dir, `${host}.phases`);
    const logFile = join(dir, `${host}.log`);
    mkdirSync(join(dir, `ws-${kind.name}`));
    const w = spawn(process.execPath, [join(root, 'dist/worker.js')], {
      env: {
        ...process.env,
        RC_CONTROLLER: controller,
        RC_HOST_TOKEN: credential,
        RC_HOST_NAME: host,
        RC_WORKSPACE: join(dir, `ws-${kind.name}`),
        RC_STATE_DIR: join(dir, `state-${kind.name}`),
        RC_WORKER_CONFIG: config,
        RC_JOB_PHASES: phases,
        ...kind.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    for (const s of [w.stdout, w.stderr])
      s.on('data', (c) => {
        log += c;
      });
    workers.push({ ...kind, host, phases, process: w, log: () => log, logFile });
  }
  await until(async () => (await api('GET', '/api/devices')).devices.filter((d) => d.state === 'free').length === 2 * KINDS.length, 'the workers');
  for (const w of workers) {
    const how = /each job runs in a cgroup[^\n]*|jobs are followed by[^\n]*/.exec(w.log())?.[0] ?? '?';
    console.log(`${w.name.padEnd(7)} ${how}`);
  }
  console.log(`machine: ${process.env.NODE_EXTRA_CA_CERTS ? 'NODE_EXTRA_CA_CERTS is set' : 'no NODE_EXTRA_CA_CERTS'}; ${KINDS.length} workers, 2 slots each`);

  // 1. Phases, one job at a time, the workers in turn.
  const client = Object.fromEntries(KINDS.map((k) => [k.name, []]));
  for (let i = 0; i < JOBS + 3; i++) {
    for (const w of workers) {
      const t = performance.now();
      await runJob(['/bin/echo', 'x'], `${w.host}:gpu0`);
      if (i >= 3) client[w.name].push(performance.now() - t);
    }
  }
  await new Promise((r) => setTimeout(r, 300));
  const STEPS = [
    ['order seen → recorded (state file)', 'order', 'recorded'],
    ['recorded → spawned', 'recorded', 'spawned'],
    ['spawned → first byte (command runs)', 'spawned', 'firstByte'],
    ['first byte → exited', 'firstByte', 'exited'],
    ['exited → ended (reaped, drained)', 'exited', 'ended'],
    ['ended → cleaned up', 'ended', 'cleaned'],
    ['cleaned up → reported (acknowledged)', 'cleaned', 'reported'],
    ['order seen → first byte', 'order', 'firstByte'],
    ['order seen → reported', 'order', 'reported'],
  ];
  console.log(`\nphases on the worker, ms, p50 / p90 (the last ${JOBS} of ${JOBS + 3} jobs of each, interleaved)`);
  console.log(`${''.padEnd(40)} ${KINDS.map((k) => k.name.padStart(15)).join(' ')}`);
  const rows = Object.fromEntries(
    workers.map((w) => [
      w.name,
      readFileSync(w.phases, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .slice(-JOBS),
    ]),
  );
  for (const [label, from, to] of STEPS) {
    const cells = workers.map((w) => cell(rows[w.name].filter((r) => r[from] && r[to]).map((r) => r[to] - r[from])));
    console.log(`${label.padEnd(40)} ${cells.map((c) => c.padStart(15)).join(' ')}`);
  }
  console.log(`${'client: submit → exit frame'.padEnd(40)} ${workers.map((w) => cell(client[w.name]).padStart(15)).join(' ')}`);

  // 2. Throughput through each worker's two slots, the workers in turn.
  const rates = Object.fromEntries(KINDS.map((k) => [k.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const w of workers) {
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: 24 }, async () => {
          while (next < 300) {
            next++;
            await runJob(['true'], null, `bench=${w.name}`);
          }
        }),
      );
      rates[w.name].push(300 / ((performance.now() - t0) / 1000));
    }
  }
  console.log(`\nthroughput, 300 × true through 2 slots, jobs/s (median of ${ROUNDS}; each round's in brackets)`);
  for (const w of workers) {
    const s = [...rates[w.name]].sort((a, b) => a - b);
    console.log(`${w.name.padEnd(40)} ${s[Math.floor(s.length / 2)].toFixed(1).padStart(15)}   [${rates[w.name].map((x) => x.toFixed(1)).join(', ')}]`);
  }
  const l = [...load].sort((a, b) => a - b);
  console.log(`\nload average (1 min) during the run: median ${l[Math.floor(l.length / 2)]?.toFixed(2)}, max ${l[l.length - 1]?.toFixed(2)}`);
} finally {
  clearInterval(loadTimer);
  for (const w of workers) {
    w.process.kill('SIGTERM');
    await new Promise((r) => (w.process.exitCode === null ? w.process.once('exit', r) : r()));
  }
  await fleet.stop();
}

function cell(xs) {
  if (!xs.length) return '-';
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return `${q(0.5).toFixed(2)} / ${q(0.9).toFixed(2)}`;
}

/** Submits a job as rc run does (one streamed request) and resolves when its stream ends. */
function runJob(argv, device, selector = '') {
  return streamedJob(controller, clientToken, { argv, submitter: 'bench', ...(device ? { device } : {}), selector });
}

function api(method, path, body, token = clientToken) {
  return callApi(controller, method, path, body, token);
}

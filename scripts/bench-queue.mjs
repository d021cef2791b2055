// Measures the figures issue 4 names, on a throw-away fleet (embedded Postgres,
// controller, one worker with two CPU slots), driving the REST API directly:
//   - submit→start latency on an idle device (the database's created_at → started_at), 200 jobs;
//   - throughput of 300 trivial jobs (`true`) through the two devices;
//   - how long after its worker is SIGKILLed a job is marked lost (median of 5),
//     at the default host timeout, with no worker restart.
// Usage: npm run bench:queue
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { stdio: 'inherit' });
const { startEmbeddedPostgres } = await import('../dist/test-support.js');

const dir = mkdtempSync(join(tmpdir(), 'rc-benchq-'));
chmodSync(dir, 0o711); // Postgres runs as its own user and must pass through
const pg = await startEmbeddedPostgres(join(dir, 'pg'), await freePort());
const server = spawn(process.execPath, [join(root, 'dist/server.js')], {
  env: { ...process.env, DATABASE_URL: pg.url, RC_DATA_DIR: join(dir, 'data'), PORT: '0', RC_DASHBOARD: '0', RC_LOCAL_WORKER: '0' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let log = '';
server.stdout.on('data', (c) => { log += c; });
await until(() => /controller on (http:\/\/\S+);/.test(log), 'the controller');
const controller = /controller on (http:\/\/\S+);/.exec(log)[1];
const { clientToken, adminToken } = JSON.parse(readFileSync(join(dir, 'data', 'local.json'), 'utf8'));
const { credential } = await api('POST', '/api/admin/hosts', { name: 'bench' }, adminToken);
let worker = startWorker();
await until(async () => (await api('GET', '/api/devices')).devices.filter((d) => d.state === 'free').length === 2, 'the worker');

try {
  // 1. Submit→start on an idle device.
  const lat = [];
  for (let i = 0; i < 200; i++) {
    const id = await runJob(['true']);
    const { job } = await api('GET', `/api/jobs/${id}`);
    lat.push(Date.parse(job.startedAt) - Date.parse(job.createdAt));
  }
  report('submit→start, idle device (200 jobs)', lat);

  // 2. Throughput: 300 jobs, 24 submitters at a time, two devices.
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 24 }, async () => { while (next < 300) { next++; await runJob(['true']); } }));
  const secs = (performance.now() - t0) / 1000;
  console.log(`${'throughput, 300 x true through 2 devices'.padEnd(44)} ${(300 / secs).toFixed(1)} jobs/s (${secs.toFixed(2)} s)`);

  // 3. A worker SIGKILLed mid-job: time until its job is lost.
  const lost = [];
  for (let i = 0; i < 5; i++) {
    const id = await new Promise((resolve) => { void runJob(['sleep', '613.5'], resolve); });
    await until(async () => (await api('GET', `/api/jobs/${id}`)).job.state === 'running', 'the job to run');
    const t = Date.now();
    worker.kill('SIGKILL');
    await until(async () => (await api('GET', `/api/jobs/${id}`)).job.state === 'lost', 'the job to be lost', 60_000);
    lost.push(Date.now() - t);
    spawnSync('pkill', ['-f', '^sleep 613.5$']); // the orphan of the killed worker, and nothing else
    worker = startWorker();
    await until(async () => (await api('GET', '/api/devices')).devices.filter((d) => d.state === 'free').length === 2, 'the worker back');
  }
  report('SIGKILLed worker → job lost (host timeout 15 s)', lost);
} finally {
  worker.kill('SIGTERM');
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}

function startWorker() {
  const w = spawn(process.execPath, [join(root, 'dist/worker.js')], {
    env: { ...process.env, RC_CONTROLLER: controller, RC_HOST_TOKEN: credential, RC_HOST_NAME: 'bench', RC_WORKSPACE: join(dir, 'ws') },
    stdio: 'ignore',
  });
  return w;
}

/** Submits a job as rc run does (one streamed request) and resolves its id when it ends. */
function runJob(argv, onId = () => {}) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ argv, submitter: 'bench' });
    const req = request(controller + '/api/jobs', { method: 'POST', headers: { authorization: `Bearer ${clientToken}`, accept: 'application/x-rc-stream', 'content-type': 'application/json' } }, (res) => {
      let id = null; let buf = Buffer.alloc(0);
      res.on('data', (c) => {
        buf = Buffer.concat([buf, c]);
        while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
          const len = buf.readUInt32BE(1);
          if (buf[0] === 3) { const e = JSON.parse(buf.subarray(5, 5 + len)); if (e.type === 'queued') { id = e.jobId; onId(id); } }
          buf = buf.subarray(5 + len);
        }
      });
      res.on('end', () => resolve(id));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function api(method, path, body, token = clientToken) {
  const r = await fetch(controller + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
  return r.json();
}

function report(name, xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  console.log(`${name.padEnd(44)} n=${s.length}  p50 ${q(0.5).toFixed(1)} ms  p90 ${q(0.9).toFixed(1)} ms  p99 ${q(0.99).toFixed(1)} ms  max ${s[s.length - 1].toFixed(1)} ms`);
}

async function until(check, what, ms = 20_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) { if (await check()) return; await new Promise((r) => setTimeout(r, 20)); }
  throw new Error(`timed out waiting for ${what}\n${log}`);
}

function freePort() {
  return new Promise((resolve) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); }); });
}

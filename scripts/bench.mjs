// Measures the figures issue 2 names, on a throw-away local fleet:
//   - `rc run -- true` through node_modules/.bin/rc, CLI start-up included
//     (beside `node -e 0` and `rc --version` for scale);
//   - how long after a device frees a job queued behind it starts
//     (from the database's own timestamps: the holder's ended_at to the next job's started_at).
// Usage: npm run bench [-- runs]   (default 30 runs each)
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const runs = Number(process.argv[2] ?? 30);
spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { stdio: 'inherit' });
const { startEmbeddedPostgres } = await import('../dist/test-support.js');

const dir = mkdtempSync(join(tmpdir(), 'rc-bench-'));
chmodSync(dir, 0o711); // Postgres runs as its own user and must pass through
const pg = await startEmbeddedPostgres(join(dir, 'pg'), await freePort());
const server = spawn(process.execPath, [join(root, 'dist/server.js')], {
  env: { ...process.env, DATABASE_URL: pg.url, RC_DATA_DIR: join(dir, 'data'), PORT: '0', RC_DASHBOARD: '0', RC_HOST_NAME: 'bench' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let log = '';
server.stdout.on('data', (c) => { log += c; });
await until(() => /connected to .* as bench/.test(log));
const { controller, clientToken } = JSON.parse(readFileSync(join(dir, 'data', 'local.json'), 'utf8'));
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
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
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

function report(name, xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  console.log(`${name.padEnd(42)} n=${s.length}  p50 ${q(0.5).toFixed(1)} ms  p90 ${q(0.9).toFixed(1)} ms  max ${s[s.length - 1].toFixed(1)} ms`);
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
async function until(check) {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!check()) throw new Error(`the controller did not come up:\n${log}`);
}
function freePort() {
  return new Promise((resolve) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); }); });
}

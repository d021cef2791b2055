// npm run demo without the dashboard: rc comes up in its own folder and port
// with the simulated fleet and its jobs, and Ctrl-C stops all of it, its
// Postgres included.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { processesMatching } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
const dataDir = mkdtempSync(join(tmpdir(), 'rc-demo-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

test('npm run demo starts rc with a simulated fleet, jobs, a hold, a queue and a quarantine; Ctrl-C stops everything', { timeout: 120_000 }, async () => {
  const [port, pgPort] = [await freePort(), await freePort()];
  const env: Record<string, string | undefined> = { ...process.env, RC_DASHBOARD: '0' };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [join(ROOT, 'scripts', 'demo.mjs'), '--port', String(port), '--pg-port', String(pgPort), '--data-dir', dataDir], {
    env: env as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    log += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const end = Date.now() + 90_000;
    while (!log.includes('Ctrl-C stops everything') && Date.now() < end && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
    assert.match(log, /\[demo\] ready: 5 simulated hosts, 17 GPUs/, log);
    const { clientToken, adminToken } = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as { clientToken: string; adminToken: string };
    assert.ok(log.includes(adminToken) && log.includes(clientToken), 'the tokens are printed');
    const get = async (path: string) =>
      (await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${clientToken}` } })).json() as Promise<Record<string, unknown>>;
    const devices = (await get('/api/devices')).devices as { name: string; state: string; labels: Record<string, string> }[];
    assert.equal(devices.length, 17);
    assert.ok(devices.every((d) => d.labels.simulated === 'true'));
    assert.equal(devices.find((d) => d.name === 'old-v100:gpu1')!.state, 'unhealthy');
    const jobs = (await get('/api/jobs?state=running,queued')).jobs as { state: string; kind: string; submitter: string }[];
    const running = jobs.filter((j) => j.state === 'running');
    assert.ok(
      running.some((j) => j.kind === 'hold'),
      'a hold',
    );
    assert.ok(new Set(running.map((j) => j.submitter)).size >= 4, 'several submitters');
    assert.ok(jobs.filter((j) => j.state === 'queued').length >= 2, 'queued jobs');
    assert.ok(((await get('/api/hosts/gpubox-a/sheet')).sheet as { body: string }).body.startsWith('# gpubox-a'));
  } finally {
    child.kill('SIGINT');
    assert.equal(await exited, 0, log);
  }
  assert.deepEqual(processesMatching(dataDir, true), [], 'no Postgres (or anything else) left on the demo folder');
});

// npm run demo without the dashboard: rc comes up in its own folder and on
// the ports PORT and RC_PG_PORT name, with the simulated fleet and its jobs;
// every command it prints works as printed from another terminal (rc on the
// PATH by the line it prints, nothing else set); and Ctrl-C stops all of it,
// its Postgres included.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
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

/** A command run as a person runs it in a new terminal: `sh -c`, in another folder, with no rc settings and no node_modules/.bin on the PATH. */
function asTyped(lines: string[]): { code: number | null; stdout: string; stderr: string } {
  const path = [dirname(process.execPath), ...(process.env.PATH ?? '').split(delimiter).filter((d) => d && !d.endsWith(join('node_modules', '.bin')))];
  const r = spawnSync('sh', ['-c', lines.join('\n')], {
    cwd: tmpdir(),
    env: { PATH: path.join(delimiter), HOME: process.env.HOME ?? tmpdir() } as unknown as NodeJS.ProcessEnv,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('the demo refuses a bad port at once, saying which', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'demo.mjs'), '--port', 'eighty'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--port must be a port number from 0 to 65535 \(got eighty\)/);
});

test('npm run demo starts rc with a simulated fleet, jobs, a hold, a queue and a quarantine; its commands work as printed; Ctrl-C stops everything', {
  timeout: 180_000,
}, async () => {
  const [port, pgPort] = [await freePort(), await freePort()];
  // The ports as npm start takes them, from the environment (the flags --port and --pg-port would win).
  const env: Record<string, string | undefined> = { ...process.env, RC_DASHBOARD: '0', PORT: String(port), RC_PG_PORT: String(pgPort) };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [join(ROOT, 'scripts', 'demo.mjs'), '--data-dir', dataDir], {
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
    assert.match(log, new RegExp(`embedded Postgres on port ${pgPort}\\b`));
    assert.match(log, new RegExp(`controller on http://127\\.0\\.0\\.1:${port};`));

    // What it tells a person to type: rc's ready lines and the demo's own, each indented under its "try" line.
    const printed = [...log.matchAll(/^\[(?:rc|demo)\] {3}(\S.*)$/gm)].map((m) => m[1]!);
    const exports = printed.filter((c) => c.startsWith('export PATH='));
    const commands = printed.filter((c) => !c.startsWith('export '));
    assert.equal(exports.length, 2, log);
    assert.ok(
      exports.every((e) => e === `export PATH="${ROOT}/node_modules/.bin:$PATH"`),
      exports.join('\n'),
    );
    assert.ok(commands.length >= 5, log);
    assert.ok(
      commands.every((c) => /(^|\s)rc /.test(c) && !c.includes('npx')),
      commands.join('\n'),
    );
    // Without the export line, a new terminal has no rc; with it, each command works as printed.
    assert.notEqual(asTyped(['rc --version']).code, 0, 'no rc on a bare PATH');
    for (const command of commands) {
      const r = asTyped([exports[0]!, command]);
      assert.equal(r.code, 0, `${command}\n${r.stdout}${r.stderr}`);
      assert.ok(r.stdout.trim().length > 0, `${command} prints something`);
      // They reach the demo's controller: its simulated fleet, not npm start's local worker.
      if (/ devices$/.test(command)) assert.match(r.stdout, /gpubox-b:gpu7/, command);
      if (/ run .*echo hello$/.test(command)) assert.equal(r.stdout, 'hello\n', command);
      if (/ run --select gpu_model=V100 /.test(command)) assert.equal(r.stdout, 'hello from old-v100:gpu0\n', command);
      if (/ describe gpubox-b:gpu7$/.test(command)) assert.match(r.stdout, /Fan runs loud/, command);
    }
  } finally {
    child.kill('SIGINT');
    assert.equal(await exited, 0, log);
  }
  assert.deepEqual(processesMatching(dataDir, true), [], 'no Postgres (or anything else) left on the demo folder');
});

// compose.yaml for real, on this machine's Docker: Postgres, two controllers
// and the nginx in front of them, from the images docker/compose-images.sh
// builds (from Debian's archive; .ci/run builds them once). A worker on this
// machine joins through the one published port; a job runs through each
// controller (addressed on the compose network) and one through the port; then
// one controller is killed (`docker kill`) and the next job, through the port
// and through the other controller, still succeeds. `down -v` leaves no
// container, network or volume of the project behind.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { composeSkip } from '../helpers/docker';

const ROOT = join(import.meta.dirname, '..', '..');
const skip = composeSkip('the compose test');
const project = `rcct${process.pid}`;
const password = randomBytes(12).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'rc-compose-'));
let port = 0;
let proxyUrl = '';
let adminToken = '';
let worker: ChildProcess | null = null;
let workerLog = '';
const started = Date.now();

function compose(args: string[], timeoutMs = 300_000) {
  const r = spawnSync('docker-compose', ['-p', project, '-f', join(ROOT, 'compose.yaml'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, RC_DB_PASSWORD: password, RC_PORT: String(port) },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}
function docker(args: string[]): string {
  const r = spawnSync('docker', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`docker ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}
const containerOf = (service: string) => compose(['ps', '-q', service]).out.trim();
const addressOf = (service: string) =>
  `http://${docker(['inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', containerOf(service)])}:8080`;

function rc(controller: string, args: string[], token: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    RC_CONTROLLER: controller,
    RC_TOKEN: token,
    RC_SUBMITTER: 'tester',
  } as unknown as NodeJS.ProcessEnv;
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

before(async () => {
  if (skip) return;
  port = await freePort();
  proxyUrl = `http://127.0.0.1:${port}`;
  const up = compose(['up', '-d']);
  assert.equal(up.code, 0, up.out);
  console.log(`# compose up (db, rc1, rc2 healthy, proxy): ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // Each controller writes a client and an admin token to its data volume (server/local-credentials.ts).
  adminToken = JSON.parse(docker(['exec', containerOf('rc1'), 'cat', '/var/lib/rc/local.json'])).adminToken;
  const add = await fetch(`${proxyUrl}/api/admin/hosts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'boxa' }),
  });
  assert.equal(add.status, 201, await add.clone().text());
  const { credential } = (await add.json()) as { credential: string };
  worker = spawn(process.execPath, [join(ROOT, 'dist', 'worker.js')], {
    env: {
      ...process.env,
      RC_CONTROLLER: proxyUrl,
      RC_HOST_TOKEN: credential,
      RC_HOST_NAME: 'boxa',
      RC_FAKE_DEVICES: '1',
      RC_WORKSPACE: join(dir, 'ws'),
      RC_STATE_DIR: join(dir, 'state'),
      RC_KILL_GRACE_S: '2',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  worker.stdout!.on('data', (c: Buffer) => (workerLog += c.toString()));
  worker.stderr!.on('data', (c: Buffer) => (workerLog += c.toString()));
  for (const end = Date.now() + 30_000; !(await rc(proxyUrl, ['devices', '--json'], adminToken)).stdout.includes('"free"'); ) {
    if (Date.now() > end) throw new Error(`the worker's device is not free 30 s after its start:\n${workerLog}`);
    await new Promise((r) => setTimeout(r, 200));
  }
});

after(async () => {
  if (skip) return;
  if (process.env.RC_TEST_DEBUG) console.log(`--- worker\n${workerLog}\n--- compose\n${compose(['logs', '--no-color']).out}`);
  if (worker && worker.exitCode === null) {
    const gone = new Promise((r) => worker!.once('exit', r));
    worker.kill('SIGTERM');
    await gone;
  }
  const down = compose(['down', '-v', '--remove-orphans', '--timeout', '10']);
  rmSync(dir, { recursive: true, force: true });
  assert.equal(down.code, 0, down.out);
  const label = `label=com.docker.compose.project=${project}`;
  assert.equal(docker(['ps', '-aq', '--filter', label]), '', 'containers left');
  assert.equal(docker(['volume', 'ls', '-q', '--filter', label]), '', 'volumes left');
  assert.equal(docker(['network', 'ls', '-q', '--filter', label]), '', 'networks left');
  console.log(`# compose test, up to down: ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

test('a job runs through each controller and through the one port', { skip, timeout: 120_000 }, async () => {
  for (const [name, url] of [
    ['rc1', addressOf('rc1')],
    ['rc2', addressOf('rc2')],
    ['the proxy', proxyUrl],
  ] as const) {
    const t0 = Date.now();
    const r = await rc(url!, ['run', '--', 'sh', '-c', `echo "ran through ${name}"`], adminToken);
    console.log(`# a job through ${name}: ${Date.now() - t0} ms`);
    assert.equal(r.code, 0, `${name}: ${r.stderr}`);
    assert.equal(r.stdout, `ran through ${name}\n`);
  }
});

/** Established connections to a controller's port 8080 (its /proc/net/tcp: local port 1F90, state 01): the worker's socket is the long-lived one. */
function established(service: string): number {
  const table = docker(['exec', containerOf(service), 'cat', '/proc/net/tcp', '/proc/net/tcp6']);
  return table.split('\n').filter((l) => /^\s*\d+: [0-9A-F]+:1F90 [0-9A-F]+:[0-9A-F]+ 01 /.test(l)).length;
}

test("with the worker's controller killed, the next job succeeds through the port and through the other", { skip, timeout: 180_000 }, async () => {
  // Kill the controller that holds the worker's socket, so the worker has to move (through the proxy) too.
  const [victim, other] = established('rc2') > established('rc1') ? ['rc2', 'rc1'] : ['rc1', 'rc2'];
  console.log(`# the worker is connected to ${victim}; killing it`);
  const survivor = addressOf(other);
  const killed = containerOf(victim);
  docker(['kill', killed]);
  assert.equal(docker(['inspect', '-f', '{{.State.Running}}', killed]), 'false');
  const t0 = Date.now();
  const r = await rc(proxyUrl, ['run', '--', 'sh', '-c', 'echo after the kill'], adminToken);
  assert.equal(r.code, 0, `${r.stderr}\n--- worker\n${workerLog}`);
  assert.equal(r.stdout, 'after the kill\n');
  console.log(`# the first job after docker kill ${victim}, through the port: ${Date.now() - t0} ms`);
  const direct = await rc(survivor, ['run', '--', 'sh', '-c', `echo through ${other}`], adminToken);
  assert.equal(direct.code, 0, direct.stderr);
  assert.equal(direct.stdout, `through ${other}\n`);
  // The restart policy brings nothing back by itself after a docker kill: the killed one stayed down all along.
  assert.equal(docker(['inspect', '-f', '{{.State.Running}}', killed]), 'false');
});

// rc-worker doctor against a real controller and a real dockerd: one row per
// check, ok / n/a / fail, and a non-zero exit when a row fails.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ensureTestImage } from '../helpers/docker';
import { fakeNvidiaSmiDir } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
let stack: Stack;
let credential = '';
let image = '';
before(async () => {
  image = await ensureTestImage();
  stack = await Stack.start({ workers: [] });
  credential = ((await stack.api('POST', '/api/admin/hosts', { name: 'docbox' }, stack.adminToken)).body as { credential: string }).credential;
});
after(async () => stack.stop());

function doctor(env: Record<string, string>): Promise<{ code: number | null; rows: Record<string, [string, string]>; out: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'worker.js'), 'doctor'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      RC_CONTROLLER: stack.controllerUrl,
      RC_HOST_TOKEN: credential,
      RC_HOST_NAME: 'docbox',
      RC_WORKSPACE: join(stack.dataDir, 'ws-doc'),
      ...env,
    } as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  return new Promise((resolve) =>
    child.on('close', (code) => {
      const rows: Record<string, [string, string]> = {};
      for (const line of out.split('\n')) {
        const m = /^(\S+)\s+(ok|n\/a|fail)\s+(.*)$/.exec(line);
        if (m) rows[m[1]!] = [m[2]!, m[3]!];
      }
      resolve({ code, rows, out });
    }),
  );
}

test('a CPU host with the host runtime: gpu n/a, docker n/a, controller and credential ok, exit 0', async () => {
  const r = await doctor({});
  assert.equal(r.code, 0, r.out);
  assert.deepEqual(Object.fromEntries(Object.entries(r.rows).map(([k, v]) => [k, v[0]])), {
    config: 'ok',
    docker: 'n/a',
    image: 'n/a',
    gpu: 'n/a',
    cgroups: 'ok',
    controller: 'ok',
    credential: 'ok',
    workspace: 'ok',
    mounts: 'ok',
  });
  assert.match(r.rows.cgroups![1], /^cgroup v2 at \/sys\/fs\/cgroup|^no cgroup v2/);
  assert.match(r.rows.credential![1], /credential of host docbox/);
  assert.match(r.out, /all checks passed/);
});

test('GPUs seen by nvidia-smi are ok with the host runtime', async () => {
  const r = await doctor({ PATH: `${fakeNvidiaSmiDir()}:${process.env.PATH}` });
  assert.equal(r.code, 0, r.out);
  assert.deepEqual(r.rows.gpu, ['ok', '2 GPU(s): NVIDIA H100 80GB HBM3, NVIDIA GeForce RTX 4090 (host runtime: jobs use them directly)']);
});

test('a wrong credential and an unreachable controller fail their rows and the exit code', async () => {
  const bad = await doctor({ RC_HOST_TOKEN: 'rc_h_not-a-real-credential-at-all' });
  assert.equal(bad.code, 1);
  assert.equal(bad.rows.controller![0], 'ok');
  assert.equal(bad.rows.credential![0], 'fail');
  assert.match(bad.rows.credential![1], /refused RC_HOST_TOKEN \(401/);
  const port = await closedPort();
  const gone = await doctor({ RC_CONTROLLER: `http://127.0.0.1:${port}` });
  assert.equal(gone.code, 1);
  assert.equal(gone.rows.controller![1], `cannot reach http://127.0.0.1:${port}: ECONNREFUSED`);
  assert.match(gone.out, /2 check\(s\) failed/);
});

test('the Docker runtime: dockerd reachable and the image present, or a row that says what to do', async () => {
  const ok = await doctor({ RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: image });
  assert.equal(ok.code, 0, ok.out);
  assert.equal(ok.rows.docker![0], 'ok');
  assert.match(ok.rows.docker![1], /^dockerd \S+ reachable$/);
  assert.equal(ok.rows.image![0], 'ok');
  const missing = await doctor({ RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: 'rc-test:no-such-image' });
  assert.equal(missing.code, 1);
  assert.equal(missing.rows.image![0], 'fail');
  assert.match(missing.rows.image![1], /rc-test:no-such-image is not present: build it with docker\/worker-image\/build.sh --tag rc-test:no-such-image/);
  const noDocker = await doctor({ RC_RUNTIME: 'docker', RC_DOCKER: '/nonexistent/docker' });
  assert.equal(noDocker.code, 1);
  assert.match(noDocker.rows.docker![1], /^cannot reach dockerd: .*not found/);
});

test('GPUs on the host that a container cannot get fail the gpu row (no NVIDIA runtime here)', async () => {
  const r = await doctor({ RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: image, PATH: `${fakeNvidiaSmiDir()}:${process.env.PATH}` });
  assert.equal(r.code, 1, r.out);
  assert.equal(r.rows.gpu![0], 'fail');
  assert.match(r.rows.gpu![1], /^2 GPU\(s\): .*, but a container cannot get them \(docker run --gpus all exited \d+: .*\); install nvidia-container-toolkit/);
});

test('a bad setting is a failed row, not a crash', async () => {
  const r = await doctor({ RC_RUNTIME: 'podman' });
  assert.equal(r.code, 1);
  assert.deepEqual(r.rows.config, ['fail', 'RC_RUNTIME: RC_RUNTIME is host or docker']);
});

/** A port nothing listens on (it was free a moment ago). */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

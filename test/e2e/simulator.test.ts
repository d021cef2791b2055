// The fleet simulator (bench/simulator) against a real controller: its hosts
// come online with their GPUs' labels (and simulated=true), heartbeat
// samples, run what rc run gives them as real processes with their exact
// output and exit code, obey kills, quarantine a device with a foreign
// process as evidence, and go away when stopped.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type Fleet, startFleet } from '../../bench/simulator/fleet';
import { uniformHost } from '../../bench/simulator/spec';
import { processesMatching, Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');

interface Device {
  name: string;
  hostName: string;
  state: string;
  labels: Record<string, string>;
  uuid: string | null;
  unhealthy: { reason: string; evidence: Record<string, unknown> } | null;
  gpu: { name: string; memTotalMiB: number; memUsedMiB: number; utilPct: number | null } | null;
}

let stack: Stack;
let fleet: Fleet | null = null;
before(async () => {
  stack = await Stack.start({ workers: [] });
  fleet = await startFleet({
    url: stack.controllerUrl,
    adminToken: stack.adminToken,
    hosts: [uniformHost('sim-a', 'A100-80GB', 2), uniformHost('sim-b', 'RTX 4090', 2, { quarantine: [1] })],
    heartbeatMs: 300,
    killGraceS: 1,
  });
});
after(async () => {
  await fleet?.stop();
  await stack.stop();
});

const devices = async () => ((await stack.api('GET', '/api/devices')).body as { devices: Device[] }).devices;

test('simulated hosts come online with their GPUs, nvidia-smi labels and simulated=true', async () => {
  assert.equal(fleet!.deviceCount, 4);
  const all = await devices();
  assert.deepEqual(all.map((d) => d.name).sort(), ['sim-a:gpu0', 'sim-a:gpu1', 'sim-b:gpu0', 'sim-b:gpu1']);
  const a0 = all.find((d) => d.name === 'sim-a:gpu0')!;
  assert.equal(a0.labels.simulated, 'true');
  assert.equal(a0.labels.gpu_model, 'A100-80GB');
  assert.equal(a0.labels.gpu_name, 'NVIDIA A100-SXM4-80GB');
  assert.equal(a0.labels.vram, String(81920 * 1024 * 1024));
  assert.equal(a0.labels.kind, 'gpu');
  assert.match(a0.uuid ?? '', /^GPU-[0-9a-f]{8}-/);
  assert.equal(all.find((d) => d.name === 'sim-b:gpu0')!.labels.gpu_model, 'RTX4090');
  const hosts = ((await stack.api('GET', '/api/hosts')).body as { hosts: { name: string; status: string; workerVersion: string }[] }).hosts;
  assert.ok(hosts.filter((h) => h.name.startsWith('sim-')).every((h) => h.status === 'online' && h.workerVersion.endsWith('+sim')));
});

test('heartbeats carry GPU samples: idle cards near zero', async () => {
  await stack.waitFor(async () => (await devices()).every((d) => d.gpu !== null), 'a GPU sample on every device');
  const a1 = (await devices()).find((d) => d.name === 'sim-a:gpu1')!;
  assert.equal(a1.gpu!.name, 'NVIDIA A100-SXM4-80GB');
  assert.equal(a1.gpu!.memTotalMiB, 81920);
  assert.ok(a1.gpu!.memUsedMiB < 100, `idle memory ${a1.gpu!.memUsedMiB} MiB`);
});

test("rc run on a simulated device returns the command's output and exact exit code", async () => {
  const r = await stack.cli(['run', '-d', 'sim-a:gpu0', '--', 'sh', '-c', 'echo out; echo err >&2; echo "$CUDA_VISIBLE_DEVICES $RC_DEVICES"; exit 7']);
  assert.equal(r.code, 7, r.stderr);
  assert.equal(r.stderr, 'err\n');
  const [out, env] = r.stdout.trim().split('\n');
  assert.equal(out, 'out');
  const uuid = (await devices()).find((d) => d.name === 'sim-a:gpu0')!.uuid;
  assert.equal(env, `${uuid} sim-a:gpu0`);
  const missing = await stack.cli(['run', '-d', 'sim-a:gpu0', '--', 'no-such-command-rc']);
  assert.equal(missing.code, 127);
  assert.match(missing.stderr, /no-such-command-rc: command not found/);
});

test('a busy simulated device samples high; rc kill stops the job and its processes', async () => {
  const marker = `sleep 31.${process.pid}`;
  const job = stack.runJob(['-d', 'sim-a:gpu1'], `${marker}; echo never`);
  const id = await job.id;
  await stack.waitFor(async () => ((await devices()).find((d) => d.name === 'sim-a:gpu1')!.gpu?.memUsedMiB ?? 0) > 20_000, 'the busy card to fill up');
  assert.equal(processesMatching(marker).length, 1);
  const k = await stack.cli(['kill', id]);
  assert.equal(k.code, 0, k.stderr);
  const r = await job.done;
  assert.doesNotMatch(r.stdout, /never/);
  await stack.waitFor(async () => (await stack.job(id)).state === 'killed', 'the job to end killed');
  await stack.waitFor(() => processesMatching(marker).length === 0, 'the sleep to be gone');
});

test('a foreign process on a simulated GPU quarantines it, with the process as evidence', async () => {
  await stack.waitFor(async () => (await devices()).find((d) => d.name === 'sim-b:gpu1')!.state === 'unhealthy', 'sim-b:gpu1 to be quarantined');
  const d = (await devices()).find((x) => x.name === 'sim-b:gpu1')!;
  assert.match(d.unhealthy!.reason, /^pid \d+ \(python3, 10240 MiB\) uses the GPU and rc did not start it$/);
  assert.ok(Array.isArray(d.unhealthy!.evidence.processes));
  assert.ok(d.gpu!.memUsedMiB > 5000, 'its memory shows the foreign process');
  assert.equal((await devices()).find((x) => x.name === 'sim-b:gpu0')!.state, 'free');
});

test('the simulator command refuses bad flags with a sentence', async () => {
  const run = (args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const c = spawn(process.execPath, [join(ROOT, 'dist', 'simulator.js'), ...args], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { PATH: process.env.PATH } as unknown as NodeJS.ProcessEnv,
      });
      let stderr = '';
      c.stderr.on('data', (b: Buffer) => {
        stderr += b.toString();
      });
      c.on('close', (code) => resolve({ code, stderr }));
    });
  const bad = await run(['--url', stack.controllerUrl, '--admin-token', 'x', '--hosts', 'many']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^simulator: --hosts must be a whole number from 1 to 10000 \(got many\)/);
  const noToken = await run(['--url', stack.controllerUrl]);
  assert.match(noToken.stderr, /--admin-token is required/);
  const refused = await run(['--url', stack.controllerUrl, '--admin-token', stack.clientToken, '--hosts', '1', '--stats', '0']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /refused the admin token/);
});

test('stopping the simulator takes its hosts away', async () => {
  await fleet!.stop();
  fleet = null;
  await stack.waitFor(
    async () => (await devices()).every((d) => d.state === 'offline' || d.state === 'unhealthy'),
    'every simulated device to be away',
    30_000,
  );
  const hosts = ((await stack.api('GET', '/api/hosts')).body as { hosts: { name: string; status: string }[] }).hosts;
  assert.ok(hosts.every((h) => h.status !== 'online'));
});

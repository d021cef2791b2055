// GPU idleness per lease (issue 16): idle while utilisation <= 1% and no compute process, from the
// heartbeats of a worker with the fake nvidia-smi; no signal on CPU slots; idle holds warned of and
// released by policy; rc run --gpu-idle-timeout.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fakeNvidiaSmiDir, setGpuProcesses, setGpuUtilisation } from '../helpers/fake-nvidia-smi';
import { Stack, type CliResult } from '../helpers/stack';

const smi = fakeNvidiaSmiDir();
let stack: Stack;
before(async () => {
  // Busy until a test says otherwise.
  setGpuUtilisation(smi, 0, 80);
  setGpuUtilisation(smi, 1, 80);
  stack = await Stack.start({
    hostTimeoutS: 3,
    workers: [{ name: 'cpubox', devices: 1 }],
    controllerEnv: { RC_IDLE_HOLD_WARN: '2s', RC_IDLE_HOLD_RELEASE: '6s' },
  });
  await stack.startWorker('gpubox', 2, { PATH: `${smi}:${process.env.PATH}` });
});
after(async () => stack.stop());

interface IdleJob {
  state: string;
  cause: string | null;
  exitCode: number | null;
  idleS: number | null;
  idleTotalS: number | null;
  idleWarned: boolean;
  gpuIdleTimeoutS: number | null;
}
const job = async (id: string) => ((await stack.api('GET', `/api/jobs/${id}`)).body as { job: IdleJob }).job;
const holderIdle = async (name: string) =>
  ((await stack.api('GET', '/api/devices')).body as { devices: { name: string; holder: { idleS?: number | null } | null }[] }).devices.find(
    (d) => d.name === name,
  )!.holder?.idleS;

test('idle seconds grow while utilisation <= 1% with no process, and reset on activity', async () => {
  // The job's own shell stands for its compute process below (a process on the GPU that is none of the job's would quarantine it).
  const pidFile = join(mkdtempSync(join(tmpdir(), 'rc-idle-')), 'pid');
  const r = stack.runJob(['-d', 'gpubox:gpu0'], `echo $$ > ${pidFile}; sleep 120`);
  const id = await r.id;
  await stack.waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 'the job to write its pid');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  await stack.waitFor(async () => (await job(id)).idleS === 0, 'a busy GPU to read idle 0');
  setGpuUtilisation(smi, 0, 1);
  await stack.waitFor(async () => ((await job(id)).idleS ?? 0) >= 2.5, 'idle seconds to grow', 20_000);
  const ps = await stack.cli(['ps']);
  assert.match(ps.stdout, new RegExp(`${id}.*idle [23456789]s`));
  const described = await stack.cli(['describe', id]);
  assert.match(described.stdout, /idle:\s+idle \d+s/);
  assert.ok(((await holderIdle('gpubox:gpu0')) ?? 0) > 0, 'the device view shows its holder idle');
  const devDescribed = await stack.cli(['describe', 'gpubox:gpu0']);
  assert.match(devDescribed.stdout, /idle \d+s/);
  // The metrics count it among the leased GPUs idle now (rc_devices_idle_leased), and not once it is busy again.
  const idleLeased = async () => {
    const r = await fetch(`${stack.controllerUrl}/metrics`, { headers: { authorization: `Bearer ${stack.clientToken}` } });
    return Number(/^rc_devices_idle_leased (\S+)$/m.exec(await r.text())?.[1] ?? Number.NaN);
  };
  assert.equal(await idleLeased(), 1);

  // Utilisation rises: the streak ends.
  setGpuUtilisation(smi, 0, 40);
  await stack.waitFor(async () => (await job(id)).idleS === 0, 'busy utilisation to reset the streak');
  assert.equal(await idleLeased(), 0);
  const total = (await job(id)).idleTotalS;
  assert.ok(total !== null && total >= 1.5, `idle total kept: ${total}`);

  // Idle again, then a compute process appears at 0% utilisation: still busy.
  setGpuUtilisation(smi, 0, 0);
  await stack.waitFor(async () => ((await job(id)).idleS ?? 0) >= 1, 'idle again');
  setGpuProcesses(smi, [{ gpu: 0, pid, usedMiB: 500, name: 'python' }]);
  await stack.waitFor(async () => (await job(id)).idleS === 0, 'a compute process to reset the streak');
  setGpuProcesses(smi, []);
  setGpuUtilisation(smi, 0, 80);
  await stack.cli(['kill', id]);
  await r.done;
});

test('a CPU slot has no GPU signal: null, never idle', async () => {
  const r = stack.runJob(['-d', 'cpubox:gpu0'], 'sleep 120');
  const id = await r.id;
  await new Promise((res) => setTimeout(res, 3500)); // three heartbeats
  const j = await job(id);
  assert.equal(j.state, 'running');
  assert.equal(j.idleS, null);
  assert.equal(j.idleTotalS, null);
  assert.equal(await holderIdle('cpubox:gpu0'), null);
  const ps = await stack.cli(['ps']);
  assert.match(ps.stdout, new RegExp(`${id}.*no GPU signal`));
  await stack.cli(['kill', id]);
  await r.done;
});

test('rc run --gpu-idle-timeout kills a job whose GPU stays idle (gpu_idle, exit 204)', async () => {
  let seen = '';
  await stack
    .waitFor(async () => {
      seen = (await stack.cli(['devices'])).stdout;
      return /gpubox:gpu0\s+free/.test(seen);
    }, 'gpubox:gpu0 to be free')
    .catch((err: Error) => assert.fail(`${err.message}:\n${seen}`));
  setGpuUtilisation(smi, 0, 0);
  const r = stack.runJob(['-d', 'gpubox:gpu0', '--gpu-idle-timeout', '3s'], 'sleep 120');
  const id = await r.id;
  const started = Date.now();
  const done = await r.done;
  assert.equal(done.code, 204, done.stderr);
  const j = await job(id);
  assert.equal(j.state, 'killed');
  assert.equal(j.cause, 'gpu_idle');
  assert.equal(j.gpuIdleTimeoutS, 3);
  assert.ok(Date.now() - started >= 3000, 'not before the GPU was idle 3s');
  setGpuUtilisation(smi, 0, 80);
});

test('an idle hold is warned of on rc hold stderr, then released (idle_hold, exit 216, audited)', async () => {
  setGpuUtilisation(smi, 1, 0);
  let stderr = '';
  const done: Promise<CliResult> = stack.cli(['hold', '-d', 'gpubox:gpu1', '--ttl', '1h'], {
    timeoutMs: 60_000,
    onSpawn: (c) => c.stderr!.on('data', (b: Buffer) => (stderr += b.toString())),
  });
  await stack.waitFor(() => /has been idle for/.test(stderr), 'the idle warning', 20_000);
  const id = /hold (j\w+) has been idle for \d+s \(no GPU use on gpubox\); rc release \1 frees it/.exec(stderr)?.[1];
  assert.ok(id, stderr);
  assert.equal((await job(id)).idleWarned, true);
  const r = await done;
  assert.equal(r.code, 216, r.stderr);
  assert.match(r.stderr, new RegExp(`rc: idle: hold ${id} was released: idle hold released: its GPUs were idle for 6s`));
  const j = await job(id);
  assert.equal(j.state, 'killed');
  assert.equal(j.cause, 'idle_hold');
  const audit = (await stack.api('GET', '/api/audit?action=hold.idle_release', undefined, stack.adminToken)).body as {
    entries: { action: string; target: string }[];
  };
  assert.ok(
    audit.entries.some((e) => e.action === 'hold.idle_release' && e.target === id),
    JSON.stringify(audit),
  );
  // Warned once per idle streak, not every second.
  assert.equal(stderr.match(/has been idle for/g)?.length, 1, stderr);
  setGpuUtilisation(smi, 1, 80);
});

test('bad --gpu-idle-timeout values are refused, by the CLI and the API', async () => {
  for (const bad of ['0', '-5m', 'soon', '31d']) {
    const r = await stack.cli(['run', '--gpu-idle-timeout', bad, '--', 'true']);
    assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
    assert.match(r.stderr, /--gpu-idle-timeout takes a duration such as 90s/);
  }
  for (const bad of [0, -1, 1.5, 31 * 86400, 'x']) {
    const r = await stack.api('POST', '/api/jobs', { argv: ['true'], submitter: 'tester', gpuIdleTimeoutS: bad });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(JSON.stringify(r.body), /gpuIdleTimeoutS/);
  }
  const hold = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 60, submitter: 'tester', gpuIdleTimeoutS: 60 });
  assert.equal(hold.status, 400);
  assert.match(JSON.stringify(hold.body), /RC_IDLE_HOLD_RELEASE/);
});

// What the worker sees on a real GPU host, through the worker's own modules:
// the hello's inventory (the nvidia-smi probe), the heartbeat's samples (the
// GPU monitor) and the idle rule, a job's process told from a foreign one
// (RC_JOB_ID in /proc/<pid>/environ against nvidia-smi's pids), and the
// after-job memory check. The load is a PyTorch process (python3 with torch
// on the host; the load checks are skipped without it). Every nvidia-smi
// answer is kept in the report, as fixtures for the parser's tests.
//
//   npm run gpu-check -- [--out <dir>] [--python python3] [--gpu 0]
//
// or, on a host without the checkout, node dist/gpu-check.cjs (one file,
// built by scripts/build.mjs). Exits 1 when a check fails. It starts load
// on the GPU: run it on a host with no jobs.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gpuIdle } from '../core/idle';
import { Heartbeat, Inventory } from '../protocol/worker';
import { GpuMonitor } from '../worker/gpu-monitor';
import { Prober } from '../worker/inventory';
import { COMPUTE_APPS_QUERY, GPU_SAMPLE_QUERY, parseComputeApps } from '../worker/probes/parse';
import { NVIDIA_SMI_QUERY, runCommand } from '../worker/probes/run';

function options() {
  try {
    return parseArgs({ options: { out: { type: 'string' }, python: { type: 'string', default: 'python3' }, gpu: { type: 'string', default: '0' } } }).values;
  } catch (err) {
    console.error(`gpu-check: ${(err as Error).message}\nusage: gpu-check [--out <dir>] [--python python3] [--gpu 0]`);
    process.exit(2);
  }
}
const args = options();
const gpu = Number(args.gpu);
if (!Number.isInteger(gpu) || gpu < 0) {
  console.error(`gpu-check: --gpu takes a GPU index (0, 1 …), not ${JSON.stringify(args.gpu)}`);
  process.exit(2);
}
const out = args.out ?? mkdtempSync(join(tmpdir(), 'rc-gpu-check-'));
mkdirSync(out, { recursive: true });
const env = process.env;
const JOB = 'job-gpu-check';

interface Check {
  check: string;
  ok: boolean;
  detail: string;
}
const checks: Check[] = [];
const raw: Record<string, string> = {};
const timeline: unknown[] = [];
const started = performance.now();
const t = () => Math.round(performance.now() - started);
const log = (msg: string) => console.log(`[${(t() / 1000).toFixed(1)}s] ${msg}`);
const check = (name: string, ok: boolean, detail: string) => {
  checks.push({ check: name, ok, detail });
  log(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}`);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function smi(label: string, query: string[]): Promise<string> {
  const r = await runCommand('nvidia-smi', query, { env, timeoutMs: 15_000, maxBytes: 1024 * 1024 });
  const text = r.kind === 'exited' ? r.stdout : `(${r.kind})`;
  raw[label] = text;
  return text;
}

/** A PyTorch process on the GPU: `busy` multiplies bf16 matrices, `hold` keeps memory and computes nothing. */
function load(mode: 'busy' | 'hold', seconds: number, jobId: string | null): ChildProcess {
  const code = [
    'import time, torch',
    `d = torch.device('cuda:${gpu}')`,
    'x = torch.randn(8192, 8192, device=d, dtype=torch.bfloat16)',
    'keep = torch.empty(2 * 1024**3, dtype=torch.uint8, device=d)',
    'torch.cuda.synchronize(d)',
    "print('ready', flush=True)",
    `end = time.time() + ${seconds}`,
    'while time.time() < end:',
    mode === 'busy' ? '    y = x @ x; torch.cuda.synchronize(d)' : '    time.sleep(0.2)',
  ].join('\n');
  const childEnv = { ...env };
  delete childEnv.RC_JOB_ID;
  if (jobId) childEnv.RC_JOB_ID = jobId;
  const child = spawn(args.python!, ['-c', code], { env: childEnv, stdio: ['ignore', 'pipe', 'inherit'] });
  child.stdout!.on('data', (d: Buffer) => log(`${mode} load (pid ${child.pid}): ${d.toString().trim()}`));
  return child;
}

async function untilListed(pid: number, present: boolean, timeoutMs: number): Promise<number> {
  const from = performance.now();
  while (performance.now() - from < timeoutMs) {
    const apps = parseComputeApps(await smi(`apps-wait-${pid}-${present}`, COMPUTE_APPS_QUERY));
    if (apps.some((a) => a.pid === pid) === present) return Math.round(performance.now() - from);
    await sleep(250);
  }
  return -1;
}

function quantiles(xs: number[]): { p50: number; p90: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { p50: Math.round(at(0.5) * 10) / 10, p90: Math.round(at(0.9) * 10) / 10, max: Math.round(s[s.length - 1]! * 10) / 10 };
}

async function main(): Promise<number> {
  // 1. The hello: the worker's prober, as it runs at start.
  await smi('probe-query', NVIDIA_SMI_QUERY);
  await smi('banner', []);
  const prober = new Prober({ workspace: tmpdir(), fakeDevices: 2, configFile: null, env, log: (m) => log(`prober: ${m}`) });
  const inventory = await prober.run();
  const hello = Inventory.safeParse(inventory);
  check('hello inventory is valid', hello.success, hello.success ? `${inventory.devices.length} device(s)` : hello.error.message);
  const dev = inventory.devices.find((d) => d.index === gpu);
  const labels = Object.fromEntries((dev?.labels ?? []).map((l) => [l.key, l.value]));
  check('a GPU device, not CPU slots', !!dev && labels.kind === 'gpu' && !!dev.uuid, JSON.stringify(labels));
  if (!dev?.uuid) {
    log(raw['probe-query'] === '(not-started)' ? 'no nvidia-smi on PATH: rc sees no GPUs here' : `no GPU ${gpu} among what nvidia-smi lists`);
    return finish(null, inventory);
  }
  check('gpu_model canonical', /^[A-Z0-9-]+$/.test(labels.gpu_model ?? '') && labels.gpu_model !== labels.gpu_name, `${labels.gpu_name} → ${labels.gpu_model}`);
  check(
    'vram, driver and CUDA read',
    Number(labels.vram) > 1e9 && !!labels.driver_version && !!labels.cuda_version,
    `vram ${labels.vram}, driver ${labels.driver_version}, cuda ${labels.cuda_version}`,
  );
  const devices = [{ index: gpu, uuid: dev.uuid }];

  // 2. The heartbeat's samples on an idle GPU.
  const monitor = new GpuMonitor({ command: 'nvidia-smi', env, thresholdMiB: 512, settleMs: 10_000, log: (m) => log(`monitor: ${m}`) });
  let job: string | null = null;
  const tick = async (stage: string) => {
    const q = await monitor.tick(devices, (i) => (i === gpu ? job : null));
    const s = monitor.latest.find((x) => x.index === gpu);
    const beat = Heartbeat.safeParse({ gpus: monitor.latest });
    timeline.push({ t: t(), stage, sample: s, idle: s ? gpuIdle(s) : null, quarantines: q, validBeat: beat.success });
    return { q, s, valid: beat.success };
  };
  const idle1 = await tick('idle');
  check('idle sample valid for the controller', idle1.valid && !!idle1.s, JSON.stringify(idle1.s));
  await smi('sample-idle', GPU_SAMPLE_QUERY);
  await smi('apps-idle', COMPUTE_APPS_QUERY);
  check('idle GPU reads idle', !!idle1.s && gpuIdle(idle1.s) === true, `util ${idle1.s?.utilPct}%, procs ${idle1.s?.procs}, mem ${idle1.s?.memUsedMiB} MiB`);

  // What a heartbeat's two nvidia-smi calls cost.
  const sampleMs: number[] = [];
  const appsMs: number[] = [];
  for (let i = 0; i < 15; i++) {
    let from = performance.now();
    await runCommand('nvidia-smi', GPU_SAMPLE_QUERY, { env, timeoutMs: 15_000, maxBytes: 1 << 20 });
    sampleMs.push(performance.now() - from);
    from = performance.now();
    await runCommand('nvidia-smi', COMPUTE_APPS_QUERY, { env, timeoutMs: 15_000, maxBytes: 1 << 20 });
    appsMs.push(performance.now() - from);
  }
  const cost = { sample: quantiles(sampleMs), apps: quantiles(appsMs) };
  check('a heartbeat sample costs', true, `sample query ${JSON.stringify(cost.sample)} ms, compute-apps query ${JSON.stringify(cost.apps)} ms`);

  const torchOk = await runCommand(args.python!, ['-c', 'import torch; assert torch.cuda.is_available(); print(torch.__version__)'], {
    env,
    timeoutMs: 60_000,
    maxBytes: 1 << 16,
  });
  if (torchOk.kind !== 'exited' || torchOk.code !== 0) {
    check('load checks', false, `skipped: ${args.python} has no working torch with CUDA`);
    return finish(cost, inventory);
  }

  // 3. A job's busy process: not foreign, busy, then let go after it ends.
  job = JOB;
  const busy = load('busy', 40, JOB);
  const seenAfter = await untilListed(busy.pid!, true, 60_000);
  check('the job process is listed by nvidia-smi', seenAfter >= 0, `after ${seenAfter} ms`);
  await sleep(1500);
  const busyTicks = [];
  for (let i = 0; i < 4; i++) {
    busyTicks.push(await tick('job busy'));
    await sleep(500);
  }
  await smi('sample-busy', GPU_SAMPLE_QUERY);
  await smi('apps-busy', COMPUTE_APPS_QUERY);
  check(
    "the job's own process is not foreign",
    busyTicks.every((b) => b.q.length === 0),
    `pid ${busy.pid} with RC_JOB_ID=${JOB}; quarantines ${JSON.stringify(busyTicks.flatMap((b) => b.q))}`,
  );
  check(
    'a busy GPU reads busy',
    busyTicks.every((b) => !!b.s && gpuIdle(b.s) === false && (b.s.procs ?? 0) >= 1),
    busyTicks.map((b) => `util ${b.s?.utilPct}% procs ${b.s?.procs} mem ${b.s?.memUsedMiB}`).join('; '),
  );
  // The same process with no job running there is foreign: quarantined at its second sighting.
  job = null;
  const f1 = await tick('busy, job not running');
  const f2 = await tick('busy, job not running');
  check(
    "a job's process where its job is not running is foreign (second sighting)",
    f1.q.length === 0 && f2.q.length === 1 && f2.q[0]!.reason.includes(String(busy.pid)),
    f2.q[0]?.reason ?? 'no quarantine',
  );
  job = JOB;
  busy.kill('SIGTERM');
  const endAt = performance.now();
  const held = await monitor.afterJob(JOB, devices);
  check('after the job ends its memory is let go', held.length === 0, `afterJob after ${Math.round(performance.now() - endAt)} ms: ${JSON.stringify(held)}`);
  job = null;

  // 4. A foreign process that holds memory and computes nothing.
  const hold = load('hold', 40, null);
  const holdSeen = await untilListed(hold.pid!, true, 60_000);
  check('a foreign process is listed by nvidia-smi', holdSeen >= 0, `after ${holdSeen} ms`);
  await sleep(1500);
  const h1 = await tick('foreign hold');
  const h2 = await tick('foreign hold');
  await smi('sample-hold', GPU_SAMPLE_QUERY);
  await smi('apps-hold', COMPUTE_APPS_QUERY);
  check(
    'a foreign process is quarantined at its second sighting',
    h1.q.length === 0 && h2.q.length === 1 && h2.q[0]!.reason.includes('rc did not start it'),
    h2.q[0]?.reason ?? 'no quarantine',
  );
  check(
    'memory held without compute reads busy (a process is there)',
    !!h2.s && gpuIdle(h2.s) === false && (h2.s.utilPct ?? 100) <= 5,
    `util ${h2.s?.utilPct}% procs ${h2.s?.procs} mem ${h2.s?.memUsedMiB} MiB`,
  );
  const heldAfter = await new GpuMonitor({ command: 'nvidia-smi', env, thresholdMiB: 512, settleMs: 1_000, log: () => {} }).afterJob(JOB, devices);
  check('memory still held after a job is caught', heldAfter.length === 1, heldAfter[0]?.reason ?? 'not caught');
  hold.kill('SIGTERM');
  const gone = await untilListed(hold.pid!, false, 30_000);
  await sleep(1000);
  const idle2 = await tick('idle again');
  check('idle again once it is gone', gone >= 0 && !!idle2.s && gpuIdle(idle2.s) === true, `gone after ${gone} ms; ${JSON.stringify(idle2.s)}`);
  return finish(cost, inventory);
}

function finish(cost: unknown, inventory: unknown): number {
  const failed = checks.filter((c) => !c.ok);
  writeFileSync(join(out, 'gpu-check.json'), `${JSON.stringify({ date: new Date().toISOString(), checks, cost, inventory, timeline, raw }, null, 2)}\n`);
  console.log(`\n${checks.map((c) => `${c.ok ? 'ok  ' : 'FAIL'}  ${c.check}`).join('\n')}`);
  console.log(`${failed.length ? `${failed.length} check(s) failed` : 'all checks passed'}; report: ${join(out, 'gpu-check.json')}`);
  return failed.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(2);
  },
);

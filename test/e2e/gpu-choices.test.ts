// rc run --gpu A100:2,H100: choices of GPU model and count, against real
// workers whose (fake) nvidia-smi reports GPUs of several models.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fakeGpus, fakeNvidiaSmiDir } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

let stack: Stack;
const gates = mkdtempSync(join(tmpdir(), 'rc-gpu-choices-'));

before(async () => {
  stack = await Stack.start({ workers: [] });
  const withGpus = (host: string, name: string, n: number, memMiB?: number) =>
    stack.startWorker(host, n, { PATH: `${fakeNvidiaSmiDir(fakeGpus(host, name, n, memMiB))}:${process.env.PATH}` });
  await withGpus('amp', 'NVIDIA A100-SXM4-40GB', 2, 40960);
  await withGpus('hop', 'NVIDIA H100 80GB HBM3', 1);
  await withGpus('blk', 'NVIDIA GeForce RTX 5090', 1, 32607);
  await stack.waitFor(async () => (await stack.devices()).filter((d) => d.state === 'free').length === 4, 'the four GPUs to be free');
});
after(async () => stack.stop());

interface Job {
  state: string;
  devices: string[] | null;
  gpus: number;
  gpuChoices: string | null;
}
const jobOf = async (id: string) => ((await stack.api('GET', `/api/jobs/${id}`)).body as { job: Job }).job;

/** A job on `-d device` that runs until its gate file appears; resolves once it runs. */
async function occupy(device: string): Promise<{ release: () => Promise<void> }> {
  const gate = join(gates, device.replace(':', '-'));
  const r = stack.runJob(['-d', device], `while [ ! -e ${gate} ]; do sleep 0.05; done`);
  await r.id;
  return {
    release: async () => {
      writeFileSync(gate, '');
      assert.equal((await r.done).code, 0);
      await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === device)?.state === 'free', `${device} to be free again`);
      // The next occupant of the same device waits for a gate of its own.
      rmSync(gate, { force: true });
    },
  };
}

test('the first choice that can start now: two A100s on one host when both are free, else the H100', async () => {
  const first = stack.runJob(['--gpu', 'A100:2,H100'], 'echo "devices=$CUDA_VISIBLE_DEVICES"');
  const id = await first.id;
  const r = await first.done;
  assert.equal(r.code, 0, r.stderr);
  const job = await jobOf(id);
  assert.deepEqual([job.devices, job.gpus, job.gpuChoices], [['amp:gpu0', 'amp:gpu1'], 2, 'A100:2,H100']);

  const busy = await occupy('amp:gpu1');
  const second = stack.runJob(['--gpu', 'A100:2,H100'], 'true');
  const id2 = await second.id;
  assert.equal((await second.done).code, 0);
  const job2 = await jobOf(id2);
  assert.deepEqual([job2.devices, job2.gpus], [['hop:gpu0'], 1]);
  await busy.release();
});

test('with every choice busy it waits, and starts on whichever frees first', async () => {
  for (const frees of ['hop:gpu0', 'amp:gpu0'] as const) {
    const holders = await Promise.all(['amp:gpu0', 'hop:gpu0'].map((d) => occupy(d)));
    const waiting = stack.runJob(['--gpu', 'A100:2,H100'], 'true');
    let id = '';
    let ps = '';
    // It is queued (nothing it can take is free), and rc ps shows its choices.
    await stack
      .waitFor(async () => {
        ps = (await stack.cli(['ps'])).stdout;
        id = /(j[0-9a-v]{10})\s+queued #\d+\s+gpu A100:2,H100/.exec(ps)?.[1] ?? '';
        return id !== '';
      }, 'the job to queue')
      .catch((err: Error) => assert.fail(`${err.message}; rc ps:\n${ps}`));
    const [amp, hop] = holders;
    await (frees === 'hop:gpu0' ? hop! : amp!).release();
    assert.equal((await waiting.done).code, 0);
    const job = await jobOf(id);
    assert.deepEqual(job.devices, frees === 'hop:gpu0' ? ['hop:gpu0'] : ['amp:gpu0', 'amp:gpu1'], `when ${frees} frees first`);
    await (frees === 'hop:gpu0' ? amp! : hop!).release();
  }
});

test('every spelling of a model is the same choice', async () => {
  for (const spelling of ['5090', 'RTX5090', 'RTX 5090', 'geforce rtx 5090:1']) {
    const r = stack.runJob(['--gpu', spelling], 'true');
    const id = await r.id;
    assert.equal((await r.done).code, 0, spelling);
    assert.deepEqual((await jobOf(id)).devices, ['blk:gpu0'], spelling);
  }
});

test('--select holds for every choice: both must hold', async () => {
  const big = stack.runJob(['--select', 'vram>=60G', '--gpu', 'H100'], 'true');
  const id = await big.id;
  assert.equal((await big.done).code, 0);
  assert.deepEqual((await jobOf(id)).devices, ['hop:gpu0']);
  const small = stack.runJob(['--select', 'vram<=60G', '--gpu', 'A100:2,RTX5090'], 'true');
  const id2 = await small.id;
  assert.equal((await small.done).code, 0);
  assert.deepEqual((await jobOf(id2)).devices, ['amp:gpu0', 'amp:gpu1']);
  // An A100 of 40 GB is no choice for vram>=60G.
  const never = await stack.cli(['run', '--select', 'vram>=60G', '--gpu', 'A100', '--', 'true']);
  assert.equal(never.code, 201);
});

test('a choice no device could ever satisfy is named in the refusal, and nothing is queued', async () => {
  const before = ((await stack.api('GET', '/api/jobs?limit=200')).body as { jobs: unknown[] }).jobs.length;
  const cases: [string[], string][] = [
    [
      ['--gpu', 'A100:2,B200'],
      'rc: no_matching_device: no device could ever satisfy --gpu B200 (no B200 device); drop that choice from --gpu (rc devices lists the models)\n',
    ],
    [
      ['--gpu', 'A100:3,H100:2'],
      'rc: no_matching_device: no device could ever satisfy --gpu A100:3 (no host has 3 A100 devices; the most on one host is 2), H100:2 (no host has 2 H100 devices; the most on one host is 1); drop those choices from --gpu (rc devices lists the models)\n',
    ],
    [
      ['--select', 'vram>=60G', '--gpu', 'H100,A100'],
      'rc: no_matching_device: no device could ever satisfy --gpu A100 (no A100 device matching vram>=60G); drop that choice from --gpu or widen --select (rc devices lists the models)\n',
    ],
  ];
  for (const [args, stderr] of cases) {
    const r = await stack.cli(['run', ...args, '--', 'true']);
    assert.deepEqual([r.code, r.stderr], [201, stderr], args.join(' '));
  }
  const afterCount = ((await stack.api('GET', '/api/jobs?limit=200')).body as { jobs: unknown[] }).jobs.length;
  assert.equal(afterCount, before, 'a refusal stores no job');
});

test('bad --gpu input: unknown model, :0, :99, empty choices, beside --gpus or -d; in the CLI and in the API', async () => {
  const cli: [string[], RegExp][] = [
    [['--gpu', 'Z999'], /^rc: bad_gpu: --gpu Z999: no GPU family or model is called Z999; rc knows RTX5090, .*H100.*\n$/],
    [['--gpu', 'A100:0'], /^rc: bad_gpu: --gpu choice "A100:0": the count must be 1-8 GPUs on one host, not "0"\n$/],
    [['--gpu', 'A100:99'], /^rc: bad_gpu: .*not "99"\n$/],
    [['--gpu', ''], /^rc: bad_gpu: --gpu needs at least one choice/],
    [['--gpu', 'A100,,H100'], /^rc: bad_gpu: --gpu choice 2 is empty/],
    [['--gpu', 'A100', '--gpus', '2'], /drop --gpus/],
    [['--gpu', 'A100', '-d', 'amp:gpu0'], /give one or the other/],
  ];
  for (const [args, stderr] of cli) {
    const r = await stack.cli(['run', ...args, '--', 'true']);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, stderr, args.join(' '));
  }
  const api: [unknown, string, RegExp][] = [
    [{ gpu: 'A100:0' }, 'bad_gpu', /count must be 1-8/],
    [{ gpu: '' }, 'bad_gpu', /at least one choice/],
    [{ gpu: 'Z999' }, 'bad_gpu', /no GPU family or model is called Z999/],
    [{ gpu: 'A100', gpus: 2 }, 'bad_gpu', /drop --gpus/],
    [{ gpu: 7 }, 'bad_request', /gpu/],
    [{ gpu: 'x'.repeat(1001) }, 'bad_request', /gpu/],
  ];
  for (const [extra, code, message] of api) {
    const r = await stack.api('POST', '/api/jobs', { argv: ['true'], submitter: 'tester', ...(extra as object) });
    const e = (r.body as { error: { code: string; message: string } }).error;
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.equal(e.code, code, JSON.stringify(extra));
    assert.match(e.message, message, JSON.stringify(extra));
  }
  // The explain route takes the same grammar.
  const ex = await stack.api('POST', '/api/explain', { gpu: 'A100:9' });
  assert.equal(ex.status, 400);
  assert.equal((ex.body as { error: { code: string } }).error.code, 'bad_gpu');
});

test('--explain shows each choice: its matches, free count, queue, and what rc run would do', async () => {
  const busy = await occupy('hop:gpu0');
  const r = await stack.cli(['run', '--gpu', 'H100,A100:2,RTX5090:2', '--explain']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^choice 1, H100 \(family: gpu_family=H100\): 1 device\(s\) match, 0 free now, 0 job\(s\) queued for them; waits: none is free$/m);
  assert.match(r.stdout, /^ {2}match {2}hop:gpu0 {2}H100 {2}busy \(held by tester, job j[0-9a-v]{10}\)$/m);
  assert.match(r.stdout, /^choice 2, A100:2 \(family: gpu_family=A100\): 2 device\(s\) match, 2 free now, 0 job\(s\) queued for them; can start now$/m);
  assert.match(
    r.stdout,
    /^choice 3, RTX5090:2 \(family: gpu_family=RTX5090\): 1 device\(s\) match, 1 free now, 0 job\(s\) queued for them; can never start: no host has 2 of them$/m,
  );
  assert.match(r.stdout, /would be refused with no_matching_device/);
  const ok = await stack.cli(['run', '--gpu', 'H100,A100:2', '--explain']);
  assert.match(ok.stdout, /rc run would start on A100:2 now\./);
  await busy.release();
});

// npm run gpu-check (dist/gpu-check.cjs) here, with no GPU: its flags, a host
// without nvidia-smi, and a whole run against the fake nvidia-smi with a fake
// python3 standing in for PyTorch's load (it lists itself on GPU 0 while it runs).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FAKE_GPUS, fakeNvidiaSmiDir } from '../helpers/fake-nvidia-smi';

const SCRIPT = join(import.meta.dirname, '..', '..', 'dist', 'gpu-check.cjs');

function gpuCheck(args: string[], path: string) {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { env: { ...process.env, PATH: path }, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('bad flags: exit 2 with one sentence and the usage, no stack trace', () => {
  for (const [args, said] of [
    [['--bogus'], "gpu-check: Unknown option '--bogus'"],
    [['--gpu', 'x'], 'gpu-check: --gpu takes a GPU index (0, 1 …), not "x"'],
    [['--gpu=-1'], 'gpu-check: --gpu takes a GPU index (0, 1 …), not "-1"'],
  ] as const) {
    const r = gpuCheck([...args], process.env.PATH!);
    assert.equal(r.code, 2, r.err);
    assert.equal(r.err.split('\n')[0], said);
    assert.doesNotMatch(r.err, /\n\s+at /);
  }
});

test('a host without nvidia-smi: one sentence, the summary, exit 1', () => {
  const out = mkdtempSync(join(tmpdir(), 'rc-gpu-check-test-'));
  const r = gpuCheck(['--out', out], '/usr/bin:/bin');
  assert.equal(r.code, 1, r.err);
  assert.match(r.out, /no nvidia-smi on PATH: rc sees no GPUs here/);
  assert.match(r.out, /FAIL {2}a GPU device, not CPU slots\n1 check\(s\) failed; report: /);
  assert.equal(JSON.parse(readFileSync(join(out, 'gpu-check.json'), 'utf8')).checks.length, 2);
});

test('against the fake nvidia-smi: every check passes, and the report keeps what nvidia-smi printed', () => {
  const smi = fakeNvidiaSmiDir();
  const state = join(smi, 'state');
  // A load as gpu-check starts it: `python3 -c <code>`, matrix products (busy) or memory only (hold), listed on GPU 0 while it runs.
  const python = join(smi, 'python3');
  writeFileSync(
    python,
    `#!/bin/bash
case "$2" in *assert*) echo 2.11.0; exit 0;; esac
if [[ "$2" == *"x @ x"* ]]; then util=97; else util=0; fi
gone() { : > ${state}/apps; echo 0 > ${state}/used.0; echo 0 > ${state}/util.0; exit 0; }
trap gone TERM
echo "${FAKE_GPUS[0]!.uuid}, $$, 2600, python3" > ${state}/apps
echo 2600 > ${state}/used.0; echo $util > ${state}/util.0
echo ready
for i in $(seq 600); do sleep 0.1; done
gone
`,
  );
  chmodSync(python, 0o755);
  const out = mkdtempSync(join(tmpdir(), 'rc-gpu-check-test-'));
  const r = gpuCheck(['--out', out, '--python', python], `${smi}:/usr/bin:/bin`);
  assert.equal(r.code, 0, r.out + r.err);
  assert.match(r.out, /all checks passed/);
  const report = JSON.parse(readFileSync(join(out, 'gpu-check.json'), 'utf8'));
  assert.equal(report.checks.length, 17);
  assert.match(report.raw['apps-busy'], /^GPU-6a1b2c3d-0000-4000-8000-000000000001, \d+, 2600, python3\n$/);
  assert.match(report.raw['sample-busy'], /^0, 81559, 2600, 97, NVIDIA H100 80GB HBM3\n/);
});

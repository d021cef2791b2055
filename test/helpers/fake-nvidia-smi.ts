// The one stand-in rc allows: a fake nvidia-smi on PATH that prints the real
// formats (the --query-gpu CSVs, --query-compute-apps and the plain call's
// header) for two different GPUs. Memory use, utilisation and the processes
// on the GPUs come from files in its state folder, so a test (or a job) can
// change what the "GPUs" report.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const FAKE_GPUS = [
  { index: 0, uuid: 'GPU-6a1b2c3d-0000-4000-8000-000000000001', name: 'NVIDIA H100 80GB HBM3', memMiB: 81559 },
  { index: 1, uuid: 'GPU-6a1b2c3d-0000-4000-8000-000000000002', name: 'NVIDIA GeForce RTX 4090', memMiB: 24564 },
];

export type FakeGpu = (typeof FAKE_GPUS)[number];

/** Returns a folder to put first on PATH; its `state` subfolder holds used.N, util.N and apps. `gpus`: what it reports (FAKE_GPUS unless given). */
export function fakeNvidiaSmiDir(gpus: readonly FakeGpu[] = FAKE_GPUS): string {
  const dir = mkdtempSync(join(tmpdir(), 'rc-fake-smi-'));
  mkdirSync(join(dir, 'state'));
  const csv = gpus.map((g) => `${g.index}, ${g.uuid}, ${g.name}, ${g.memMiB}, 550.54.15`);
  const sample = gpus.map(
    (g) =>
      `echo "${g.index}, ${g.memMiB}, $(cat "$state/used.${g.index}" 2>/dev/null || echo 0), $(cat "$state/util.${g.index}" 2>/dev/null || echo 0), ${g.name}"`,
  );
  const script = [
    '#!/bin/sh',
    'state="$(dirname "$0")/state"',
    'case "$*" in',
    `  *--query-gpu=index,uuid,name,memory.total,driver_version*) printf '%s\\n' ${csv.map((l) => `'${l}'`).join(' ')} ;;`,
    `  *--query-gpu=index,memory.total,memory.used,utilization.gpu,name*) ${sample.join('; ')} ;;`,
    '  *--query-gpu=*) exit 6 ;;',
    '  *--query-compute-apps=gpu_uuid,pid,used_memory,process_name*) cat "$state/apps" 2>/dev/null; true ;;',
    "  *) echo '+-----------------------------------------------------------------------------------------+'",
    "     echo '| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |'",
    '     ;;',
    'esac',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'nvidia-smi'), script);
  chmodSync(join(dir, 'nvidia-smi'), 0o755);
  return dir;
}

/** `n` GPUs of one model for a fake host (UUIDs unique per `host`). */
export function fakeGpus(host: string, name: string, n: number, memMiB = 81559): FakeGpu[] {
  const tag = [...host]
    .reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7)
    .toString(16)
    .padStart(8, '0')
    .slice(-8);
  return Array.from({ length: n }, (_, index) => ({ index, uuid: `GPU-${tag}-0000-4000-8000-${String(index).padStart(12, '0')}`, name, memMiB }));
}

/** What the fake reports as used on one GPU, in MiB. */
export function setGpuMemoryUsed(dir: string, index: number, mib: number): void {
  writeFileSync(join(dir, 'state', `used.${index}`), `${mib}\n`);
}

export function setGpuUtilisation(dir: string, index: number, pct: number): void {
  writeFileSync(join(dir, 'state', `util.${index}`), `${pct}\n`);
}

/** The processes the fake lists as using the GPUs (--query-compute-apps rows). */
export function setGpuProcesses(dir: string, procs: { gpu: number; pid: number; usedMiB: number; name: string }[]): void {
  writeFileSync(join(dir, 'state', 'apps'), procs.map((p) => `${FAKE_GPUS[p.gpu]!.uuid}, ${p.pid}, ${p.usedMiB}, ${p.name}\n`).join(''));
}

// The one stand-in rc allows: a fake nvidia-smi on PATH that prints the real
// formats (the --query-gpu CSV and the plain call's header) for two different GPUs.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const FAKE_GPUS = [
  { index: 0, uuid: 'GPU-6a1b2c3d-0000-4000-8000-000000000001', name: 'NVIDIA H100 80GB HBM3', memMiB: 81559 },
  { index: 1, uuid: 'GPU-6a1b2c3d-0000-4000-8000-000000000002', name: 'NVIDIA GeForce RTX 4090', memMiB: 24564 },
];

/** Returns a folder to put first on PATH. */
export function fakeNvidiaSmiDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rc-fake-smi-'));
  const csv = FAKE_GPUS.map((g) => `${g.index}, ${g.uuid}, ${g.name}, ${g.memMiB}, 550.54.15`);
  const script = [
    '#!/bin/sh',
    'case "$*" in',
    `  *--query-gpu=index,uuid,name,memory.total,driver_version*) printf '%s\\n' ${csv.map((l) => `'${l}'`).join(' ')} ;;`,
    '  *--query-gpu=*) exit 6 ;;',
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

// What this host offers: its GPUs from nvidia-smi, or, with no nvidia-smi,
// CPU slots that say plainly they are not GPUs.
import { execFile } from 'node:child_process';
import { cpus, hostname, totalmem } from 'node:os';
import { canonicalGpuModel } from '../core/gpu-names';
import type { ReportedLabel } from '../protocol/worker';

export interface InventoryDevice {
  index: number;
  uuid: string | null;
  labels: ReportedLabel[];
}

export interface Inventory {
  hostLabels: ReportedLabel[];
  devices: InventoryDevice[];
}

const detected = (key: string, value: string, probe: string): ReportedLabel => ({ key, value, source: 'detected', probe });

export async function takeInventory(fakeDevices: number): Promise<Inventory> {
  const hostLabels = [
    detected('hostname', hostname(), 'host'),
    detected('cpus', String(cpus().length), 'host'),
    detected('mem_total_bytes', String(totalmem()), 'host'),
  ];
  const gpus = await queryGpus();
  if (gpus) return { hostLabels, devices: gpus };
  const devices = Array.from({ length: fakeDevices }, (_, index): InventoryDevice => ({
    index,
    uuid: null,
    labels: [
      detected('kind', 'cpu-slot', 'host'),
      detected('gpu_model', 'none', 'host'),
      detected('note', 'not a GPU: this host has no nvidia-smi, so rc offers CPU slots', 'host'),
    ],
  }));
  return { hostLabels, devices };
}

/** Parses `nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version --format=csv,noheader,nounits`. */
export function parseGpuCsv(csv: string): InventoryDevice[] {
  const out: InventoryDevice[] = [];
  for (const line of csv.split('\n')) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length < 5 || !/^\d+$/.test(cells[0]!)) continue;
    const [index, uuid, name, memMiB, driver] = cells as [string, string, string, string, string];
    const labels = [
      detected('kind', 'gpu', 'nvidia-smi'),
      detected('vendor', 'nvidia', 'nvidia-smi'),
      detected('gpu_model', canonicalGpuModel(name), 'nvidia-smi'),
      detected('gpu_name', name, 'nvidia-smi'),
      detected('gpu_uuid', uuid, 'nvidia-smi'),
      detected('gpu_index', index, 'nvidia-smi'),
      detected('driver_version', driver, 'nvidia-smi'),
    ];
    if (/^\d+$/.test(memMiB)) labels.push(detected('vram', String(Number(memMiB) * 1024 * 1024), 'nvidia-smi'));
    out.push({ index: Number(index), uuid: uuid.startsWith('GPU-') ? uuid : null, labels });
  }
  return out;
}

function queryGpus(): Promise<InventoryDevice[] | null> {
  return new Promise((resolve) => {
    execFile('nvidia-smi', ['--query-gpu=index,uuid,name,memory.total,driver_version', '--format=csv,noheader,nounits'], { timeout: 10_000 }, (err, stdout) => {
      // No nvidia-smi at all: a CPU host. One that fails: a GPU host in trouble, which offers nothing.
      if (err) return resolve((err as NodeJS.ErrnoException).code === 'ENOENT' ? null : []);
      resolve(parseGpuCsv(stdout));
    });
  });
}

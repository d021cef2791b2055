// A simulated host's inventory, label for label what the real worker's probes
// report (worker/probes/parse.ts for nvidia-smi, worker/probes/run.ts for the
// host probe), plus the declared label simulated=true. Pure.
import { createHash } from 'node:crypto';
import type { Inventory, ReportedLabel } from '../../protocol/worker';
import { gpuLabels } from '../../core/gpu-names';
import { GPU_MODELS } from './catalog';
import type { SimHostSpec } from './spec';

export const DRIVER_VERSION = '550.90.07';
export const CUDA_VERSION = '12.4';

/** A stable UUID per host and index, shaped like nvidia-smi's (`GPU-8-4-4-4-12`). */
export function gpuUuid(host: string, index: number): string {
  const h = createHash('sha1').update(`${host}:gpu${index}`).digest('hex');
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export function simInventory(spec: SimHostSpec, now: Date): Inventory {
  const seenAt = now.toISOString();
  const detected = (probe: string, key: string, value: string): ReportedLabel => ({ key, value, source: 'detected', probe, seenAt, stale: null });
  const declared = (key: string, value: string): ReportedLabel => ({ key, value, source: 'declared', probe: null, seenAt, stale: null });
  const cpus = Math.min(256, 16 * spec.devices.length);
  const hostLabels: ReportedLabel[] = [
    declared('simulated', 'true'),
    ...Object.entries(spec.labels ?? {}).map(([k, v]) => declared(k, v)),
    detected('host', 'hostname', spec.name),
    detected('host', 'cpus', String(cpus)),
    detected('host', 'mem_total_bytes', String(cpus * 8 * 1024 ** 3)),
    detected('host', 'runtime', 'host'),
    detected('host', 'disk_free_bytes', String(2 * 1024 ** 4)),
  ];
  const devices = spec.devices.map((d, index) => {
    const model = GPU_MODELS[d.model];
    const uuid = gpuUuid(spec.name, index);
    const nv = (key: string, value: string) => detected('nvidia-smi', key, value);
    return {
      index,
      uuid,
      labels: [
        nv('kind', 'gpu'),
        nv('vendor', 'nvidia'),
        ...gpuLabels(model.smiName, model.memTotalMiB).map((l) => nv(l.key, l.value)),
        nv('gpu_name', model.smiName),
        nv('gpu_uuid', uuid),
        nv('gpu_index', String(index)),
        nv('driver_version', DRIVER_VERSION),
        nv('cuda_version', CUDA_VERSION),
      ],
    };
  });
  return { hostLabels, devices };
}

// The GPUs a simulated host can have: each as nvidia-smi names it and with
// the memory it reports (MiB), so the labels the controller derives
// (gpu_model through core/gpu-names.ts, vram) are those of the real card.
import { canonicalGpuModel } from '../../core/gpu-names';

export interface GpuModel {
  /** What nvidia-smi prints in its name column. */
  smiName: string;
  /** memory.total as nvidia-smi reports it, in MiB. */
  memTotalMiB: number;
  /** Utilisation (%) of the card while a job runs on it: the random walk's band. */
  busyUtil: [number, number];
}

export const GPU_MODELS = {
  'A100-80GB': { smiName: 'NVIDIA A100-SXM4-80GB', memTotalMiB: 81920, busyUtil: [70, 100] },
  A100: { smiName: 'NVIDIA A100-SXM4-40GB', memTotalMiB: 40960, busyUtil: [70, 100] },
  H100: { smiName: 'NVIDIA H100 80GB HBM3', memTotalMiB: 81559, busyUtil: [75, 100] },
  H200: { smiName: 'NVIDIA H200', memTotalMiB: 143771, busyUtil: [75, 100] },
  RTX4090: { smiName: 'NVIDIA GeForce RTX 4090', memTotalMiB: 24564, busyUtil: [60, 100] },
  RTX5090: { smiName: 'NVIDIA GeForce RTX 5090', memTotalMiB: 32607, busyUtil: [60, 100] },
  L4: { smiName: 'NVIDIA L4', memTotalMiB: 23034, busyUtil: [40, 95] },
  L40S: { smiName: 'NVIDIA L40S', memTotalMiB: 46068, busyUtil: [50, 100] },
  V100: { smiName: 'Tesla V100-SXM2-16GB', memTotalMiB: 16384, busyUtil: [60, 100] },
  T4: { smiName: 'Tesla T4', memTotalMiB: 15360, busyUtil: [40, 90] },
} as const satisfies Record<string, GpuModel>;

export type GpuModelName = keyof typeof GPU_MODELS;

export function isGpuModel(name: string): name is GpuModelName {
  return Object.hasOwn(GPU_MODELS, name);
}

/** The model of a name as the catalogue or rc spells it (`a100-80gb`, `RTX 4090`), or null. */
export function findGpuModel(name: string): GpuModelName | null {
  if (isGpuModel(name)) return name;
  const canonical = canonicalGpuModel(name);
  return (Object.keys(GPU_MODELS) as GpuModelName[]).find((k) => canonicalGpuModel(GPU_MODELS[k].smiName) === canonical) ?? null;
}

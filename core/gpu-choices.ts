// rc run --gpu A100:2,H100: any one of these, in order of preference. Each
// choice is a GPU family or exact model (normalised as everywhere else:
// core/gpu-names.ts) and how many of it on one host. A choice is the job's
// selector plus `gpu_family=A100` (any A100, 40 or 80 GB) or, for an exact
// model of a larger family, `gpu_model=A100-80GB` (only that), with its own
// count: the scheduler tries them in order.
import { canonicalGpuModel, gpuNameKind } from './gpu-names';
import type { SelectorTerm } from './selector';

export interface GpuChoice {
  /** The canonical name (canonicalGpuModel) of a family (`A100`) or an exact model (`A100-80GB`): gpuNameKind says which. */
  model: string;
  /** GPUs of it on one host (1-8). */
  count: number;
}

/** The most choices one --gpu may list. */
export const MAX_GPU_CHOICES = 8;
/** As --gpus: the most GPUs one job takes on one host. */
export const MAX_GPUS = 8;

export type GpuChoicesResult = { ok: true; choices: GpuChoice[] } | { ok: false; message: string };

/**
 * `A100:2,H100` → [{A100, 2}, {H100, 1}]. Never throws. Refused: an empty
 * list or choice, a count that is not 1-8, a model listed twice, more than
 * MAX_GPU_CHOICES choices. Whether a model exists is the fleet's to say (the
 * controller refuses one no device has and rc does not know).
 */
export function parseGpuChoices(text: string): GpuChoicesResult {
  if (typeof text !== 'string' || text.trim() === '') return bad('--gpu needs at least one choice, e.g. --gpu A100:2,H100');
  const parts = text.split(',');
  if (parts.length > MAX_GPU_CHOICES) return bad(`--gpu lists ${parts.length} choices; at most ${MAX_GPU_CHOICES}`);
  const choices: GpuChoice[] = [];
  for (const [i, raw] of parts.entries()) {
    const part = raw.trim();
    if (part === '') return bad(`--gpu choice ${i + 1} is empty (two commas in a row, or one at an end?); write MODEL or MODEL:COUNT, e.g. A100:2`);
    const colon = part.lastIndexOf(':');
    const name = (colon < 0 ? part : part.slice(0, colon)).trim();
    const countText = colon < 0 ? '1' : part.slice(colon + 1).trim();
    if (name === '') return bad(`--gpu choice "${part}" has no model; write MODEL:COUNT, e.g. A100:2`);
    if (!/^\d{1,3}$/.test(countText) || Number(countText) < 1 || Number(countText) > MAX_GPUS) {
      return bad(`--gpu choice "${part}": the count must be 1-${MAX_GPUS} GPUs on one host, not "${countText}"`);
    }
    if (/[\x00-\x1f\x7f,'"=!<>]/.test(name) || name.length > 64) return bad(`--gpu choice "${part}": "${name}" is not a GPU model name`);
    const model = canonicalGpuModel(name);
    if (choices.some((c) => c.model === model)) return bad(`--gpu lists ${model} twice; give each model once, with the count you want`);
    choices.push({ model, count: Number(countText) });
  }
  return { ok: true, choices };
}

/** The choices as --gpu takes them: `A100:2,H100` (a count of 1 is left out). */
export function formatGpuChoices(choices: readonly GpuChoice[]): string {
  return choices.map(formatGpuChoice).join(',');
}

export function formatGpuChoice(c: GpuChoice): string {
  return c.count === 1 ? c.model : `${c.model}:${c.count}`;
}

/** A choice's selector: the job's terms and `gpu_family=NAME`, or `gpu_model=NAME` for an exact model of a larger family. */
export function choiceTerms(terms: readonly SelectorTerm[], choice: Pick<GpuChoice, 'model'>): SelectorTerm[] {
  const key = choiceKey(choice);
  return [...terms, { key, op: '=', value: choice.model, column: 0, text: `${key}=${choice.model}` }];
}

/** The label a choice matches: gpu_family, or gpu_model for an exact model (core/gpu-names.ts gpuNameKind). */
export function choiceKey(choice: Pick<GpuChoice, 'model'>): 'gpu_family' | 'gpu_model' {
  return gpuNameKind(choice.model) === 'model' ? 'gpu_model' : 'gpu_family';
}

function bad(message: string): GpuChoicesResult {
  return { ok: false, message };
}

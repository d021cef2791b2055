// Where a job may run and how it waits for a device: the flags rc run and
// rc hold share, and the submit fields they become (protocol/api.ts JOB_PLACEMENT).
import { durationFlag, intFlag, stringFlag, type FlagSpec, type Parsed } from './flags';
import { parseGpuChoices } from '../core/gpu-choices';
import { EXIT } from '../core/exit-codes';
import { fail, usage } from './output';

export const PLACEMENT_FLAGS: readonly FlagSpec[] = [
  { name: 'select', short: 's', type: 'string', repeat: true },
  { name: 'device', short: 'd', type: 'string' },
  { name: 'gpus', type: 'string' },
  { name: 'gpu', type: 'string' },
  { name: 'priority', type: 'string' },
  { name: 'no-wait', type: 'boolean' },
  { name: 'timeout', type: 'string' },
];

export function placementOf(parsed: Parsed): {
  selector: string;
  device: string | null;
  gpus: number;
  gpu?: string;
  priority: number;
  wait: boolean;
  waitTimeoutS: number | undefined;
} {
  const gpu = stringFlag(parsed, 'gpu');
  if (gpu !== undefined) {
    // Checked here as the controller will (core/gpu-choices.ts), with the code it would answer; whether a model exists is the fleet's to say.
    const choices = parseGpuChoices(gpu);
    if (!choices.ok) fail('bad_gpu', choices.message, EXIT.usage);
    if (parsed.flags.has('gpus')) usage('--gpu gives the count of each choice (A100:2); drop --gpus');
    if (parsed.flags.has('device')) usage('-d names one device and --gpu a choice of models: give one or the other');
  }
  return {
    ...(gpu !== undefined ? { gpu } : {}),
    selector: selectorOf(parsed),
    device: stringFlag(parsed, 'device') ?? null,
    gpus: intFlag(parsed, 'gpus', 1, 8) ?? 1,
    priority: intFlag(parsed, 'priority', -10, 10) ?? 0,
    wait: !parsed.flags.has('no-wait'),
    waitTimeoutS: durationFlag(parsed, 'timeout', 1),
  };
}

/** rc run's flags for a machine launched for the job (protocol/api.ts JOB_CLOUD): a job's only, not a hold's. */
export const CLOUD_FLAGS: readonly FlagSpec[] = [
  { name: 'cloud-only', type: 'boolean' },
  { name: 'cloud', type: 'string' },
  { name: 'max-price', type: 'string' },
  { name: 'spot', type: 'boolean' },
];

/** --cloud-only and its flags as submit fields; each of the others without it is refused here, as the controller would (bad_cloud). */
export function cloudOf(parsed: Parsed): { cloudOnly?: true; cloud?: string; maxPrice?: number; spot?: true } {
  const cloudOnly = parsed.flags.has('cloud-only');
  if (!cloudOnly)
    for (const name of ['cloud', 'max-price', 'spot'])
      if (parsed.flags.has(name)) fail('bad_cloud', `--${name} is for a machine launched for the job: add --cloud-only`, EXIT.usage);
  const cloud = stringFlag(parsed, 'cloud');
  const priceText = stringFlag(parsed, 'max-price');
  const maxPrice = priceText === undefined ? undefined : Number(priceText.replace(/^\$/, ''));
  if (priceText !== undefined && (!/^\$?\d+(\.\d+)?$/.test(priceText) || maxPrice! < 0.01 || maxPrice! > 10_000))
    usage(`--max-price must be US dollars an hour from 0.01 to 10000 (2.5), not ${priceText}`);
  return {
    ...(cloudOnly ? { cloudOnly: true as const } : {}),
    ...(cloud !== undefined ? { cloud } : {}),
    ...(maxPrice !== undefined ? { maxPrice } : {}),
    ...(parsed.flags.has('spot') ? { spot: true as const } : {}),
  };
}

/** Every --select given, ANDed (`-s a -s b` is `a,b`): a second one adds to the first, never replaces it. */
export function selectorOf(parsed: Parsed): string {
  return (parsed.lists.get('select') ?? []).filter((s) => s.trim() !== '').join(',');
}

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

/** Every --select given, ANDed (`-s a -s b` is `a,b`): a second one adds to the first, never replaces it. */
export function selectorOf(parsed: Parsed): string {
  return (parsed.lists.get('select') ?? []).filter((s) => s.trim() !== '').join(',');
}

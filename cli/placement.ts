// Where a job may run and how it waits for a device: the flags rc run and
// rc hold share, and the submit fields they become (protocol/api.ts JOB_PLACEMENT).
import { durationFlag, intFlag, stringFlag, type FlagSpec, type Parsed } from './flags';

export const PLACEMENT_FLAGS: readonly FlagSpec[] = [
  { name: 'select', short: 's', type: 'string' },
  { name: 'device', short: 'd', type: 'string' },
  { name: 'gpus', type: 'string' },
  { name: 'priority', type: 'string' },
  { name: 'no-wait', type: 'boolean' },
  { name: 'timeout', type: 'string' },
];

export function placementOf(parsed: Parsed): {
  selector: string;
  device: string | null;
  gpus: number;
  priority: number;
  wait: boolean;
  waitTimeoutS: number | undefined;
} {
  return {
    selector: stringFlag(parsed, 'select') ?? '',
    device: stringFlag(parsed, 'device') ?? null,
    gpus: intFlag(parsed, 'gpus', 1, 8) ?? 1,
    priority: intFlag(parsed, 'priority', -10, 10) ?? 0,
    wait: !parsed.flags.has('no-wait'),
    waitTimeoutS: durationFlag(parsed, 'timeout', 1),
  };
}

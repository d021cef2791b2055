// Where a job may run and how it waits for a device: the flags rc run and
// rc hold share, and the submit fields they become (protocol/api.ts JOB_PLACEMENT).
import { durationFlag, intFlag, stringFlag, type FlagSpec, type Parsed } from './flags';
import { parseGpuChoices } from '../core/gpu-choices';
import { EXIT } from '../core/exit-codes';
import { fail, usage } from './output';
import type { SubmitJob } from '../protocol/api';
import { MAX_KEEP_S } from '../core/job-options';
import { parseDuration } from '../core/duration';

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

/** rc run's flags for where it may run besides the joined hosts, and what a provider machine for it must be (protocol/api.ts JOB_MACHINE). */
export const MACHINE_FLAGS: readonly FlagSpec[] = [
  { name: 'cloud-only', type: 'boolean' },
  { name: 'reserved-only', type: 'boolean' },
  { name: 'cloud', type: 'string' },
  { name: 'max-price', type: 'string' },
  { name: 'spot', type: 'boolean' },
  { name: 'cpus', type: 'string' },
  { name: 'ram', type: 'string' },
  { name: 'disk', type: 'string' },
  { name: 'cuda', type: 'string' },
  { name: 'keep', type: 'string' },
];

/** The machine flags as submit fields; how they combine is the controller's rule (checkMachine), so it answers those. */
export function machineOf(
  parsed: Parsed,
): Partial<Pick<SubmitJob, 'placement' | 'cloud' | 'maxPrice' | 'spot' | 'cpus' | 'ramGiB' | 'diskGiB' | 'cuda' | 'keepS'>> {
  const cloudOnly = parsed.flags.has('cloud-only');
  const reservedOnly = parsed.flags.has('reserved-only');
  if (cloudOnly && reservedOnly) fail('bad_cloud', '--cloud-only and --reserved-only contradict each other: give one', EXIT.usage);
  const priceText = stringFlag(parsed, 'max-price');
  const maxPrice = priceText === undefined ? undefined : Number(priceText.replace(/^\$/, ''));
  if (priceText !== undefined && (!/^\$?\d+(\.\d+)?$/.test(priceText) || maxPrice! < 0.01 || maxPrice! > 10_000))
    usage(`--max-price must be US dollars an hour from 0.01 to 10000 (2.5), not ${priceText}`);
  const cuda = stringFlag(parsed, 'cuda');
  if (cuda !== undefined && !/^\d{1,2}\.\d{1,2}$/.test(cuda)) usage(`--cuda takes a CUDA version such as 12.4, not ${cuda}`);
  const keep = stringFlag(parsed, 'keep');
  const keepS = keep === undefined ? undefined : parseDuration(keep);
  if (keep !== undefined && (keepS === null || keepS! > MAX_KEEP_S)) usage(`--keep takes a duration from 0 (delete at once) to 24h, such as 5m; not ${keep}`);
  const fields = {
    placement: cloudOnly ? ('cloud' as const) : reservedOnly ? ('reserved' as const) : undefined,
    cloud: stringFlag(parsed, 'cloud'),
    maxPrice,
    spot: parsed.flags.has('spot') ? true : undefined,
    cpus: intFlag(parsed, 'cpus', 1, 1024),
    ramGiB: intFlag(parsed, 'ram', 1, 65_536),
    diskGiB: intFlag(parsed, 'disk', 1, 1_000_000),
    cuda,
    keepS: keepS ?? undefined,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

/** Every --select given, ANDed (`-s a -s b` is `a,b`): a second one adds to the first, never replaces it. */
export function selectorOf(parsed: Parsed): string {
  return (parsed.lists.get('select') ?? []).filter((s) => s.trim() !== '').join(',');
}

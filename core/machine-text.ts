// A job's placement and machine flags, and the provider machine it ran on, in
// words: rc describe <job> and the job's page say them alike.
import type { JobMachineView, JobView } from '../protocol/wire';
import { formatDuration } from './duration';

/** `$2.50/h`: a price an hour, to the cent. */
export function pricePerHourText(usd: number): string {
  return `$${usd.toFixed(2)}/h`;
}

/**
 * `cloud (--cloud local, --max-price $2.50/h, --spot, --keep 1m30s, at least 2 CPUs, 8 GiB RAM, CUDA 12.4)`,
 * `reserved only`; null for a job that asked nothing of the kind (placement any, no machine flag).
 */
export function placementText(j: Pick<JobView, 'placement' | 'machine'>): string | null {
  if (j.placement === 'reserved') return 'reserved only';
  const m = j.machine;
  if (!m) return j.placement === 'any' ? null : j.placement;
  const min = m.min
    ? [
        m.min.cpus !== undefined && `${m.min.cpus} CPU${m.min.cpus === 1 ? '' : 's'}`,
        m.min.ramGiB !== undefined && `${m.min.ramGiB} GiB RAM`,
        m.min.diskGiB !== undefined && `${m.min.diskGiB} GiB disk`,
        m.min.cuda !== undefined && `CUDA ${m.min.cuda}`,
      ].filter((x): x is string => Boolean(x))
    : [];
  const parts = [
    m.cloud !== null && `--cloud ${m.cloud}`,
    m.maxPrice !== null && `--max-price ${pricePerHourText(m.maxPrice)}`,
    m.spot && '--spot',
    m.keepS !== null && `--keep ${m.keepS === 0 ? '0' : formatDuration(m.keepS)}`,
    min.length > 0 && `at least ${min.join(', ')}`,
  ].filter((x): x is string => Boolean(x));
  return parts.length ? `${j.placement} (${parts.join(', ')})` : j.placement;
}

/** `local, 1× H100, $2.10/h simulated, spot`: what a provider machine is, as the queue says it. */
export function machineShapeText(m: Pick<JobMachineView, 'account' | 'gpuCount' | 'gpuModel' | 'pricePerHour' | 'simulated' | 'spot'>): string {
  return `${m.account}, ${m.gpuCount}× ${m.gpuModel ?? 'no GPU'}, ${pricePerHourText(m.pricePerHour)}${m.simulated ? ' simulated' : ''}${m.spot ? ', spot' : ''}`;
}

/** `m… (local, 1× H100, $2.10/h simulated), now terminated (keep expired)`: the machine a job ran on and how it is now. */
export function ranOnText(m: JobMachineView): string {
  return `${m.id} (${machineShapeText(m)}), now ${m.state}${m.terminatedWhy ? ` (${m.terminatedWhy})` : ''}`;
}

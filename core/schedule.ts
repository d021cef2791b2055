// The scheduling decision: which queued jobs start now, on which devices.
// Pure: the caller loads the state, this decides, the caller commits (and the
// database's one-active-lease index re-checks the plan at commit).
import { matchTerms, type Labels, type SelectorTerm } from './selector';

export interface QueuedJob {
  id: string;
  priority: number;
  seq: number;
  terms: readonly SelectorTerm[];
  /** A device asked for by name (`-d host:gpuN`). */
  deviceName: string | null;
  gpus: number;
}

export interface DeviceView {
  id: number;
  name: string;
  hostName: string;
  index: number;
  labels: Labels;
  /** Free means: present, host online, healthy and no active lease. */
  free: boolean;
}

export interface Assignment {
  jobId: string;
  devices: DeviceView[];
}

/** Higher priority first, then submission order. */
export function queueOrder(a: QueuedJob, b: QueuedJob): number {
  return b.priority - a.priority || a.seq - b.seq;
}

export function deviceMatches(job: Pick<QueuedJob, 'terms' | 'deviceName'>, device: Pick<DeviceView, 'name' | 'labels'>): boolean {
  if (job.deviceName !== null && job.deviceName !== device.name) return false;
  return matchTerms(job.terms, device.labels);
}

/**
 * Walk the queue in order and give each job the first devices that fit. A job
 * that cannot start does not hold up the jobs behind it (backfill).
 */
export function decide(queued: readonly QueuedJob[], devices: readonly DeviceView[]): Assignment[] {
  const free = devices.filter((d) => d.free).sort(byHostThenIndex);
  const taken = new Set<number>();
  const out: Assignment[] = [];
  for (const job of [...queued].sort(queueOrder)) {
    const fits = free.filter((d) => !taken.has(d.id) && deviceMatches(job, d));
    const pick = pickOnOneHost(fits, job.gpus);
    if (!pick) continue;
    for (const d of pick) taken.add(d.id);
    out.push({ jobId: job.id, devices: pick });
  }
  return out;
}

/** The first host (in name order) with enough fitting devices; all on one host. */
function pickOnOneHost(fits: DeviceView[], count: number): DeviceView[] | null {
  const byHost = new Map<string, DeviceView[]>();
  for (const d of fits) {
    const list = byHost.get(d.hostName) ?? [];
    list.push(d);
    if (list.length === count) return list;
    byHost.set(d.hostName, list);
  }
  return null;
}

function byHostThenIndex(a: DeviceView, b: DeviceView): number {
  return a.hostName < b.hostName ? -1 : a.hostName > b.hostName ? 1 : a.index - b.index;
}

export function deviceName(hostName: string, index: number): string {
  return `${hostName}:gpu${index}`;
}

/** `host:gpuN` → its parts, or null when it is not a device name. */
export function parseDeviceName(name: string): { hostName: string; index: number } | null {
  const m = /^([A-Za-z0-9][A-Za-z0-9._-]*):gpu(\d{1,3})$/.exec(name);
  return m ? { hostName: m[1]!, index: Number(m[2]) } : null;
}

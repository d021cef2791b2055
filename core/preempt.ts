// Preemption, the pure rule: which --preemptible jobs stop (SIGTERM, notice,
// SIGKILL) so that a queued job that is not preemptible can start. Only when
// that job can start nowhere with what is free; the victims are taken lowest
// priority first, then the most recently started (it loses the least work),
// then by job id so that the choice never depends on the order of the input.
import { byHostThenIndex, deviceMatches, type DeviceView, type QueuedJob, variantsOf } from './schedule';

/** A running --preemptible job that may be stopped (no stop asked of it yet). */
export interface Preemptible {
  jobId: string;
  priority: number;
  /** When it started (ms). */
  startedAt: number;
  hostName: string;
  /** The ids of the devices it holds. */
  deviceIds: readonly number[];
}

export interface Preemption {
  /** The jobs to stop, in the rule's order. */
  victims: string[];
  /** The devices held back for the waiting job while they stop: its host's free matching devices and the victims' matching ones. */
  devices: DeviceView[];
}

/** The rule's order: lowest priority first, then the most recently started, then job id. */
export function victimOrder(a: Preemptible, b: Preemptible): number {
  return a.priority - b.priority || b.startedAt - a.startedAt || (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0);
}

/**
 * The victims for `job`, or null when preemption cannot start it (it is
 * preemptible itself, or no host has enough matching devices that are free or
 * held by preemptible jobs of its priority or lower). `devices`: the schedulable devices, free or busy;
 * `unavailable`: devices no longer to be counted (taken by this pass, held
 * back for another job). Per host, the fewest victims in the rule's order that
 * make room; among hosts, the one whose victims come first in that order
 * (compared victim by victim; then fewer victims; then host name). A job
 * with --gpu choices takes its first choice that preemption can make room for.
 */
export function pickVictims(
  job: QueuedJob & { preemptible?: boolean },
  devices: readonly DeviceView[],
  running: readonly Preemptible[],
  unavailable: ReadonlySet<number> = new Set(),
): Preemption | null {
  if (job.preemptible) return null;
  // Never a job that matters more than the one waiting: a priority -10 job does not stop a priority 10 one. The same
  // priority may (the point of --preemptible: a batch job gives way to one that is not, at the default priority too).
  const ordered = running.filter((v) => v.priority <= job.priority).sort(victimOrder);
  const holderOf = new Map<number, Preemptible>();
  for (const v of ordered) for (const id of v.deviceIds) holderOf.set(id, v);
  const sorted = [...devices].sort(byHostThenIndex);
  // Each --gpu choice in order of preference; room without preemption for any of them: nobody is stopped.
  const options = variantsOf(job).map((v) => victimsFor(v, sorted, ordered, holderOf, unavailable));
  if (options.includes('room')) return null;
  return options.find((o): o is Preemption => o !== null && o !== 'room') ?? null;
}

/** pickVictims for one way of placing the job: 'room' when some host already has enough free for it. */
function victimsFor(
  job: QueuedJob,
  devices: readonly DeviceView[],
  ordered: readonly Preemptible[],
  holderOf: ReadonlyMap<number, Preemptible>,
  unavailable: ReadonlySet<number>,
): Preemption | 'room' | null {
  const rank = new Map(ordered.map((v, i) => [v.jobId, i]));
  const byHost = new Map<string, DeviceView[]>();
  for (const d of devices) {
    if (unavailable.has(d.id) || !deviceMatches(job, d)) continue;
    if (!d.free && !holderOf.has(d.id)) continue;
    byHost.set(d.hostName, [...(byHost.get(d.hostName) ?? []), d]);
  }
  // Room without preemption somewhere: it starts there (decide places it), nobody is stopped.
  for (const list of byHost.values()) if (list.filter((d) => d.free).length >= job.gpus) return 'room';
  let best: { host: string; victims: Preemptible[]; devices: DeviceView[] } | null = null;
  for (const [host, list] of byHost) {
    const free = list.filter((d) => d.free);
    const victims: Preemptible[] = [];
    let room = free.length;
    for (const v of ordered) {
      if (room >= job.gpus) break;
      if (v.hostName !== host) continue;
      const gain = list.filter((d) => !d.free && holderOf.get(d.id)?.jobId === v.jobId).length;
      if (gain === 0) continue;
      victims.push(v);
      room += gain;
    }
    if (room < job.gpus) continue;
    const held = list.filter((d) => d.free || victims.some((v) => v.jobId === holderOf.get(d.id)?.jobId));
    const candidate = { host, victims, devices: held };
    if (!best || better(candidate, best, rank)) best = candidate;
  }
  return best ? { victims: best.victims.map((v) => v.jobId), devices: best.devices } : null;
}

function better(a: { host: string; victims: Preemptible[] }, b: { host: string; victims: Preemptible[] }, rank: ReadonlyMap<string, number>): boolean {
  const n = Math.min(a.victims.length, b.victims.length);
  for (let i = 0; i < n; i++) {
    const d = rank.get(a.victims[i]!.jobId)! - rank.get(b.victims[i]!.jobId)!;
    if (d !== 0) return d < 0;
  }
  if (a.victims.length !== b.victims.length) return a.victims.length < b.victims.length;
  return a.host < b.host;
}

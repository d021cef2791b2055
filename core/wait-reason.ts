// Why each queued job waits (GET /api/queue): its selector's matches over the
// fleet, counted by state, and the same in one sentence. It walks the queue as
// a scheduling pass does (core/schedule.ts decide): a free device an earlier
// job would take, or one a multi-GPU job waiting past RC_RESERVE_AFTER_S holds
// back, is not this job's. The same walk tells which devices are held back,
// and for which job (heldBack: GET /api/devices shows them as reserved).
// Pure: the caller loads the queue and the fleet.
import type { RecordedDeviceState, WaitReason } from '../protocol/wire';
import { overQuota, type QuotaView, quotaReason, take } from './quota';
import { byHostThenIndex, deviceMatches, type DeviceView, mayReserve, pickOnOneHost, type QueuedJob, queueOrder, variantsOf } from './schedule';

/** A listed device's state as the fleet records it (a removed host's devices are in no queue's count). */
export type DeviceState = Exclude<RecordedDeviceState, 'removed'>;

/** A device of the whole fleet (every controller's), as the fleet view lists it. */
export interface FleetDevice extends Omit<DeviceView, 'free'> {
  state: DeviceState;
}

/** How many reserved devices a sentence names before it says "and N more". */
const NAMED = 4;

/** A device held back for a multi-GPU job: the job, and how many devices on one host it waits for. */
export interface HeldBack {
  jobId: string;
  gpus: number;
}

/** Each job's reason, by job id. */
export function waitReasons(
  queued: readonly QueuedJob[],
  devices: readonly FleetDevice[],
  reserveAfterS: number,
  quota: QuotaView | null = null,
): Map<string, WaitReason> {
  return walk(queued, devices, reserveAfterS, true, quota).reasons;
}

/** The devices (free or busy) multi-GPU jobs waiting past `reserveAfterS` hold back, by device id: the same walk, without the sentences. */
export function heldBack(
  queued: readonly QueuedJob[],
  devices: readonly FleetDevice[],
  reserveAfterS: number,
  quota: QuotaView | null = null,
): Map<number, HeldBack> {
  return walk(queued, devices, reserveAfterS, false, quota).held;
}

function walk(
  queued: readonly QueuedJob[],
  devices: readonly FleetDevice[],
  reserveAfterS: number,
  explain: boolean,
  quotaNow: QuotaView | null,
): { reasons: Map<string, WaitReason>; held: Map<number, HeldBack> } {
  // As decide() applies the --gpus limits: its own copy of what they leave, taken from as jobs ahead start.
  const quota = quotaNow && { ...quotaNow, left: new Map(quotaNow.left) };
  const views = [...devices].sort(byHostThenIndex);
  // Free devices a job ahead would start on in this pass, and devices a job ahead holds back: by the job's id.
  const taken = new Map<number, string>();
  const heldFor = new Map<number, string>();
  const held = new Map<number, HeldBack>();
  // Jobs of one selector share its parsed terms (the caller caches them): the fleet is matched once per selector and -d.
  const sets = new Map<readonly unknown[], Map<string, MatchSet>>();
  const out = new Map<string, WaitReason>();
  for (const job of [...queued].sort(queueOrder)) {
    // Each of its --gpu choices in order (or the job itself), as decide tries them: the first that fits starts.
    const variants = variantsOf(job).map((v) => {
      const bySelector = sets.get(v.terms) ?? new Map<string, MatchSet>();
      sets.set(v.terms, bySelector);
      const set = bySelector.get(v.deviceName ?? '') ?? matchSet(views.filter((d) => deviceMatches(v, d)));
      bySelector.set(v.deviceName ?? '', set);
      return { v, set };
    });
    // Past its --gpus limit in every choice: it waits for its own scope's devices, holds none back, and says so.
    const blockedBy = quota && job.quota?.length ? variants.map(({ v }) => overQuota(quota, job.quota!, v.gpus)) : null;
    if (blockedBy?.every((k) => k !== null)) {
      if (!explain) continue;
      const key = blockedBy[0]!;
      const limit = quota!.limits.get(key)?.limit ?? 0;
      out.set(job.id, { ...variants[0]!.set.counts, reserved: null, text: quotaReason(quota!, key, Math.max(0, limit - quota!.left.get(key)!)) });
      continue;
    }
    let pick: FleetDevice[] | null = null;
    for (const [i, { v, set }] of variants.entries()) {
      if (blockedBy?.[i]) continue;
      pick = pickOnOneHost(
        set.free.filter((d) => !taken.has(d.id) && !heldFor.has(d.id)),
        v.gpus,
      );
      if (pick) break;
    }
    let reserved: string[] | null = null;
    let reservedBy: QueuedJob | null = null;
    if (pick) {
      if (quota && job.quota?.length) take(quota, job.quota, pick.length);
      for (const d of pick) taken.set(d.id, job.id);
    } else if (mayReserve(job, reserveAfterS)) {
      // reservationFor's rule, over the devices already matched: every matching device of the host with the most (its first choice that has enough).
      const first = variants.find(({ v, set }, i) => !blockedBy?.[i] && set.bestHost.length >= v.gpus);
      if (first) {
        for (const d of first.set.bestHost) {
          heldFor.set(d.id, job.id);
          // Two jobs may hold back one host's devices: the one ahead in the queue takes them first; and a job
          // ahead that starts on one in this pass is not held back by it.
          if (!held.has(d.id) && !taken.has(d.id)) held.set(d.id, { jobId: job.id, gpus: first.v.gpus });
        }
        reserved = first.set.bestHost.map((d) => d.name);
        reservedBy = first.v;
      }
    }
    if (!explain) continue;
    const reasons = variants.map(({ v, set }) => {
      const heldFree = set.free.filter((d) => heldFor.has(d.id) && heldFor.get(d.id) !== job.id);
      const blockers: Blockers = {
        taken: set.free.filter((d) => taken.has(d.id) && taken.get(d.id) !== job.id).length,
        held: heldFree.length,
        heldFor: [...new Set(heldFree.map((d) => heldFor.get(d.id)!))],
        maxOnOneHost: set.bestHost.length,
      };
      const startsNow = pick?.every((d) => set.free.includes(d)) ?? false;
      return { counts: set.counts, text: sentence(v, set.counts, blockers, startsNow, reservedBy === v ? reserved : null, set.devices), startsNow };
    });
    if (!job.choices?.length) {
      out.set(job.id, { ...reasons[0]!.counts, reserved, text: reasons[0]!.text });
      continue;
    }
    // Choices: their counts added up (each model's devices are its own), and each choice's sentence.
    const counts = reasons.reduce<Counts>((sum, r) => addCounts(sum, r.counts), { matching: 0, free: 0, busy: 0, off: 0, unhealthy: 0, offline: 0 });
    const starting = reasons.findIndex((r) => r.startsNow);
    const text =
      starting >= 0
        ? `--gpu ${job.choices[starting]!.label}: ${reasons[starting]!.text}`
        : reasons.map((r, i) => `--gpu ${job.choices![i]!.label}: ${r.text}`).join('. ');
    out.set(job.id, { ...counts, reserved, text });
  }
  return { reasons: out, held };
}

function addCounts(a: Counts, b: Counts): Counts {
  return {
    matching: a.matching + b.matching,
    free: a.free + b.free,
    busy: a.busy + b.busy,
    off: a.off + b.off,
    unhealthy: a.unhealthy + b.unhealthy,
    offline: a.offline + b.offline,
  };
}

/** What one selector (and -d) matches: the devices, counted by state, its free ones, and the host with the most (the first by name). */
interface MatchSet {
  devices: FleetDevice[];
  counts: Counts;
  free: FleetDevice[];
  bestHost: FleetDevice[];
}

function matchSet(devices: FleetDevice[]): MatchSet {
  const counts: Counts = { matching: devices.length, free: 0, busy: 0, off: 0, unhealthy: 0, offline: 0 };
  let bestHost: FleetDevice[] = [];
  let run: FleetDevice[] = [];
  for (const d of devices) {
    counts[d.state]++;
    // The devices come by host, then index: a run of one host's.
    if (run.length && run[0]!.hostName !== d.hostName) run = [];
    run.push(d);
    if (run.length > bestHost.length) bestHost = run;
  }
  return { devices, counts, free: devices.filter((d) => d.state === 'free'), bestHost };
}

interface Counts {
  matching: number;
  free: number;
  busy: number;
  off: number;
  unhealthy: number;
  offline: number;
}

interface Blockers {
  /** Free matching devices jobs ahead take in this pass. */
  taken: number;
  /** Free matching devices held back for jobs ahead, and those jobs. */
  held: number;
  heldFor: string[];
  /** The most matching devices on one host. */
  maxOnOneHost: number;
}

/** The reason in one sentence, as an operator would say it. */
export function sentence(
  job: Pick<QueuedJob, 'deviceName' | 'gpus'>,
  c: Counts,
  b: Blockers,
  startsNow: boolean,
  reserved: string[] | null,
  matching: readonly Pick<FleetDevice, 'name'>[] = [],
): string {
  if (c.matching === 0) {
    return job.deviceName !== null
      ? `no device ${job.deviceName} matches its selector (it will wait until one does)`
      : 'no device matches (it will wait until one joins)';
  }
  if (b.maxOnOneHost < job.gpus) {
    return `it needs ${job.gpus} devices on one host, and no host has more than ${b.maxOnOneHost} that match (it will wait until one joins)`;
  }
  if (startsNow) return job.gpus > 1 ? `next in line: ${job.gpus} matching devices are free on one host` : 'next in line: a matching device is free';
  const parts: string[] = [];
  if (c.free > 0) {
    const otherFree = c.free - b.taken - b.held;
    if (b.held > 0) parts.push(`${of(b.held, c.free, 'free matching device')} ${isAre(b.held)} held back for ${jobList(b.heldFor)}, which waits for more`);
    if (b.taken > 0) parts.push(`${of(b.taken, c.free, 'free matching device')} ${b.taken === 1 ? 'goes' : 'go'} to a job ahead of it`);
    if (otherFree > 0 && job.gpus > 1) parts.push(`${of(otherFree, c.matching, 'matching device')} ${isAre(otherFree)} free, not ${job.gpus} on one host`);
    else if (otherFree > 0) parts.push(`${plural(otherFree, 'matching device')} ${isAre(otherFree)} free (it starts at the next scheduling pass)`);
  }
  const states: [number, string][] = [
    [c.busy, 'busy'],
    [c.off, 'on a host turned off'],
    [c.unhealthy, 'quarantined'],
    [c.offline, 'offline'],
  ];
  for (const [n, what] of states) {
    if (n === 0) continue;
    if (parts.length) parts.push(`${n} ${isAre(n)} ${what}`);
    else if (c.matching === 1) parts.push(`its one matching device${matching[0] ? `, ${matching[0].name},` : ''} is ${what}`);
    else if (n === c.matching) parts.push(`all ${n} matching devices are ${what}`);
    else parts.push(`${n} of ${c.matching} matching devices ${isAre(n)} ${what}`);
  }
  let text = parts.join('; ');
  if (reserved) text += `; it holds back ${names(reserved)} until ${job.gpus} of them are free`;
  return text;
}

function isAre(n: number): string {
  return n === 1 ? 'is' : 'are';
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** `the free matching device` (the only one), `all 3 free matching devices`, `1 of 3 free matching devices`. */
function of(n: number, total: number, noun: string): string {
  if (n === total) return total === 1 ? `the ${noun}` : `all ${total} ${noun}s`;
  return `${n} of ${total} ${noun}s`;
}

function jobList(ids: string[]): string {
  return ids.length === 1 ? `job ${ids[0]}` : `jobs ${ids.join(', ')}`;
}

function names(list: string[]): string {
  if (list.length <= NAMED) return list.length === 1 ? list[0]! : `${list.slice(0, -1).join(', ')} and ${list.at(-1)}`;
  return `${list.slice(0, NAMED).join(', ')} and ${list.length - NAMED} more`;
}

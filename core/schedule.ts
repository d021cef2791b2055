// The scheduling decision: which queued jobs start now, on which devices.
// Pure: the caller loads the state, this decides, the caller commits (and the
// database's one-active-lease index re-checks the plan at commit).
import { overQuota, type QuotaKey, type QuotaView, take } from './quota';
import { matchTerms, type Labels, type SelectorTerm } from './selector';

export interface QueuedJob {
  id: string;
  priority: number;
  seq: number;
  terms: readonly SelectorTerm[];
  /** A device asked for by name (`-d host:gpuN`). */
  deviceName: string | null;
  gpus: number;
  /** Seconds it has waited in the queue. */
  waitedS: number;
  /** When an earlier attempt ended and it was queued again (ms; null: never): it goes before the others of its priority. */
  requeuedAt?: number | null;
  /** Its token's place in fair share (core/fair-share.ts fairRanks; 0 first): it goes before the jobs of its priority whose tokens stand after it. Absent: 0. */
  fairRank?: number;
  /** Hosts it may not go to now: an earlier attempt of it may still run there (its leases are kept), and a worker runs a job id once. */
  avoidHosts?: readonly string[];
  /**
   * rc run --gpu: the ways it may be placed, in order of preference, each its
   * selector and `gpu_model=…` (`terms`, a stable reference per selector and
   * model: decide shares what they match) with its own count; `terms` and
   * `gpus` above are then the first's. Absent: the job itself is its one way.
   */
  choices?: readonly Choice[];
  /** The --gpus limits it is charged to (core/quota.ts: its token's and its team's); none: no limit applies. */
  quota?: readonly QuotaKey[];
  /** --cloud-only: it runs on a provider machine's devices held for it (heldFor), never on a joined host's. Absent: either. */
  cloudOnly?: boolean;
}

/** One --gpu choice as the scheduler sees it. */
export interface Choice {
  /** How it was written: `A100:2`. */
  label: string;
  terms: readonly SelectorTerm[];
  gpus: number;
}

/** The ways a job may be placed, in its order of preference: one per --gpu choice, or the job itself. */
export function variantsOf<J extends QueuedJob>(job: J): J[] {
  return job.choices?.length ? job.choices.map((c) => ({ ...job, terms: c.terms, gpus: c.gpus })) : [job];
}

/** Whether a job that waited long enough holds devices back (a multi-GPU job: every choice of it wants more than one). */
export function mayReserve(job: QueuedJob, reserveAfterS: number): boolean {
  return job.waitedS >= reserveAfterS && variantsOf(job).every((v) => v.gpus > 1);
}

/** How long a multi-GPU job waits before devices are held back for it (see decide). */
export const DEFAULT_RESERVE_AFTER_S = 30;

export interface DeviceView {
  id: number;
  name: string;
  hostName: string;
  index: number;
  labels: Labels;
  /** Free means: present, host online, healthy and no active lease. */
  free: boolean;
  /** A provider machine's device: free only to this job, the one its machine is for (server/machines/). */
  forJob?: string;
}

export interface Assignment {
  jobId: string;
  devices: DeviceView[];
}

/**
 * Higher priority first; within a priority, the jobs of tokens further below
 * their share first (fair share: core/fair-share.ts); then jobs queued again
 * after an attempt ended (a restart, a retry after preemption) first, in the
 * order they were queued again; then submission order.
 */
export function queueOrder(a: QueuedJob, b: QueuedJob): number {
  const ra = a.requeuedAt ?? null;
  const rb = b.requeuedAt ?? null;
  const front = ra === rb ? 0 : ra === null ? 1 : rb === null ? -1 : ra - rb;
  return b.priority - a.priority || (a.fairRank ?? 0) - (b.fairRank ?? 0) || front || a.seq - b.seq;
}

export function deviceMatches(job: Pick<QueuedJob, 'terms' | 'deviceName' | 'avoidHosts'>, device: Pick<DeviceView, 'name' | 'labels' | 'hostName'>): boolean {
  if (job.deviceName !== null && job.deviceName !== device.name) return false;
  if (job.avoidHosts?.includes(device.hostName)) return false;
  return matchTerms(job.terms, device.labels);
}

/**
 * Walk the queue in order (priority, fair share, then submission: queueOrder) and give each job the
 * first devices that fit. A job that cannot start does not hold up the jobs
 * behind it (backfill). But a multi-GPU job would starve behind a stream of
 * one-GPU jobs that keep taking devices as they free, so once it has waited
 * `reserveAfterS`, the matching devices of the host with the most of them are
 * held back for it: jobs behind it in the queue may not take them, and it
 * starts when enough of them are free.
 */
export function decide(
  queued: readonly QueuedJob[],
  devices: readonly DeviceView[],
  reserveAfterS = DEFAULT_RESERVE_AFTER_S,
  /** Devices held for one queued job (device id → that job's id): being freed by preemption for it, or its provider machine's. No other job may take them. */
  heldFor: ReadonlyMap<number, string> = new Map(),
  /** What each --gpus limit leaves (core/quota.ts): a job past one waits, and holds nothing back; taken from as jobs are placed. */
  quotaNow: Pick<QuotaView, 'left'> | null = null,
): Assignment[] {
  // Its own copy: what this plan takes is not taken until the claims commit.
  const quota = quotaNow && { left: new Map(quotaNow.left) };
  // A variant of a job its limits leave room for (all of them, without limits).
  const within = (v: QueuedJob) => quota === null || !v.quota?.length || overQuota(quota, v.quota, v.gpus) === null;
  const free = devices.filter((d) => d.free).sort(byHostThenIndex);
  const taken = new Set<number>();
  let freeLeft = free.length;
  const out: Assignment[] = [];
  const placed = new Set<string>();
  if (heldFor.size) {
    // A job devices were freed for starts on them first, when enough of them are free (and match);
    // then they are out of everyone else's reach until the preemption's notice is over.
    const owners = new Set(heldFor.values());
    for (const job of [...queued].filter((j) => owners.has(j.id)).sort(queueOrder)) {
      let pick: DeviceView[] | null = null;
      for (const v of variantsOf(job)) {
        if (!within(v)) continue;
        const mine = free.filter((d) => heldFor.get(d.id) === job.id && !taken.has(d.id) && deviceMatches(v, d));
        pick = pickOnOneHost(mine, v.gpus);
        if (pick) break;
      }
      if (!pick) continue;
      if (quota && job.quota?.length) take(quota, job.quota, pick.length);
      for (const d of pick) taken.add(d.id);
      freeLeft -= pick.length;
      placed.add(job.id);
      out.push({ jobId: job.id, devices: pick });
    }
    for (const d of free) {
      if (heldFor.has(d.id) && !taken.has(d.id)) {
        taken.add(d.id);
        freeLeft -= 1;
      }
    }
  }
  // Jobs of one selector share what it matches, each free device tested once; one-GPU jobs take the
  // first fit, so a cursor past the taken ones makes a deep queue of them cost one step each.
  const fitsOf = new Map<readonly SelectorTerm[], Map<string | null, Fits>>();
  // A job kept off some hosts matches differently from its selector's other jobs: its fits are its own.
  const fitsFor = (job: QueuedJob): Fits => {
    const own = (job.avoidHosts?.length ?? 0) > 0;
    const byName = fitsOf.get(job.terms) ?? new Map<string | null, Fits>();
    fitsOf.set(job.terms, byName);
    const f = (own ? undefined : byName.get(job.deviceName)) ?? { known: new Int8Array(free.length), next: 0 };
    if (!own) byName.set(job.deviceName, f);
    return f;
  };
  const pickFor = (job: QueuedJob): DeviceView[] | null => {
    const f = fitsFor(job);
    const fits = (i: number): boolean => {
      const k = f.known[i]!;
      if (k !== 0) return k === 1;
      const yes = deviceMatches(job, free[i]!);
      f.known[i] = yes ? 1 : 2;
      return yes;
    };
    if (job.gpus === 1) {
      while (f.next < free.length && (taken.has(free[f.next]!.id) || !fits(f.next))) f.next++;
      return f.next < free.length ? [free[f.next]!] : null;
    }
    return pickOnOneHost(
      free.filter((d, i) => !taken.has(d.id) && fits(i)),
      job.gpus,
    );
  };
  for (const job of [...queued].sort(queueOrder)) {
    if (freeLeft === 0) break;
    if (placed.has(job.id) || job.cloudOnly) continue;
    // Its --gpu choices in order: the first that fits now (and its limits leave room for).
    const variants = variantsOf(job).filter(within);
    // Past its --gpus limit: it waits for its own scope's devices, and holds back none meanwhile.
    if (!variants.length) continue;
    let pick: DeviceView[] | null = null;
    for (const v of variants) {
      pick = pickFor(v);
      if (pick) break;
    }
    if (pick) {
      if (quota && job.quota?.length) take(quota, job.quota, pick.length);
      for (const d of pick) taken.add(d.id);
      freeLeft -= pick.length;
      out.push({ jobId: job.id, devices: pick });
    } else if (mayReserve(job, reserveAfterS)) {
      // The devices of its first choice that some host has enough of.
      for (const v of variants) {
        const held = reservationFor(v, devices);
        if (!held.length) continue;
        for (const d of held) {
          if (d.free && !taken.has(d.id)) freeLeft -= 1;
          taken.add(d.id);
        }
        break;
      }
    }
  }
  return out;
}

/** What one selector (and device name) matches among the free devices: 0 not tested yet, 1 yes, 2 no; and where one-GPU jobs look next. */
interface Fits {
  known: Int8Array;
  next: number;
}

/** The matching devices (free or busy) of the host that has the most of them, if it has enough. */
export function reservationFor(job: QueuedJob, devices: readonly DeviceView[]): DeviceView[] {
  const byHost = new Map<string, DeviceView[]>();
  for (const d of devices) {
    if (!deviceMatches(job, d)) continue;
    byHost.set(d.hostName, [...(byHost.get(d.hostName) ?? []), d]);
  }
  let best: DeviceView[] = [];
  for (const [, list] of [...byHost].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) if (list.length > best.length) best = list;
  return best.length >= job.gpus ? best : [];
}

/** The first host (in name order) with enough fitting devices; all on one host. */
export function pickOnOneHost<D extends Pick<DeviceView, 'hostName'>>(fits: D[], count: number): D[] | null {
  const byHost = new Map<string, D[]>();
  for (const d of fits) {
    const list = byHost.get(d.hostName) ?? [];
    list.push(d);
    if (list.length === count) return list;
    byHost.set(d.hostName, list);
  }
  return null;
}

export function byHostThenIndex(a: Pick<DeviceView, 'hostName' | 'index'>, b: Pick<DeviceView, 'hostName' | 'index'>): number {
  return a.hostName < b.hostName ? -1 : a.hostName > b.hostName ? 1 : a.index - b.index;
}

/** A host's name: 1–63 letters, digits, `.`, `_` or `-`, starting with a letter or digit (what POST /api/admin/hosts takes). */
export const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export function deviceName(hostName: string, index: number): string {
  return `${hostName}:gpu${index}`;
}

/** `host:gpuN` → its parts, or null when it is not a device name. */
export function parseDeviceName(name: string): { hostName: string; index: number } | null {
  const m = /^([A-Za-z0-9][A-Za-z0-9._-]*):gpu(\d{1,3})$/.exec(name);
  return m ? { hostName: m[1]!, index: Number(m[2]) } : null;
}

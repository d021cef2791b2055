// Until when a queued job waits at the latest, if nothing else changes: the
// time by which enough of its matching devices are free, each busy device
// freeing by its job's start + --max-runtime or its hold's expiry (what the
// watchdogs enforce), a free one now. A device whose job has no limit has no
// bound; one off, quarantined or offline never frees for it. "If nothing else
// changes" is meant as said: a job ahead in the queue may take the device
// first, and a job that ends early frees it sooner. Placement is on one host
// (core/schedule.ts pickOnOneHost), so a job of k GPUs waits for the k-th
// earliest of one host's devices, the earliest host; with --gpu choices, the
// earliest choice. Pure: the caller loads the fleet and the holders' bounds.
import { deviceMatches, type QueuedJob, variantsOf } from './schedule';
import type { DeviceState } from '../protocol/wire';
import type { FleetDevice } from './wait-reason';

/** A device as the bound needs it: where it is, whether it may ever be this job's, and who holds it. */
export type UntilDevice = Pick<FleetDevice, 'id' | 'name' | 'hostName' | 'labels'> & {
  /** Only free and busy devices free for a new job (a removed one is in no fleet listing: none counts). */
  state: DeviceState;
  /** Its host is turned off: its job finishes, then the device takes no new one. */
  hostOff: boolean;
  holder: { jobId: string } | null;
};

/**
 * When one device frees at the latest (ms since the epoch): `now` when free,
 * its holder's bound when busy (null: its job has no limit), undefined when it
 * never frees for a new job (off, quarantined, offline).
 */
export function deviceFreesAt(d: UntilDevice, boundOf: ReadonlyMap<string, number | null>, now: number): number | null | undefined {
  if (d.state === 'free') return now;
  if (d.state !== 'busy' || d.hostOff || !d.holder) return undefined;
  return boundOf.get(d.holder.jobId) ?? null;
}

/**
 * The time by which `gpus` of these devices on one host are free at the
 * latest: per host the gpus-th earliest time, the earliest over hosts; null
 * when no host's is known (too few devices, or jobs without limits).
 */
export function freesBy(devices: readonly { hostName: string; at: number | null | undefined }[], gpus: number): number | null {
  const byHost = new Map<string, number[]>();
  for (const d of devices) {
    if (d.at == null) continue;
    const list = byHost.get(d.hostName) ?? [];
    list.push(d.at);
    byHost.set(d.hostName, list);
  }
  let best: number | null = null;
  for (const times of byHost.values()) {
    if (times.length < gpus) continue;
    const t = times.sort((a, b) => a - b)[gpus - 1]!;
    if (best === null || t < best) best = t;
  }
  return best;
}

/**
 * Each queued job's bound (ms since the epoch; null: no bound is known), by
 * job id. The fleet is matched once per selector (and -d), as waitReasons does.
 */
export function untilOf(
  queued: readonly QueuedJob[],
  devices: readonly UntilDevice[],
  boundOf: ReadonlyMap<string, number | null>,
  now: number,
): Map<string, number | null> {
  const at = devices.map((d) => ({ d, hostName: d.hostName, at: deviceFreesAt(d, boundOf, now) }));
  // Jobs of one selector share its parsed terms (the caller's TermsCache): one match and one bound per selector, -d and count.
  const sets = new Map<readonly unknown[], Map<string, number | null>>();
  const out = new Map<string, number | null>();
  for (const job of queued) {
    let best: number | null = null;
    for (const v of variantsOf(job)) {
      const bySelector = sets.get(v.terms) ?? new Map<string, number | null>();
      sets.set(v.terms, bySelector);
      const key = `${v.deviceName ?? ''}\0${v.avoidHosts?.join(',') ?? ''}\0${v.gpus}`;
      let t = bySelector.get(key);
      if (t === undefined) {
        t = freesBy(
          at.filter((x) => deviceMatches(v, x.d)),
          v.gpus,
        );
        bySelector.set(key, t);
      }
      if (t !== null && (best === null || t < best)) best = t;
    }
    out.set(job.id, best);
  }
  return out;
}

/** The holders whose bounds untilOf needs: the jobs on busy devices that free for new work. */
export function holdersToBound(devices: readonly UntilDevice[]): string[] {
  const ids = new Set<string>();
  for (const d of devices) if (d.state === 'busy' && !d.hostOff && d.holder) ids.add(d.holder.jobId);
  return [...ids];
}

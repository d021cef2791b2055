// Pure label bookkeeping: turns each probe run into labels with a time and a
// staleness, keeping the last good labels of a probe that failed, and puts
// every probe's labels and the declared ones together into an Inventory.
import type { Inventory, ReportedLabel } from '../protocol/worker';
import type { Found, Pair } from './probes/parse';

/** The outcome of running one probe once. */
export type ProbeResult =
  | {
      probe: string;
      ok: true;
      found: Found;
      /** Host-wide keys this run could not refresh, and why: their last values are kept, stale. */
      unrefreshed?: { key: string; reason: string }[];
    }
  | { probe: string; ok: false; reason: string };

/** The labels one probe currently contributes. */
export interface ProbeLabels {
  host: ReportedLabel[];
  devices: Map<number, ReportedLabel[]>;
}

/** Every probe's labels, in the order the probes run (which is also their priority). */
export type ProbeState = Map<string, ProbeLabels>;

const MAX_STALE_LENGTH = 500;
const MAX_LABELS = 1000;
const MAX_DEVICES = 64;

/**
 * A probe's labels after a run. A good run replaces the probe's labels with
 * fresh ones seen at `now`. A failed run keeps the labels of the last run,
 * with their old seenAt, marked stale with the reason; with no last run it
 * contributes nothing.
 */
export function applyProbeResult(prev: ProbeLabels | undefined, result: ProbeResult, now: Date): ProbeLabels {
  if (!result.ok) return markStale(prev ?? { host: [], devices: new Map() }, result.reason);
  const seenAt = now.toISOString();
  const fresh = (p: Pair): ReportedLabel => ({ key: p.key, value: p.value, source: 'detected', probe: result.probe, seenAt, stale: null });
  const host = result.found.host.map(fresh);
  for (const { key, reason } of result.unrefreshed ?? []) {
    const old = prev?.host.find((l) => l.key === key);
    if (old && !host.some((l) => l.key === key)) host.push(staleLabel(old, reason));
  }
  return { host, devices: new Map([...result.found.devices].map(([index, pairs]) => [index, pairs.map(fresh)])) };
}

/** The same labels, each stale for the given reason (its seenAt unchanged). */
export function markStale(labels: ProbeLabels, reason: string): ProbeLabels {
  return {
    host: labels.host.map((l) => staleLabel(l, reason)),
    devices: new Map([...labels.devices].map(([index, ls]) => [index, ls.map((l) => staleLabel(l, reason))])),
  };
}

function staleLabel(label: ReportedLabel, reason: string): ReportedLabel {
  return { ...label, stale: reason.length > MAX_STALE_LENGTH ? `${reason.slice(0, MAX_STALE_LENGTH - 1)}…` : reason };
}

/** Labels from the worker's config file. */
export interface DeclaredLabels {
  host: Pair[];
  devices: Map<number, Pair[]>;
}

/** Declared labels as reported: source declared, no probe, seen when the config was read. */
export function declaredLabels(declared: DeclaredLabels, readAt: Date, stale: string | null = null): ProbeLabels {
  const seenAt = readAt.toISOString();
  const label = (p: Pair): ReportedLabel => ({ key: p.key, value: p.value, source: 'declared', probe: null, seenAt, stale });
  return {
    host: declared.host.map(label),
    devices: new Map([...declared.devices].map(([index, pairs]) => [index, pairs.map(label)])),
  };
}

/**
 * Builds the inventory. The devices are those the device probes name
 * (nvidia-smi's GPUs, or the host probe's CPU slots); other probes' and the
 * config's labels for devices that do not exist are dropped. Per device and
 * for the host, a key appears at most once per source: among detected labels
 * the first probe in state order wins. Declared and detected labels of one
 * key are both reported; the controller prefers the declared one.
 */
export function buildInventory(state: ProbeState, declared: ProbeLabels | null, deviceProbes: readonly string[]): Inventory {
  const indexes = new Set<number>();
  for (const name of deviceProbes) for (const index of state.get(name)?.devices.keys() ?? []) indexes.add(index);
  // The device probes' labels first: past the protocol's MAX_LABELS the rest are cut, and a device is found by those
  // (kind, gpu_model, vram). Order decides nothing else: the controller ranks a declared label above a detected one.
  const builtIn = deviceProbes.flatMap((name) => state.get(name) ?? []);
  const sites = [...state].filter(([name]) => !deviceProbes.includes(name)).map(([, labels]) => labels);
  const sources = [...builtIn, ...(declared ? [declared] : []), ...sites];
  const devices = [...indexes]
    .sort((a, b) => a - b)
    .slice(0, MAX_DEVICES)
    .map((index) => {
      const labels = unique(sources.flatMap((s) => s.devices.get(index) ?? []));
      const uuid = labels.find((l) => l.key === 'gpu_uuid' && l.source === 'detected' && l.value.startsWith('GPU-'))?.value ?? null;
      return { index, uuid, labels };
    });
  return { hostLabels: unique(sources.flatMap((s) => s.host)), devices };
}

/** First label per (key, source), at most the protocol's limit. */
function unique(labels: ReportedLabel[]): ReportedLabel[] {
  const seen = new Set<string>();
  const out: ReportedLabel[] = [];
  for (const l of labels) {
    const id = `${l.source}\0${l.key}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(l);
    if (out.length === MAX_LABELS) break;
  }
  return out;
}

/** The device indexes a probe labelled that are not among the inventory's devices. */
export function unknownDevices(labels: ProbeLabels, inventory: Inventory): number[] {
  const known = new Set(inventory.devices.map((d) => d.index));
  return [...labels.devices.keys()].filter((i) => !known.has(i)).sort((a, b) => a - b);
}

/** What fitInventory left out: its size before, and how many labels of each source ('config file' or a site probe's name). */
export interface Trimmed {
  bytes: number;
  dropped: Map<string, number>;
}

/**
 * The inventory within `maxBytes` of JSON: past it, the largest labels that
 * are not from `kept` probes (the config file's, the site probes') are left
 * out until it fits. What the worker detects itself (the GPUs, the host) is
 * never left out: those labels are small, and a device is found by them.
 */
export function fitInventory(inventory: Inventory, maxBytes: number, kept: readonly string[]): { inventory: Inventory; trimmed: Trimmed | null } {
  const bytes = Buffer.byteLength(JSON.stringify(inventory));
  if (bytes <= maxBytes) return { inventory, trimmed: null };
  const all = [...inventory.hostLabels, ...inventory.devices.flatMap((d) => d.labels)];
  const droppable = all
    .filter((l) => l.source === 'declared' || !kept.includes(l.probe ?? ''))
    .map((l) => ({ l, size: Buffer.byteLength(JSON.stringify(l)) + 1 }))
    .sort((a, b) => b.size - a.size);
  const out = new Set<ReportedLabel>();
  const dropped = new Map<string, number>();
  let excess = bytes - maxBytes;
  for (const { l, size } of droppable) {
    if (excess <= 0) break;
    out.add(l);
    excess -= size;
    const from = l.source === 'declared' ? 'config file' : (l.probe ?? 'unknown probe');
    dropped.set(from, (dropped.get(from) ?? 0) + 1);
  }
  const keep = (labels: ReportedLabel[]) => labels.filter((l) => !out.has(l));
  return {
    inventory: { hostLabels: keep(inventory.hostLabels), devices: inventory.devices.map((d) => ({ ...d, labels: keep(d.labels) })) },
    trimmed: { bytes, dropped },
  };
}

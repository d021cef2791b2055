// The fleet page's counts: pure, over the devices the filter kept.
import type { DeviceSummary } from '../../protocol/wire';

/** The filter's placeholder: a selector that matches devices of the demo fleet (test/unit/doc-examples.test.ts checks it). */
export const FLEET_FILTER_EXAMPLE = 'gpu_family=A100,vram>=80G';

export type ShownState = 'free' | 'busy' | 'reserved' | 'held' | 'off' | 'unhealthy' | 'offline' | 'removed';

/** A device's state as the fleet page shows it: a busy device whose lease is a hold is `held`. */
export function shownState(d: Pick<DeviceSummary, 'state' | 'holder'>): ShownState {
  return d.state === 'busy' && d.holder?.kind === 'hold' ? 'held' : d.state;
}

export type Totals = Record<ShownState, number> & { all: number };

export function fleetTotals(devices: readonly DeviceSummary[]): Totals {
  const t: Totals = { all: 0, free: 0, busy: 0, reserved: 0, held: 0, off: 0, unhealthy: 0, offline: 0, removed: 0 };
  for (const d of devices) {
    t.all++;
    t[shownState(d)]++;
  }
  return t;
}

export interface ModelUse {
  model: string;
  total: number;
  free: number;
  /** Free, but held back for a queued job (server/reservations.ts): free to nobody else. */
  reserved: number;
  /** Busy or held. */
  used: number;
  /** Off, unhealthy or offline. */
  unavailable: number;
}

/** Used and free per GPU model (the gpu_model label), most devices first. */
export function perModel(devices: readonly DeviceSummary[]): ModelUse[] {
  const by = new Map<string, ModelUse>();
  for (const d of devices) {
    // A CPU slot's worker reports gpu_model=none.
    const model = d.labels.gpu_model === 'none' ? 'no GPU' : (d.labels.gpu_model ?? 'unknown');
    const m = by.get(model) ?? { model, total: 0, free: 0, reserved: 0, used: 0, unavailable: 0 };
    m.total++;
    const s = shownState(d);
    if (s === 'free') m.free++;
    else if (s === 'reserved') m.reserved++;
    else if (s === 'busy' || s === 'held') m.used++;
    else m.unavailable++;
    by.set(model, m);
  }
  return [...by.values()].sort((a, b) => b.total - a.total || (a.model < b.model ? -1 : 1));
}

export interface HostGroup {
  name: string;
  devices: DeviceSummary[];
}

/** Devices grouped by host, in the order they came (host name, then index). */
export function byHost(devices: readonly DeviceSummary[]): HostGroup[] {
  const out: HostGroup[] = [];
  for (const d of devices) {
    const last = out.at(-1);
    if (last && last.name === d.hostName) last.devices.push(d);
    else out.push({ name: d.hostName, devices: [d] });
  }
  return out;
}

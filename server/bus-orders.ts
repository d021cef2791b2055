// Orders for a worker connected to another controller travel on the bus as
// JSON: which orders may be relayed, and their payloads as JSON carries them.
import type { ControllerToWorker } from '../protocol/events';
import { WorkerEvent } from '../protocol/events';

/** The orders another controller may relay to a worker connected here. */
export const RELAYED_ORDERS = new Set<keyof ControllerToWorker>([
  WorkerEvent.jobKill,
  WorkerEvent.probeNow,
  WorkerEvent.ttyInput,
  WorkerEvent.ttyResize,
  WorkerEvent.ttyPause,
  WorkerEvent.ttyResume,
]);

/** A payload as JSON can carry it: a Buffer field (terminal input) as base64. */
export function toBus(payload: unknown): unknown {
  if (!payload || typeof payload !== 'object') return payload;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload)) out[k] = Buffer.isBuffer(v) ? { $b64: v.toString('base64') } : v;
  return out;
}

export function fromBus(payload: unknown): unknown {
  if (!payload || typeof payload !== 'object') return payload;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload)) {
    const b64 = v && typeof v === 'object' ? (v as { $b64?: unknown }).$b64 : undefined;
    out[k] = typeof b64 === 'string' ? Buffer.from(b64, 'base64') : v;
  }
  return out;
}

// What the scheduling tests (core/schedule.ts, core/wait-reason.ts) build their queues from.
import assert from 'node:assert/strict';
import type { QueuedJob } from '../../core/schedule';
import { parseSelector, type SelectorTerm } from '../../core/selector';

/** A queued job `j<N>`: submitted N-th, priority 0, one GPU, any device, just queued; `over` changes any of it. */
export const job = (id: string, over: Partial<QueuedJob> = {}): QueuedJob => ({
  id,
  priority: 0,
  seq: Number(id.slice(1)),
  terms: [],
  deviceName: null,
  gpus: 1,
  waitedS: 0,
  ...over,
});

/** A selector's terms; the selector must parse. */
export const terms = (s: string): SelectorTerm[] => {
  const p = parseSelector(s);
  assert.ok(p.ok);
  return p.terms;
};

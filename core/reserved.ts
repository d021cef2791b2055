// A reserved device in words: who it is held back for, and why. The same
// sentence in rc describe and on the dashboard.
import type { ReservedFor } from '../protocol/wire';

/** Why the device is held back, after who for. */
export function reservedWhy(r: ReservedFor): string {
  return r.why === 'preemption'
    ? 'jobs were preempted to free devices for it; no other job may take this one meanwhile'
    : `it waits for ${r.gpus} devices on this host; jobs behind it in the queue may not take this one`;
}

export function reservedText(r: ReservedFor): string {
  return `held back for job ${r.jobId} (${r.submitter}): ${reservedWhy(r)}`;
}

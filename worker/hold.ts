// A hold runs nothing: the worker only keeps the lease until the controller
// ends it (release, TTL, kill). The people holding the device work on the
// host directly (ssh), which is the point of a hold.
import type { JobCallbacks, RunningJob } from './runtime';

export function holdLease(cb: JobCallbacks): RunningJob {
  let ended = false;
  return {
    kill() {
      if (ended) return;
      ended = true;
      // Reported like a job stopped by SIGTERM; the controller records why (released, expired).
      setImmediate(() => cb.exit(null, 'SIGTERM'));
    },
  };
}

// The worker's heartbeat: it carries the last GPU sample; the next is taken
// meanwhile, and with it the check for processes rc did not start on the
// devices (gpu-monitor.ts), whose devices are quarantined.
import type { ControllerLink } from './controller-link';
import type { GpuMonitor } from './gpu-monitor';
import type { Prober } from './inventory';
import type { JobRunner } from './job-runner';

/** The heartbeat carries the last GPU sample; the next is taken meanwhile, and with it the check for processes rc did not start. */
export function beat(link: ControllerLink, gpus: GpuMonitor, prober: Prober, jobs: JobRunner, log: (msg: string) => void): void {
  link.sendHeartbeat({ gpus: gpus.latest });
  // People work on a held device directly (that is what a hold is for): their processes are not foreign.
  const held = jobs.heldDevices();
  const devices = (prober.latest?.devices ?? []).map((d) => ({ index: d.index, uuid: d.uuid ?? null }));
  const now = Date.now();
  void gpus
    .tick(devices, (index) => jobs.jobOn(index, now), held)
    .then(
      (found) => {
        for (const q of found) {
          log(`quarantining gpu${q.index}: ${q.reason}`);
          link.sendUnhealthy(q);
        }
      },
      (err: unknown) => log(`GPU check failed: ${String(err)}`),
    );
}

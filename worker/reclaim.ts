// Before the worker connects, it kills whatever the jobs of its previous run
// left running (known from its state file, job-state.ts, and the runtime's own
// leftovers: job cgroups, containers), so that no device is leased again while
// its last job may still run.
import { performance } from 'node:perf_hooks';
import type { JobState } from './job-state';
import type { Reclaimed, Runtime } from './runtime';

/** Kills what the previous run of the worker left (its jobs' processes) and says how many and how long it took. */
export async function reclaim(runtime: Runtime, state: JobState, previous: ReturnType<JobState['open']>, log: (msg: string) => void): Promise<void> {
  const t0 = performance.now();
  const r: Reclaimed = await runtime.reclaim([...previous.jobs, ...previous.leftover]).catch((err: unknown) => {
    log(`cleaning up after the previous run failed: ${String(err)}`);
    return { killed: 0, jobs: 0, unkillable: [] };
  });
  const ms = Math.round(performance.now() - t0);
  if (r.jobs || r.unkillable.length) log(`killed ${r.killed} process(es) of ${r.jobs} job(s) left by the previous run in ${ms} ms`);
  for (const u of r.unkillable) {
    log(
      `could not kill ${u.pids.length} process(es) of job ${u.jobId} (pid ${u.pids.join(', ')}); the controller quarantines ${u.devices.map((d) => `gpu${d}`).join(', ') || 'no device'}`,
    );
  }
  state.reset(r.unkillable);
}

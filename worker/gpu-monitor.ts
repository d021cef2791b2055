// The worker's eye on its GPUs: samples for the heartbeat (one nvidia-smi
// query), processes using the GPUs, and the check after each job. A host
// without nvidia-smi has nothing to sample and that is not an error.
import type { GpuSample, Quarantine } from '../protocol/worker';
import { foreignProcesses, heldAfterJob, type DeviceRef } from './gpu-health';
import { COMPUTE_APPS_QUERY, GPU_SAMPLE_QUERY, parseComputeApps, parseGpuSamples, type GpuProcess, type ParsedSample } from './probes/parse';
import { commandFailure, runCommand } from './probes/run';
import { jobTag } from './proc-signal';

export interface GpuMonitorOptions {
  /** `nvidia-smi`, looked up on env.PATH, or a path. */
  command: string;
  env: NodeJS.ProcessEnv;
  /** Memory still used after a job above this many MiB quarantines the GPU. */
  thresholdMiB: number;
  /** How long a GPU may take to let go of a finished job's memory. */
  settleMs: number;
  log: (message: string) => void;
}

export class GpuMonitor {
  /** What the heartbeat carries: the last sample, empty on a host without GPUs. */
  latest: GpuSample[] = [];
  private absent = false;
  private sampling: Promise<void> | null = null;
  /** Foreign processes seen once: a second sighting quarantines (a passing process does not). */
  private seen = new Set<string>();
  private lastError: string | null = null;

  constructor(private readonly opts: GpuMonitorOptions) {}

  /** One query of memory and utilisation, and one of the processes on the GPUs; null without nvidia-smi or on failure. */
  async read(): Promise<{ samples: ParsedSample[]; processes: GpuProcess[]; processesKnown: boolean } | null> {
    if (this.absent) return null;
    const run = (args: string[]) => runCommand(this.opts.command, args, { env: this.opts.env, timeoutMs: 10_000, maxBytes: 1024 * 1024 });
    const query = await run(GPU_SAMPLE_QUERY);
    if (query.kind === 'not-started' && query.code === 'ENOENT') {
      this.absent = true;
      return null;
    }
    const failed = commandFailure(query, 'nvidia-smi', true);
    if (failed || query.kind !== 'exited') {
      this.say(failed ?? 'nvidia-smi failed');
      return null;
    }
    const apps = await run(COMPUTE_APPS_QUERY);
    const processesKnown = apps.kind === 'exited' && apps.code === 0;
    const processes = processesKnown ? parseComputeApps(apps.stdout) : [];
    this.say(null);
    return { samples: parseGpuSamples(query.stdout), processes, processesKnown };
  }

  /**
   * Samples for the next heartbeat and checks who uses the GPUs. Resolves to
   * devices to quarantine for processes rc did not start (`exempt` devices are
   * not checked). Runs never overlap.
   */
  async tick(devices: DeviceRef[], jobOn: (index: number) => string | null, exempt: ReadonlySet<number> = new Set()): Promise<Quarantine[]> {
    if (this.sampling || !devices.some((d) => d.uuid)) return [];
    let found: Quarantine[] = [];
    this.sampling = (async () => {
      const r = await this.read();
      if (!r) return;
      // With each GPU its compute processes' count (the idle rule, core/idle.ts): from the query already made, matched by UUID.
      const uuidOf = new Map(devices.map((d) => [d.index, d.uuid]));
      const procsOn = (index: number): number | null => {
        const uuid = uuidOf.get(index);
        return r.processesKnown && uuid ? r.processes.filter((p) => p.gpuUuid === uuid).length : null;
      };
      this.latest = r.samples.map((s) => ({
        index: s.index,
        name: s.name,
        memTotalMiB: s.memTotalMiB,
        memUsedMiB: s.memUsedMiB,
        utilPct: s.utilPct,
        procs: procsOn(s.index),
      }));
      // Exempt devices (held ones: people work on them directly) are sampled but not policed.
      const suspects = foreignProcesses(
        devices.filter((d) => !exempt.has(d.index)),
        r.processes,
        jobOn,
        jobTag,
      );
      const now = new Set(suspects.flatMap((q) => (q.evidence.processes as { pid: number }[]).map((p) => `${q.index}:${p.pid}`)));
      found = suspects.filter((q) => (q.evidence.processes as { pid: number }[]).some((p) => this.seen.has(`${q.index}:${p.pid}`)));
      this.seen = now;
    })().finally(() => {
      this.sampling = null;
    });
    await this.sampling;
    return found;
  }

  /**
   * After a job on real GPUs: waits up to settleMs for their memory to drop
   * under the threshold; the devices where it did not are to be quarantined.
   */
  async afterJob(jobId: string, devices: DeviceRef[]): Promise<Quarantine[]> {
    const gpus = devices.filter((d) => d.uuid);
    if (!gpus.length || this.absent) return [];
    const deadline = Date.now() + this.opts.settleMs;
    for (;;) {
      const r = await this.read();
      if (!r) return [];
      const held = heldAfterJob(jobId, gpus, r.samples, r.processes, this.opts.thresholdMiB);
      if (!held.length || Date.now() >= deadline) return held;
      await new Promise((res) => setTimeout(res, Math.min(250, Math.max(0, deadline - Date.now()))));
    }
  }

  private say(problem: string | null): void {
    if (problem && problem !== this.lastError) this.opts.log(`GPU sampling failed: ${problem}`);
    this.lastError = problem;
  }
}

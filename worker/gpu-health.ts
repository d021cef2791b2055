// When a GPU must be quarantined, decided from what nvidia-smi shows. Pure:
// the worker's monitor (gpu-monitor.ts) does the calls and reads /proc.
import type { Quarantine } from '../protocol/worker';
import type { GpuProcess, ParsedSample } from './probes/parse';

export interface DeviceRef {
  index: number;
  uuid: string | null;
}

/**
 * After a job: its devices whose memory use is still over the threshold.
 * `processes` become the evidence (often the process that did not let go).
 */
export function heldAfterJob(jobId: string, devices: DeviceRef[], samples: ParsedSample[], processes: GpuProcess[], thresholdMiB: number): Quarantine[] {
  const out: Quarantine[] = [];
  for (const d of devices) {
    const s = samples.find((x) => x.index === d.index);
    if (!s || s.memUsedMiB <= thresholdMiB) continue;
    const procs = processes.filter((p) => p.gpuUuid === d.uuid).map((p) => ({ pid: p.pid, name: p.name, usedMiB: p.usedMiB }));
    out.push({
      index: d.index,
      reason: `GPU memory still held after job ${jobId} ended: ${s.memUsedMiB} MiB used (threshold ${thresholdMiB} MiB)${procs.length ? `, by ${procs.map((p) => `pid ${p.pid} (${p.name})`).join(', ')}` : ''}`,
      evidence: { jobId, memUsedMiB: s.memUsedMiB, memTotalMiB: s.memTotalMiB, thresholdMiB, processes: procs },
    });
  }
  return out;
}

/**
 * Processes on a GPU that rc did not start for the job running there: no
 * RC_JOB_ID in their environment, or the id of a job that is not running on
 * that device. `tagOf` reads a process's RC_JOB_ID (null when none or unreadable).
 */
export function foreignProcesses(
  devices: DeviceRef[],
  processes: GpuProcess[],
  jobOn: (index: number) => string | null,
  tagOf: (pid: number) => string | null,
): Quarantine[] {
  const byDevice = new Map<number, { pid: number; name: string; usedMiB: number | null; rcJob: string | null }[]>();
  for (const p of processes) {
    const d = devices.find((x) => x.uuid !== null && x.uuid === p.gpuUuid);
    if (!d) continue;
    const tag = tagOf(p.pid);
    if (tag !== null && tag === jobOn(d.index)) continue;
    const list = byDevice.get(d.index) ?? [];
    list.push({ pid: p.pid, name: p.name, usedMiB: p.usedMiB, rcJob: tag });
    byDevice.set(d.index, list);
  }
  return [...byDevice].map(([index, procs]) => ({
    index,
    reason: `${procs.map((p) => `pid ${p.pid} (${p.name}${p.usedMiB !== null ? `, ${p.usedMiB} MiB` : ''})`).join(', ')} ${procs.length > 1 ? 'use' : 'uses'} the GPU ${procs.every((p) => p.rcJob) ? `but belong${procs.length > 1 ? '' : 's'} to a job that is not running there` : 'and rc did not start it'}`,
    evidence: { processes: procs, runningJob: jobOn(index) },
  }));
}

// A job row as API responses show it: the JobView of protocol/wire.ts.
import type { jobAttempts, jobs } from '../../db/schema';
import type { AttemptView, JobMachineAsk, JobView } from '../../protocol/wire';
import { formatGpuChoices } from '../../core/gpu-choices';
import { isOutputTruncatedReason } from '../../core/output-truncated';

export type { JobView };
export type JobRow = typeof jobs.$inferSelect;
export type AttemptRow = typeof jobAttempts.$inferSelect;

export function attemptView(a: AttemptRow): AttemptView {
  return {
    attempt: a.attempt,
    host: a.hostName,
    devices: a.devices,
    state: a.state,
    cause: a.endCause,
    exitCode: a.exitCode,
    reason: a.reason,
    startedAt: a.startedAt?.toISOString() ?? null,
    endedAt: a.endedAt.toISOString(),
  };
}

/** The job's machine flags, from its own row (no query: lists build many views); null for the common job that asked none. */
function machineAsk(j: JobRow): JobMachineAsk | null {
  const min = j.machineMin && Object.keys(j.machineMin).length ? j.machineMin : null;
  if (j.placement !== 'cloud' && j.cloud === null && j.maxPricePerHour === null && !j.spot && j.keepS === null && min === null) return null;
  return { cloud: j.cloud, maxPrice: j.maxPricePerHour, spot: j.spot, keepS: j.keepS, min };
}

/** The job as answers show it: its environment's keys, never their values (they may be secrets). */
export function jobView(j: JobRow): JobView {
  return {
    id: j.id,
    name: j.name,
    comment: j.comment,
    kind: j.kind,
    state: j.state,
    submitter: j.submitter,
    argv: j.argv,
    envKeys: Object.keys(j.env ?? {}).sort(),
    cwd: j.cwd,
    selector: j.selector,
    device: j.deviceName,
    gpus: j.gpus,
    gpuChoices: j.gpuChoices?.length ? formatGpuChoices(j.gpuChoices) : null,
    priority: j.priority,
    placement: j.placement,
    machine: machineAsk(j),
    host: j.hostName,
    devices: j.devices,
    exitCode: j.exitCode,
    cause: j.endCause,
    reason: j.reason,
    maxRuntimeS: j.maxRuntimeS,
    idleTimeoutS: j.idleTimeoutS,
    gpuIdleTimeoutS: j.gpuIdleTimeoutS,
    // Filled in by withIdle (server/jobs/idle.ts) where a view loads it.
    idleS: null,
    idleTotalS: null,
    idleWarned: false,
    waitTimeoutS: j.waitTimeoutS,
    outputTruncated: j.outputTruncated,
    outputTruncatedReason: j.outputTruncated ? (isOutputTruncatedReason(j.outputTruncatedReason) ? j.outputTruncatedReason : 'output_limit') : null,
    attempt: j.attempt,
    restarts: j.restarts,
    preemptible: j.preemptible,
    retryOnPreempt: j.retryOnPreempt,
    array: j.arrayId !== null && j.arrayIndex !== null ? { id: j.arrayId, index: j.arrayIndex } : null,
    retries: j.retries,
    retried: j.retried,
    retryDelayS: j.retryDelayS,
    // Only while queued: an ended job waits on nothing.
    waiting: j.state === 'queued' ? j.waits : null,
    notBefore: j.state === 'queued' ? (j.notBefore?.toISOString() ?? null) : null,
    expiresAt: j.expiresAt?.toISOString() ?? null,
    createdAt: j.createdAt.toISOString(),
    startedAt: j.startedAt?.toISOString() ?? null,
    endedAt: j.endedAt?.toISOString() ?? null,
  };
}

// A job row as API responses show it: the JobView of protocol/wire.ts.
import type { jobs } from '../../db/schema';
import type { JobView } from '../../protocol/wire';

export type { JobView };
export type JobRow = typeof jobs.$inferSelect;

export function jobView(j: JobRow): JobView {
  return {
    id: j.id,
    kind: j.kind,
    state: j.state,
    submitter: j.submitter,
    argv: j.argv,
    cwd: j.cwd,
    selector: j.selector,
    device: j.deviceName,
    gpus: j.gpus,
    priority: j.priority,
    host: j.hostName,
    devices: j.devices,
    exitCode: j.exitCode,
    cause: j.endCause,
    reason: j.reason,
    maxRuntimeS: j.maxRuntimeS,
    idleTimeoutS: j.idleTimeoutS,
    waitTimeoutS: j.waitTimeoutS,
    outputTruncated: j.outputTruncated,
    expiresAt: j.expiresAt?.toISOString() ?? null,
    createdAt: j.createdAt.toISOString(),
    startedAt: j.startedAt?.toISOString() ?? null,
    endedAt: j.endedAt?.toISOString() ?? null,
  };
}

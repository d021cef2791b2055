// The shape of a job in API responses.
import type { jobs } from '../../db/schema';

export type JobRow = typeof jobs.$inferSelect;

export interface JobView {
  id: string;
  kind: JobRow['kind'];
  state: JobRow['state'];
  submitter: string;
  argv: string[];
  cwd: string | null;
  selector: string;
  device: string | null;
  gpus: number;
  priority: number;
  host: string | null;
  devices: string[] | null;
  exitCode: number | null;
  /** Why it ended, as data (core/job-state.ts END_CAUSES); null while it runs or waits. */
  cause: JobRow['endCause'];
  reason: string | null;
  maxRuntimeS: number | null;
  idleTimeoutS: number | null;
  waitTimeoutS: number | null;
  outputTruncated: boolean;
  /** A running hold's end (start + TTL, moved by extend); null for other jobs. */
  expiresAt: string | null;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
}

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

// Raw SQL on the hot path returns snake_case columns and int8 as strings; this maps them.
import type { JobRow } from './job-view';

export function rowToJob(r: Record<string, unknown>): JobRow {
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: r.id as string,
    kind: (r.kind as JobRow['kind'] | undefined) ?? 'run',
    name: (r.name as string | null) ?? null,
    seq: Number(r.seq),
    submitter: r.submitter as string,
    tokenId: num(r.token_id),
    argv: r.argv as string[],
    env: (r.env as Record<string, string> | null) ?? null,
    cwd: (r.cwd as string | null) ?? null,
    selector: r.selector as string,
    deviceName: (r.device_name as string | null) ?? null,
    gpus: Number(r.gpus),
    priority: Number(r.priority),
    state: r.state as JobRow['state'],
    hostName: (r.host_name as string | null) ?? null,
    devices: (r.devices as string[] | null) ?? null,
    fence: num(r.fence),
    exitCode: num(r.exit_code),
    reason: (r.reason as string | null) ?? null,
    endCause: (r.end_cause as JobRow['endCause'] | null) ?? null,
    killRequestedBy: (r.kill_requested_by as string | null) ?? null,
    killCause: (r.kill_cause as JobRow['killCause'] | null) ?? null,
    maxRuntimeS: num(r.max_runtime_s),
    idleTimeoutS: num(r.idle_timeout_s),
    waitTimeoutS: num(r.wait_timeout_s),
    holdTtlS: num(r.hold_ttl_s),
    expiresAt: date(r.expires_at),
    outputTruncated: Boolean(r.output_truncated),
    ttySeenAt: date(r.tty_seen_at),
    createdAt: new Date(r.created_at as string),
    startedAt: date(r.started_at),
    endedAt: date(r.ended_at),
  };
}

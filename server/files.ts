// rc cp through the controller: one file to or from a device's workspace,
// under a lease. A device you hold is used as it is; a free one gets a short
// lease of its own (a `cp` job, visible in rc jobs); one held by anyone else
// is refused by name. Every copy is audited (cp.up, cp.down) with the
// submitter and the token. Files are whole in memory here, so they are capped.
import { CP_CHUNK_BYTES, CP_MAX_BYTES } from '../core/cp';
import { RcError } from '../core/errors';
import { type FileEvent, WorkerEvent } from '../protocol/events';
import type { FileOp, FileReply } from '../protocol/worker';
import { actorDetail, actorText, actsAs, type Identity } from './auth';
import type { Sql } from './db';
import { loadDevices, type DeviceSummary } from './fleet';
import { parseDeviceName } from '../core/schedule';
import type { JobEngine } from './jobs/engine';
import type { WorkerHub } from './worker-hub';
import { readBounded } from './read-bounded';
import { auditOrigin, auditTokenId } from './request-scope';

export interface CopyDeps {
  sql: Sql;
  hub: WorkerHub;
  /** The job engine: a copy's short lease is taken and ended through it. */
  engine: Pick<JobEngine, 'copyLease' | 'copyEnded' | 'copyRefused'>;
  freed: () => void;
}

export async function upload(
  deps: CopyDeps,
  identity: Identity,
  submitter: string,
  deviceName: string,
  path: string,
  data: Buffer,
): Promise<{ bytes: number; lease: string }> {
  const done = await withCopyLease(deps, identity, submitter, deviceName, ['cp', 'up', path], async (host, lease) => {
    const begun = await call(deps, host, WorkerEvent.fileBegin, { path });
    const temp = begun.temp!;
    try {
      for (let offset = 0; offset < data.length; offset += CP_CHUNK_BYTES) {
        await call(deps, host, WorkerEvent.fileWrite, { path, temp, offset, data: data.subarray(offset, offset + CP_CHUNK_BYTES) });
      }
      await call(deps, host, WorkerEvent.fileCommit, { path, temp, size: data.length });
    } catch (err) {
      await deps.hub.fileCall(host, WorkerEvent.fileAbort, { path, temp }).catch(() => null);
      throw err;
    }
    return { bytes: data.length, lease };
  });
  await audited(deps.sql, identity, submitter, 'cp.up', `${deviceName}:${path}`, done.lease, done.bytes);
  return done;
}

export async function download(
  deps: CopyDeps,
  identity: Identity,
  submitter: string,
  deviceName: string,
  path: string,
): Promise<{ data: Buffer; lease: string }> {
  const done = await withCopyLease(deps, identity, submitter, deviceName, ['cp', 'down', path], async (host, lease) => {
    const first = await call(deps, host, WorkerEvent.fileRead, { path, offset: 0, length: CP_CHUNK_BYTES });
    const pieces = [first.data!];
    let got = first.data!.length;
    while (got < first.size!) {
      const next = await call(deps, host, WorkerEvent.fileRead, { path, offset: got, length: CP_CHUNK_BYTES });
      if (next.size !== first.size || next.mtimeMs !== first.mtimeMs || next.data!.length === 0) {
        throw new RcError('conflict', `${path} changed while it was being copied; copy it again once it is written`);
      }
      pieces.push(next.data!);
      got += next.data!.length;
    }
    return { data: Buffer.concat(pieces), lease };
  });
  await audited(deps.sql, identity, submitter, 'cp.down', `${deviceName}:${path}`, done.lease, done.data.length);
  return done;
}

/** A copy that was made: who (the submitter and the token), what, under which lease. */
async function audited(
  sql: Sql,
  identity: Identity,
  submitter: string,
  action: 'cp.up' | 'cp.down',
  target: string,
  lease: string,
  bytes: number,
): Promise<void> {
  await sql`insert into audit (actor, action, target, detail, origin, token_id)
    values (${actorText(identity, submitter)}, ${action}, ${target}, ${JSON.stringify({ ...actorDetail(identity, submitter), lease, bytes })}::text::jsonb, ${auditOrigin()}, ${auditTokenId()})`;
}

async function call(deps: CopyDeps, host: string, event: FileEvent, op: FileOp): Promise<Extract<FileReply, { ok: true }>> {
  const reply = await deps.hub.fileCall(host, event, op);
  if (!reply) throw new RcError('unavailable', `the worker of ${host} did not answer; try again, or check rc devices`);
  if (!reply.ok) throw new RcError(reply.code === 'internal' ? 'unavailable' : reply.code, reply.message);
  return reply;
}

/** What the worker answers when a copy's request is wrong rather than the copy broken. */
const REFUSALS: ReadonlySet<string> = new Set(['bad_request', 'not_found', 'forbidden', 'payload_too_large']);

/** Runs fn under a lease on the device: the caller's own hold, or a short lease taken (and released) here. */
async function withCopyLease<T>(
  deps: CopyDeps,
  identity: Identity,
  submitter: string,
  deviceName: string,
  argv: string[],
  fn: (host: string, lease: string) => Promise<T>,
): Promise<T> {
  actsAs(identity, submitter);
  const parsed = parseDeviceName(deviceName);
  const device = parsed ? (await loadDevices(deps.sql, { host: parsed.hostName, details: false })).find((d) => d.name === deviceName) : undefined;
  if (!device) throw new RcError('not_found', `no device is named ${deviceName}; rc devices lists them`);
  if (device.unhealthy) throw new RcError('quarantined', `${deviceName} is quarantined (${device.unhealthy.reason}); pick another device`);
  if (device.hostStatus !== 'online') {
    throw new RcError('unavailable', `the worker of ${device.hostName} is not connected; rc devices shows the host's state`);
  }
  if (device.holder) {
    const [lease] = await deps.sql<{ kind: string; submitter: string }[]>`select kind, submitter from jobs where id = ${device.holder.jobId}`;
    if (lease?.kind === 'hold' && lease.submitter === submitter) return fn(device.hostName, device.holder.jobId);
    throw new RcError('busy', heldBy(device, lease?.kind ?? 'job'));
  }
  const job = await deps.engine.copyLease(identity, submitter, device, argv);
  try {
    const out = await fn(device.hostName, job.id);
    await deps.engine.copyEnded(job, null);
    return out;
  } catch (err) {
    // The worker refused the copy (no such file, a path outside the workspace, too big): nothing was copied and
    // nothing failed, so no job is left behind. A copy that broke off (the worker gone, the file changed) ends failed.
    if (err instanceof RcError && REFUSALS.has(err.code)) {
      await deps.engine.copyRefused(job);
      throw err;
    }
    const reason = err instanceof Error ? err.message.slice(0, 500) : String(err);
    await deps.engine.copyEnded(job, reason);
    throw err;
  } finally {
    deps.freed();
  }
}

function heldBy(d: DeviceSummary, kind: string): string {
  return `${d.name} is held by ${d.holder!.submitter} (${kind === 'hold' ? 'hold' : 'job'} ${d.holder!.jobId}); rc cp only copies to or from a device that is free or that you hold`;
}

/** The request body, refused early (by its Content-Length) or as soon as it passes the cap. */
export function readUpload(req: import('node:http').IncomingMessage): Promise<Buffer> {
  return readBounded(
    req,
    CP_MAX_BYTES,
    () =>
      new RcError(
        'payload_too_large',
        `rc cp moves at most ${CP_MAX_BYTES / 1024 / 1024} MiB through the controller: put bigger files on shared storage (the host's usage sheet says where)`,
      ),
  );
}

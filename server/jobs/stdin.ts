// A job's standard input through the controller (POST /api/jobs/:id/stdin,
// rc run with a pipe): one piece per request, passed to the worker and
// answered once the worker has it in the command's pipe, so the client's
// next piece waits for a slow reader. Only from the job's submitter, only to
// a job submitted with `stdin`, and only through the controller its worker
// is connected to.
import { RcError } from '../../core/errors';
import { STDIN_CHUNK_BYTES, type StdinOp, type StdinReply } from '../../protocol/worker';
import { actsAs, type Identity } from '../auth';
import type { Sql } from '../db';
import { readBounded } from '../read-bounded';
import { findJob } from './find';

export interface StdinDeps {
  sql: Sql;
  hub: { holds(host: string): boolean; stdinCall(host: string, op: StdinOp): Promise<StdinReply | null> };
}

export interface StdinPiece {
  submitter: string;
  offset: number;
  data: Buffer;
  eof: boolean;
}

/** `closed`: the command closed its stdin, or the job ended: send no more. */
export async function writeJobStdin(deps: StdinDeps, identity: Identity, ref: string, piece: StdinPiece): Promise<{ closed: boolean }> {
  actsAs(identity, piece.submitter);
  const job = await findJob(deps.sql, ref);
  if (job.submitter !== piece.submitter && identity.kind !== 'admin')
    throw new RcError('not_job_owner', `job ${job.id} belongs to ${job.submitter}, not ${piece.submitter}; only its submitter writes its stdin`);
  if (job.kind !== 'run' || !job.stdin) throw new RcError('conflict', `job ${job.id} was not submitted with a piped standard input (rc run reading a pipe)`);
  if (job.state === 'queued') throw new RcError('conflict', `job ${job.id} has not started yet: its stdin is taken once it runs`);
  if (job.state !== 'running' || job.attempt > 1) return { closed: true };
  if (!deps.hub.holds(job.hostName!))
    throw new RcError(
      'conflict',
      `the worker of ${job.hostName} is connected to another controller: a job's stdin goes through that one (RC_CONTROLLER listing it first)`,
    );
  const reply = await deps.hub.stdinCall(job.hostName!, { jobId: job.id, fence: job.fence!, offset: piece.offset, data: piece.data, eof: piece.eof });
  if (!reply) throw new RcError('unavailable', `the worker of ${job.hostName} did not take the input; try again, or check rc devices`);
  if (reply.ok) return { closed: reply.closed };
  // Ended (or restarted) under the request: nothing more goes in.
  if (reply.code === 'not_found') return { closed: true };
  throw new RcError(reply.code, reply.message);
}

/** A piece's bytes: refused by its Content-Length, or as soon as it passes the bound. */
export function readStdinPiece(req: import('node:http').IncomingMessage): Promise<Buffer> {
  return readBounded(req, STDIN_CHUNK_BYTES, () => new RcError('payload_too_large', `a stdin piece is at most ${STDIN_CHUNK_BYTES} bytes; send more pieces`));
}

// A job's standard input, piece by piece from the controller (job:stdin):
// in order (each piece names the bytes before it), acknowledged only once it
// is in the pipe, so a command that reads slowly holds back the sender, and
// rc run with it. The command may close its stdin early (`head -1`): the
// answer then says closed, and the sender stops.
import type { Writable } from 'node:stream';
import type { StdinOp, StdinReply } from '../protocol/worker';
import type { RunningJob } from './runtime';

/** What the worker keeps of one job for its stdin. */
export interface StdinJob {
  order: { jobId: string; fence: number; stdin?: boolean };
  run: RunningJob;
  /** Bytes of stdin written so far. */
  stdinSent?: number;
}

/** How long a piece may wait for the command's stdin to exist (a container being made). */
const READY_MS = 60_000;

export async function writeStdin(job: StdinJob | undefined, op: StdinOp, ended: () => boolean): Promise<StdinReply> {
  if (!job || job.order.fence !== op.fence) return { ok: false, code: 'not_found', message: `job ${op.jobId} is not running on this host` };
  if (!job.order.stdin) return { ok: false, code: 'bad_request', message: `job ${op.jobId} was not started with a piped standard input` };
  const stdin = await pipeOf(job.run, ended);
  if (!stdin || stdin.destroyed || stdin.writableEnded) return { ok: true, closed: true };
  const sent = job.stdinSent ?? 0;
  if (op.offset !== sent) return { ok: false, code: 'conflict', message: `stdin of job ${op.jobId} is at byte ${sent}, not ${op.offset}` };
  if (op.data.length) {
    job.stdinSent = sent + op.data.length;
    if (!stdin.write(op.data)) await drained(stdin);
  }
  if (op.eof) stdin.end();
  return { ok: true, closed: stdin.destroyed };
}

/** The command's stdin once it runs (null: it ended, or never got one). */
async function pipeOf(run: RunningJob, ended: () => boolean): Promise<Writable | null> {
  const until = Date.now() + READY_MS;
  while (!run.stdin && !ended() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  return run.stdin ?? null;
}

/** Resolves when the pipe takes more, or is gone. */
function drained(stdin: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stdin.off('drain', done);
      stdin.off('close', done);
      resolve();
    };
    stdin.on('drain', done);
    stdin.on('close', done);
  });
}

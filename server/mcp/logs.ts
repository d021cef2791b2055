// The `logs` tool's reading (issue 35): a job's stored output, as GET
// /api/jobs/:id/stream sends it (the frames rc logs reads), cut to a page of at
// most LOGS_MAX_BYTES. A page is addressed by a byte offset into the output
// (stdout and stderr together, as they came), so an agent goes on where the
// last call stopped; the stream is read from its start (or the tail's) and left
// as soon as the page is full, so one call never reads more than it must.
import { RcError } from '../../core/errors';
import { FINAL_STATES, type JobState } from '../../core/job-state';
import { FRAME_EVENT, FRAME_STDERR, FRAME_STDOUT, FrameDecoder, splitOutput } from '../../core/frames';
import type { JobEvent } from '../../protocol/wire';
import type { Loopback } from './loopback';

/** The most one `logs` call answers: enough to read, little enough for a model's context. */
export const LOGS_MAX_BYTES = 64 * 1024;

export interface LogsPage {
  job: string;
  /** The byte of the output `text` starts at. */
  offset: number;
  /** Where the next call goes on (offset + the bytes of text). */
  nextOffset: number;
  text: string;
  /** Stored output is left after nextOffset. */
  more: boolean;
  /** The job has ended: its output is complete. */
  ended: boolean;
}

export async function readLogs(call: Loopback, args: { job: string; tail?: number; offset?: number; maxBytes: number }): Promise<LogsPage> {
  if (args.tail !== undefined && args.offset !== undefined)
    throw new RcError('bad_request', 'give tail or offset, not both: tail starts at the last lines, offset at a byte an earlier call gave');
  const { job } = await call.call('GET /api/jobs/:id', { id: args.job });
  const from = args.offset ?? 0;
  // Past the page by a few bytes: to know that more is there, and to cut it between characters.
  const want = args.maxBytes + 4;
  const abort = new AbortController();
  const body = await call.stream(
    'GET /api/jobs/:id/stream',
    { id: job.id, query: { ...(args.tail !== undefined ? { tail: String(args.tail) } : {}) } },
    abort.signal,
  );
  const parts: Buffer[] = [];
  let got = 0;
  /** The byte of the output the next chunk starts at (a tail's `offsets` event moves it). */
  let pos = 0;
  let start = args.tail === undefined ? from : null;
  let ended = false;
  let full = false;
  const decoder = new FrameDecoder((type, payload) => {
    if (full) return;
    if (type === FRAME_EVENT) {
      const event = JSON.parse(payload.toString('utf8')) as JobEvent;
      if (event.type === 'offsets') pos = start = event.stdout + event.stderr;
      if (event.type === 'exit') ended = true;
      return;
    }
    if (type !== FRAME_STDOUT && type !== FRAME_STDERR) return;
    const { data } = splitOutput(payload);
    const skip = Math.max(0, (start ?? 0) - pos);
    pos += data.length;
    if (skip >= data.length) return;
    const piece = data.subarray(skip, skip + want - got);
    parts.push(piece);
    got += piece.length;
    full = got >= want;
  });
  const reader = body.getReader();
  try {
    while (!full) {
      const { done, value } = await reader.read();
      if (done) break;
      decoder.push(Buffer.from(value));
    }
  } finally {
    abort.abort();
  }
  const bytes = Buffer.concat(parts);
  const cut = bytes.length > args.maxBytes ? charBoundary(bytes, args.maxBytes) : bytes.length;
  const at = start ?? 0;
  return {
    job: job.id,
    offset: at,
    nextOffset: at + cut,
    text: bytes.subarray(0, cut).toString('utf8'),
    more: cut < bytes.length,
    ended: ended || FINAL_STATES.has(job.state as JobState),
  };
}

/** At most `max`, and not inside a UTF-8 character (a continuation byte is never where one starts). */
function charBoundary(bytes: Buffer, max: number): number {
  let cut = max;
  while (cut > max - 3 && cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return cut;
}

// Streams a job to an HTTP client as frames (core/frames.ts): lifecycle
// events, then output as it arrives, then the exit. Ends when the job does.
//
// What waits at the controller for one client is bounded. A client that stops
// reading would otherwise have the controller keep a copy of all the job's
// output for it (four such clients of a 200 MB job took it from 80 MiB to 913).
// Past STREAM_BACKLOG_BYTES it is dropped: its connection is cut, and it
// resumes with ?after=<the last seq it has> (the CLI does so by itself).
import type { ServerResponse } from 'node:http';
import { encodeEvent, encodeOutput, STREAM_CONTENT_TYPE } from '../../core/frames';
import type { JobEvent } from '../../protocol/wire';
import { isOutputTruncatedReason, outputTruncatedText } from '../../core/output-truncated';
import type { Sql } from '../db';
import type { JobRow } from '../jobs/job-view';
import type { JobEvents, JobItem } from '../job-events';
import type { OutputWriter } from '../output-writer';
import { FINAL_STATES } from '../../core/job-state';
import { TailFinder, type TailStart } from '../../core/tail';

/**
 * Bytes written to a stream client but not yet taken by its connection, past
 * which the client is dropped. Loopback and network buffers hold several MiB
 * more, so a client that keeps up is never near it.
 */
export const STREAM_BACKLOG_BYTES = 8 * 1024 * 1024;

/** Stored chunks read per query during a replay: one page in memory at a time (a chunk is one pipe read, at most 64 KiB). */
const REPLAY_PAGE_ROWS = 32;

type Output = Extract<JobItem, { kind: 'output' }>;

export function openStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': STREAM_CONTENT_TYPE, 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
  res.flushHeaders();
}

export function writeEvent(res: ServerResponse, event: JobEvent): void {
  res.write(encodeEvent(event));
}

/** One client's frames: each chunk once and in order, and a client too far behind dropped. */
class Sink {
  /** The last chunk passed on: a worker resends what the controller may have missed, and a replay overlaps the live items. */
  lastSeq: number;

  constructor(
    private readonly res: ServerResponse,
    after: number,
  ) {
    this.lastSeq = after;
  }

  get gone(): boolean {
    return this.res.writableEnded || this.res.destroyed;
  }

  output(item: Output): void {
    if (this.gone || item.seq <= this.lastSeq) return;
    if (this.res.writableLength > STREAM_BACKLOG_BYTES) return this.drop();
    this.lastSeq = item.seq;
    // Chunks that come in one turn of the event loop leave in one write, not one system call each.
    if (!this.corked) {
      this.corked = true;
      this.res.cork();
      setImmediate(() => {
        this.corked = false;
        this.res.uncork();
      });
    }
    this.res.write(encodeOutput(item.stream, item.seq, item.data));
  }

  private corked = false;

  /** Events are few and small: they are written even to a client that is behind. */
  event(event: JobEvent): void {
    if (!this.gone) writeEvent(this.res, event);
  }

  end(event: JobEvent): void {
    if (!this.gone) this.res.end(encodeEvent(event));
  }

  /** Cuts the connection; what was queued for it is freed. */
  drop(): void {
    this.res.destroy();
  }

  /** Resolves once the client has taken what was written (or is gone), so a replay goes no faster than the client reads. */
  drained(): Promise<void> {
    const res = this.res;
    if (this.gone || !res.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }
}

/** Subscribes before anything can happen to the job (a new one: from seq 0), so no event is missed. Returns a stop function. */
export function pipeJob(events: JobEvents, jobId: string, res: ServerResponse): () => void {
  const sink = new Sink(res, 0);
  const stop = events.subscribe(
    jobId,
    (item) => {
      if (item.kind === 'output') return sink.output(item);
      if (item.event.type !== 'exit') return sink.event(item.event);
      stop();
      sink.end(item.event);
    },
    0,
  );
  res.on('close', stop);
  return stop;
}

export interface ReplayDeps {
  sql: Sql;
  events: JobEvents;
  writer: OutputWriter;
  outputLimitBytes: number;
}

type JobState = Pick<JobRow, 'state' | 'exitCode' | 'reason' | 'endCause' | 'outputTruncated' | 'outputTruncatedReason'>;

/**
 * Replays a job's stored output after `after`, then (with `follow`) its live
 * output until it ends. Live items that arrive during the replay are held and
 * passed on after it, skipping any sequence number already sent: no chunk
 * lost, none repeated. At most STREAM_BACKLOG_BYTES of them are held; a
 * client whose replay falls that far behind the job is dropped.
 */
export async function replayJob(
  deps: ReplayDeps,
  jobId: string,
  res: ServerResponse,
  follow: boolean,
  after = 0,
  /** Start at the last this many lines of the stored output (rc logs --tail), instead of after `after`. */
  tail: number | null = null,
): Promise<void> {
  const sink = new Sink(res, after);
  if (!follow) return snapshot(deps, jobId, sink, tail);
  let live = false;
  const held: JobItem[] = [];
  let heldBytes = 0;
  const pass = (item: JobItem) => {
    if (item.kind === 'output') return sink.output(item);
    if (item.event.type !== 'exit') return;
    stop();
    sink.end(item.event);
  };
  const stop = deps.events.subscribe(jobId, (item) => {
    if (live) return pass(item);
    held.push(item);
    heldBytes += item.kind === 'output' ? item.data.length : 0;
    if (heldBytes > STREAM_BACKLOG_BYTES) sink.drop();
  });
  res.on('close', stop);
  // Chunks that reached this controller before the subscription are stored by now; later ones are held.
  await deps.writer.drain();
  const upTo = await lastStoredSeq(deps.sql, jobId);
  if (tail !== null) await startAtTail(deps.sql, jobId, sink, upTo, tail);
  await replayStored(deps.sql, jobId, sink, upTo);
  // Output stored after this, on whichever controller, follows from here.
  deps.events.caughtUp(jobId, upTo);
  const job = await jobState(deps.sql, jobId);
  if (job?.outputTruncated) sink.event(truncatedNotice(deps, jobId, job));
  live = true;
  for (const item of held.splice(0)) pass(item);
  if (sink.gone || !job) return;
  if (FINAL_STATES.has(job.state)) pass({ kind: 'event', event: exitEvent(jobId, job) });
}

/**
 * rc logs without -f: the output stored now, then the exit (a job that has
 * ended) or an end (one still going). Nothing live is held for it.
 */
async function snapshot(deps: ReplayDeps, jobId: string, sink: Sink, tail: number | null): Promise<void> {
  // Read first: a job seen ended has all its output stored (its exit report waited for that).
  const before = await jobState(deps.sql, jobId);
  await deps.writer.drain();
  const upTo = await lastStoredSeq(deps.sql, jobId);
  if (tail !== null) await startAtTail(deps.sql, jobId, sink, upTo, tail);
  await replayStored(deps.sql, jobId, sink, upTo);
  // Read again: the output may have reached the bound during the replay.
  const job = await jobState(deps.sql, jobId);
  if (!before || !job) return sink.drop();
  if (job.outputTruncated) sink.event(truncatedNotice(deps, jobId, job));
  sink.end(FINAL_STATES.has(before.state) ? exitEvent(jobId, job) : { type: 'end', jobId, state: before.state });
}

/** Stored chunks after the client's last one, up to `upTo`, a page at a time, written no faster than the client takes them. */
async function replayStored(sql: Sql, jobId: string, sink: Sink, upTo: number): Promise<void> {
  while (!sink.gone && sink.lastSeq < upTo) {
    const rows = await sql<{ seq: number; stream: 1 | 2; data: Buffer }[]>`
      select seq, stream, data from job_output where job_id = ${jobId} and seq > ${sink.lastSeq} and seq <= ${upTo}
      order by seq limit ${REPLAY_PAGE_ROWS}`;
    if (!rows.length) return;
    for (const r of rows) {
      sink.output({ kind: 'output', seq: r.seq, stream: r.stream, data: r.data });
      await sink.drained();
    }
  }
}

/**
 * Moves the replay to the last `lines` lines of the output stored up to `upTo` (core/tail.ts): tells the client the
 * byte offsets of stdout and stderr there (an `offsets` event), then sends the rest of the chunk the tail begins in.
 */
async function startAtTail(sql: Sql, jobId: string, sink: Sink, upTo: number, lines: number): Promise<void> {
  const finder = new TailFinder(lines);
  let start: TailStart | null | undefined;
  // Newest first, a page at a time, until enough lines are seen.
  for (let below = upTo + 1; start === undefined; ) {
    const rows = await sql<{ seq: number; data: Buffer }[]>`
      select seq, data from job_output where job_id = ${jobId} and seq < ${below} order by seq desc limit ${REPLAY_PAGE_ROWS}`;
    for (const r of rows) {
      start = finder.push(r.seq, r.data);
      if (start) break;
    }
    if (start === undefined && rows.length < REPLAY_PAGE_ROWS) start = finder.done();
    below = rows.at(-1)?.seq ?? 0;
  }
  if (start === null) {
    sink.event({ type: 'offsets', stdout: 0, stderr: 0, after: 0 });
    return;
  }
  const [chunk] = await sql<{ stream: 1 | 2; data: Buffer }[]>`select stream, data from job_output where job_id = ${jobId} and seq = ${start.seq}`;
  // octet_length reads a stored chunk's size without reading the chunk.
  const sizes = await sql<{ stream: 1 | 2; bytes: number }[]>`
    select stream, sum(octet_length(data))::bigint as bytes from job_output where job_id = ${jobId} and seq < ${start.seq} group by stream`;
  const before = (stream: 1 | 2) => Number(sizes.find((r) => r.stream === stream)?.bytes ?? 0) + (chunk?.stream === stream ? start.skip : 0);
  // The chunk the tail begins in is sent from there; one it begins after (--tail 0) is not sent.
  const partial = chunk !== undefined && start.skip < chunk.data.length;
  sink.lastSeq = partial ? start.seq - 1 : start.seq;
  sink.event({ type: 'offsets', stdout: before(1), stderr: before(2), after: sink.lastSeq });
  if (partial) sink.output({ kind: 'output', seq: start.seq, stream: chunk.stream, data: chunk.data.subarray(start.skip) });
}

async function lastStoredSeq(sql: Sql, jobId: string): Promise<number> {
  const [row] = await sql<{ seq: number }[]>`select coalesce(max(seq), 0)::int as seq from job_output where job_id = ${jobId}`;
  return row?.seq ?? 0;
}

async function jobState(sql: Sql, jobId: string): Promise<JobState | undefined> {
  const [job] = await sql<JobState[]>`select state, exit_code, reason, end_cause, output_truncated, output_truncated_reason from jobs where id = ${jobId}`;
  return job;
}

function exitEvent(jobId: string, job: JobState): JobEvent {
  return { type: 'exit', jobId, state: job.state, exitCode: job.exitCode, reason: job.reason, cause: job.endCause };
}

/** Why the replay is not all of the output (core/output-truncated.ts): the bound, or output lost while the database could not store it. */
function truncatedNotice(deps: ReplayDeps, jobId: string, job: JobState): JobEvent {
  const reason = isOutputTruncatedReason(job.outputTruncatedReason) ? job.outputTruncatedReason : 'output_limit';
  return { type: 'notice', message: outputTruncatedText(reason, jobId, deps.outputLimitBytes) };
}

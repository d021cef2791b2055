// Streams a job to an HTTP client as frames (core/frames.ts): lifecycle
// events, then output as it arrives, then the exit. Ends when the job does.
import type { ServerResponse } from 'node:http';
import { encodeEvent, encodeOutput, STREAM_CONTENT_TYPE, type JobEvent } from '../../core/frames';
import { formatSize } from '../../core/size';
import type { Sql } from '../db';
import type { JobEvents, JobItem } from '../job-events';
import type { OutputWriter } from '../output-writer';
import { FINAL_STATES } from '../jobs/job-view';

export function openStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': STREAM_CONTENT_TYPE, 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
  res.flushHeaders();
}

/** Subscribes before anything can happen to the job, so no event is missed. Returns a stop function. */
export function pipeJob(events: JobEvents, jobId: string, res: ServerResponse): () => void {
  let lastSeq = 0;
  const stop = events.subscribe(jobId, (item: JobItem) => {
    if (res.writableEnded) return;
    if (item.kind === 'output') {
      // A worker resends what the controller may have missed; pass each chunk on once.
      if (item.seq <= lastSeq) return;
      lastSeq = item.seq;
      res.write(encodeOutput(item.stream, item.seq, item.data));
      return;
    }
    writeEvent(res, item.event);
    if (item.event.type === 'exit') {
      stop();
      res.end();
    }
  });
  res.on('close', stop);
  return stop;
}

export function writeEvent(res: ServerResponse, event: JobEvent): void {
  res.write(encodeEvent(event));
}

export interface ReplayDeps { sql: Sql; events: JobEvents; writer: OutputWriter; outputLimitBytes: number }

/**
 * Replays a job's stored output, then (with `follow`) its live output until it
 * ends. Live items that arrive during the replay are held and passed on after
 * it, skipping any sequence number already sent: no chunk lost, none repeated.
 */
export async function replayJob(deps: ReplayDeps, jobId: string, res: ServerResponse, follow: boolean, after = 0): Promise<void> {
  let lastSeq = after;
  let live = false;
  let done = false;
  const held: JobItem[] = [];
  const send = (item: JobItem) => {
    if (done || res.writableEnded) return;
    if (item.kind === 'output') {
      if (item.seq <= lastSeq) return;
      lastSeq = item.seq;
      res.write(encodeOutput(item.stream, item.seq, item.data));
      return;
    }
    if (item.event.type !== 'exit') return;
    done = true;
    writeEvent(res, item.event);
    stop();
    res.end();
  };
  const stop = deps.events.subscribe(jobId, (item) => (live ? send(item) : held.push(item)));
  res.on('close', stop);
  // Chunks that reached this controller before the subscription are stored by now.
  await deps.writer.drain();
  const rows = await deps.sql<{ seq: number; stream: 1 | 2; data: Buffer }[]>`
    select seq, stream, data from job_output where job_id = ${jobId} and seq > ${after} order by seq`;
  for (const r of rows) send({ kind: 'output', seq: r.seq, stream: r.stream, data: r.data });
  const [job] = await deps.sql<{ state: string; exit_code: number | null; reason: string | null; output_truncated: boolean }[]>`
    select state, exit_code, reason, output_truncated from jobs where id = ${jobId}`;
  if (job?.output_truncated && !res.writableEnded) {
    writeEvent(res, { type: 'notice', message: `output truncated: only the first ${formatSize(deps.outputLimitBytes)} of job ${jobId}'s output was kept; the rest was streamed live but not stored` });
  }
  live = true;
  for (const item of held.splice(0)) send(item);
  if (done || !job) return;
  if (FINAL_STATES.has(job.state)) {
    send({ kind: 'event', event: { type: 'exit', jobId, state: job.state, exitCode: job.exit_code, reason: job.reason } });
  } else if (!follow) {
    done = true;
    writeEvent(res, { type: 'end', jobId, state: job.state });
    stop();
    res.end();
  }
}

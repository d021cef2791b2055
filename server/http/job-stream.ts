// Streams a job to an HTTP client as frames (core/frames.ts): lifecycle
// events, then output as it arrives, then the exit. Ends when the job does.
import type { ServerResponse } from 'node:http';
import { encodeEvent, encodeFrame, FRAME_STDERR, FRAME_STDOUT, STREAM_CONTENT_TYPE, type JobEvent } from '../../core/frames';
import type { JobEvents, JobItem } from '../job-events';

export function openStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': STREAM_CONTENT_TYPE, 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
  res.flushHeaders();
}

/** Subscribes before anything can happen to the job, so no event is missed. Returns a stop function. */
export function pipeJob(events: JobEvents, jobId: string, res: ServerResponse): () => void {
  const stop = events.subscribe(jobId, (item: JobItem) => {
    if (res.writableEnded) return;
    if (item.kind === 'output') {
      res.write(encodeFrame(item.stream === 1 ? FRAME_STDOUT : FRAME_STDERR, item.data));
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

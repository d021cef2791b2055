// --json for a followed job: each stream event as the line rc prints for it
// (protocol/cli-json.ts has their schemas; docs/cli.md, "JSON output").
import type { JobEvent } from '../protocol/wire';
import type { JsonExit, JsonStreamLine } from '../protocol/cli-json';

/** The line for a stream event, or null for one that prints nothing (an error is rc's, on stderr; offsets set where chunks start). */
export function jsonEventOf(e: Extract<JobEvent, { type: 'exit' }>): JsonExit;
export function jsonEventOf(e: JobEvent): JsonStreamLine | null;
export function jsonEventOf(e: JobEvent): JsonStreamLine | null {
  switch (e.type) {
    case 'queued':
      return { type: 'queued', job: e.jobId, position: e.position, ...(e.waits ? { waits: e.waits } : {}) };
    case 'started':
      return { type: 'started', job: e.jobId, host: e.host, devices: e.devices };
    case 'requeued':
      return { type: 'requeued', job: e.jobId, attempt: e.attempt, state: e.state, cause: e.cause, reason: e.reason, ...(e.retry ? { retry: e.retry } : {}) };
    case 'exit':
      return { type: 'exit', job: e.jobId, state: e.state, exitCode: e.exitCode, cause: e.cause, reason: e.reason };
    case 'end':
      return { type: 'end', job: e.jobId, state: e.state };
    case 'notice':
      return { type: 'notice', message: e.message };
    case 'error':
    case 'offsets':
      return null;
  }
}

/** A chunk of output: its stream, the bytes of that stream before it, and its text. */
export function outputLine(stream: 'stdout' | 'stderr', offset: number, data: string): JsonStreamLine {
  return { type: 'output', stream, offset, data };
}

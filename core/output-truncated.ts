// Why a job's stored output is not all of it, and the sentence that says so
// (rc logs on stderr, the job's page). One place, so every view says the same.
import { formatSize } from './size';

/**
 * output_limit: past the bound kept per job (RC_OUTPUT_LIMIT_BYTES), output was streamed live, not stored.
 * disk_full: the database was out of disk space, and the output waiting meanwhile outgrew what the
 *   controller and the worker hold for it (RC_OUTPUT_WAITING_BYTES, RC_OUTPUT_BUFFER_BYTES).
 * store_behind: the same, with the controller unable to take it for another reason (its database away or
 *   too slow, the worker cut off from it) for longer than the worker could hold it.
 */
export const OUTPUT_TRUNCATED_REASONS = ['output_limit', 'disk_full', 'store_behind'] as const;
export type OutputTruncatedReason = (typeof OUTPUT_TRUNCATED_REASONS)[number];

export function isOutputTruncatedReason(s: string | null): s is OutputTruncatedReason {
  return (OUTPUT_TRUNCATED_REASONS as readonly string[]).includes(s ?? '');
}

/** What the reader of the job's output is told (rc logs, on stderr); `limitBytes`: the bound kept per job. */
export function outputTruncatedText(reason: OutputTruncatedReason, jobId: string, limitBytes: number): string {
  switch (reason) {
    case 'disk_full':
      return `output truncated (disk full): part of job ${jobId}'s output was lost: the controller's database was out of disk space for longer than the controller and the worker could hold the output meanwhile; the rest was stored`;
    case 'store_behind':
      return `output truncated: part of job ${jobId}'s output was lost: the controller could not take it (its database away or behind, or the worker cut off from it) for longer than the worker could hold it; the rest was stored`;
    case 'output_limit':
      return `output truncated: only the first ${formatSize(limitBytes)} of job ${jobId}'s output was kept; the rest was streamed live but not stored`;
  }
}

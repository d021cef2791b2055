// rc wait: block until a job ends and exit with its code, printing nothing
// (rc run --detach, then rc wait, is rc run in two steps).
import { formatDuration } from '../../core/duration';
import { EXIT } from '../../core/exit-codes';
import type { Client } from '../client';
import { durationFlag, parseFlags } from '../flags';
import { errorLine, usage } from '../output';
import { followArray, isArrayRef } from './arrays';
import { follow } from './run';

export const WAIT_HELP = `usage: rc wait <job-id|name|array-id> [--timeout <dur>] [--json]

Blocks until the job ends, then exits with its exit code as rc run would
(the command's own code; rc's codes from 200 up when rc ended it). Prints
nothing. Ctrl-C stops waiting; the job goes on.
Given an array's id (rc run --array), blocks until every task has ended and
exits as rc run --array does: 0 when every task succeeded, else as rc run
would for the lowest-index task that did not.

      --timeout <dur>   give up after this long (e.g. 30m): exit 203, the job goes on
      --json            print how it ended: {"type":"exit","job","state","exitCode",
                        "cause","reason"} (docs/cli.md, "JSON output")
`;

export async function wait(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'wait',
    args,
    [
      { name: 'timeout', type: 'string' },
      { name: 'json', type: 'boolean' },
    ],
    false,
  );
  if (parsed.rest.length !== 1) usage('rc wait takes one job id or name: rc wait <job-id|name> [--timeout <dur>]');
  const timeoutS = durationFlag(parsed, 'timeout', 1);
  if (isArrayRef(parsed.rest[0]!)) return followArray(client, parsed.rest[0]!, timeoutS ?? null, false, parsed.flags.has('json'));
  const { job } = await client.call('GET /api/jobs/:id', { id: parsed.rest[0]! });
  // Only its events: none of its output is sent.
  const res = await client.stream('GET /api/jobs/:id/stream', { id: job.id, query: { follow: '1', after: Number.MAX_SAFE_INTEGER } });
  const ended = follow(client, res, { detachOnInterrupt: true, knownJobId: job.id, quiet: true, json: parsed.flags.has('json') });
  if (timeoutS === undefined) return ended;
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<number>((resolve) => {
    timer = setTimeout(() => {
      errorLine('wait_timeout', `job ${job.id} has not ended after ${formatDuration(timeoutS)}; it goes on (rc wait ${job.id} again, or rc kill ${job.id})`);
      resolve(EXIT.wait_timeout);
    }, timeoutS * 1000);
  });
  try {
    return await Promise.race([ended, gaveUp]);
  } finally {
    clearTimeout(timer);
  }
}

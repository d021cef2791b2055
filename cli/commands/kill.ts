// rc kill: stop a job you submitted (an admin token may stop any).
import { EXIT } from '../../core/exit-codes';
import type { Client } from '../client';
import { parseFlags } from '../flags';
import { json, out, usage } from '../output';
import { isArrayRef, killArrayCmd } from './arrays';

export const KILL_HELP = `usage: rc kill <job-id|name|array-id> [--json]

Stops a queued or running job whose submitter matches yours (RC_SUBMITTER);
its whole process group dies with it. A name (rc run --name) stands for the
one queued or running job with it, else the one job ever given it; a name
several jobs share is refused with ambiguous_name, listing their ids.
--json prints the job as the controller answered: { "job": { ... } }.
Given an array's id (rc run --array), stops every task: queued ones are
cancelled, running ones killed.
`;

export async function kill(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'kill',
    args,
    [
      { name: 'json', type: 'boolean' },
      { name: 'help', short: 'h', type: 'boolean' },
    ],
    false,
  );
  if (parsed.flags.has('help')) {
    out(KILL_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length !== 1) usage('rc kill takes one job id or name: rc kill <job-id|name>');
  const id = parsed.rest[0]!;
  if (isArrayRef(id)) return killArrayCmd(client, id, parsed.flags.has('json'));
  const answer = await client.call('POST /api/jobs/:id/kill', { id, body: { submitter: client.submitter } });
  if (parsed.flags.has('json')) {
    json(answer);
    return EXIT.ok;
  }
  const { job } = answer;
  out(job.state === 'running' ? `stopping ${job.id}\n` : `${job.id} is ${job.state}\n`);
  return EXIT.ok;
}

// rc kill <array>: every task at once, as rc kill would each: the queued ones
// (those waiting on the cap too) cancelled in one end statement, the running
// ones asked to stop in one statement and told to their workers. Audited once.
import { RcError } from '../../core/errors';
import { step } from '../../core/job-state';
import { audit } from '../../db/schema';
import { actorDetail, actorText, actsAs, type Identity } from '../auth';
import { auditOrigin, auditTokenId } from '../request-scope';
import { endJobs } from './finish';
import type { ArrayRow } from './find';
import type { KillDeps } from './kill';
import { requestArrayStop } from './sql/request-array-stop';

/** By the array's submitter (claimed as this token may, actsAs) or with an admin token. Returns how many tasks it ended or asked to stop. */
export async function killArray(deps: KillDeps, identity: Identity, array: ArrayRow, submitter: string): Promise<number> {
  actsAs(identity, submitter);
  if (array.submitter !== submitter && identity.kind !== 'admin') {
    throw new RcError('not_job_owner', `array ${array.id} belongs to ${array.submitter}, not ${submitter}; leave it alone`);
  }
  const actor = actorText(identity, submitter);
  await deps.db.insert(audit).values({
    actor,
    action: 'array.kill',
    target: array.id,
    detail: { ...actorDetail(identity, submitter), owner: array.submitter },
    origin: auditOrigin(),
    tokenId: auditTokenId(),
  });
  const reason = `killed by ${actor} (array ${array.id})`;
  // Queued first: a task ending meanwhile then lets no waiting task in (array-slots finds none left).
  const queued = await deps.sql<{ id: string }[]>`select id from jobs where array_id = ${array.id} and state = 'queued' order by array_index`;
  // core's rule for a stop of a job that never ran: cancelled.
  const end = step({ state: 'queued', stop: null, ending: null }, { type: 'stop', stop: { cause: 'killed', reason } }).ending!;
  const cancelled = await endJobs(
    deps,
    queued.map((q) => ({ jobId: q.id, end, fence: null, host: null })),
    { from: ['queued'] },
  );
  const running = await requestArrayStop(deps.sql, array.id, reason, 'killed');
  for (const r of running) deps.hub.killJob(r.hostName, { jobId: r.id, fence: r.fence, reason: r.killRequestedBy });
  return cancelled.length + running.length;
}

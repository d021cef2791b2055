// Extending a hold: deliberately, by its holder (or an admin), audited. It
// then ends ttlS from now; a queued hold gets the new TTL for when it starts.
import { RcError } from '../../core/errors';
import { formatDuration } from '../../core/duration';
import { actorDetail, actorText, actsAs, type Identity } from '../auth';
import type { Sql } from '../db';
import { FINAL_STATES } from '../../core/job-state';
import type { JobRow } from './job-view';
import { auditOrigin, auditTokenId } from '../request-scope';
import { checkAsk } from '../../core/limits';
import { limitsFor } from '../limits';

export async function extendHold(deps: { sql: Sql }, identity: Identity, hold: JobRow, submitter: string, ttlS: number): Promise<JobRow> {
  actsAs(identity, submitter);
  if (hold.submitter !== submitter && identity.kind !== 'admin') {
    throw new RcError('not_job_owner', `hold ${hold.id} belongs to ${hold.submitter}, not ${submitter}; leave it alone`);
  }
  if (FINAL_STATES.has(hold.state))
    throw new RcError('conflict', `hold ${hold.id} has already ended (${hold.state}: ${hold.reason ?? 'no reason'}); take a new one with rc hold`);
  // An extend asks for a TTL as a new hold does: the hold's token's and team's --max-hold-ttl bound it.
  const scopes = hold.tokenId === null ? [] : await limitsFor(deps.sql, hold.tokenId);
  const verdict = checkAsk(
    scopes.map((l) => ({ ...l, gpus: null, maxPriority: null })),
    { kind: 'hold', priority: 0, maxRuntimeS: null, runtimeAsked: false, ttlS, gpus: 0 },
  );
  if (!verdict.ok) throw new RcError('over_limit', verdict.message);
  const [row] = await deps.sql<JobRow[]>`
    with j as (
      update jobs set
        expires_at = case when state = 'running' then now() + make_interval(secs => ${ttlS}) end,
        hold_ttl_s = case when state = 'queued' then ${ttlS}::int else hold_ttl_s end
      where id = ${hold.id} and kind = 'hold' and state in ('queued', 'running')
      returning *
    ), a as (
      insert into audit (actor, action, target, detail, origin, token_id)
      select ${actorText(identity, submitter)}, 'hold.extend', j.id, ${JSON.stringify({ ...actorDetail(identity, submitter), owner: hold.submitter, ttl: formatDuration(ttlS) })}::text::jsonb,
        ${auditOrigin()}::text, ${auditTokenId()}::bigint
      from j
    )
    select * from j`;
  if (!row) throw new RcError('conflict', `hold ${hold.id} has just ended; take a new one with rc hold`);
  return row;
}

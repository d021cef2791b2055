// rc run --array: one submit of many tasks. The job is checked once, as any
// submit (server/jobs/submit.ts checkSubmit: the fleet, the token's limits),
// then the array's row and every task are stored by one statement: one
// transaction, one round trip, whatever the size. Tasks past the %N cap wait
// (waits = 'array') until server/jobs/array-slots.ts lets them in.
import { randomBytes } from 'node:crypto';
import { parseArraySpec } from '../../core/array-spec';
import { RcError } from '../../core/errors';
import type { SubmitArray } from '../../protocol/api';
import { actsAs, type Identity } from '../auth';
import type { StartDeps } from './start';
import { checkSubmit, newJobId } from './submit';
import { submitColumns } from './submit-columns';
import { resolveDependencies, storeDependencies, waitsFor } from './submit-deps';
import { queueWithinLimits } from './submit-limits';
import { settleSubmitted } from './waits';

export function newArrayId(): string {
  // As a job's id (newJobId), with its own letter: `a` and 10 base32 characters.
  const n = randomBytes(8).readBigUInt64BE(0) >> 14n;
  return `a${n.toString(32).padStart(10, '0')}`;
}

export interface ArraySubmitted {
  arrayId: string;
  /** The tasks' --max-runtime as stored (the fleet's default where none was asked). */
  maxRuntimeS: number | null;
  /** What to tell the submitter (a limit's --max-runtime ceiling applied). */
  notices: string[];
}

/**
 * Stores the array and its tasks, all queued (those past the cap waiting on
 * it), and wakes every controller's scheduling pass. Refused whole (nothing
 * stored) when the job would be, or when its tasks would pass a --queued limit.
 */
export async function submitArray(deps: Omit<StartDeps, 'announce' | 'metrics'>, identity: Identity, asked: SubmitArray): Promise<ArraySubmitted> {
  actsAs(identity, asked.job.submitter);
  const spec = parseArraySpec(asked.array);
  if (!spec.ok) throw new RcError('bad_array', spec.message);
  const { sql } = deps;
  const { body, selectorText, choices, ways, limits, notices } = await checkSubmit(deps, identity, asked.job);
  const arrayId = newArrayId();
  const jobIds = spec.indexes.map(() => newJobId());
  // The array carries the name (rc kill sweep, rc describe sweep): its tasks are named by `<array>:<index>`.
  const task = { ...body, name: null, gpus: ways[0]!.gpus };
  const fields = submitColumns(sql, task, { id: sql`t.id`, identity, selectorText, choices });
  const cap = spec.maxRunning;
  // --after / --after-any: every task runs after them (an array's own --after may name another array: all its tasks).
  const after = body.after?.length || body.afterAny?.length ? await resolveDependencies(sql, body) : [];
  let waits: 'after' | null = null;
  await queueWithinLimits(
    sql,
    limits.scopes,
    async (tx) => {
      waits = after.length ? await waitsFor(tx, after) : null;
      // No `values` before the column list, and no `(` ending a line: postgres.js picks how to write ${fields.columns} from the words before it.
      await tx`
      with a as (insert into job_arrays (id, spec, size, max_running, name, submitter, token_id)
        select ${arrayId}, ${asked.array.split('%')[0]!}, ${spec.indexes.length}, ${cap}::int, ${body.name ?? null}, ${body.submitter}, ${identity.tokenId})
      insert into jobs (${fields.columns}, array_id, array_index, waits)
      select ${fields.values}, ${arrayId}, t.idx,
        case when ${waits}::text is not null then ${waits}::text when ${cap}::int is null or t.ord <= ${cap}::int then null else 'array' end
      from unnest(${jobIds}::text[], ${spec.indexes}::int[]) with ordinality as t(id, idx, ord)
      order by t.ord`;
      if (after.length) await storeDependencies(tx, jobIds, after);
    },
    { adding: spec.indexes.length, inTransaction: after.length > 0 },
  );
  // A dependency that had already failed cancels every task at once (as a job's: server/jobs/start.ts).
  if (waits === 'after') await settleSubmitted({ sql, events: deps.events, released: () => void deps.scheduler.pokeAll() }, jobIds);
  deps.live.changed({ what: 'jobs', jobId: jobIds[0]! });
  // Not awaited: the answer does not wait for the pass that starts the tasks (10,000 of them on a large fleet).
  void deps.scheduler.pokeAll();
  return { arrayId, maxRuntimeS: body.maxRuntimeS ?? null, notices: notices.notices ?? [] };
}

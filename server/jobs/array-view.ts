// An array as answers show it (protocol/wire.ts ArrayView): its spec, its cap
// and its tasks counted by state, read in one statement for many arrays.
import type { EndCause, JobState } from '../../core/job-state';
import type { ArrayView } from '../../protocol/wire';
import type { Sql } from '../db';
import type { ArrayRow } from './find';

interface Row extends Omit<ArrayRow, 'tokenId'> {
  argv: string[] | null;
  queued: number;
  waiting: number;
  running: number;
  succeeded: number;
  failed: number;
  killed: number;
  lost: number;
  cancelled: number;
  preempted: number;
  failId: string | null;
  failIndex: number | null;
  failState: JobState | null;
  failExit: number | null;
  failCause: EndCause | null;
  failReason: string | null;
}

/** The views of these arrays, in the order of `ids` (an id with no array is left out). */
export async function arrayViews(sql: Sql, ids: readonly string[]): Promise<ArrayView[]> {
  if (!ids.length) return [];
  const rows = await sql<Row[]>`
    select a.id, a.spec, a.size, a.max_running, a.name, a.submitter, a.created_at,
      (select argv from jobs where array_id = a.id order by array_index limit 1) as argv,
      c.*, f.id as fail_id, f.array_index as fail_index, f.state as fail_state, f.exit_code as fail_exit, f.end_cause as fail_cause, f.reason as fail_reason
    from job_arrays a
    cross join lateral (
      select count(*) filter (where state = 'queued' and waits is null)::int as queued,
        count(*) filter (where state = 'queued' and waits is not null)::int as waiting,
        count(*) filter (where state = 'running')::int as running,
        count(*) filter (where state = 'succeeded')::int as succeeded,
        count(*) filter (where state = 'failed')::int as failed,
        count(*) filter (where state = 'killed')::int as killed,
        count(*) filter (where state = 'lost')::int as lost,
        count(*) filter (where state = 'cancelled')::int as cancelled,
        count(*) filter (where state = 'preempted')::int as preempted
      from jobs where array_id = a.id
    ) c
    left join lateral (
      select id, array_index, state, exit_code, end_cause, reason from jobs
      where array_id = a.id and state not in ('queued', 'running', 'succeeded') order by array_index limit 1
    ) f on true
    where a.id = any(${ids as string[]}::text[])`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => {
    const r = byId.get(id);
    return r ? [view(r)] : [];
  });
}

function view(r: Row): ArrayView {
  const counts = {
    queued: r.queued,
    waiting: r.waiting,
    running: r.running,
    succeeded: r.succeeded,
    failed: r.failed,
    killed: r.killed,
    lost: r.lost,
    cancelled: r.cancelled,
    preempted: r.preempted,
  };
  return {
    id: r.id,
    spec: r.maxRunning === null ? r.spec : `${r.spec}%${r.maxRunning}`,
    size: r.size,
    maxRunning: r.maxRunning,
    name: r.name,
    submitter: r.submitter,
    argv: r.argv ?? [],
    createdAt: r.createdAt.toISOString(),
    counts,
    done: r.queued + r.waiting + r.running === 0,
    firstFailure:
      r.failId === null ? null : { jobId: r.failId, index: r.failIndex!, state: r.failState!, exitCode: r.failExit, cause: r.failCause, reason: r.failReason },
  };
}

/** The arrays with a task queued or running, oldest first (rc ps, the Queue page): found from the active jobs, not from every array ever made. */
export async function activeArrayIds(sql: Sql): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select a.id from job_arrays a
    where a.id in (select distinct array_id from jobs where state in ('queued', 'running') and array_id is not null)
    order by a.created_at, a.id`;
  return rows.map((r) => r.id);
}

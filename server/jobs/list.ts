// Finding jobs across the fleet (rc jobs) and what is running and queued now (rc ps).
import { withIdle } from './idle';
import { RcError } from '../../core/errors';
import type { Sql } from '../db';
import { JOB_STATES } from '../../core/job-state';
import { JOB_ID, jobNameProblem } from '../../core/job-options';
import { JOB_KINDS } from '../../db/schema';
import type { JobView, PsEntry } from '../../protocol/wire';
import { attemptView, type AttemptRow, type JobRow, jobView } from './job-view';
import { queueOrder } from './sql/queue-order';

export interface JobFilter {
  states: string[];
  kinds: string[];
  device: string | null;
  submitter: string | null;
  /** Exactly this name (rc run --name). */
  name: string | null;
  /** A job's id: only jobs submitted before it (a page further back). */
  before: string | null;
  limit: number;
}

/** A comma-separated list of values out of `allowed`. */
function listOf(query: URLSearchParams, key: string, allowed: readonly string[], what: string): string[] {
  const values = (query.get(key) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const v of values) if (!allowed.includes(v)) throw new RcError('bad_request', `unknown ${what} ${v.slice(0, 50)}; ${what}s are ${allowed.join(', ')}`);
  return values;
}

export function parseJobFilter(query: URLSearchParams): JobFilter {
  const states = listOf(query, 'state', JOB_STATES, 'state');
  const kinds = listOf(query, 'kind', JOB_KINDS, 'kind');
  const limitText = query.get('limit') ?? '50';
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000) throw new RcError('bad_request', `limit must be a whole number from 1 to 1000, not ${limitText}`);
  const name = query.get('name') || null;
  const nameProblem = name === null ? null : jobNameProblem(name);
  if (nameProblem) throw new RcError('bad_request', `name: ${nameProblem}`);
  const before = query.get('before') || null;
  if (before !== null && !JOB_ID.test(before))
    throw new RcError('bad_request', `before: a job id (j and 10 base32 digits, as rc jobs shows), not ${JSON.stringify(before.slice(0, 50))}`);
  return { states, kinds, device: query.get('device') || null, submitter: query.get('submitter') || null, name, before, limit };
}

/** Newest first; `before` pages back from a job (by submission order, along jobs_seq_idx). */
export async function listJobs(sql: Sql, f: JobFilter): Promise<JobView[]> {
  let beforeSeq: number | null = null;
  if (f.before !== null) {
    const [row] = await sql<{ seq: number }[]>`select seq from jobs where id = ${f.before}`;
    if (!row) throw new RcError('not_found', `no job ${f.before} to page back from; check the id (rc jobs lists them)`);
    beforeSeq = row.seq;
  }
  // Fragments for the conditions that an index serves (seq, name): a prepared `$1 is null or …` would not use it.
  const rows = await sql<JobRow[]>`
    select * from jobs
    where (${f.states.length === 0} or state = any(${f.states}::text[]))
      and (${f.kinds.length === 0} or kind = any(${f.kinds}::text[]))
      and (${f.device}::text is null or devices @> jsonb_build_array(${f.device}::text) or device_name = ${f.device}::text)
      and (${f.submitter}::text is null or submitter = ${f.submitter}::text)
      ${f.name === null ? sql`` : sql`and name = ${f.name}`}
      ${beforeSeq === null ? sql`` : sql`and seq < ${beforeSeq}`}
    order by seq desc limit ${f.limit}`;
  return withAttempts(sql, rows);
}

/** The views of `rows`, each job run more than once with its earlier attempts (one query for all of them). */
export async function withAttempts(sql: Sql, rows: readonly JobRow[]): Promise<JobView[]> {
  const again = rows.filter((r) => r.attempt > 1).map((r) => r.id);
  const byJob = new Map<string, AttemptRow[]>();
  if (again.length)
    for (const a of await sql<AttemptRow[]>`select * from job_attempts where job_id = any(${again}::text[]) order by job_id, attempt`)
      byJob.set(a.jobId, [...(byJob.get(a.jobId) ?? []), a]);
  return withIdle(
    sql,
    rows.map((r) => (r.attempt > 1 ? { ...jobView(r), attempts: (byJob.get(r.id) ?? []).map(attemptView) } : jobView(r))),
  );
}

/** Running jobs, then queued ones in the order they will be considered. */
export async function listActive(sql: Sql): Promise<PsEntry[]> {
  const rows = await sql<(JobRow & { position: number | null })[]>`
    select *, case when state = 'queued'
      then (row_number() over (partition by state order by ${queueOrder(sql)}) - 1)::int end as position
    from jobs where state in ('running', 'queued')
    order by state desc, ${queueOrder(sql)}`;
  return withIdle(
    sql,
    rows.map((r) => ({ ...jobView(r), position: r.position })),
  );
}

// Finding jobs across the fleet (rc jobs) and what is running and queued now (rc ps).
import { RcError } from '../../core/errors';
import type { Sql } from '../db';
import { JOB_STATES } from '../../core/job-state';
import type { JobView, PsEntry } from '../../protocol/wire';
import { type JobRow, jobView } from './job-view';

export interface JobFilter {
  states: string[];
  device: string | null;
  submitter: string | null;
  limit: number;
}

export function parseJobFilter(query: URLSearchParams): JobFilter {
  const states = (query.get('state') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of states)
    if (!(JOB_STATES as readonly string[]).includes(s)) throw new RcError('bad_request', `unknown state ${s}; states are ${JOB_STATES.join(', ')}`);
  const limitText = query.get('limit') ?? '50';
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000) throw new RcError('bad_request', `limit must be a whole number from 1 to 1000, not ${limitText}`);
  return { states, device: query.get('device') || null, submitter: query.get('submitter') || null, limit };
}

/** Newest first. */
export async function listJobs(sql: Sql, f: JobFilter): Promise<JobView[]> {
  const rows = await sql<JobRow[]>`
    select * from jobs
    where (${f.states.length === 0} or state = any(${f.states}::text[]))
      and (${f.device}::text is null or devices @> jsonb_build_array(${f.device}::text) or device_name = ${f.device}::text)
      and (${f.submitter}::text is null or submitter = ${f.submitter}::text)
    order by seq desc limit ${f.limit}`;
  return rows.map(jobView);
}

/** Running jobs, then queued ones in the order they will be considered. */
export async function listActive(sql: Sql): Promise<PsEntry[]> {
  const rows = await sql<(JobRow & { position: number | null })[]>`
    select *, case when state = 'queued'
      then (row_number() over (partition by state order by priority desc, seq) - 1)::int end as position
    from jobs where state in ('running', 'queued')
    order by state desc, priority desc, seq`;
  return rows.map((r) => ({ ...jobView(r), position: r.position }));
}

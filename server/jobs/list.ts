// Finding jobs across the fleet (rc jobs) and what is running and queued now (rc ps).
import { withIdle } from './idle';
import { RcError } from '../../core/errors';
import type postgres from 'postgres';
import { waitTexts } from './wait-texts';
import type { Sql } from '../db';
import { JOB_STATES } from '../../core/job-state';
import { ARRAY_ID } from '../../core/array-spec';
import { JOB_ID, jobNameProblem } from '../../core/job-options';
import { parseSince, SINCE_RULE } from '../../core/since';
import { JOB_KINDS } from '../../db/schema';
import type { JobView, PsEntry } from '../../protocol/wire';
import { attemptView, type AttemptRow, type JobRow, jobView } from './job-view';
import { unrankedRank } from '../../core/fair-share';
import { FAIR_ORDER_COLUMNS, type FairRanks } from './sql/queue-order';
import { quotaWait } from './quota';
import type { QuotaView } from '../../core/quota';
import { TermsCache } from '../../core/terms-cache';
import type { UntilDevice } from '../../core/until';
import { freesByOfJobs } from '../until';

export interface JobFilter {
  states: string[];
  kinds: string[];
  device: string | null;
  submitter: string | null;
  /** Exactly this name (rc run --name). */
  name: string | null;
  /** Only jobs created at or after this time (rc jobs --since). */
  since: Date | null;
  /** Only jobs submitted with this token (rc jobs --mine: the caller's own). */
  tokenId: number | null;
  /** An array's tasks only (rc jobs --array), by index. */
  array: string | null;
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

/** GET /api/jobs's filters; `callerTokenId`: the token of the request, which `mine=1` stands for. */
export function parseJobFilter(query: URLSearchParams, callerTokenId: number): JobFilter {
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
  const sinceText = query.get('since') || null;
  const since = sinceText === null ? null : parseSince(sinceText);
  if (sinceText !== null && since === null) throw new RcError('bad_request', `since: ${SINCE_RULE}, not ${JSON.stringify(sinceText.slice(0, 50))}`);
  const mine = query.get('mine') || null;
  if (mine !== null && mine !== '1')
    throw new RcError('bad_request', `mine: 1 (only your token's jobs), or leave it out; not ${JSON.stringify(mine.slice(0, 20))}`);
  const array = query.get('array') || null;
  if (array !== null && !ARRAY_ID.test(array))
    throw new RcError('bad_request', `array: an array's id (a and 10 base32 digits, as rc run --array prints), not ${JSON.stringify(array.slice(0, 50))}`);
  return {
    states,
    kinds,
    device: query.get('device') || null,
    submitter: query.get('submitter') || null,
    name,
    since,
    tokenId: mine === '1' ? callerTokenId : null,
    array,
    before,
    limit,
  };
}

/** Newest first; `before` pages back from a job (by submission order, along jobs_seq_idx). An array's tasks come by index, `before` then the task the page goes on after. */
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
      ${f.since === null ? sql`` : sql`and created_at >= ${f.since.toISOString()}::timestamptz`}
      ${f.tokenId === null ? sql`` : sql`and token_id = ${f.tokenId}`}
      ${f.array === null ? sql`` : sql`and array_id = ${f.array}`}
      ${beforeSeq === null ? sql`` : f.array === null ? sql`and seq < ${beforeSeq}` : sql`and seq > ${beforeSeq}`}
    order by ${f.array === null ? sql`seq desc` : sql`array_index`} limit ${f.limit}`;
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

/** GET /api/ps's query: a page of at most `limit` jobs, after the cursor of the page before. */
export interface PsPageQuery {
  limit: number;
  after: PsCursor | null;
  /** Array tasks listed as jobs too (rc ps --tasks); false: left out, each array is one line (GET /api/ps's `arrays`). */
  tasks?: boolean;
}

/** Where a page ended: its last job's place in the listing (running jobs first, each part in queue order). */
export interface PsCursor {
  part: 'r' | 'q';
  priority: number;
  /** requeued_at in microseconds since 1970, or null. */
  requeuedUs: number | null;
  seq: number;
  /** The job's token's fair-share rank when the page was read (0: first, or every token standing equal). */
  fairRank: number;
}

/** A statement's tag, in a transaction or not. */
type SqlOrTx = Sql | postgres.TransactionSql<{ int8: number }>;

export const PS_DEFAULT_LIMIT = 500;
export const PS_MAX_LIMIT = 5000;

/** The cursor as it goes on the wire (`next`, `after`): `q.0.-.1234`, `.f3` after it for a fair-share rank; clients pass it back as they got it. */
export function psCursorText(c: PsCursor): string {
  return `${c.part}.${c.priority}.${c.requeuedUs ?? '-'}.${c.seq}${c.fairRank ? `.f${c.fairRank}` : ''}`;
}

const PS_CURSOR = /^([rq])\.(-?\d{1,2})\.(\d{1,17}|-)\.(\d{1,15})(?:\.f(\d{1,6}))?$/;

export function parsePsQuery(query: URLSearchParams): PsPageQuery {
  const limitText = query.get('limit') ?? String(PS_DEFAULT_LIMIT);
  const limit = Number(limitText);
  if (!/^\d{1,6}$/.test(limitText) || limit < 1 || limit > PS_MAX_LIMIT)
    throw new RcError('bad_request', `limit must be a whole number from 1 to ${PS_MAX_LIMIT}, not ${JSON.stringify(limitText.slice(0, 20))}`);
  const tasksText = query.get('tasks');
  if (tasksText !== null && tasksText !== '1') throw new RcError('bad_request', 'tasks: 1 (list the tasks of arrays as jobs too), or leave it out');
  const tasks = tasksText === '1';
  const afterText = query.get('after');
  if (afterText === null) return { limit, after: null, tasks };
  const m = PS_CURSOR.exec(afterText);
  const priority = Number(m?.[2]);
  if (!m || priority < -10 || priority > 10)
    throw new RcError(
      'bad_request',
      `after: not a cursor of this listing (pass the \`next\` of the page before, as it came), not ${JSON.stringify(afterText.slice(0, 50))}`,
    );
  return {
    limit,
    tasks,
    after: { part: m[1] as 'r' | 'q', priority, requeuedUs: m[3] === '-' ? null : Number(m[3]), seq: Number(m[4]), fairRank: Number(m[5] ?? 0) },
  };
}

/** The rows after `c` in queue order (priority desc, fair rank, requeued_at nulls last, seq: server/jobs/sql/queue-order.ts); `rank`: a row's fair rank. */
function afterCursor(sql: SqlOrTx, c: PsCursor, rank: postgres.PendingQuery<postgres.Row[]>) {
  const requeuedAt = sql`(timestamptz 'epoch' + ${c.requeuedUs}::bigint * interval '1 microsecond')`;
  const sameRank =
    c.requeuedUs === null
      ? sql`requeued_at is null and seq > ${c.seq}`
      : sql`(requeued_at is null or requeued_at > ${requeuedAt} or (requeued_at = ${requeuedAt} and seq > ${c.seq}))`;
  return sql`(priority < ${c.priority} or (priority = ${c.priority} and (${rank} > ${c.fairRank} or (${rank} = ${c.fairRank} and ${sameRank}))))`;
}

/** A queued row's fair rank (`fr` joined: fairJoin), or 0 for all when every token stands equal. */
function fairRankOf(sql: SqlOrTx, ranks: FairRanks | null) {
  return ranks ? sql`coalesce(fr.rank, ${unrankedRank(ranks)}::int)` : sql`0`;
}

/** The tokens' ranks beside the jobs (`fr`), when there are ranks. */
function fairJoin(sql: SqlOrTx, ranks: FairRanks | null) {
  if (!ranks) return sql``;
  const keys = [...ranks.keys()];
  return sql`left join unnest(${keys}::bigint[], ${keys.map((k) => ranks.get(k)!)}::int[]) as fr(key, rank) on fr.key = coalesce(jobs.token_id, 0)`;
}

/**
 * A page of what runs and waits now: running jobs, then queued ones in the
 * order they will be considered, each queued one with its position; with
 * how many there are in all, and the cursor of the next page (null: none).
 * One snapshot: a job that starts meanwhile is not in both parts.
 */
export async function listActive(
  sql: Sql,
  q: PsPageQuery,
  /** The tokens' fair-share ranks (server/jobs/fair-share.ts): the queued part in the scheduling pass's order; null: every token stands equal. */
  ranks: FairRanks | null = null,
  /** What the --gpus limits leave (server/jobs/quota.ts): a queued job one of them holds back says so. */
  quota: QuotaView | null = null,
  /** The fleet (server/inventory.ts): each queued job of the page says until when at the latest (freesBy); null: not said. */
  fleet: (() => Promise<readonly UntilDevice[]>) | null = null,
  /** What queued jobs that wait for a provider machine wait on (server/machines/machine-waits.ts); null: no provider account. */
  onMachines: ((jobs: readonly JobRow[]) => Promise<Map<string, string>>) | null = null,
): Promise<{ jobs: PsEntry[]; counts: { running: number; queued: number }; next: string | null }> {
  const after = q.after;
  const n = q.limit + 1;
  type Row = JobRow & { part: 'r' | 'q'; requeuedUs: number | null; fairRank: number };
  const [rows, [counts], [ahead]] = await sql.begin('isolation level repeatable read read only', (tx) => {
    const order = tx.unsafe(FAIR_ORDER_COLUMNS);
    // Without tasks, an array's tasks are left out here (and from the positions): the array is one line instead.
    const noTasks = q.tasks ? tx`` : tx`and array_id is null`;
    const part = (state: 'running' | 'queued', from: PsCursor | null) => {
      // Running jobs are listed in the queue's own order, fair share aside.
      const r = state === 'queued' ? ranks : null;
      return tx`
      (select jobs.*, ${state === 'running' ? 'r' : 'q'}::text as part, (extract(epoch from requeued_at) * 1000000)::bigint as requeued_us,
         ${fairRankOf(tx, r)} as fair_rank
       from jobs ${fairJoin(tx, r)} where state = ${state} ${from ? tx`and ${afterCursor(tx, from, fairRankOf(tx, r))}` : tx``} ${noTasks}
       order by ${order} limit ${n})`;
    };
    // 'r' sorts after 'q': the running part first is `order by part desc`.
    const running = after?.part === 'q' ? null : part('running', after);
    const queued = part('queued', after?.part === 'q' ? after : null);
    return [
      running ? tx<Row[]>`${running} union all ${queued} order by part desc, ${order} limit ${n}` : tx<Row[]>`${queued}`,
      tx<{ running: number; queued: number }[]>`
        select count(*) filter (where state = 'running')::int as running, count(*) filter (where state = 'queued')::int as queued
        from jobs where state in ('running', 'queued')`,
      // Queued jobs up to the cursor: the position of the page's first queued job.
      after?.part === 'q'
        ? tx<{ n: number }[]>`
            select count(*)::int as n from jobs ${fairJoin(tx, ranks)} where state = 'queued' and waits is null ${noTasks} and not ${afterCursor(tx, after, fairRankOf(tx, ranks))}`
        : tx<{ n: number }[]>`select 0 as n`,
    ] as const;
  });
  const page = rows.slice(0, q.limit);
  // Until when at the latest, for the jobs in line (a job waiting on other jobs, its array's cap or a retry delay has none).
  const inLine = page.filter((r) => r.part === 'q' && r.waits === null);
  const now = Date.now();
  const terms = new TermsCache();
  const freesBy =
    fleet && inLine.length
      ? await freesByOfJobs(
          sql,
          inLine.map((r) => terms.queued(r, now)),
          await fleet(),
          now,
        )
      : null;
  const machineWaits = onMachines && inLine.length ? await onMachines(inLine) : null;
  let position = ahead!.n;
  // Jobs that wait on other jobs or a retry delay are in the queued part, but have no place in line yet: their reason instead.
  const waiting = await waitTexts(sql, page);
  const jobs = await withIdle(
    sql,
    page.map((r) => {
      const inLine = r.part === 'q' && r.waits === null;
      const waits = waiting.get(r.id) ?? machineWaits?.get(r.id) ?? (inLine && quota ? quotaWait(quota, r.tokenId, r.gpus) : null);
      // The joined fleet's devices say nothing of when a provider machine comes.
      const until = inLine && freesBy ? { freesBy: r.placement === 'cloud' || machineWaits?.has(r.id) ? null : (freesBy.get(r.id) ?? null) } : {};
      return { ...jobView(r), position: inLine ? position++ : null, ...(waits ? { waits } : {}), ...until };
    }),
  );
  const last = page.at(-1);
  const next =
    rows.length > q.limit && last
      ? psCursorText({ part: last.part, priority: last.priority, requeuedUs: last.requeuedUs, seq: last.seq, fairRank: last.fairRank })
      : null;
  return { jobs, counts: counts!, next };
}

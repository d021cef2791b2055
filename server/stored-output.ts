// What following a job that runs on another controller's worker reads: the
// stored chunks, and whether the job has ended (server/job-events.ts).
import { FINAL_STATES, type EndCause, type JobState } from '../core/job-state';
import type { Sql } from './db';
import type { OutputStore, StoredChunk } from './job-events';

export function storedOutput(sql: Sql): OutputStore {
  return {
    read: (jobId, after, upTo, limit) => sql<StoredChunk[]>`
      select seq, stream, data from job_output
      where job_id = ${jobId} and seq > ${after} and (${upTo}::int is null or seq <= ${upTo}::int)
      order by seq limit ${limit}`,
    async readMany(wanted, limit) {
      const rows = await sql<(StoredChunk & { jobId: string })[]>`
        select u.j as job_id, o.seq, o.stream, o.data
        from unnest(${wanted.map((w) => w.jobId)}::text[], ${wanted.map((w) => w.after)}::int[], ${wanted.map((w) => w.upTo)}::int[]) as u(j, a, b)
        cross join lateral (
          select seq, stream, data from job_output where job_id = u.j and seq > u.a and seq <= u.b order by seq limit ${limit}
        ) o
        order by u.j, o.seq`;
      const out = new Map<string, StoredChunk[]>();
      for (const { jobId, ...chunk } of rows) {
        const list = out.get(jobId) ?? [];
        list.push(chunk);
        out.set(jobId, list);
      }
      return out;
    },
    async state(jobIds) {
      const rows = await sql<{ id: string; state: JobState; exitCode: number | null; reason: string | null; endCause: EndCause | null; lastSeq: number }[]>`
        select j.id, j.state, j.exit_code, j.reason, j.end_cause,
          coalesce((select max(seq) from job_output o where o.job_id = j.id), 0)::int as last_seq
        from jobs j where j.id = any(${jobIds}::text[])`;
      return new Map(
        rows.map((r) => [
          r.id,
          {
            lastSeq: r.lastSeq,
            exit: FINAL_STATES.has(r.state) ? { type: 'exit', jobId: r.id, state: r.state, exitCode: r.exitCode, reason: r.reason, cause: r.endCause } : null,
          },
        ]),
      );
    },
  };
}

// For each of these jobs that runs on the host: the last output chunk stored,
// the bytes stored and whether its output was cut at the bound. A hello naming
// another host's job learns nothing of it.
import type { Sql } from '../../db';

export interface ResumePoint {
  id: string;
  seq: number;
  bytes: number;
  truncated: boolean;
}

export function resumePoints(sql: Sql, hostName: string, jobIds: readonly string[]): Promise<ResumePoint[]> {
  return sql<ResumePoint[]>`
    select j.id, coalesce(max(o.seq), 0)::int as seq, coalesce(sum(octet_length(o.data)), 0)::float8 as bytes, j.output_truncated as truncated
    from jobs j left join job_output o on o.job_id = j.id
    where j.id = any(${jobIds as string[]}::text[]) and j.host_name = ${hostName} and j.state = 'running' group by j.id`;
}

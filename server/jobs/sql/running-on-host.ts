// The jobs the database runs on a host: what a hello is reconciled against.
import type { Sql } from '../../db';
import type { JobRow } from '../job-view';

export function runningOnHost(sql: Sql, hostName: string): Promise<JobRow[]> {
  return sql<JobRow[]>`select * from jobs where host_name = ${hostName} and state = 'running'`;
}

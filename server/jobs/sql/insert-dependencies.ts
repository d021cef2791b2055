// A submitted job's --after / --after-any jobs, stored beside it (job_deps); an array's tasks each get them all.
import type { Runner } from '../../limits';

// The flags travel as text: the driver sends a boolean array as one boolean.
export async function insertDependencies(tx: Runner, jobIds: readonly string[], deps: readonly { id: string; any: boolean }[]): Promise<void> {
  await tx`
    insert into job_deps (job_id, after_id, "any")
    select j.id, d.id, d.flag::boolean from unnest(${jobIds as string[]}::text[]) as j(id)
    cross join unnest(${deps.map((d) => d.id)}::text[], ${deps.map((d) => (d.any ? 't' : 'f'))}::text[]) as d(id, flag)`;
}

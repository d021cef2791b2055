// An array's %N cap (rc run --array 0-99%8): the one place it is enforced.
// A task beyond the cap waits queued with waits = 'array'; here the
// lowest-index waiting tasks are let into the queue (waits = null) while
// fewer than N of the array's tasks run or may start. Called after a task's
// end (server/jobs/finish.ts) and by the repair sweep (releaseStalledArrays).
import { BUS_CHANNEL, POKE_FROM_DATABASE } from '../bus';
import type { Sql } from '../db';

/**
 * Releases, for each array of `arrayIds` with a cap, its lowest-index tasks
 * waiting on it, up to the cap. Under a lock of the job_arrays row, in a
 * statement of its own (a fresh snapshot after the lock): two releases for
 * one array, on any controllers, count one after the other and never let in
 * more than the cap. Every controller's scheduling pass is woken when any
 * was released. Returns the ids of the tasks released.
 */
export async function releaseArraySlots(sql: Sql, arrayIds: readonly (string | null)[]): Promise<string[]> {
  const ids = [...new Set(arrayIds.filter((a): a is string => a !== null))].sort();
  if (!ids.length) return [];
  return sql.begin(async (tx) => {
    // In id order, so two releases of overlapping arrays never wait on each other in a circle.
    const capped = await tx<{ id: string }[]>`
      select id from job_arrays where id = any(${ids}::text[]) and max_running is not null order by id for update`;
    if (!capped.length) return [];
    const released = await tx<{ id: string }[]>`
      with a as (
        select id, max_running from job_arrays where id = any(${capped.map((c) => c.id)}::text[])
      ), free as (
        select a.id, a.max_running - (
          select count(*) from jobs j
          where j.array_id = a.id and (j.state = 'running' or (j.state = 'queued' and j.waits is null))
        )::int as n
        from a
      ), pick as (
        select t.id from free cross join lateral (
          select j.id from jobs j
          where j.array_id = free.id and j.state = 'queued' and j.waits = 'array'
          order by j.array_index limit greatest(free.n, 0)
        ) t
      )
      update jobs set waits = null from pick
      where jobs.id = pick.id and jobs.state = 'queued' and jobs.waits = 'array'
      returning jobs.id`;
    // Queued now: every controller's pass looks (at this commit), also one whose last pass found nothing runnable.
    if (released.length) await tx`select pg_notify(${BUS_CHANNEL}, ${POKE_FROM_DATABASE})`;
    return released.map((r) => r.id);
  }) as Promise<string[]>;
}

/**
 * The repair sweep: arrays with a task waiting on the cap though fewer than
 * the cap run or may start (a controller that died between a task's end and
 * its release). Cheap through jobs_waiting_idx: only arrays with a waiting
 * task are looked at. Returns the tasks released.
 */
export async function releaseStalledArrays(sql: Sql): Promise<string[]> {
  const rows = await sql<{ arrayId: string }[]>`
    select distinct array_id from jobs where state = 'queued' and waits = 'array' and array_id is not null`;
  return rows.length
    ? releaseArraySlots(
        sql,
        rows.map((r) => r.arrayId),
      )
    : [];
}

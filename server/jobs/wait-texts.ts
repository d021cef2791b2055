// What queued jobs that wait on something besides a device wait on, in words
// (rc ps's and the queue's reason): `after j123 (running)`, `retry in 25s
// (attempt 2 of 3)`. Reads only; the words are core's (core/dependencies.ts).
import { afterText, type Dependency, retryText, settle } from '../../core/dependencies';
import type { Sql } from '../db';
import type { JobRow } from './job-view';
import { type DependencyRow, dependenciesOf } from './sql/dependencies-of';

/** The reason of each waiting job of `rows`, by id (jobs that wait on nothing are not in it). */
export async function waitTexts(
  sql: Sql,
  rows: readonly Pick<JobRow, 'id' | 'state' | 'waits' | 'notBefore' | 'retried' | 'retries' | 'arrayId'>[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const waiting = rows.filter((r) => r.state === 'queued' && r.waits !== null);
  if (!waiting.length) return out;
  const after = waiting.filter((r) => r.waits === 'after').map((r) => r.id);
  const deps = new Map<string, Dependency[]>();
  for (const d of after.length ? await dependenciesOf(sql, after) : ([] as DependencyRow[])) {
    const list = deps.get(d.jobId) ?? [];
    list.push({ id: d.afterId, any: d.any, state: d.state, exitCode: d.exitCode, cause: d.cause });
    deps.set(d.jobId, list);
  }
  const arrayIds = [...new Set(waiting.filter((r) => r.waits === 'array' && r.arrayId !== null).map((r) => r.arrayId!))];
  const caps = new Map(
    arrayIds.length
      ? (await sql<{ id: string; maxRunning: number }[]>`select id, max_running from job_arrays where id = any(${arrayIds}::text[])`).map((a) => [
          a.id,
          a.maxRunning,
        ])
      : [],
  );
  const now = new Date();
  for (const r of waiting) {
    if (r.waits === 'retry') out.set(r.id, retryText(r.notBefore ?? now, now, r.retried + 1, r.retries + 1));
    else if (r.waits === 'array')
      out.set(r.id, `array ${r.arrayId}'s cap: at most ${caps.get(r.arrayId!) ?? 'N'} of its tasks at once (--array %${caps.get(r.arrayId!) ?? 'N'})`);
    else {
      const list = deps.get(r.id) ?? [];
      const v = settle(list);
      // Met or broken a moment ago: its release (or cancel) is being stored.
      out.set(r.id, v.verdict === 'wait' ? afterText(v.unmet) : `after ${list.map((d) => `${d.id} (${d.state})`).join(', ')}: settling`);
    }
  }
  return out;
}

/** A job's --after / --after-any jobs with their states (rc describe, the job page), in the order they were submitted. */
export async function dependencyViews(sql: Sql, jobId: string): Promise<{ id: string; any: boolean; state: Dependency['state']; exitCode: number | null }[]> {
  return (await dependenciesOf(sql, [jobId])).map((d) => ({ id: d.afterId, any: d.any, state: d.state, exitCode: d.exitCode }));
}

// rc run --after / --after-any at submit: each job named (an id or a name)
// found as rc describe and rc kill find it (server/jobs/find.ts: every token
// sees every job, as GET /api/jobs/:id shows it); one that is not there is
// refused before anything is stored.
import { ARRAY_ID } from '../../core/array-spec';
import { satisfied } from '../../core/dependencies';
import { RcError } from '../../core/errors';
import type { SubmitJob } from '../../protocol/api';
import type { Sql } from '../db';
import type { Runner } from '../limits';
import { arrayTaskIds, findJob } from './find';
import { insertDependencies } from './sql/insert-dependencies';
import { lockDependencies } from './sql/lock-dependencies';

/** A job the new one runs after: its id, and whether any end will do (--after-any). */
export interface DependencyRef {
  id: string;
  any: boolean;
}

/**
 * The jobs a submit names, by id, each once (named in both lists: --after,
 * the stricter). An array's id (rc run --array) stands for all its tasks.
 * Refused (bad_dependency) when one
 * does not exist; an ambiguous name is refused as everywhere (ambiguous_name).
 */
export async function resolveDependencies(sql: Sql, body: Pick<SubmitJob, 'after' | 'afterAny'>): Promise<DependencyRef[]> {
  const out = new Map<string, DependencyRef>();
  const named = [...(body.afterAny ?? []).map((ref) => ({ ref, any: true })), ...(body.after ?? []).map((ref) => ({ ref, any: false }))];
  for (const { ref, any } of named) {
    const flag = any ? '--after-any' : '--after';
    if (ARRAY_ID.test(ref)) {
      const tasks = await arrayTaskIds(sql, ref);
      if (!tasks.length) throw new RcError('bad_dependency', `${flag} ${ref}: no array has that id; check it (rc ps lists them). Nothing was submitted`);
      for (const id of tasks) out.set(id, { id, any: any && (out.get(id)?.any ?? true) });
      continue;
    }
    const job = await findJob(sql, ref).catch((err: unknown) => {
      if (err instanceof RcError && err.code === 'not_found')
        throw new RcError('bad_dependency', `${flag} ${ref}: no job has that id or name; check it (rc jobs lists them). Nothing was submitted`);
      throw err;
    });
    out.set(job.id, { id: job.id, any: any && (out.get(job.id)?.any ?? true) });
  }
  return [...out.values()];
}

/**
 * In the submit's transaction, before its INSERT: the dependencies locked
 * (lockDependencies says why) and read. 'after' when the job must wait (or
 * is to be cancelled at once: one already failed, which the caller settles
 * after the commit); null when all are met and it may start as any job.
 */
export async function waitsFor(tx: Runner, deps: readonly DependencyRef[]): Promise<'after' | null> {
  const rows = new Map(
    (
      await lockDependencies(
        tx,
        deps.map((d) => d.id),
      )
    ).map((r) => [r.id, r]),
  );
  // A job deleted since it was found (only a refused rc cp is): as cancelled, so --after refuses and --after-any runs.
  const now = deps.map((d) => ({
    ...d,
    state: rows.get(d.id)?.state ?? 'cancelled',
    exitCode: rows.get(d.id)?.exitCode ?? null,
    cause: rows.get(d.id)?.cause ?? null,
  }));
  return satisfied(now) ? null : 'after';
}

/** The new job's (or array tasks') dependencies, stored beside it in the same transaction. */
export function storeDependencies(tx: Runner, jobIds: string | readonly string[], deps: readonly DependencyRef[]): Promise<void> {
  return insertDependencies(tx, typeof jobIds === 'string' ? [jobIds] : jobIds, deps);
}

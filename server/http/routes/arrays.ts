// Arrays (rc run --array): submit, one array, kill. Their tasks are jobs: GET /api/jobs?array= lists them.
import { defaultedRuntimeNotice } from '../../../core/runtime-limit';
import { arrayViews } from '../../jobs/array-view';
import { findArray } from '../../jobs/find';
import type { ArrayView } from '../../../protocol/wire';
import type { Sql } from '../../db';
import { created, type Router } from '../router';
import type { ApiDeps } from '../route-deps';

export function registerArrayRoutes(router: Router, c: ApiDeps): void {
  const { sql } = c;
  router.on('POST /api/arrays', async ({ identity, body }) => {
    const { arrayId, maxRuntimeS, notices } = await c.engine.submitArray(identity, body);
    // A fleet's default --max-runtime applied to the tasks is said as for a job (rc run's notice).
    const said = notices.length
      ? notices
      : body.job.maxRuntimeS == null && maxRuntimeS !== null
        ? [defaultedRuntimeNotice(arrayId, maxRuntimeS, c.runtimeLimits).replace(/^job /, 'each task of array ')]
        : [];
    return created({ array: await viewOf(sql, arrayId), ...(said.length ? { notices: said } : {}) });
  });

  router.on('GET /api/arrays/:id', async ({ params }) => ({ array: await viewOf(sql, (await findArray(sql, params.id)).id) }));

  router.on('POST /api/arrays/:id/kill', async ({ body, params, identity }) => {
    const array = await findArray(sql, params.id);
    await c.engine.killArray(identity, array, body.submitter);
    return { array: await viewOf(sql, array.id) };
  });
}

async function viewOf(sql: Sql, id: string): Promise<ArrayView> {
  const [view] = await arrayViews(sql, [id]);
  return view!;
}

// Holds: release and extend.
import { RcError } from '../../../core/errors';
import { findJob } from '../../jobs/find';
import { jobView } from '../../jobs/job-view';
import type { Router } from '../router';
import type { ApiDeps } from '../route-deps';

export function registerHoldRoutes(router: Router, c: ApiDeps): void {
  const { sql } = c;
  router.on('POST /api/holds/:id/release', async ({ body, params, identity }) => {
    return { job: jobView(await c.engine.kill(identity, (await holdOf(params.id)).id, body.submitter, 'released')) };
  });

  router.on('POST /api/holds/:id/extend', async ({ body, params, identity }) => {
    const { submitter, ttlS } = body;
    return { job: jobView(await c.engine.extendHold(identity, await holdOf(params.id), submitter, ttlS)) };
  });

  /** The job, if it is a hold; a clear error otherwise. */
  async function holdOf(id: string) {
    const job = await findJob(sql, id, 'hold');
    if (job.kind !== 'hold') throw new RcError('bad_request', `${id} is not a hold but a ${job.kind} job; stop it with rc kill ${id}`);
    return job;
  }
}

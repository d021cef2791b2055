// Jobs: submit (followed or not), list, one job, its output stream, kill, stdin.
import { readStdinPiece } from '../../jobs/stdin';
import { defaultedRuntimeNotice, type RuntimeLimits } from '../../../core/runtime-limit';
import { RcError } from '../../../core/errors';
import { placementOf, type SubmitJob, Submitter } from '../../../protocol/api';
import { activeArrayIds, arrayViews } from '../../jobs/array-view';
import { findJob } from '../../jobs/find';
import { dependencyViews } from '../../jobs/wait-texts';
import { type JobRow, jobView } from '../../jobs/job-view';
import { machineRanOn } from '../../machines/ran-on';
import { openStream, pipeJob, replayJob, writeEvent } from '../job-stream';
import { listActive, listJobs, parseJobFilter, parsePsQuery, withAttempts } from '../../jobs/list';
import { created, Reply, type Router } from '../router';
import { STREAM_CONTENT_TYPE } from '../../../core/frames';
import { zodMessage } from '../../../protocol/zod-message';
import type { ApiDeps } from '../route-deps';
import { MAX_TAIL_LINES } from '../../../core/tail';
import { unknownCloud } from '../../machines/offers';
import { machineWaits } from '../../machines/machine-waits';

/** GET /api/jobs/:id/stream's `tail`: how many of the last lines to start at; null when not given. */
function parseTail(text: string | null): number | null {
  if (text === null) return null;
  if (!/^\d{1,6}$/.test(text) || Number(text) > MAX_TAIL_LINES)
    throw new RcError('bad_request', `tail must be a whole number of lines from 0 to ${MAX_TAIL_LINES}, not ${JSON.stringify(text.slice(0, 20))}`);
  return Number(text);
}

export function registerJobRoutes(router: Router, c: ApiDeps): void {
  const { sql } = c;
  // A job that gave no --max-runtime got the fleet's: its submitter is told so, once (per controller, not on every job).
  const told = new Set<string>();
  const toldOnce = (job: JobRow, limits: RuntimeLimits): string[] => {
    if (told.has(job.submitter)) return [];
    if (told.size >= 10_000) told.clear();
    told.add(job.submitter);
    return [defaultedRuntimeNotice(job.id, job.maxRuntimeS!, limits)];
  };
  router.on('POST /api/jobs', async ({ req, res, identity, body }) => {
    // A terminal needs someone attached from its start: it is opened on the /tty socket.
    if (body.kind === 'tty') throw new RcError('bad_request', 'kind: a terminal is opened on the /tty socket (rc run --tty, or the dashboard), not here');
    // A cloud job runs on this controller's provider accounts' machines: one that names none would wait for ever.
    const unknown = placementOf(body) === 'cloud' ? unknownCloud(c.machines.providers, body.cloud ?? null) : null;
    if (unknown) throw new RcError('bad_cloud', `--cloud-only: ${unknown}`);
    const streaming = (req.headers.accept ?? '').includes(STREAM_CONTENT_TYPE);
    const notices = (job: JobRow) => (body.kind === 'run' && body.maxRuntimeS == null && job.maxRuntimeS !== null ? toldOnce(job, c.runtimeLimits) : []);
    const {
      job,
      refused,
      replayed,
      position,
      notices: limitNotices,
    } = await withCloudHint(c, body, () =>
      c.engine.submit(identity, body, (job, position, limitNotices) => {
        // The answer already went (a 503 when the database stalled mid-submit): the job still starts; a retry with its key finds it.
        if (!streaming || res.headersSent) return;
        // The headers and the first event leave in one packet: one wake-up less for the client.
        res.cork();
        openStream(res);
        pipeJob(c.events, job.id, res);
        writeEvent(res, { type: 'queued', jobId: job.id, position, ...(job.waits ? { waits: job.waits } : {}) });
        // A limit's ceiling, when it applied, is the job's --max-runtime rather than the fleet's default.
        for (const message of limitNotices.length ? limitNotices : notices(job)) writeEvent(res, { type: 'notice', message });
        res.uncork();
      }),
    );
    // A retry of a submit that was stored (its answer was lost): that job again, followed from its first line.
    if (replayed) {
      if (!streaming) return new Reply({ job: jobView(await findJob(sql, job.id)) }, 200, { 'idempotent-replayed': 'true' });
      openStream(res);
      writeEvent(res, { type: 'queued', jobId: job.id, position });
      await replayJob({ sql, events: c.events, writer: c.writer, outputLimitBytes: c.outputLimitBytes }, job.id, res, true, 0);
      return;
    }
    // The stream (if any) ends with the cancellation's exit event.
    if (refused) {
      if (!streaming) throw new RcError('busy', refused);
      return;
    }
    if (streaming) return;
    const said = limitNotices.length ? limitNotices : notices(job);
    return created({ job: jobView(await findJob(sql, job.id)), ...(said.length ? { notices: said } : {}) });
  });

  router.on('GET /api/jobs', async ({ query, identity }) => ({ jobs: await listJobs(sql, parseJobFilter(query, identity.tokenId)) }));

  router.on('GET /api/ps', async ({ query }) => {
    const onMachines = c.machines.providers.length ? (jobs: readonly JobRow[]) => machineWaits(sql, jobs, c.machines.maxMachines) : null;
    const page = await listActive(sql, parsePsQuery(query), await c.fairShare.ranks(), await c.quotas.view(), () => c.inventory.rows(), onMachines);
    return { ...page, arrays: await arrayViews(sql, await activeArrayIds(sql)) };
  });

  // Stored output as a frame stream; ?follow=1 keeps streaming until the job ends (rc logs -f, rc attach).
  router.on('GET /api/jobs/:id/stream', async ({ params, query, res }) => {
    const job = await findJob(sql, params.id);
    const after = Number(query.get('after') ?? '0');
    if (!Number.isSafeInteger(after) || after < 0) throw new RcError('bad_request', 'after must be a sequence number (0 or more)');
    const tail = parseTail(query.get('tail'));
    if (tail !== null && after > 0) throw new RcError('bad_request', 'tail and after: give one (tail starts at the last lines, after resumes after a chunk)');
    openStream(res);
    // A terminal's output goes only to the terminal (server/tty.ts): there is nothing stored to replay.
    if (job.kind === 'tty') writeEvent(res, { type: 'notice', message: `job ${job.id} was an interactive terminal (--tty); its output is not stored` });
    await replayJob({ sql, events: c.events, writer: c.writer, outputLimitBytes: c.outputLimitBytes }, job.id, res, query.get('follow') === '1', after, tail);
  });

  router.on('GET /api/jobs/:id', async ({ params }) => {
    const [job] = await withAttempts(sql, [await findJob(sql, params.id)]);
    // rc run --after / --after-any: the jobs it runs after, as they stand; and the provider machine it ran on, if any.
    const [after, ranOn] = await Promise.all([dependencyViews(sql, job!.id), machineRanOn(sql, job!.host)]);
    return { job: { ...job!, ...(after.length ? { after } : {}), ...(ranOn ? { ranOn } : {}) } };
  });

  router.on('POST /api/jobs/:id/kill', async ({ body, params, identity }) => {
    const job = await c.engine.kill(identity, (await findJob(sql, params.id)).id, body.submitter);
    return { job: jobView(job) };
  });

  // rc run reading a pipe: the next piece of the job's stdin (server/jobs/stdin.ts).
  router.on('POST /api/jobs/:id/stdin', async ({ req, params, query, identity }) => {
    const submitter = Submitter.safeParse(query.get('submitter') ?? '');
    if (!submitter.success) throw new RcError('bad_request', zodMessage(submitter.error));
    const offsetText = query.get('offset') ?? '';
    if (!/^\d{1,15}$/.test(offsetText)) throw new RcError('bad_request', 'offset: the bytes of stdin sent before this piece (0 or more)');
    const eof = query.get('eof');
    if (eof !== null && eof !== '1') throw new RcError('bad_request', 'eof: 1 (this piece ends the input), or leave it out');
    const data = await readStdinPiece(req);
    return c.engine.writeStdin(identity, params.id, { submitter: submitter.data, offset: Number(offsetText), data, eof: eof === '1' });
  });
}

/**
 * A job no joined host could ever fit is refused as before; where provider accounts are configured, the refusal says
 * how to run it on a provider machine instead (an `any` job takes one only while joined hosts that fit are busy).
 */
async function withCloudHint<T>(c: ApiDeps, body: SubmitJob, submit: () => Promise<T>): Promise<T> {
  try {
    return await submit();
  } catch (err) {
    if (!(err instanceof RcError) || err.code !== 'no_matching_device' || !c.machines.providers.length || placementOf(body) !== 'any' || body.device) throw err;
    throw new RcError('no_matching_device', `${err.message}; or add --cloud-only to run it on a provider machine (rc offers lists them)`);
  }
}

// Starting a job: the one use case behind POST /api/jobs and the terminal
// socket's open. The caller only parses, authorises and renders.
import { ended } from '../../core/job-state';
import { type ChoiceFree, noWaitReason } from '../../core/no-wait';
import { TermsCache } from '../../core/terms-cache';
import type { SubmitJob } from '../../protocol/api';
import type { Identity } from '../auth';
import type { Sql } from '../db';
import type { JobEvents } from '../job-events';
import type { LiveFeed } from '../live';
import type { Target } from './claim';
import { endJob } from './finish';
import type { JobRow } from './job-view';
import { type SubmitDeps, type SubmitOptions, submitJob } from './submit';
import type { Metrics } from '../metrics';
import { settleSubmitted } from './waits';

export interface StartDeps {
  sql: Sql;
  events: JobEvents;
  /** The scheduler (server/scheduler.ts): whether jobs may be queued, sending a job claimed at submit, waking every pass. */
  scheduler: {
    readonly mayHaveQueued: boolean;
    dispatch(job: JobRow, targets: Target[], announced?: boolean): Promise<void>;
    pokeAll(): Promise<void>;
  };
  /** The bus payload asking the controller that holds a host's worker to send a job claimed here (null: it is connected here). */
  announce: NonNullable<SubmitOptions['announce']>;
  /** The fleet as kept in memory: what a submit matches against. */
  inventory: SubmitDeps['inventory'];
  runtimeLimits?: SubmitDeps['runtimeLimits'];
  /** The dashboard's live view: a job queued (a start is told by its event). */
  live: Pick<LiveFeed, 'changed'>;
  /** Grant latency of a job started at its submit (server/metrics.ts). */
  metrics: Pick<Metrics, 'granted'>;
}

export interface Started {
  job: JobRow;
  /** Jobs queued ahead of it when it was stored (0 when it started at once). */
  position: number;
  /** With wait: false and nothing free: why it was cancelled instead of queued. */
  refused: string | null;
  /** An earlier submit with the same idempotency key stored this job: nothing was started, the caller shows that job. */
  replayed?: boolean;
  /** What to tell the submitter (a limit's --max-runtime ceiling applied): also given to `attach`. */
  notices: string[];
}

/**
 * Validates and stores the job (submitJob: the selector, the device, the
 * fleet, the token's binding), lets the caller attach to it (`attach` runs
 * before the job can reach its worker, so whoever follows it misses nothing),
 * then starts it at once on a free device or wakes the scheduler. With
 * wait: false, a job still queued after that pass is cancelled.
 */
export async function startJob(
  deps: StartDeps,
  identity: Identity,
  body: SubmitJob,
  attach: (job: JobRow, position: number, notices: string[]) => void,
): Promise<Started> {
  const {
    job,
    position,
    targets,
    announced,
    replayed,
    notices = [],
  } = await submitJob(deps, identity, body, {
    startAtOnce: !deps.scheduler.mayHaveQueued,
    announce: deps.announce,
  });
  if (replayed) return { job, position, refused: null, replayed, notices: [] };
  if (targets) deps.metrics.granted('submit', job);
  attach(job, position, notices);
  // A job it runs after had already failed (or was killed...): cancelled at once, cause dependency; its follower hears the end.
  if (job.waits === 'after') await settleSubmitted({ sql: deps.sql, events: deps.events, released: () => void deps.scheduler.pokeAll() }, job.id);
  if (targets) await deps.scheduler.dispatch(job, targets, announced);
  else {
    deps.live.changed({ what: 'jobs', jobId: job.id });
    await deps.scheduler.pokeAll();
  }
  const refused = body.wait || targets ? null : await cancelIfStillQueued(deps, job);
  return { job, position, refused, notices };
}

/** --no-wait: after the scheduling pass, a job still queued is cancelled (the statement itself checks it is still queued). */
async function cancelIfStillQueued(deps: StartDeps, job: JobRow): Promise<string | null> {
  const reason = noWaitReason(job, ...(await choicesFree(deps.inventory, job)));
  return (await endJob(deps, job.id, ended('cancelled', 'no_wait', reason), { from: ['queued'] })) ? reason : null;
}

/** With --gpu: how free each choice's devices are, and how many free devices match none of them (the fleet in memory). */
async function choicesFree(inventory: StartDeps['inventory'], job: JobRow): Promise<[ChoiceFree[] | null, number]> {
  const choices = new TermsCache().choices(job.selector, job.gpuChoices);
  if (!choices || job.gpuChoices === null) return [null, 0];
  const free = await Promise.all(choices.map(async (c) => (await inventory.candidates(c.terms, null)).matching.filter((m) => m.view.free)));
  const taken = new Set(free.flat().map((m) => m.view.id));
  const all = (await inventory.candidates([], null)).matching;
  const otherFree = all.filter((m) => m.view.free && !taken.has(m.view.id)).length;
  return [
    choices.map((c, i) => ({ label: c.label, name: job.gpuChoices![i]!.model, gpus: c.gpus, free: free[i]!.length, freeOnOneHost: mostOnOneHost(free[i]!) })),
    otherFree,
  ];
}

function mostOnOneHost(list: readonly { view: { hostName: string } }[]): number {
  const n = new Map<string, number>();
  for (const { view } of list) n.set(view.hostName, (n.get(view.hostName) ?? 0) + 1);
  return Math.max(0, ...n.values());
}

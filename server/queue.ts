// The queue as the scheduler will consider it (GET /api/queue), each job with
// why it waits: core/wait-reason.ts over the whole fleet (every controller's
// devices), the same walk a scheduling pass makes; and until when at the
// latest (core/until.ts: freesBy), from the same fleet and one more query.
import { TermsCache } from '../core/terms-cache';
import { type FleetDevice, waitReasons } from '../core/wait-reason';
import type { DeviceSummary, QueueEntry } from '../protocol/wire';
import type { Sql } from './db';
import { type JobRow, jobView } from './jobs/job-view';
import type { FairShare } from './jobs/fair-share';
import { type Quotas, withQuota } from './jobs/quota';
import { FAIR_ORDER_COLUMNS, fairQueued, queueOrder } from './jobs/sql/queue-order';
import { freesByOfJobs } from './until';
import { waitTexts } from './jobs/wait-texts';
import { machineWaits } from './machines/machine-waits';

/** As many as a scheduling pass considers (server/scheduler.ts). */
export const QUEUE_SHOWN = 1000;

/**
 * The first QUEUE_SHOWN queued jobs, in listActive's order (priority, fair
 * share, then submission), with their place and reason; `devices` gives the fleet (the
 * fleet page's, kept between requests: server/fleet-cache.ts).
 */
export async function listQueue(
  sql: Sql,
  reserveAfterS: number,
  devices: () => Promise<DeviceSummary[]>,
  fairShare: Pick<FairShare, 'ranks'> | null = null,
  quotas: Pick<Quotas, 'view'> | null = null,
  /** RC_MAX_MACHINES where provider accounts are configured: jobs' machines say what they wait on (server/machines/machine-waits.ts). */
  maxMachines: number | null = null,
): Promise<QueueEntry[]> {
  const ranks = (await fairShare?.ranks()) ?? null;
  const rows: (JobRow & { fairRank?: number })[] = ranks
    ? await sql<(JobRow & { fairRank: number })[]>`
        select * from ${fairQueued(sql, ranks, QUEUE_SHOWN)} as jobs order by ${sql.unsafe(FAIR_ORDER_COLUMNS)} limit ${QUEUE_SHOWN}`
    : await sql<JobRow[]>`select * from jobs where state = 'queued' and waits is null order by ${queueOrder(sql)} limit ${QUEUE_SHOWN}`;
  // Jobs that wait on other jobs or a retry delay (jobs.waits): after those in line, with no place in it (jobs_waiting_idx).
  const waiting = await sql<JobRow[]>`select * from jobs where state = 'queued' and waits is not null order by ${queueOrder(sql)} limit ${QUEUE_SHOWN}`;
  // An empty queue needs no fleet.
  if (!rows.length && !waiting.length) return [];
  // A removed host's devices are not in the fleet's listing (only with ?all=1): none counts here.
  const fleet = (await devices()).filter((d): d is DeviceSummary & { state: FleetDevice['state'] } => d.state !== 'removed');
  const terms = new TermsCache();
  const now = Date.now();
  const quota = (await quotas?.view()) ?? null;
  const queued = rows.map((j) => withQuota(terms.queued(j, now), quota, j.tokenId));
  const why = waitReasons(queued, fleet, reserveAfterS, quota);
  const freesBy = await freesByOfJobs(sql, queued, fleet, now);
  const onMachines = maxMachines === null ? new Map<string, string>() : await machineWaits(sql, rows, maxMachines);
  const inLine: QueueEntry[] = rows.map((r, position) => {
    const machine = onMachines.get(r.id);
    // The joined fleet's devices say nothing of when a provider machine comes.
    const until = machine || r.placement === 'cloud' ? null : (freesBy.get(r.id) ?? null);
    return { ...jobView(r), position, why: machine ? { ...why.get(r.id)!, text: machine } : why.get(r.id)!, freesBy: until };
  });
  if (!waiting.length) return inLine;
  // Their devices counted as if they were alone in line (a walk of their own: they take nothing from the jobs in line), and
  // the sentence is what they wait on. No bound on when a device frees for them: what they wait on comes first.
  const whyLater = waitReasons(
    waiting.map((j) => withQuota(terms.queued(j, now), quota, j.tokenId)),
    fleet,
    reserveAfterS,
    quota,
  );
  const texts = await waitTexts(sql, waiting);
  return [
    ...inLine,
    ...waiting.map((r) => {
      const text = texts.get(r.id) ?? 'waiting';
      return { ...jobView(r), position: null, waits: text, why: { ...whyLater.get(r.id)!, text }, freesBy: null };
    }),
  ];
}

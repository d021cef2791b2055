// The queue as the scheduler will consider it (GET /api/queue), each job with
// why it waits: core/wait-reason.ts over the whole fleet (every controller's
// devices), the same walk a scheduling pass makes.
import type { QueuedJob } from '../core/schedule';
import { parseSelector, type SelectorTerm } from '../core/selector';
import { type FleetDevice, waitReasons } from '../core/wait-reason';
import type { DeviceSummary, QueueEntry } from '../protocol/wire';
import type { Sql } from './db';
import { type JobRow, jobView } from './jobs/job-view';

/** As many as a scheduling pass considers (server/scheduler.ts). */
export const QUEUE_SHOWN = 1000;

/**
 * The first QUEUE_SHOWN queued jobs, in listActive's order (priority, then
 * submission), with their place and reason; `devices` gives the fleet (the
 * fleet page's, kept between requests: server/fleet-cache.ts).
 */
export async function listQueue(sql: Sql, reserveAfterS: number, devices: () => Promise<DeviceSummary[]>): Promise<QueueEntry[]> {
  const rows = await sql<JobRow[]>`select * from jobs where state = 'queued' order by priority desc, requeued_at nulls last, seq limit ${QUEUE_SHOWN}`;
  // An empty queue needs no fleet.
  if (!rows.length) return [];
  // A removed host's devices are not in the fleet's listing (only with ?all=1): none counts here.
  const fleet = (await devices()).filter((d): d is DeviceSummary & { state: FleetDevice['state'] } => d.state !== 'removed');
  const terms = new Map<string, readonly SelectorTerm[]>();
  const now = Date.now();
  const queued = rows.map((j): QueuedJob => {
    let t = terms.get(j.selector);
    if (!t) {
      const parsed = parseSelector(j.selector);
      // Stored selectors were validated at submit; one that no longer parses matches nothing (as in the scheduler).
      t = parsed.ok ? parsed.terms : [{ key: '\0', op: '=', value: '\0', column: 1, text: '' }];
      terms.set(j.selector, t);
    }
    return {
      id: j.id,
      priority: j.priority,
      seq: j.seq,
      terms: t,
      deviceName: j.deviceName,
      gpus: j.gpus,
      waitedS: (now - j.createdAt.getTime()) / 1000,
      requeuedAt: j.requeuedAt?.getTime() ?? null,
    };
  });
  const why = waitReasons(queued, fleet, reserveAfterS);
  return rows.map((r, position) => ({ ...jobView(r), position, why: why.get(r.id)! }));
}

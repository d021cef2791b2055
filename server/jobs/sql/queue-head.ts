// What a scheduling pass reads of the queue: its head, in the queue order
// (queue-order.ts: fair order when tokens' ranks are given), with the columns the decision needs; whether a
// --preemptible job runs anywhere; and those that do.
import type { GpuChoice } from '../../../core/gpu-choices';
import type { Sql } from '../../db';
import { FAIR_ORDER_COLUMNS, type FairRanks, fairQueued, queueOrder } from './queue-order';

/** A queued job as a pass reads it. */
export interface QueuedRow {
  id: string;
  priority: number;
  seq: number;
  selector: string;
  deviceName: string | null;
  gpus: number;
  gpuChoices: GpuChoice[] | null;
  createdAt: Date;
  requeuedAt: Date | null;
  preemptible: boolean;
  /** Devices preemption is freeing for it, while that lasts (preempt_until in the future). */
  heldDevices: number[] | null;
  /** Hosts where an earlier attempt of it still holds leases. */
  avoidHosts: string[] | null;
  /** Its token's fair-share rank (0 while every token stands equal). */
  fairRank?: number;
  /** The token it was submitted with: its --gpus limits (core/quota.ts). */
  tokenId?: number | null;
  /** Where it may run (jobs.placement): a `cloud` one only on its provider machine. */
  placement?: 'any' | 'reserved' | 'cloud';
}

/** A running --preemptible job that is not being stopped already. */
export interface PreemptibleRow {
  id: string;
  priority: number;
  startedAt: Date;
  hostName: string;
  devices: string[] | null;
}

/**
 * The first `limit` queued jobs; in fair order when `ranks` are given (null: every token stands equal). Those of
 * `skip`'s tokens are left out: their --gpus limits are reached, and a deep queue of them must not fill the head
 * while other tokens' jobs behind it could start.
 */
export function queueHead(sql: Sql, limit: number, ranks: FairRanks | null = null, skip: readonly number[] = []): Promise<QueuedRow[]> {
  const skipped = skip.length ? sql`and coalesce(token_id, 0) <> all(${skip as number[]}::bigint[])` : sql``;
  return sql<QueuedRow[]>`
    select id, priority, seq, selector, device_name, gpus, gpu_choices, created_at, requeued_at, preemptible, token_id, placement,
      case when preempt_until > now() then preempt_devices end as held_devices,
      case when attempt > 1 then (
        select array_agg(distinct d.host_name) from leases l join devices d on d.id = l.device_id where l.job_id = jobs.id and l.released_at is null
      ) end as avoid_hosts,
      ${ranks ? sql`fair_rank` : sql`0`} as fair_rank
    from ${ranks ? sql`${fairQueued(sql, ranks, limit, skip)} as jobs` : sql`jobs where state = 'queued' and waits is null ${skipped}`}
    order by ${ranks ? sql.unsafe(FAIR_ORDER_COLUMNS) : queueOrder(sql)} limit ${limit}`;
}

export async function anyPreemptibleRunning(sql: Sql): Promise<boolean> {
  const [row] = await sql`select 1 from jobs where state = 'running' and preemptible and kill_requested_by is null limit 1`;
  return row !== undefined;
}

export function preemptibleRunning(sql: Sql): Promise<PreemptibleRow[]> {
  return sql<PreemptibleRow[]>`
    select id, priority, started_at, host_name, devices from jobs where state = 'running' and preemptible and kill_requested_by is null`;
}

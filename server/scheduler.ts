// Runs the scheduling decision whenever something changes (a submit, a freed
// device, a worker arriving, a poke from another controller): no fixed
// polling delay stands between a freed device and the next job.
//
// Every controller runs it, each for the devices whose workers are connected
// to it: what it claims it can start at once, over its own socket. The whole
// queue is read by all of them, so a job queued anywhere starts on any
// controller's free device; two passes that pick the same job or device meet
// in the claim, which re-checks at commit, and the database's one-active-lease
// index is the last word. A planned job the other pass took first is replaced
// in the claim by the next one of its kind in the queue (claimBatch's
// alternates), so both passes start jobs.
//
// A job claimed at submit on a device whose worker is connected to another
// controller is sent by that one (a `start` message). It marks the job
// dispatched before it sends it; the claiming controller puts the job back in
// the queue if nobody has within START_ELSEWHERE_MS. One statement each, on
// dispatched_at, so exactly one of the two happens.
import { pickVictims, type Preemptible } from '../core/preempt';
import { exhausted, overQuota, type QuotaView } from '../core/quota';
import { type Assignment, decide, type DeviceView, DEFAULT_RESERVE_AFTER_S, mayReserve, type QueuedJob, queueOrder as byQueueOrder } from '../core/schedule';
import { TermsCache } from '../core/terms-cache';
import type { PreemptibleRow, QueuedRow } from './jobs/sql/queue-head';
import type { FairRanks } from './jobs/sql/queue-order';
import type { Inventory } from './inventory';
import type { JobEvents } from './job-events';
import { type Claimed, type PlannedClaim, targetsOf, type Target } from './jobs/claim';
import type { JobEngine } from './jobs/engine';
import { withQuota } from './jobs/quota';
import { holderOf } from './jobs/holder';
import type { JobRow } from './jobs/job-view';
import type { Metrics } from './metrics';
import type { JobEvent } from '../protocol/wire';

/** Seconds of notice a preempted job gets between SIGTERM and SIGKILL, unless RC_PREEMPT_NOTICE_S says otherwise. */
export const DEFAULT_PREEMPT_NOTICE_S = 60;

/** Queued jobs a pass considers: the head of the queue in its order (jobs further back wait for a later pass). */
export const PASS_WINDOW = 1000;
/** The most a pass reads, however many devices are free here. */
export const PASS_WINDOW_MAX = 10_000;

/**
 * The head of the queue a pass reads, with `free` devices free here: twice
 * what they could take, so that another controller's pass reading the same
 * head at the same time (every controller plans from the head) leaves this
 * one the next jobs of each kind to claim instead (claimBatch's alternates):
 * with a window of what one controller could take, two controllers would
 * share one window's worth of jobs a round, and start fewer than one alone.
 */
export function passWindow(free: number): number {
  return Math.min(PASS_WINDOW_MAX, Math.max(PASS_WINDOW, 2 * free));
}

/** The fewest queued jobs a pass's first read takes. */
export const FIRST_WINDOW_MIN = 64;

/**
 * What a pass reads first: twice what `free` devices could take (at least
 * FIRST_WINDOW_MIN). Most passes need no more: a controller with 50 free
 * devices read 1,000 jobs every pass, and with two controllers that fixed cost
 * twice per round was what kept them below one. Only when those jobs leave
 * devices free (they want other devices) is the whole window read.
 */
export function firstWindow(free: number): number {
  return Math.min(passWindow(free), Math.max(FIRST_WINDOW_MIN, 2 * free));
}

/** A job's start as its followers and every controller's fleet view hear it. */
export type StartedEvent = Extract<JobEvent, { type: 'started' }>;

export function startedEvent(job: JobRow): StartedEvent {
  return { type: 'started', jobId: job.id, host: job.hostName!, devices: job.devices ?? [], kind: job.kind, submitter: job.submitter };
}

/** How long a job another controller's claim took first is left out of the passes here (it commits in milliseconds; were it rolled back, the job is planned again after this). */
const TAKEN_ELSEWHERE_MS = 1000;

/** Queued jobs a pass looks at for preemption (the head of those it could not start). */
const PREEMPT_WINDOW = 20;
/** How long past the notice devices stay held back for the job they are freed for (a worker slow to report the exit). */
const PREEMPT_HOLD_MARGIN_S = 30;

/** How long a job claimed here for another controller's worker may wait to be sent before it is put back in the queue. */
export const START_ELSEWHERE_MS = 2000;

export interface Dispatcher {
  /** Sends a started job to its worker; false when that worker is not connected here. */
  startJob(job: JobRow, devices: Target[]): boolean;
  /** Whether the host's worker is connected here: only its devices are claimed by this controller. */
  holds(hostName: string): boolean;
}

/** What a pass reads: the head of the queue, and the running --preemptible jobs (server/jobs/sql/queue-head.ts on Postgres). */
export interface QueueState {
  /** The tokens' fair-share ranks, read once a pass; null (or absent): every token stands equal (server/jobs/fair-share.ts). */
  ranks?(): Promise<FairRanks | null>;
  head(limit: number, ranks?: FairRanks | null, skip?: readonly number[]): Promise<QueuedRow[]>;
  /** What the --gpus limits leave, read once a pass; null (or absent): no limit (server/jobs/quota.ts). */
  quota?(): Promise<QuotaView | null>;
  anyPreemptibleRunning(): Promise<boolean>;
  preemptibleRunning(): Promise<PreemptibleRow[]>;
}

/** Where a pass's decisions are carried out (the job engine; an in-memory one in test/unit/scheduler-pass.test.ts). */
export type Planner = Pick<JobEngine, 'claimPass' | 'dispatched' | 'requeueClaimed' | 'holdForPreemption' | 'preempt'>;

/** What a scheduler needs; the optional ones default to one controller alone (no bus, no metrics). */
export interface SchedulerDeps {
  /** What a pass reads of the queue and of the preemptible jobs running (Postgres: server/jobs/sql/queue-head.ts). */
  queue: QueueState;
  /** Where a pass's decisions are carried out: the claims, dispatches, requeues and preemptions (the job engine). */
  planner: Planner;
  inventory: Pick<Inventory, 'schedulable' | 'reserve' | 'settle' | 'leased' | 'released' | 'changed'>;
  events: Pick<JobEvents, 'event'>;
  dispatcher: Dispatcher;
  onError: (err: unknown) => void;
  /** Seconds a multi-GPU job waits before devices are held back for it (core/schedule.ts). */
  reserveAfterS?: number;
  /** Tells the other controllers that something may have become schedulable (the bus). */
  spread?: () => void;
  /** Asks the controller holding the job's worker to send it (the bus); null: one controller, nobody to ask. */
  startElsewhere?: ((job: JobRow, targets: Target[]) => void) | null;
  /** The bus payload of a job's `started` event, for the dispatch's UPDATE to send at its commit (null: none). */
  startedPayload?: ((event: StartedEvent) => string | null) | null;
  /** A job went back to the queue from `host`: its devices' change is told (the live view, and so the other controllers). */
  requeued?: ((host: string) => void) | null;
  /** Grant latency (server/metrics.ts). */
  metrics?: Pick<Metrics, 'granted'> | null;
  /** A pass left jobs queued: provider machines may be found for them (server/machines/machine-pass.ts nudge). */
  leftQueued?: (() => void) | null;
  /** Seconds between a preemption's SIGTERM and its SIGKILL (RC_PREEMPT_NOTICE_S). */
  preemptNoticeS?: number;
}

export class Scheduler {
  private current: Promise<void> | null = null;
  private again = false;
  private readonly terms = new TermsCache();
  private raced = 0;
  /** Jobs of the last passes that another claim took first, and until when they are left out. */
  private readonly takenElsewhere = new Map<string, number>();

  private readonly queue: QueueState;
  private readonly planner: Planner;
  private readonly inventory: SchedulerDeps['inventory'];
  private readonly events: Pick<JobEvents, 'event'>;
  private readonly dispatcher: Dispatcher;
  private readonly onError: (err: unknown) => void;
  private readonly reserveAfterS: number;
  private readonly spread: () => void;
  private readonly startElsewhere: SchedulerDeps['startElsewhere'];
  private readonly startedPayload: SchedulerDeps['startedPayload'];
  private readonly requeued: SchedulerDeps['requeued'];
  private readonly metrics: SchedulerDeps['metrics'];
  private readonly preemptNoticeS: number;
  private readonly leftQueued: SchedulerDeps['leftQueued'];

  constructor(deps: SchedulerDeps) {
    this.queue = deps.queue;
    this.planner = deps.planner;
    this.inventory = deps.inventory;
    this.events = deps.events;
    this.dispatcher = deps.dispatcher;
    this.onError = deps.onError;
    this.reserveAfterS = deps.reserveAfterS ?? DEFAULT_RESERVE_AFTER_S;
    this.spread = deps.spread ?? (() => {});
    this.startElsewhere = deps.startElsewhere ?? null;
    this.startedPayload = deps.startedPayload ?? null;
    this.requeued = deps.requeued ?? null;
    this.metrics = deps.metrics ?? null;
    this.preemptNoticeS = deps.preemptNoticeS ?? DEFAULT_PREEMPT_NOTICE_S;
    this.leftQueued = deps.leftQueued ?? null;
  }

  /** Whether the last pass left jobs queued (or one was submitted since): a freed device only matters then. */
  private maybeQueued = true;

  /** A hint for submits: when jobs may be queued, starting one at submit would only be refused. */
  get mayHaveQueued(): boolean {
    return this.maybeQueued;
  }

  /** A device was freed: run a pass only if something may be waiting for it (the 5 s safety pass covers other replicas). */
  pokeIfQueued(): void {
    if (this.maybeQueued) void this.poke();
  }

  /** A job was queued, or put back: every controller's pass looks, this one's too. */
  pokeAll(): Promise<void> {
    this.spread();
    return this.poke();
  }

  private stopped = false;

  /** No pass after this (the controller is stopping); resolves when the one in progress is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.current;
  }

  /** Runs a pass now, or right after the one in progress. Resolves when it is done. */
  poke(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.maybeQueued = true;
    if (this.current) {
      this.again = true;
      return this.current;
    }
    this.current = this.loop().finally(() => {
      this.current = null;
    });
    return this.current;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.pass();
      } catch (err) {
        this.onError(err);
      }
    } while (this.again && !this.stopped);
  }

  /**
   * One decision over what is free here and the head of the queue, then its
   * claims in one statement. Nothing free here: nothing to decide, and the
   * queue is not read (the next freed device pokes).
   */
  private async pass(): Promise<void> {
    const here = (host: string) => this.dispatcher.holds(host);
    const free = await this.inventory.schedulable(here);
    // Nothing free here: only preemption could start a job, and only where preemptible jobs run.
    if (!free.length && !(await this.queue.anyPreemptibleRunning())) {
      if (this.maybeQueued) this.leftQueued?.();
      return;
    }
    // Jobs another controller's claim took from under the last pass (locked, about to commit): not planned
    // again for a moment, so this pass takes the next ones instead of colliding with that claim again.
    const now = Date.now();
    for (const [id, until] of this.takenElsewhere) if (until <= now) this.takenElsewhere.delete(id);
    const ranks = (await this.queue.ranks?.()) ?? null;
    const quota = (await this.queue.quota?.()) ?? null;
    const skip = quota ? exhausted(quota, quota.tokens) : [];
    let window = firstWindow(free.length);
    let queued: QueuedRow[];
    let jobs: QueuedJob[];
    let plan: Assignment[];
    const heldFor = new Map<number, string>();
    for (;;) {
      queued = await this.queue.head(window, ranks, skip);
      jobs = queued.filter((j) => !this.takenElsewhere.has(j.id)).map((j) => this.toQueued(j, quota));
      heldFor.clear();
      for (const j of queued) for (const id of j.heldDevices ?? []) heldFor.set(id, j.id);
      for (const d of free) if (d.forJob) heldFor.set(d.id, d.forJob);
      // Reservations for multi-GPU jobs that waited long enough hold back busy devices too.
      const reserving = jobs.some((j) => mayReserve(j, this.reserveAfterS));
      plan = free.length ? decide(jobs, reserving ? await this.inventory.schedulable(here, true) : free, this.reserveAfterS, heldFor, quota) : [];
      // Devices left free while more jobs wait than were read: those further back may want them.
      const used = plan.reduce((n, a) => n + a.devices.length, 0);
      if (used >= free.length || queued.length < window || window >= passWindow(free.length)) break;
      window = passWindow(free.length);
    }
    if (!queued.length) {
      this.maybeQueued = false;
      return;
    }
    // Jobs stay queued when the plan cannot start them all, or when there are more than a pass reads.
    this.maybeQueued = plan.length < queued.length || queued.length === window;
    if (this.maybeQueued) this.leftQueued?.();
    // A job past its --gpus limit preempts nobody: it waits for its own scope's devices.
    if (plan.length < queued.length)
      await this.preempt(
        queued,
        // A --cloud-only job waits for its provider machine: joined hosts' devices freed for it would be no use to it.
        jobs.filter((j) => !j.cloudOnly && !(quota && overQuota(quota, j.quota ?? [], j.gpus))),
        plan,
        heldFor,
        here,
      );
    if (!plan.length) return;
    const ids = plan.flatMap((a) => a.devices.map((d) => d.id));
    this.inventory.reserve(ids);
    let claimed: Claimed<DeviceView>[] = [];
    let unusable: PlannedClaim<DeviceView>[] = [];
    const alternates = alternatesOf(queued, jobs, new Set(heldFor.values()));
    const claims = plan.map((a) => ({ jobId: a.jobId, hostName: a.devices[0]!.hostName, devices: a.devices, alternates: alternates.get(a.jobId) }));
    try {
      ({ claimed, unusable } = await this.planner.claimPass(claims));
      for (const { job } of claimed) this.inventory.leased(job.hostName!, job.devices ?? [], holderOf(job));
    } finally {
      this.inventory.settle(ids);
    }
    const uuids = new Map(free.map((d) => [d.id, d.uuid]));
    const started = new Set<string>();
    for (const { job, claim } of claimed) {
      started.add(job.id);
      this.metrics?.granted('pass', job);
      await this.dispatch(job, targetsOf(claim.devices, uuids));
    }
    for (const a of plan) {
      // Taken elsewhere or killed: left out of the next passes for a moment.
      if (!started.has(a.jobId)) this.takenElsewhere.set(a.jobId, Date.now() + TAKEN_ELSEWHERE_MS);
    }
    // A claim refused for its devices: one was not as shown here (quarantined, its host off), so that host is loaded
    // again. One whose jobs ran out (another controller took them) says nothing of its host: with two controllers
    // draining one queue that is hundreds of hosts a pass, and past 32 the whole fleet would be loaded again.
    for (const c of unusable) this.inventory.changed(c.hostName);
    if (claimed.length < plan.length) {
      // Another controller (or a kill) got there first: decide again on fresh state.
      this.raced += 1;
      if (this.raced < 5) this.again = true;
    } else {
      this.raced = 0;
      // The whole window started: what is behind it may start too.
      if (queued.length === window) this.again = true;
    }
  }

  /**
   * Sends a claimed job to its worker and tells whoever follows it. A worker
   * connected to another controller gets it through that one; a worker
   * connected nowhere (it vanished since the decision) does not, and the job
   * goes back in the queue.
   */
  async dispatch(job: JobRow, targets: Target[], announced = false): Promise<void> {
    if (this.sendHere(job, targets)) return;
    if (this.startElsewhere) {
      // The claim's own commit may have asked already (submitJob's announce).
      if (!announced) this.startElsewhere(job, targets);
      setTimeout(() => {
        this.requeue(job, true).catch((err: unknown) => this.onError(err));
      }, START_ELSEWHERE_MS).unref();
      return;
    }
    await this.requeue(job);
  }

  /**
   * Another controller claimed this job for `host`'s worker: if it is
   * connected here, the job is marked dispatched (unless it was put back
   * meanwhile), then sent. The same UPDATE tells the other controllers that it
   * started, at its commit (the claimer's client waits for that, and it saves
   * a round trip).
   */
  async startFromElsewhere(host: string, jobId: string, fence: number, targets: Target[], who: Pick<StartedEvent, 'kind' | 'submitter'> = {}): Promise<void> {
    if (!this.dispatcher.holds(host)) return;
    const payload = this.startedPayload?.({ type: 'started', jobId, host, devices: targets.map((t) => t.name), ...who }) ?? null;
    const job = await this.planner.dispatched(jobId, fence, payload);
    if (!job) return;
    if (!this.sendHere(job, targets, payload !== null)) await this.requeue(job);
  }

  private sendHere(job: JobRow, targets: Target[], told = false): boolean {
    if (!this.dispatcher.startJob(job, targets)) return false;
    this.events.event(job.id, startedEvent(job), told);
    return true;
  }

  /**
   * Puts the job back in the queue: its worker vanished between the decision
   * and the dispatch, or (`undispatchedOnly`) no controller sent it in time.
   * Every controller's pass looks at it again.
   */
  private async requeue(job: JobRow, undispatchedOnly = false): Promise<void> {
    if (!(await this.planner.requeueClaimed(job, undispatchedOnly))) return;
    // No event tells this: here it is applied, the others load the host again (the live view's change).
    this.inventory.released(job.id);
    this.requeued?.(job.hostName!);
    this.maybeQueued = true;
    this.spread();
    void this.poke();
  }

  /**
   * Queued jobs that are not preemptible and that the plan could not start:
   * for each (the head of them, in queue order), the victims core's rule picks
   * among the --preemptible jobs running here (core/preempt.ts) are stopped
   * with notice, and the devices they free are held for that job until the
   * notice is over (and a margin): no third job takes them meanwhile, and no
   * second preemption is made for the same job. Holding them is one UPDATE
   * that only one controller's pass wins.
   */
  private async preempt(
    queued: readonly QueuedRow[],
    jobs: readonly QueuedJob[],
    plan: readonly Assignment[],
    heldFor: ReadonlyMap<number, string>,
    here: (host: string) => boolean,
  ): Promise<void> {
    const planned = new Set(plan.map((a) => a.jobId));
    const rows = new Map(queued.map((q) => [q.id, q]));
    const waiting = [...jobs]
      .sort(byQueueOrder)
      .filter((j) => !planned.has(j.id) && !rows.get(j.id)!.preemptible && !rows.get(j.id)!.heldDevices)
      .slice(0, PREEMPT_WINDOW);
    if (!waiting.length) return;
    const victims = await this.queue.preemptibleRunning();
    const mine = victims.filter((v) => here(v.hostName));
    if (!mine.length) return;
    const devices = await this.inventory.schedulable(here, true);
    const idOf = new Map(devices.map((d) => [d.name, d.id]));
    let running: Preemptible[] = mine.map((v) => ({
      jobId: v.id,
      priority: v.priority,
      startedAt: v.startedAt.getTime(),
      hostName: v.hostName,
      deviceIds: (v.devices ?? []).map((n) => idOf.get(n)).filter((id): id is number => id !== undefined),
    }));
    const unavailable = new Set<number>([...plan.flatMap((a) => a.devices.map((d) => d.id)), ...heldFor.keys()]);
    for (const job of waiting) {
      const p = pickVictims(job, devices, running, unavailable);
      if (!p) continue;
      const held = p.devices.map((d) => d.id);
      if (!(await this.planner.holdForPreemption(job.id, held, this.preemptNoticeS + PREEMPT_HOLD_MARGIN_S))) continue;
      for (const id of held) unavailable.add(id);
      running = running.filter((v) => !p.victims.includes(v.jobId));
      for (const victim of p.victims)
        await this.planner.preempt(victim, `preempted for job ${job.id} (${this.preemptNoticeS}s of notice)`, this.preemptNoticeS);
    }
  }

  private toQueued(j: QueuedRow, quota: QuotaView | null): QueuedJob {
    const job = withQuota(this.terms.queued(j, Date.now()), quota, j.tokenId);
    const placed = j.placement === 'cloud' ? { ...job, cloudOnly: true } : job;
    return j.avoidHosts?.length ? { ...placed, avoidHosts: j.avoidHosts } : placed;
  }
}

/**
 * For each queued job that any other of the pass's jobs could stand in for:
 * the jobs of its shape (selector, device name, count, --gpu choices), in
 * queue order (the order the pass read them in), one array per shape. A job with devices held for it
 * (preemption, its provider machine), a --cloud-only one, or one with hosts to avoid (an earlier attempt's) fits differently: it
 * has none, and is claimed only as itself.
 */
function alternatesOf(rows: readonly QueuedRow[], jobs: readonly QueuedJob[], heldFor: ReadonlySet<string>): Map<string, readonly string[]> {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const byShape = new Map<string, string[]>();
  const out = new Map<string, readonly string[]>();
  for (const j of jobs) {
    const r = byId.get(j.id)!;
    if (r.heldDevices?.length || r.avoidHosts?.length || heldFor.has(j.id) || r.placement === 'cloud') continue;
    const shape = JSON.stringify([r.selector, r.deviceName, r.gpus, r.gpuChoices]);
    const same = byShape.get(shape) ?? [];
    byShape.set(shape, same);
    same.push(j.id);
    out.set(j.id, same);
  }
  return out;
}

// The machine pass (issue 34, seed 002 "How rrun picks" and "Idle machines and
// --keep"): what gives provider machines their jobs and takes them away. Every
// controller runs it every 2 s and whenever a job is left queued; two at once
// meet in the database (one live machine per job: machines_job_live_idx; the
// RC_MAX_MACHINES count under a lock; each move a conditional UPDATE).
//
// One pass:
// 1. Machines follow their jobs: one whose job runs on it is busy; one whose
//    job ended (or started elsewhere) is idle until its --keep is over; one
//    idle past that is deleted (`keep expired`).
// 2. Queued jobs that want a machine get one, in queue order: a `cloud` job at
//    once, an `any` job once no free joined host fits it (those cost nothing);
//    first an idle machine that fits (the cheapest), else the cheapest fitting
//    offer is launched (placement.ts), beside the pass: a slow provider holds
//    up no other job. A machine with a job is that job's alone: the scheduler
//    starts it there (server/inventory.ts forJob).
import { pickOnOneHost, variantsOf } from '../../core/schedule';
import type { QueuedRow } from '../jobs/sql/queue-head';
import { type MachineMin, type MachineWants, offerFits } from '../../core/machine-fit';
import { DEFAULT_KEEP_S } from '../../core/job-options';
import { TermsCache } from '../../core/terms-cache';
import type { SelectorTerm } from '../../core/selector';
import type { Offer } from '../providers/provider';
import type { Inventory } from '../inventory';
import { terminateMachine } from './lifecycle';
import { type PlacementDeps, placeJob, roundOffers } from './placement';

/** Jobs one pass finds a machine for, at most (the rest wait for the next pass). */
const PASS_JOBS = 32;
/** A nudge's pass waits this long, so a burst of queued jobs makes one pass. */
const NUDGE_MS = 5;
/** How long an `any` job waits before a machine is found for it: the scheduler places it on a free joined host first. */
const ANY_GRACE_S = 1;

export interface MachinePassDeps extends PlacementDeps {
  /** Whether a free joined host fits a job (candidates' free devices). */
  inventory: Pick<Inventory, 'candidates'>;
  /** A machine got a job or lost one: its host's devices are loaded again everywhere. */
  changed: (hostName: string) => void;
  /** Every controller's scheduler looks at the queue again (a machine was given a job). */
  poke: () => void;
}

/** What the pass reads of a queued job that may want a machine: a pass's row (TermsCache.queued takes it) and its machine fields. */
interface WantingRow extends Pick<QueuedRow, 'id' | 'priority' | 'seq' | 'selector' | 'deviceName' | 'gpus' | 'gpuChoices' | 'createdAt' | 'requeuedAt'> {
  placement: 'any' | 'cloud';
  cloud: string | null;
  maxPricePerHour: number | null;
  spot: boolean;
  machineMin: MachineMin | null;
}

interface IdleMachine {
  id: string;
  hostName: string;
  offer: Offer;
}

export class MachinePass {
  private readonly terms = new TermsCache();
  private running: Promise<void> | null = null;
  private again = false;
  private nudged: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Jobs whose machine is being launched here now. */
  private readonly launching = new Set<string>();

  constructor(private readonly deps: MachinePassDeps) {}

  /** Jobs were left queued (a scheduling pass's end): a pass soon, one for a burst of them. */
  nudge(): void {
    if (this.nudged || this.stopped) return;
    this.nudged = setTimeout(() => {
      this.nudged = null;
      void this.poke();
    }, NUDGE_MS);
  }

  /** No pass after this; resolves when the one running is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.nudged) clearTimeout(this.nudged);
    // Launches in flight are not waited for: one a stop cuts off is found again as any interrupted launch is
    // (recorded before the provider was asked: lifecycle.ts reconcileMachines).
    await this.running;
  }

  /** Runs a pass now, or once more after the one running (passes never overlap here). */
  poke(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          this.deps.log(`the machine pass failed: ${String(err)}`);
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async pass(): Promise<void> {
    await this.followJobs();
    await this.placeWaiting();
  }

  /**
   * Step 1, one statement: busy while its job runs on it; idle for the job's --keep once the job ended (or went
   * elsewhere; a machine its job ran on is ready, whether or not a reconcile saw it so); deleted once the keep is
   * over (--keep 0: at once). The cases are disjoint, so no row is changed twice.
   */
  private async followJobs(): Promise<void> {
    const rows = await this.deps.sql<{ hostName: string; deleted: string | null }[]>`
      with busy as (
        update machines m set state = 'busy', idle_until = null, ready_at = coalesce(m.ready_at, now())
        from jobs j where m.job_id = j.id and m.state in ('booting', 'idle') and j.state = 'running' and j.host_name = m.host_name
        returning m.host_name
      ), freed as (
        update machines m set job_id = null,
          state = case when coalesce(j.keep_s, ${DEFAULT_KEEP_S}) = 0 then 'terminating'
            when m.state = 'busy' or j.host_name = m.host_name then 'idle' else m.state end,
          terminated_why = case when coalesce(j.keep_s, ${DEFAULT_KEEP_S}) = 0 then 'keep expired' else m.terminated_why end,
          ready_at = case when j.host_name = m.host_name then coalesce(m.ready_at, now()) else m.ready_at end,
          idle_until = now() + make_interval(secs => coalesce(j.keep_s, ${DEFAULT_KEEP_S}))
        from jobs j where m.job_id = j.id and m.state in ('booting', 'idle', 'busy')
          and not (j.state = 'queued' and j.waits is null) and not (j.state = 'running' and j.host_name = m.host_name)
        returning m.id, m.host_name, m.state
      ), kept as (
        -- Ready with no job ever (an admin's launch, a job that went elsewhere while it booted): the default keep.
        update machines set idle_until = now() + make_interval(secs => ${DEFAULT_KEEP_S})
        where state = 'idle' and job_id is null and idle_until is null
        returning id
      ), expired as (
        update machines set state = 'terminating', terminated_why = 'keep expired'
        where state in ('booting', 'idle') and job_id is null and idle_until <= now()
        returning id, host_name
      )
      select host_name, null as deleted from busy
      union all select host_name, case when state = 'terminating' then id end from freed
      union all select host_name, id from expired`;
    for (const { hostName } of rows) this.deps.changed(hostName);
    for (const { deleted } of rows) if (deleted) await terminateMachine(this.deps, deleted, 'keep expired');
  }

  /** Step 2: an idle machine, else a launch, for each queued job that wants one. */
  private async placeWaiting(): Promise<void> {
    const sql = this.deps.sql;
    // Both reads at once: a kept machine's next job waits on this pass (server/machines: bench:machines).
    const [wanting, idleNow] = await Promise.all([
      sql<WantingRow[]>`
      select j.id, j.priority, j.seq, j.selector, j.device_name, j.gpus, j.gpu_choices, j.created_at, j.requeued_at,
        j.placement, j.cloud, j.max_price_per_hour, j.spot, j.machine_min
      from jobs j
      where j.state = 'queued' and j.waits is null and j.kind = 'run' and j.device_name is null
        and (j.placement = 'cloud' or (j.placement = 'any' and coalesce(j.requeued_at, j.created_at) < now() - make_interval(secs => ${ANY_GRACE_S})))
        and not exists (select 1 from machines m where m.job_id = j.id and m.state <> 'terminated')
      order by j.priority desc, j.requeued_at nulls last, j.seq
      limit ${PASS_JOBS}`,
      // Idle ones, and booting ones whose job went elsewhere (ready soon: cheaper than a launch).
      sql<IdleMachine[]>`
        select id, host_name as "hostName", offer from machines
        where state in ('idle', 'booting') and job_id is null and idle_until > now() order by state = 'idle' desc, price_per_hour, id`,
    ]);
    if (!wanting.length) return;
    let idle: IdleMachine[] = idleNow;
    // Every account asked once a pass, whatever the number of jobs (a cloud's API is not asked 32 times in 2 s).
    let offers: Promise<Offer[]> | null = null;
    for (const row of wanting) {
      if (this.launching.has(row.id)) continue;
      const job = this.terms.queued(row, Date.now());
      if (row.placement === 'any' && (await this.joinedFits(job))) continue;
      const wants = wantsOf(row, job, this.terms.selector(row.selector));
      const machine = idle.find((m) => offerFits(m.offer, wants));
      if (machine) {
        idle = idle.filter((m) => m !== machine);
        if (await this.give(machine, row.id)) continue;
      }
      offers ??= roundOffers(this.deps, null);
      this.launch(row.id, wants, offers);
    }
  }

  /**
   * A launch goes on beside the passes: a provider may take seconds to answer, and the next pass (a kept
   * machine for the next job) must not wait for it. The database keeps two launches for one job, or past
   * RC_MAX_MACHINES, from happening (placement.ts); this only spares a pass asking again meanwhile.
   */
  private launch(jobId: string, wants: MachineWants, offers: Promise<Offer[]>): void {
    this.launching.add(jobId);
    void offers
      .then((o) => placeJob(this.deps, jobId, wants, o))
      .then((placed) => {
        if ('placed' in placed) this.deps.log(`machine ${placed.machine.id} launched for ${jobId} from ${placed.offer.account}'s ${placed.offer.offerId}`);
      })
      .catch((err: unknown) => this.deps.log(`launching a machine for ${jobId} failed: ${String(err)}`))
      .finally(() => this.launching.delete(jobId));
  }

  /** Whether a free joined host fits the job now (any of its ways): the scheduler places it there, at no cost. */
  private async joinedFits(job: ReturnType<TermsCache['queued']>): Promise<boolean> {
    for (const v of variantsOf(job)) {
      const { matching } = await this.deps.inventory.candidates(v.terms, null);
      if (
        pickOnOneHost(
          matching.filter((m) => m.view.free).map((m) => m.view),
          v.gpus,
        )
      )
        return true;
    }
    return false;
  }

  /** An idle (or booting, unclaimed) machine becomes the job's, unless another pass gave it (or the job a machine) first. */
  private async give(machine: IdleMachine, jobId: string): Promise<boolean> {
    try {
      const [given] = await this.deps.sql`
        update machines set job_id = ${jobId}, idle_until = null
        where id = ${machine.id} and state in ('idle', 'booting') and job_id is null and idle_until > now()
        returning id`;
      if (!given) return false;
    } catch (err) {
      // The job got a machine from another controller's pass meanwhile (machines_job_live_idx).
      if ((err as { code?: string }).code === '23505') return false;
      throw err;
    }
    this.deps.changed(machine.hostName);
    this.deps.poke();
    return true;
  }
}

/** `selector`: its own terms (job.terms hold its first --gpu choice's model too; the choices are judged apart). */
function wantsOf(row: WantingRow, job: ReturnType<TermsCache['queued']>, selector: readonly SelectorTerm[]): MachineWants {
  return {
    gpus: job.gpus,
    choices: row.gpuChoices?.length ? row.gpuChoices : null,
    terms: selector,
    cloud: row.cloud,
    spot: row.spot,
    maxPricePerHour: row.maxPricePerHour,
    min: row.machineMin,
  };
}

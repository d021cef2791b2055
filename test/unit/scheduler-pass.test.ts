// A scheduling pass in-process, as nomad tests its scheduler: the queue, the
// fleet and the planner in memory (no database, no sockets), the pass itself
// real (server/scheduler.ts over core's decide and pickVictims). What it
// asserts is what the pass asks the planner and the workers to do.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { queueOrder } from '../../core/schedule';
import type { DeviceView } from '../../core/schedule';
import type { BatchClaimed, PlannedClaim, Target } from '../../server/jobs/claim';
import type { JobRow } from '../../server/jobs/job-view';
import type { PreemptibleRow, QueuedRow } from '../../server/jobs/sql/queue-head';
import { type Planner, type QueueState, Scheduler } from '../../server/scheduler';

interface Job {
  row: QueuedRow;
  state: 'queued' | 'running' | 'stopping';
  host: string | null;
  devices: DeviceView[];
  fence: number | null;
  startedAt: Date | null;
}

/** A fleet, a queue and a planner in memory, and what the pass asked of them. */
class World {
  readonly devices: DeviceView[] = [];
  readonly jobs = new Map<string, Job>();
  /** Jobs another controller's claim takes first, the next time they are claimed. */
  readonly takenElsewhere = new Set<string>();
  /** Hosts whose workers are connected here. */
  readonly here = new Set<string>();
  readonly sent: string[] = [];
  readonly requeued: string[] = [];
  readonly held: { jobId: string; deviceIds: number[] }[] = [];
  readonly preempted: { victim: string; noticeS: number }[] = [];
  private seq = 0;
  private fence = 0;

  device(hostName: string, index: number, labels: Record<string, string> = {}): DeviceView {
    const d: DeviceView = { id: this.devices.length + 1, name: `${hostName}:gpu${index}`, hostName, index, labels: { kind: 'gpu', ...labels }, free: true };
    this.devices.push(d);
    this.here.add(hostName);
    return d;
  }

  queue(id: string, o: Partial<QueuedRow> = {}): void {
    const row: QueuedRow = {
      id,
      priority: 0,
      seq: ++this.seq,
      selector: '',
      deviceName: null,
      gpus: 1,
      gpuChoices: null,
      createdAt: new Date(),
      requeuedAt: null,
      preemptible: false,
      heldDevices: null,
      avoidHosts: null,
      ...o,
    };
    this.jobs.set(id, { row, state: 'queued', host: null, devices: [], fence: null, startedAt: null });
  }

  /** A job already running on these devices. */
  running(id: string, devices: DeviceView[], o: Partial<QueuedRow> = {}, startedAt = new Date()): void {
    this.queue(id, o);
    const j = this.jobs.get(id)!;
    Object.assign(j, { state: 'running', host: devices[0]!.hostName, devices, fence: ++this.fence, startedAt });
    for (const d of devices) d.free = false;
  }

  state(id: string): Job['state'] {
    return this.jobs.get(id)!.state;
  }

  private rowOf(j: Job): JobRow {
    return {
      id: j.row.id,
      kind: 'run',
      submitter: 's',
      hostName: j.host,
      devices: j.devices.map((d) => d.name),
      fence: j.fence,
      attempt: 1,
      outputBase: 0,
    } as JobRow;
  }

  readonly queueState: QueueState = {
    head: async (limit) =>
      [...this.jobs.values()]
        .filter((j) => j.state === 'queued')
        .map((j) => j.row)
        .sort((a, b) =>
          queueOrder(
            { id: a.id, priority: a.priority, seq: a.seq, deviceName: null, gpus: 1, terms: [], waitedS: 0, requeuedAt: a.requeuedAt?.getTime() ?? null },
            { id: b.id, priority: b.priority, seq: b.seq, deviceName: null, gpus: 1, terms: [], waitedS: 0, requeuedAt: b.requeuedAt?.getTime() ?? null },
          ),
        )
        .slice(0, limit),
    anyPreemptibleRunning: async () => (await this.queueState.preemptibleRunning()).length > 0,
    preemptibleRunning: async (): Promise<PreemptibleRow[]> =>
      [...this.jobs.values()]
        .filter((j) => j.state === 'running' && j.row.preemptible)
        .map((j) => ({ id: j.row.id, priority: j.row.priority, startedAt: j.startedAt!, hostName: j.host!, devices: j.devices.map((d) => d.name) })),
  };

  readonly planner: Planner = {
    claimPass: async <D extends { id: number; name: string }>(plan: readonly PlannedClaim<D>[]): Promise<BatchClaimed<D>> => {
      const out: BatchClaimed<D> = { claimed: [], unusable: [] };
      for (const claim of plan) {
        const j = this.jobs.get(claim.jobId)!;
        if (this.takenElsewhere.delete(claim.jobId)) {
          // Another controller's claim: running there, on devices of its own.
          j.state = 'running';
          continue;
        }
        const devices = claim.devices.map((c) => this.devices.find((d) => d.id === c.id)!);
        if (j.state !== 'queued' || devices.some((d) => !d.free)) continue;
        Object.assign(j, { state: 'running', host: claim.hostName, devices, fence: ++this.fence, startedAt: new Date() });
        for (const d of devices) d.free = false;
        out.claimed.push({ job: this.rowOf(j), claim });
      }
      return out;
    },
    dispatched: async () => null,
    requeueClaimed: async (job) => {
      const j = this.jobs.get(job.id)!;
      if (j.state !== 'running' || j.fence !== job.fence) return false;
      for (const d of j.devices) d.free = true;
      Object.assign(j, { state: 'queued', host: null, devices: [], fence: null });
      this.requeued.push(job.id);
      return true;
    },
    holdForPreemption: async (jobId, deviceIds) => {
      this.held.push({ jobId, deviceIds: [...deviceIds] });
      return true;
    },
    preempt: async (victim, _reason, noticeS) => {
      this.jobs.get(victim)!.state = 'stopping';
      this.preempted.push({ victim, noticeS });
      return true;
    },
  };

  scheduler(o: { workerGone?: boolean } = {}): Scheduler {
    const errors: unknown[] = [];
    return new Scheduler({
      queue: this.queueState,
      planner: this.planner,
      inventory: {
        schedulable: async (here, all = false) => this.devices.filter((d) => here(d.hostName) && (all || d.free)).map((d) => ({ ...d, uuid: null })),
        reserve: () => {},
        settle: () => {},
        leased: () => {},
        released: () => {},
        changed: () => {},
      },
      events: { event: () => {} },
      dispatcher: {
        holds: (host) => this.here.has(host),
        startJob: (job: JobRow, _targets: Target[]) => {
          // The worker vanished between the decision and the dispatch: its host is no longer connected here.
          if (o.workerGone) {
            this.here.delete(job.hostName!);
            return false;
          }
          this.sent.push(job.id);
          return true;
        },
      },
      onError: (err) => errors.push(err),
      preemptNoticeS: 7,
    });
  }
}

test('a pass starts the head of the queue, in its order, on the free devices, and sends each job to its worker', async () => {
  const w = new World();
  w.device('a', 0);
  w.device('a', 1);
  w.queue('first');
  w.queue('urgent', { priority: 5 });
  w.queue('third');
  w.queue('again', { requeuedAt: new Date() });
  const s = w.scheduler();
  await s.poke();
  // Priority first, then a job queued again after an attempt, then submission order.
  assert.deepEqual(w.sent, ['urgent', 'again']);
  assert.equal(w.state('first'), 'queued');
  assert.equal(w.state('third'), 'queued');
  assert.equal(s.mayHaveQueued, true);
});

test('jobs start only where their selector matches; one that fits nowhere now waits without holding up the others', async () => {
  const w = new World();
  w.device('a', 0, { vram: '80G' });
  w.device('b', 0, { vram: '24G' });
  w.queue('big', { selector: 'vram=80G', gpus: 2 });
  w.queue('small', { selector: 'vram=24G' });
  w.queue('any');
  await w.scheduler().poke();
  assert.deepEqual(w.sent.sort(), ['any', 'small']);
  assert.equal(w.state('big'), 'queued');
});

test('a job another controller claimed first is left out, and the pass takes the next ones instead', async () => {
  const w = new World();
  w.device('a', 0);
  w.device('a', 1);
  w.queue('j1');
  w.queue('j2');
  w.queue('j3');
  w.takenElsewhere.add('j1');
  await w.scheduler().poke();
  assert.deepEqual(w.sent, ['j2', 'j3']);
});

test('a claimed job whose worker is gone by the dispatch goes back to the queue (one controller: nobody else to send it)', async () => {
  const w = new World();
  w.device('a', 0);
  w.queue('j1');
  const s = w.scheduler({ workerGone: true });
  await s.poke();
  assert.deepEqual(w.sent, []);
  assert.ok(w.requeued.includes('j1'));
});

test('a job that can start nowhere preempts the newest --preemptible job of the lowest priority, and its device is held for it', async () => {
  const w = new World();
  const d0 = w.device('a', 0);
  const d1 = w.device('a', 1);
  w.running('old', [d0], { preemptible: true }, new Date(Date.now() - 60_000));
  w.running('new', [d1], { preemptible: true }, new Date());
  w.queue('waiting');
  w.queue('batch', { preemptible: true });
  await w.scheduler().poke();
  assert.deepEqual(w.preempted, [{ victim: 'new', noticeS: 7 }]);
  assert.deepEqual(w.held, [{ jobId: 'waiting', deviceIds: [d1.id] }]);
  // A preemptible job waits its turn: nobody is stopped for it.
  assert.equal(w.state('old'), 'running');
  assert.deepEqual(w.sent, []);
});

test('nothing free and nothing preemptible running: the pass reads no queue and asks nothing', async () => {
  const w = new World();
  const d0 = w.device('a', 0);
  w.running('busy', [d0]);
  w.queue('waiting');
  let reads = 0;
  const head = w.queueState.head;
  w.queueState.head = (limit) => {
    reads++;
    return head(limit);
  };
  await w.scheduler().poke();
  assert.equal(reads, 0);
  assert.deepEqual(w.sent, []);
  assert.deepEqual(w.preempted, []);
});

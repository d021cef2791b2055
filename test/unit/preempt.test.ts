// The preemption rule (core/preempt.ts), the front of the queue for requeued
// jobs, and devices held back for the job they are freed for (core/schedule.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pickVictims, type Preemptible, victimOrder } from '../../core/preempt';
import { decide, type DeviceView, type QueuedJob, queueOrder } from '../../core/schedule';
import { parseSelector } from '../../core/selector';
import { outcome, runsAgain, step, exitCodeFor, type JobLife } from '../../core/job-state';
import { EXIT } from '../../core/exit-codes';

const terms = (s: string) => {
  const p = parseSelector(s);
  if (!p.ok) throw new Error(p.error.message);
  return p.terms;
};

function device(id: number, host: string, index: number, free: boolean, labels: Record<string, string> = {}): DeviceView {
  return { id, name: `${host}:gpu${index}`, hostName: host, index, labels, free };
}

function job(id: string, over: Partial<QueuedJob> & { preemptible?: boolean } = {}): QueuedJob & { preemptible?: boolean } {
  return { id, priority: 0, seq: 1, terms: [], deviceName: null, gpus: 1, waitedS: 0, ...over };
}

const victim = (jobId: string, priority: number, startedAt: number, hostName: string, deviceIds: number[]): Preemptible => ({
  jobId,
  priority,
  startedAt,
  hostName,
  deviceIds,
});

/** Every order of a list (the rule must not depend on the input's order). */
function permutations<T>(xs: readonly T[]): T[][] {
  if (xs.length <= 1) return [[...xs]];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
}

test('victims: lowest priority first, then the most recently started, then job id; whatever the input order', () => {
  const vs = [victim('c', 0, 100, 'h', [3]), victim('a', -5, 50, 'h', [1]), victim('b', 0, 200, 'h', [2]), victim('d', 0, 200, 'h', [4])];
  for (const p of permutations(vs))
    assert.deepEqual(
      [...p].sort(victimOrder).map((v) => v.jobId),
      ['a', 'b', 'd', 'c'],
    );
});

test('a one-device job preempts the single best victim among those holding a matching device, exhaustively over small fleets', () => {
  // Four devices on two hosts, each free, held by a preemptible job, or held by another job;
  // victims of priorities and start times in every combination: the choice is always the rule's.
  const priorities = [-1, 0, 1];
  const starts = [10, 20];
  let checked = 0;
  for (let mask = 0; mask < 3 ** 4; mask++) {
    const kinds = [0, 1, 2, 3].map((i) => Math.floor(mask / 3 ** i) % 3); // 0 free, 1 preemptible, 2 other
    const devices = kinds.map((k, i) => device(i + 1, i < 2 ? 'h1' : 'h2', i % 2, k === 0));
    for (let pv = 0; pv < (priorities.length * starts.length) ** 2; pv++) {
      const running: Preemptible[] = [];
      kinds.forEach((k, i) => {
        if (k !== 1) return;
        const n = (pv + i * 7) % (priorities.length * starts.length);
        running.push(victim(`v${i}`, priorities[n % 3]!, starts[Math.floor(n / 3)]!, devices[i]!.hostName, [i + 1]));
      });
      const got = pickVictims(job('w'), devices, running);
      if (kinds.includes(0)) {
        assert.equal(got, null, 'a free device: no preemption');
        continue;
      }
      // Only victims of the waiting job's priority (0) or lower.
      const eligible = running.filter((v) => v.priority <= 0);
      if (eligible.length === 0) {
        assert.equal(got, null, 'nothing preemptible of its priority or lower: no preemption');
        continue;
      }
      const best = [...eligible].sort(victimOrder)[0]!;
      assert.deepEqual(got?.victims, [best.jobId]);
      assert.deepEqual(
        got?.devices.map((d) => d.id),
        best.deviceIds,
      );
      checked++;
    }
  }
  assert.ok(checked > 100, `checked ${checked} cases`);
});

test('never a victim of higher priority than the waiting job; the same priority or lower may be', () => {
  const devices = [device(1, 'h', 0, false), device(2, 'h', 1, false)];
  const important = [victim('p10', 10, 10, 'h', [1])];
  assert.equal(pickVictims(job('w', { priority: -10 }), devices, important), null, 'a priority -10 job does not stop a priority 10 one');
  assert.deepEqual(pickVictims(job('w', { priority: 10 }), devices, important)?.victims, ['p10']);
  const mixed = [victim('p5', 5, 10, 'h', [1]), victim('p0', 0, 10, 'h', [2])];
  assert.deepEqual(pickVictims(job('w', { priority: 0 }), devices, mixed)?.victims, ['p0'], 'the same priority may be');
  assert.equal(pickVictims(job('w', { priority: 0, gpus: 2 }), devices, mixed), null, 'p5 is not counted for room either');
});

test('a preemptible job never preempts; a selector or a device name limits the victims to matching devices', () => {
  const devices = [device(1, 'h', 0, false, { vram: '80' }), device(2, 'h', 1, false, { vram: '40' })];
  const running = [victim('big', 0, 10, 'h', [1]), victim('small', -9, 10, 'h', [2])];
  assert.equal(pickVictims(job('w', { preemptible: true }), devices, running), null);
  assert.deepEqual(pickVictims(job('w'), devices, running)?.victims, ['small']);
  assert.deepEqual(pickVictims(job('w', { terms: terms('vram>=80') }), devices, running)?.victims, ['big']);
  assert.deepEqual(pickVictims(job('w', { deviceName: 'h:gpu0' }), devices, running)?.victims, ['big']);
  assert.equal(pickVictims(job('w', { terms: terms('vram>=100') }), devices, running), null);
  // A device another job holds (not preemptible) is never counted, nor one left out (taken or held back).
  assert.equal(pickVictims(job('w', { deviceName: 'h:gpu1' }), devices, running, new Set([2])), null);
  assert.equal(pickVictims(job('w'), [device(1, 'h', 0, false)], []), null);
});

test('a multi-device job: victims on one host, the fewest in the rule order that make room, counting free devices there', () => {
  const devices = [device(1, 'a', 0, true), device(2, 'a', 1, false), device(3, 'a', 2, false), device(4, 'b', 0, false), device(5, 'b', 1, false)];
  const running = [victim('a1', 0, 10, 'a', [2]), victim('a2', 0, 20, 'a', [3]), victim('b12', -1, 5, 'b', [4, 5])];
  // b's one victim (priority -1) frees two devices: it comes first in the rule.
  const two = pickVictims(job('w', { gpus: 2 }), devices, running);
  assert.deepEqual(two?.victims, ['b12']);
  assert.deepEqual(
    two?.devices.map((d) => d.id),
    [4, 5],
  );
  // Three devices: only host a can (1 free + two victims).
  const three = pickVictims(job('w', { gpus: 3 }), devices, running);
  assert.deepEqual(three?.victims, ['a2', 'a1']);
  assert.deepEqual(
    three?.devices.map((d) => d.id),
    [1, 2, 3],
  );
  assert.equal(pickVictims(job('w', { gpus: 4 }), devices, running), null);
  // Host a needs one victim for two devices (one is free): its most recently started one.
  const without = running.filter((v) => v.jobId !== 'b12');
  assert.deepEqual(pickVictims(job('w', { gpus: 2 }), devices, without)?.victims, ['a2']);
});

test('a job queued again goes before the jobs of its priority that were not, never before a higher priority', () => {
  const jobs = [
    job('new', { seq: 5 }),
    job('old', { seq: 1 }),
    job('again', { seq: 9, requeuedAt: 1000 }),
    job('again-later', { seq: 2, requeuedAt: 2000 }),
    job('high', { seq: 10, priority: 1 }),
    job('low-again', { seq: 0, priority: -1, requeuedAt: 1 }),
  ];
  for (const p of permutations(jobs).slice(0, 200))
    assert.deepEqual(
      [...p].sort(queueOrder).map((j) => j.id),
      ['high', 'again', 'again-later', 'old', 'new', 'low-again'],
    );
  assert.deepEqual(
    decide(jobs, [device(1, 'h', 0, true)]).map((a) => a.jobId),
    ['high'],
  );
  assert.deepEqual(
    decide(
      jobs.filter((j) => j.id !== 'high'),
      [device(1, 'h', 0, true)],
    ).map((a) => a.jobId),
    ['again'],
  );
});

test('devices held for a job are given to it alone: a third job never takes them, even one ahead of it', () => {
  const held = new Map([[1, 'waiting']]);
  const devices = [device(1, 'h', 0, true), device(2, 'h', 1, true)];
  const ahead = job('ahead', { seq: 1, priority: 5 });
  const waiting = job('waiting', { seq: 2 });
  const plan = decide([ahead, waiting], devices, 30, held);
  assert.deepEqual(
    plan.map((a) => [a.jobId, a.devices.map((d) => d.id)]),
    [
      ['waiting', [1]],
      ['ahead', [2]],
    ],
  );
  // Only the held device free: the job ahead waits rather than take it.
  assert.deepEqual(
    decide([ahead], [device(1, 'h', 0, true)], 30, held).map((a) => a.jobId),
    [],
  );
  // A two-device job with one of its two held devices free yet: nobody gets the free one.
  const two = new Map([
    [1, 'pair'],
    [2, 'pair'],
  ]);
  assert.deepEqual(decide([job('pair', { gpus: 2 }), job('other')], [device(1, 'h', 0, true), device(2, 'h', 1, false)], 30, two), []);
});

test('a job kept off a host (an earlier attempt may still run there) starts elsewhere, and its selector-mates are not affected', () => {
  const devices = [device(1, 'a', 0, true), device(2, 'b', 0, true)];
  const plan = decide([job('again', { avoidHosts: ['a'], seq: 1 }), job('plain', { seq: 2 })], devices);
  assert.deepEqual(
    plan.map((a) => [a.jobId, a.devices[0]!.hostName]),
    [
      ['again', 'b'],
      ['plain', 'a'],
    ],
  );
  assert.deepEqual(decide([job('again', { avoidHosts: ['a', 'b'] })], devices), []);
});

test('an attempt runs again: lost with restarts left, preempted with --retry-on-preempt; never otherwise', () => {
  const j = (attempt: number, restarts: number, retryOnPreempt = false) => ({ attempt, restarts, retryOnPreempt });
  assert.equal(runsAgain(j(1, 0), { state: 'lost' }), false);
  assert.equal(runsAgain(j(1, 1), { state: 'lost' }), true);
  assert.equal(runsAgain(j(2, 1), { state: 'lost' }), false);
  assert.equal(runsAgain(j(3, 3), { state: 'lost' }), true);
  assert.equal(runsAgain(j(1, 5), { state: 'failed' }), false);
  assert.equal(runsAgain(j(1, 5), { state: 'killed' }), false);
  assert.equal(runsAgain(j(9, 0, true), { state: 'preempted' }), true);
  assert.equal(runsAgain(j(1, 5, false), { state: 'preempted' }), false);
});

test('a preemption ends a job preempted, with its own exit code; other stops still end it killed', () => {
  const running: JobLife = { state: 'running', stop: null, ending: null };
  const stopped = step(running, { type: 'stop', stop: { cause: 'preempted', reason: 'preempted for job j2' } });
  const ended = step(stopped, { type: 'exit', exitCode: null, signal: 'SIGTERM', reported: null });
  assert.equal(ended.state, 'preempted');
  assert.equal(ended.ending?.cause, 'preempted');
  assert.equal(ended.ending?.exitCode, 143);
  assert.equal(exitCodeFor(ended.ending!), EXIT.preempted);
  assert.equal(EXIT.preempted, 215);
  assert.equal(outcome(0, null, { cause: 'killed', reason: 'x' }).state, 'killed');
  assert.equal(step(running, { type: 'backstop', stop: { cause: 'preempted', reason: 'x' } }).state, 'preempted');
});

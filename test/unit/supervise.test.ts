// One job's life (worker/supervise.ts) under a fake clock and a fake process tree: what a kill
// sends and when, and that the end is told once, after the reap and the drain, whatever the order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Clock, JobLife } from '../../worker/supervise';

/** Timers that run only when the test moves time on; immediates when it says so. */
class FakeClock implements Clock {
  now = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private immediates: (() => void)[] = [];
  private next = 1;

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.next++;
    this.timers.set(id, { at: this.now + ms, fn });
    return id;
  }
  clearTimeout(timer: unknown): void {
    this.timers.delete(timer as number);
  }
  setImmediate(fn: () => void): void {
    this.immediates.push(fn);
  }
  /** Runs the pending immediates (and those they queue). */
  turn(): void {
    while (this.immediates.length) this.immediates.shift()!();
  }
  /** Moves time on by ms, running each timer that falls due, in order. */
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.now = due[1].at;
      due[1].fn();
    }
    this.now = until;
  }
  get pending(): number {
    return this.timers.size;
  }
}

/** A process tree that records its signals; its reap resolves when the test says (or at once). */
class FakeTree {
  signals: string[] = [];
  reaps = 0;
  private release: ((survivors: number[]) => void) | null = null;
  constructor(private readonly holdReap = false) {}
  signal(sig: 'TERM' | 'KILL'): Promise<void> {
    this.signals.push(sig);
    return Promise.resolve();
  }
  reap(): Promise<number[]> {
    this.reaps += 1;
    if (!this.holdReap) return Promise.resolve([]);
    return new Promise((r) => {
      this.release = r;
    });
  }
  finishReap(survivors: number[] = []): void {
    this.release?.(survivors);
  }
}

type Ended = { code: number | null; signal: NodeJS.Signals | null; survivors: number[] };

function life(): { life: JobLife; clock: FakeClock; said: string[]; ends: Ended[] } {
  const clock = new FakeClock();
  const said: string[] = [];
  const ends: Ended[] = [];
  const l = new JobLife(
    {
      say: (m) => said.push(m),
      end: (code, signal, survivors) => ends.push({ code, signal, survivors }),
    },
    clock,
  );
  return { life: l, clock, said, ends };
}

/** Lets promise callbacks (the reap's then) run. */
const settle = () => new Promise<void>((r) => setImmediate(r));

test('a kill before the start: nothing is spawned and the job ends as killed by SIGTERM', () => {
  const { life: l, clock, ends } = life();
  const tree = new FakeTree();
  l.kill(5);
  assert.equal(l.start({ tree }), false, 'start says not to spawn');
  assert.deepEqual(ends, [{ code: null, signal: 'SIGTERM', survivors: [] }]);
  assert.deepEqual(tree.signals, [], 'no process was signalled');
  assert.equal(tree.reaps, 0);
  clock.advance(60_000);
  assert.equal(ends.length, 1);
});

test('a started job that was not killed is spawned', () => {
  const { life: l } = life();
  assert.equal(l.start({ tree: new FakeTree() }), true);
  assert.equal(l.ended, false);
});

test('killed twice: one TERM, then one KILL after the grace', () => {
  const { life: l, clock } = life();
  const tree = new FakeTree();
  l.start({ tree });
  l.kill(5);
  l.kill(5);
  assert.deepEqual(tree.signals, ['TERM']);
  clock.advance(4999);
  assert.deepEqual(tree.signals, ['TERM'], 'no KILL before the grace is over');
  l.kill(5);
  clock.advance(1);
  assert.deepEqual(tree.signals, ['TERM', 'KILL']);
  clock.advance(60_000);
  l.kill(5);
  assert.deepEqual(tree.signals, ['TERM', 'KILL']);
});

test('a program that exits during the grace gets no KILL', async () => {
  const { life: l, clock, ends } = life();
  const tree = new FakeTree();
  l.start({ tree });
  l.kill(5);
  clock.advance(1000);
  l.exited(null, 'SIGTERM');
  clock.advance(10_000);
  assert.deepEqual(tree.signals, ['TERM']);
  await settle();
  assert.deepEqual(ends, [{ code: null, signal: 'SIGTERM', survivors: [] }]);
  assert.equal(clock.pending, 0, 'no timer is left');
});

test('a client that hangs after the KILL is let go', () => {
  const { life: l, clock } = life();
  const tree = new FakeTree();
  let letGo = 0;
  l.start({ tree, hung: { ms: 10_000, fn: () => letGo++ } });
  l.kill(1);
  clock.advance(1000);
  assert.deepEqual(tree.signals, ['TERM', 'KILL']);
  clock.advance(9999);
  assert.equal(letGo, 0);
  clock.advance(1);
  assert.equal(letGo, 1);
});

test('the end waits for the reap, and carries its survivors', async () => {
  const { life: l, ends } = life();
  const tree = new FakeTree(true);
  l.start({ tree });
  l.exited(3, null);
  await settle();
  assert.equal(tree.reaps, 1);
  assert.deepEqual(ends, [], 'not before the tree is gone');
  tree.finishReap([42]);
  await settle();
  assert.deepEqual(ends, [{ code: 3, signal: null, survivors: [42] }]);
});

test('the end waits for the output to close, at most the drain time, then cuts it', async () => {
  // Closed during the wait: the end at once, no cut.
  {
    const { life: l, clock, ends } = life();
    let cuts = 0;
    l.start({ tree: new FakeTree(), drain: { ms: 2000, cut: () => cuts++ } });
    l.exited(0, null);
    await settle();
    clock.advance(1999);
    assert.deepEqual(ends, []);
    l.closed();
    assert.deepEqual(ends, [{ code: 0, signal: null, survivors: [] }]);
    clock.advance(10_000);
    assert.equal(cuts, 0);
    assert.equal(ends.length, 1);
  }
  // Never closed: cut after the drain time, then the end.
  {
    const { life: l, clock, ends } = life();
    let cuts = 0;
    l.start({ tree: new FakeTree(), drain: { ms: 2000, cut: () => cuts++ } });
    l.exited(0, null);
    await settle();
    clock.advance(1999);
    assert.equal(cuts, 0);
    assert.deepEqual(ends, []);
    clock.advance(1);
    assert.equal(cuts, 1);
    assert.deepEqual(ends, [{ code: 0, signal: null, survivors: [] }]);
    l.closed();
    assert.equal(ends.length, 1);
  }
  // Closed before the exit: no wait at all.
  {
    const { life: l, ends } = life();
    let cuts = 0;
    l.start({ tree: new FakeTree(), drain: { ms: 2000, cut: () => cuts++ } });
    l.closed();
    l.exited(1, null);
    await settle();
    assert.deepEqual(ends, [{ code: 1, signal: null, survivors: [] }]);
    assert.equal(cuts, 0);
  }
});

test('fail at once: rc line and the end on the next turn, once', () => {
  const { life: l, clock, said, ends } = life();
  l.failAtOnce(126, 'rc: no such directory\n');
  assert.deepEqual(ends, [], 'not before the next turn');
  l.kill(5);
  clock.turn();
  assert.deepEqual(said, ['rc: no such directory\n']);
  assert.deepEqual(ends, [{ code: 126, signal: null, survivors: [] }]);
  l.failAtOnce(1, 'again\n');
  clock.turn();
  assert.equal(ends.length, 1);
  assert.deepEqual(said, ['rc: no such directory\n']);
});

test('a failed spawn: rc line on the next turn, the tree reaped, then the end; a kill meanwhile signals nothing', async () => {
  const { life: l, clock, said, ends } = life();
  const tree = new FakeTree(true);
  l.start({ tree });
  l.spawnFailed(127, 'rc: x: command not found\n');
  assert.deepEqual(said, [], 'said on the next turn, once the job is known to the worker');
  l.kill(5);
  clock.turn();
  assert.deepEqual(said, ['rc: x: command not found\n']);
  assert.equal(tree.reaps, 1);
  assert.deepEqual(ends, []);
  tree.finishReap();
  await settle();
  assert.deepEqual(ends, [{ code: 127, signal: null, survivors: [] }]);
  assert.deepEqual(tree.signals, []);
});

test('the end is told exactly once, whatever the order of exit, close, failed spawn and fail at once', async () => {
  const orders: string[][] = [
    ['exited', 'closed', 'spawnFailed', 'failAtOnce'],
    ['closed', 'exited', 'failAtOnce', 'spawnFailed'],
    ['spawnFailed', 'exited', 'closed', 'failAtOnce'],
    ['failAtOnce', 'spawnFailed', 'exited', 'closed'],
    ['failAtOnce', 'exited', 'closed', 'spawnFailed'],
    ['exited', 'exited', 'spawnFailed', 'spawnFailed'],
  ];
  for (const order of orders) {
    const { life: l, clock, ends } = life();
    l.start({ tree: new FakeTree(), drain: { ms: 1000, cut: () => {} } });
    l.kill(1);
    for (const step of order) {
      if (step === 'exited') l.exited(0, null);
      else if (step === 'closed') l.closed();
      else if (step === 'spawnFailed') l.spawnFailed(127, 'no\n');
      else l.failAtOnce(126, 'no\n');
      clock.turn();
      await settle();
    }
    clock.turn();
    clock.advance(60_000);
    await settle();
    assert.equal(ends.length, 1, `${order.join(', ')}: told ${ends.length} times`);
    assert.equal(l.ended, true);
  }
});

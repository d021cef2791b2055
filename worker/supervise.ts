// One job's life on any runtime, whatever runs it (a host process, a
// terminal, a docker client): it starts or fails at once, a kill is TERM to
// the job's whole process tree and KILL after the grace, and its end is told
// exactly once, only after the tree is gone (reaped) and its output drained.
// The runtimes give only what differs: how to spawn (they wire the child's
// events in here) and how to signal the job's tree (a ProcessTree).
//
// Its rules, whatever order events come in:
// - fail at once (failAtOnce): the program never ran; rc's line, then the end, on the next turn of the loop;
// - a kill before the program was spawned (a container still being made): it is never spawned, and ends as killed by SIGTERM;
// - kill(grace) while it runs: one TERM, one KILL after the grace unless it exited meanwhile; more kills change nothing;
// - the program exited: the tree is reaped (what is left is killed, waited for), then its output is
//   waited for (pipes: at most drain.ms, then cut), then the end, with the survivors the reap found;
// - a spawn that failed: on the next turn, rc's line, the tree reaped (a cgroup goes), then the end;
// - the end is told once; later events are ignored.
import type { ProcessTree, RunningJob } from './runtime';

/** Timers, so that tests can drive them. */
export interface Clock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
  setImmediate(fn: () => void): void;
}

export const realClock: Clock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
  setImmediate: (fn) => void setImmediate(fn),
};

export interface LifeHooks {
  /** A line of rc's own for the job's output (its stderr, or its terminal). */
  say(message: string): void;
  /** The job's end: called once, after its tree is gone (survivors: pids that would not die). */
  end(exitCode: number | null, signal: NodeJS.Signals | null, survivors: number[]): void;
}

export interface Started {
  /** Every process of the job: signalled on a kill, reaped after the program exits. */
  tree: ProcessTree;
  /** The output has an end of its own (pipes): after the reap the end waits for closed(), at most `ms`, then calls `cut`. */
  drain?: { ms: number; cut(): void };
  /** Still not over this long after the KILL: `fn` (a docker client that hangs is let go). */
  hung?: { ms: number; fn(): void };
}

type Phase = 'waiting' | 'running' | 'exited' | 'ended';

export class JobLife implements RunningJob {
  private phase: Phase = 'waiting';
  private killedEarly = false;
  private killing = false;
  private started: Started | null = null;
  private timers: unknown[] = [];
  private outputClosed = false;
  /** Set while the end waits for the output to close. */
  private onClosed: (() => void) | null = null;

  constructor(
    private readonly hooks: LifeHooks,
    private readonly clock: Clock = realClock,
  ) {}

  /** The end was told. */
  get ended(): boolean {
    return this.phase === 'ended';
  }

  /** Ends the job on the next turn of the loop with rc's line (the program never ran), unless it ended meanwhile. */
  failAtOnce(exitCode: number, message: string): void {
    this.clock.setImmediate(() => {
      if (this.phase === 'ended') return;
      this.hooks.say(message);
      this.end(exitCode, null, []);
    });
  }

  /**
   * Called before spawning the program. False when a kill came first: the
   * job has ended as killed by SIGTERM, and nothing must be spawned.
   */
  start(started: Started): boolean {
    if (this.phase !== 'waiting') return false;
    if (this.killedEarly) {
      this.end(null, 'SIGTERM', []);
      return false;
    }
    this.started = started;
    this.phase = 'running';
    return true;
  }

  /** TERM to the tree, KILL after the grace if the program has not exited by then; once, however often it is called. */
  kill(graceS: number): void {
    if (this.phase === 'waiting') {
      this.killedEarly = true;
      return;
    }
    if (this.phase !== 'running' || this.killing) return;
    this.killing = true;
    const { tree, hung } = this.started!;
    void tree.signal('TERM').catch(() => {});
    this.timer(graceS * 1000, () => {
      if (this.phase !== 'running') return;
      void tree.signal('KILL').catch(() => {});
      if (hung) this.timer(hung.ms, hung.fn);
    });
  }

  /** The program (the job's main process) exited: its tree is reaped, its output drained, then the end. */
  exited(exitCode: number | null, signal: NodeJS.Signals | null): void {
    if (this.phase !== 'running') return;
    this.phase = 'exited';
    void this.reap().then((survivors) => this.drain(() => this.end(exitCode, signal, survivors)));
  }

  /** The program's output has ended (its pipes closed). */
  closed(): void {
    this.outputClosed = true;
    this.onClosed?.();
  }

  /**
   * The program could not be spawned after all: on the next turn of the loop
   * (a terminal's spawn fails inside start, before its runtime has returned
   * the job to the worker, which would drop a line said now), rc's line, the
   * tree reaped, then the end. Kills meanwhile do nothing: nothing runs.
   */
  spawnFailed(exitCode: number, message: string): void {
    if (this.phase === 'exited' || this.phase === 'ended') return;
    const ran = this.phase === 'running';
    this.phase = 'exited';
    this.clock.setImmediate(() => {
      this.hooks.say(message);
      if (!ran) return this.end(exitCode, null, []);
      void this.reap().then((survivors) => this.end(exitCode, null, survivors));
    });
  }

  private reap(): Promise<number[]> {
    return this.started!.tree.reap().catch(() => [] as number[]);
  }

  private drain(then: () => void): void {
    const drain = this.started?.drain;
    if (!drain || this.outputClosed) return then();
    const t = this.timer(drain.ms, () => {
      this.onClosed = null;
      drain.cut();
      then();
    });
    this.onClosed = () => {
      this.onClosed = null;
      this.clock.clearTimeout(t);
      then();
    };
  }

  private timer(ms: number, fn: () => void): unknown {
    const t = this.clock.setTimeout(fn, ms);
    this.timers.push(t);
    return t;
  }

  private end(exitCode: number | null, signal: NodeJS.Signals | null, survivors: number[]): void {
    if (this.phase === 'ended') return;
    this.phase = 'ended';
    this.onClosed = null;
    for (const t of this.timers) this.clock.clearTimeout(t);
    this.timers = [];
    this.hooks.end(exitCode, signal, survivors);
  }
}

// Where a simulated host runs its jobs: the job's argv as a real local child
// process (no shell), in a temporary folder of its own, in a process group of
// its own so that a kill (TERM, then KILL after the grace: worker/supervise.ts)
// reaches all of it. The environment is the real worker's (jobEnv). Terminals
// are refused the way a worker refuses a job it cannot start: rc's line, then
// the exit.
//
// In the `answer` mode (FleetOptions.jobs) no process is spawned: a job is
// answered by the simulator itself, through the same JobRunner (numbered
// output, fenced exits, acks), after what its argv says:
//   sim:exit [code]                          exits at once (default 0)
//   sim:sleep <ms> [code]                    exits after ms
//   sim:output <count> <bytes> <rate> [code] writes count chunks of bytes to
//       stdout at rate chunks/s, then exits; each chunk starts with
//       `T<ms since the epoch, as performance.timeOrigin + performance.now()>;`
//       (the moment it was handed to the worker's output), so a client in
//       the same process can tell a chunk's worker→client latency
//       (with a 5th word `held`: it starts writing only at releaseHeld(), so
//       that many jobs write at once however long their starts took)
//   sim:hold                                 runs until releaseHeld() (exit 0)
//   anything else                            exits 0 at once
// A kill ends any of them as SIGTERM would, at once.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { StartJob } from '../../protocol/worker';
import { followChild, jobEnv } from '../../worker/host-runtime';
import type { JobCallbacks, ProcessTree, Reclaimed, RunningJob, RunningTty, Runtime, TtyCallbacks } from '../../worker/runtime';
import { JobLife } from '../../worker/supervise';

export type SimJobMode = 'spawn' | 'answer';

export class SimRuntime implements Runtime {
  readonly name = 'host' as const;
  readonly labels = [{ key: 'runtime', value: 'host' }];
  /** The answered jobs running now. */
  private readonly answered = new Set<AnsweredJob>();

  /** `jobsDir`: where each job's temporary folder is made; `mode`: spawn each job's argv, or answer it (see above). */
  constructor(
    private readonly jobsDir: string,
    private readonly mode: SimJobMode = 'spawn',
  ) {}

  /** Ends every `sim:hold` job (exit 0); how many there were. */
  releaseHeld(): number {
    let n = 0;
    for (const job of [...this.answered]) if (job.release()) n++;
    return n;
  }

  /** Forgets every answered job without telling anyone (the host died): no output, no exit. */
  abandonAll(): void {
    for (const job of this.answered) job.abandon();
    this.answered.clear();
  }

  /** A simulated job's folder goes with the job (below): there is no scratch to wipe. */
  cleanUp(): Promise<[]> {
    return Promise.resolve([]);
  }
  reclaim(): Promise<Reclaimed> {
    return Promise.resolve({ killed: 0, jobs: 0, unkillable: [] });
  }
  prepare(): Promise<[]> {
    return Promise.resolve([]);
  }
  jobCgroup(): null {
    return null;
  }
  close(): void {}

  run(order: StartJob, cb: JobCallbacks): RunningJob {
    if (this.mode === 'answer') {
      const job = new AnsweredJob(order.argv, {
        output: cb.output,
        exit: (code, signal) => {
          this.answered.delete(job);
          cb.exit(code, signal, []);
        },
      });
      this.answered.add(job);
      job.start();
      return job;
    }
    if (order.cwd && (!existsSync(order.cwd) || !statSync(order.cwd).isDirectory())) {
      const life = new JobLife({ say: (message) => cb.output(2, Buffer.from(message)), end: cb.exit });
      life.failAtOnce(126, `rc: the working directory ${order.cwd} does not exist on this host\n`);
      return life;
    }
    const temp = order.cwd ? null : mkdtempSync(join(this.jobsDir, `${order.jobId}-`));
    const cwd = order.cwd ?? temp!;
    const life = new JobLife({
      say: (message) => cb.output(2, Buffer.from(message)),
      end: (code, signal, survivors) => {
        if (temp) rmSync(temp, { recursive: true, force: true });
        cb.exit(code, signal, survivors);
      },
    });
    const tree = new GroupTree();
    const command = order.argv[0]!;
    const child = spawn(command, order.argv.slice(1), {
      cwd,
      env: jobEnv(order) as NodeJS.ProcessEnv,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    life.start({
      tree,
      drain: {
        ms: 2000,
        cut: () => {
          child.stdout.destroy();
          child.stderr.destroy();
        },
      },
    });
    tree.pid = child.pid ?? null;
    followChild(child, life, cb, command);
    return life;
  }

  runTty(order: StartJob, cb: TtyCallbacks): RunningTty {
    let over = false;
    // On the next turn: the worker wires the terminal's output only after runTty returns.
    setImmediate(() => {
      if (over) return;
      over = true;
      cb.output(
        Buffer.from(
          `rc: ${order.devices[0]?.name.split(':')[0] ?? 'this host'} is a simulated host (simulated=true): it runs no terminals; use rc run without --tty\r\n`,
        ),
      );
      cb.exit(126, null, []);
    });
    return {
      kill: () => {
        if (over) return;
        over = true;
        setImmediate(() => cb.exit(null, 'SIGTERM', []));
      },
      write() {},
      resize() {},
      pause() {},
      resume() {},
    };
  }
}

/** A job the simulator answers itself (the `answer` mode): no process, only timers. */
class AnsweredJob implements RunningJob {
  private timer: NodeJS.Timeout | null = null;
  private over = false;
  private readonly held: boolean;

  constructor(
    private readonly argv: readonly string[],
    private readonly cb: { output(stream: 1 | 2, data: Buffer): void; exit(code: number | null, signal: NodeJS.Signals | null): void },
  ) {
    this.held = argv[0] === 'sim:hold' || (argv[0] === 'sim:output' && argv[5] === 'held');
  }

  /** A held `sim:output`'s writing, started by release(). */
  private gated: (() => void) | null = null;

  start(): void {
    const [cmd, ...args] = this.argv;
    const num = (i: number, dflt: number) => {
      const n = Number(args[i]);
      return args[i] !== undefined && Number.isFinite(n) && n >= 0 ? n : dflt;
    };
    if (cmd === 'sim:hold') return;
    if (cmd === 'sim:sleep') {
      this.timer = setTimeout(() => this.end(num(1, 0), null), num(0, 0));
      return;
    }
    if (cmd === 'sim:output') {
      const count = Math.floor(num(0, 10));
      const bytes = Math.max(24, Math.floor(num(1, 100)));
      const rate = Math.max(1, num(2, 100));
      const code = num(3, 0);
      let t0 = performance.now();
      let sent = 0;
      const pad = 'x'.repeat(bytes);
      const tick = () => {
        this.timer = null;
        if (this.over) return;
        // Every chunk due by now (a timer fires at most every ms or so; a fast rate sends several per tick).
        const due = Math.min(count, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
        while (sent < due) {
          const head = `T${(performance.timeOrigin + performance.now()).toFixed(3)};`;
          this.cb.output(1, Buffer.from(`${head}${pad.slice(0, bytes - head.length - 1)}\n`));
          sent++;
        }
        if (sent >= count) this.end(code, null);
        else this.timer = setTimeout(tick, Math.max(1, t0 + ((sent + 0) / rate) * 1000 - performance.now()));
      };
      if (this.held)
        this.gated = () => {
          t0 = performance.now();
          this.start0(tick);
        };
      else this.start0(tick);
      return;
    }
    // sim:exit [code], or anything else: exit at once (on the next turn, as a process's exit would come).
    this.timer = setTimeout(() => this.end(cmd === 'sim:exit' ? num(0, 0) : 0, null), 0);
  }

  private start0(tick: () => void): void {
    this.gated = null;
    this.timer = setTimeout(tick, 0);
  }

  /** A held job's exit 0 (a held `sim:output` starts writing); false when it is not held or is over. */
  release(): boolean {
    if (!this.held || this.over) return false;
    if (this.argv[0] === 'sim:output') {
      if (!this.gated) return false;
      this.gated();
      return true;
    }
    this.end(0, null);
    return true;
  }

  kill(): void {
    if (this.over) return;
    setImmediate(() => this.end(null, 'SIGTERM'));
  }

  abandon(): void {
    this.over = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private end(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.over) return;
    this.over = true;
    if (this.timer) clearTimeout(this.timer);
    this.cb.exit(code, signal);
  }
}

/** A job's processes: its process group, led by the command. */
class GroupTree implements ProcessTree {
  pid: number | null = null;

  async signal(sig: 'TERM' | 'KILL'): Promise<void> {
    if (this.pid === null) return;
    if (sig === 'KILL') return groupKill(this.pid, 'SIGKILL');
    // Held still first, as the real supervisor does, so no shell sees its children die and exits 0 before its own TERM lands.
    groupKill(this.pid, 'SIGSTOP');
    groupKill(this.pid, 'SIGTERM');
    groupKill(this.pid, 'SIGCONT');
  }

  /** The command exited: whatever it left in its group goes too. */
  async reap(): Promise<number[]> {
    if (this.pid !== null) groupKill(this.pid, 'SIGKILL');
    return [];
  }
}

function groupKill(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch {
    /* the group is gone */
  }
}

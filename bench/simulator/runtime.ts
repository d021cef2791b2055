// Where a simulated host runs its jobs: the job's argv as a real local child
// process (no shell), in a temporary folder of its own, in a process group of
// its own so that a kill (TERM, then KILL after the grace: worker/supervise.ts)
// reaches all of it. The environment is the real worker's (jobEnv). Terminals
// are refused the way a worker refuses a job it cannot start: rc's line, then
// the exit.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { StartJob } from '../../protocol/worker';
import { followChild, jobEnv } from '../../worker/host-runtime';
import type { JobCallbacks, ProcessTree, Reclaimed, RunningJob, RunningTty, Runtime, TtyCallbacks } from '../../worker/runtime';
import { JobLife } from '../../worker/supervise';

export class SimRuntime implements Runtime {
  readonly name = 'host' as const;
  readonly labels = [{ key: 'runtime', value: 'host' }];

  /** `jobsDir`: where each job's temporary folder is made. */
  constructor(private readonly jobsDir: string) {}

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

// A job under a pseudo-terminal (rc run --tty, the dashboard's terminal),
// through node-pty. The runtime says what to spawn and gives the job's
// process tree (how to signal all of it); this file does the terminal:
// output, input, resizes, flow control (pause stops reading, so the program
// blocks); its start, kill with grace and end are the job's life (supervise.ts).
import { chownSync } from 'node:fs';
import { constants } from 'node:os';
import { spawn as ptySpawn, type IPty } from 'node-pty';
import { guardPtyEnd } from './pty-end';
import type { ProcessTree, RunningTty, TtyCallbacks } from './runtime';
import { JobLife } from './supervise';

export interface PtySpec {
  file: string;
  args: string[];
  cwd?: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
  /** Every process of the job: signalled on a kill, reaped after the program exits (nothing it started may outlive it). */
  tree: ProcessTree;
  /** The program's pid, once spawned. */
  onSpawn?(pid: number): void;
  /** RC_JOB_USER: the terminal is given to it, so its programs can open it by its name (/dev/pts/N: tmux, screen). */
  owner?: { uid: number; gid: number };
}

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

export class PtyJob implements RunningTty {
  private pty: IPty | null = null;
  private readonly life: JobLife;
  private paused = false;
  /** The terminal's stream is ending: it is read to the end, flow control or not (guardPtyEnd). */
  private gone = false;

  constructor(private readonly cb: TtyCallbacks) {
    this.life = new JobLife({
      say: (message) => cb.output(Buffer.from(message.replace(/\r?\n/g, '\r\n'))),
      end: cb.exit,
    });
  }

  /** Ends the job at once with a message on the terminal (the program never ran). */
  failAtOnce(code: number, message: string): void {
    this.life.failAtOnce(code, message);
  }

  start(spec: PtySpec): void {
    // Killed while its container was being made: it never runs.
    if (!this.life.start({ tree: spec.tree })) return;
    let pty: IPty;
    try {
      pty = ptySpawn(spec.file, spec.args, {
        name: 'xterm-256color',
        cols: spec.cols,
        rows: spec.rows,
        cwd: spec.cwd,
        env: { ...spec.env, TERM: 'xterm-256color' },
        // Bytes, not strings: output reaches the client exactly as the program wrote it.
        encoding: null,
      } as Parameters<typeof ptySpawn>[2]);
    } catch (err) {
      // Nothing ran; the tree's cgroup, if it has one, goes before the end.
      this.life.spawnFailed(126, `rc: cannot start ${spec.file}: ${err instanceof Error ? err.message : String(err)}\n`);
      return;
    }
    this.pty = pty;
    // Before the program can get to it: the spawned shell first enters the cgroup and execs setpriv.
    if (spec.owner) giveTerminal(pty, spec.owner);
    spec.onSpawn?.(pty.pid);
    guardPtyEnd(pty, () => {
      this.gone = true;
    });
    if (this.paused) pty.pause();
    pty.onData((d: string | Buffer) => {
      if (!this.life.ended) this.cb.output(typeof d === 'string' ? Buffer.from(d) : d);
    });
    pty.onExit(({ exitCode, signal }) => {
      const sig = signal ? (SIGNAL_NAMES.get(signal) ?? 'SIGKILL') : null;
      this.life.exited(sig ? null : exitCode, sig);
    });
  }

  /** Bytes reach the program exactly as given (a string as UTF-8). */
  write(data: string | Buffer): void {
    if (!this.life.ended) this.pty?.write(data);
  }

  resize(cols: number, rows: number): void {
    if (this.life.ended || !this.pty) return;
    try {
      this.pty.resize(cols, rows);
    } catch {
      /* the terminal is closing */
    }
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    if (this.life.ended || this.gone || !this.pty) return;
    this.pty.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (!this.life.ended) this.pty?.resume();
  }

  /** TERM to the job's tree, KILL after the grace (JobLife). */
  kill(graceS: number): void {
    this.life.kill(graceS);
  }
}

/** Where a command would be found on PATH (or the path itself); null when nowhere. */
export function findOnPath(command: string, path: string | undefined, isExecutable: (p: string) => boolean): string | null {
  if (command.includes('/')) return isExecutable(command) ? command : null;
  for (const dir of (path ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    if (!dir) continue;
    const full = `${dir}/${command}`;
    if (isExecutable(full)) return full;
  }
  return null;
}

/** The terminal's device (/dev/pts/N) to the job user; without it the device stays root's (0620), and the job cannot open it by its name. */
function giveTerminal(pty: IPty, owner: { uid: number; gid: number }): void {
  const path = (pty as IPty & { ptsName?: string }).ptsName;
  try {
    if (path) chownSync(path, owner.uid, owner.gid);
  } catch {
    /* the job still has its terminal as stdin, stdout and stderr */
  }
}

// Shells started ahead of the jobs, each already in a cgroup of its own and
// already the job user (started as it, and moved into the cgroup by the worker), waiting for a job's command (issue 31). Moving a
// process into a cgroup waits for an RCU grace period in the kernel (6-22 ms
// where cgroup2 is mounted without favordynmods, the common case), so it is
// done here, before a job is claimed, instead of between "device leased" and
// "command running". A job takes a ready shell, whose cgroup becomes the job's
// (cgroup v2 cannot rename one: the worker's state file names it), the shell is
// sent the job's directory, environment and argv, and execs the command: the
// pid node spawned becomes the command's, with no shell left between the
// worker and it.
//
// The shell reads what it runs, as a script of quoted words (jobScript), from
// its fd 3, a socket pair with the worker, until the worker ends it; it says
// it is ready by writing a byte there first. A shell whose worker died reads
// the end of the socket, runs nothing and exits.
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { JobCgroup, sleep } from './job-cgroup';
import type { JobUser } from './job-user';

/** A ready shell's cgroup: a dot, so CgroupFolder.jobIds never takes it for a job. */
export const READY_PREFIX = '.ready-';
const PREFIX = READY_PREFIX;

/** What a ready shell runs as the job user: say ready, read the script until the worker ends it, then run it. */
const WAIT = 'echo r >&3 || exit 1; s=; while IFS= read -r l <&3; do s="$s$l\n"; done; s="$s$l"; exec 3<&-; eval "$s"';

/** After this many shells in a row that died before they were ready, no more are started (the ordinary start remains). */
const MAX_FAILURES = 3;

/** Single quotes around anything: the shell takes it as one word, as is. */
export function quoteWord(s: string): string {
  return `'${s.replaceAll("'", "'\\''")}'`;
}

/**
 * The script a ready shell runs for a job: into its directory (126 if it
 * cannot), only the job's environment (names are checked identifiers: the
 * controller's envKeyProblem, and rc's own), then exec the argv as execvp would.
 */
export function jobScript(cwd: string, env: Record<string, string>, argv: string[]): string {
  const lines = [
    `cd -- ${quoteWord(cwd)} || exit 126`,
    // The shell's own (cd sets them): they would reach the job, which a spawn does not give them.
    'unset PWD OLDPWD',
    ...Object.entries(env).map(([k, v]) => `export ${k}=${quoteWord(v)}`),
    `set -- ${argv.map(quoteWord).join(' ')}`,
    'exec "$@"',
  ];
  return `${lines.join('\n')}\n`;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A ready shell for a job: spawned with four pipes (stdin, stdout, stderr, its fd 3). */
export interface ReadyShell {
  readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  /** The job's cgroup, the shell in it. */
  readonly cgroup: JobCgroup;
  /** Sends the job's command: from here on the child is the job. */
  exec(cwd: string, env: Record<string, string>, argv: string[]): void;
  /** A job that ran nothing in it after all (it failed before its command): the shell is killed, its cgroup removed. */
  discard(): void;
}

interface Waiting {
  child: ChildProcessByStdio<Writable, Readable, Readable>;
  fd3: Writable & Readable;
  path: string;
  /** It said it waits (a byte on fd 3), */
  said: boolean;
  /** and the worker moved it into its cgroup: ready when both (isReady). */
  moved: boolean;
}

const isReady = (w: Waiting) => w.said && w.moved;

export class ReadyShells {
  private readonly shells = new Set<Waiting>();
  private failures = 0;
  /** Shells whose cgroup is being made. */
  private starting = 0;
  private closed = false;
  private seq = 0;

  constructor(
    /** The worker's folder of job cgroups. */
    private readonly folder: string,
    private readonly user: JobUser | null,
    private readonly size: number,
    private readonly log: (msg: string) => void,
  ) {}

  /** What a previous run left in the folder: its shells killed, their cgroups removed once empty. */
  static clearLeftovers(folder: string): void {
    let names: string[] = [];
    try {
      names = readdirSync(folder).filter((n) => n.startsWith(PREFIX));
    } catch {
      return;
    }
    for (const n of names) {
      try {
        writeFileSync(join(folder, n, 'cgroup.kill'), '1');
        rmdirSync(join(folder, n));
      } catch {
        /* not empty yet: removed with the folder's other empty cgroups at the next stop or start */
      }
    }
  }

  /** How many are ready now. */
  get readyNow(): number {
    return [...this.shells].filter(isReady).length;
  }

  /** Starts shells until `size` are ready or on their way. */
  fill(): void {
    while (!this.closed && this.failures < MAX_FAILURES && this.shells.size + this.starting < this.size) this.startOne();
  }

  /**
   * A ready shell for a job, or null (none ready, or a command the script
   * cannot carry): the job then starts the ordinary way.
   */
  take(env: Record<string, string>, argv: string[]): ReadyShell | null {
    if (argv.some((a) => a.includes('\0')) || Object.entries(env).some(([k, v]) => !NAME.test(k) || v.includes('\0'))) return null;
    const w = [...this.shells].find(isReady);
    if (!w) return null;
    this.shells.delete(w);
    const { child, fd3 } = w;
    child.removeAllListeners('exit');
    child.stderr.removeAllListeners('data');
    setImmediate(() => this.fill());
    return {
      child,
      cgroup: new JobCgroup(w.path),
      exec: (cwd, jobEnv, jobArgv) => {
        fd3.end(jobScript(cwd, jobEnv, jobArgv));
      },
      discard: () => void this.discard(w),
    };
  }

  /** Every shell not taken: killed, its cgroup removed (waited for, at most a second). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.shells];
    this.shells.clear();
    await Promise.all(all.map((w) => this.discard(w)));
  }

  private startOne(): void {
    const path = join(this.folder, `${PREFIX}${process.pid}-${++this.seq}`);
    this.starting += 1;
    // Made off the event loop: beside another shell's move into its cgroup, a mkdir waits for the kernel's lock.
    void new JobCgroup(path).createAsync().then(
      () => {
        this.starting -= 1;
        if (this.closed) return void new JobCgroup(path).removeAsync();
        this.spawnInto(path);
      },
      (err: Error) => {
        this.starting -= 1;
        this.failed(`cannot make ${path}: ${err.message}`);
      },
    );
  }

  private spawnInto(path: string): void {
    // Started as the job user straight away (node sets the uid and gid, and no supplementary groups, as setpriv would),
    // and moved into its cgroup by the worker, off the event loop: one exec per shell, the one of /bin/sh.
    const child = spawn('/bin/sh', ['-c', WAIT], {
      cwd: '/',
      env: {} as NodeJS.ProcessEnv,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      ...(this.user ? { uid: this.user.uid, gid: this.user.gid } : {}),
    }) as Waiting['child'];
    const fd3 = child.stdio[3] as Writable & Readable;
    const w: Waiting = { child, fd3, path, said: false, moved: false };
    this.shells.add(w);
    // Ready: the run of shells that died before they were ready is over.
    const settle = () => {
      if (isReady(w) && this.shells.has(w)) this.failures = 0;
    };
    // Until a job takes it, nothing it says is a job's: read and dropped, so it never blocks.
    let said = '';
    child.stderr.on('data', (d: Buffer) => {
      said = (said + d.toString()).slice(-500);
    });
    child.stdout.resume();
    fd3.on('error', () => {});
    fd3.once('data', () => {
      w.said = true;
      settle();
    });
    child.on('error', (err) => this.lost(w, err.message));
    child.on('exit', (code, signal) => this.lost(w, said.trim() || (signal ? `killed by ${signal}` : `exit ${code}`)));
    if (child.pid === undefined) return;
    writeFile(join(path, 'cgroup.procs'), String(child.pid)).then(
      () => {
        w.moved = true;
        settle();
      },
      (err: Error) => {
        child.kill('SIGKILL');
        this.lost(w, `cannot put it in ${path}: ${err.message}`);
      },
    );
  }

  /** A shell not taken ended (killed, or it could not start): its cgroup goes, and another is started. */
  private lost(w: Waiting, why: string): void {
    if (!this.shells.delete(w)) return;
    void this.discard(w);
    if (this.closed) return;
    if (!isReady(w)) this.failed(`a ready shell ended before it was ready: ${why}`);
    setImmediate(() => this.fill());
  }

  private failed(why: string): void {
    this.failures += 1;
    if (this.failures === MAX_FAILURES) this.log(`${why}; jobs start without ready shells (each waits to enter its cgroup)`);
  }

  private async discard(w: Waiting): Promise<void> {
    const cg = new JobCgroup(w.path);
    // By its pid as well: it may not have reached its cgroup yet.
    if (!w.moved) w.child.kill('SIGKILL');
    await cg.kill();
    // Empty once its shell is reaped, a moment after the kill; else the next start's clearLeftovers removes it.
    for (let i = 0; i < 50 && !(await cg.removeAsync()); i++) await sleep(20);
  }
}

// Runs a job's command directly on the host: its own session and process
// group, CUDA_VISIBLE_DEVICES set, stdout and stderr piped back. The host's
// supervisor (job-supervisor.ts) knows all of the job's processes, and the
// job's life (supervise.ts: kill with grace, the end told once) goes through
// them: a kill reaches every one, and when the command exits whatever it left
// running is killed and gone before the end is reported.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { accessSync, constants as fsConstants, existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { StartJob } from '../protocol/worker';
import { RESERVED_ENV } from '../core/job-options';
import { LOGIN_SHELL } from '../protocol/tty';
import type { JobMounts, JobPaths } from './job-mounts';
import type { JobSupervisor } from './job-supervisor';
import { asJobUser, type JobUser } from './job-user';
import type { DeviceProblem, JobCallbacks, PreviousJob, Reclaimed, RunningJob, RunningTty, Runtime, TtyCallbacks } from './runtime';
import { JobLife } from './supervise';
import { findOnPath, PtyJob } from './tty';

/** Jobs run directly on the host, for hosts without Docker (and `npm start`'s local worker). */
export class HostRuntime implements Runtime {
  readonly name = 'host' as const;
  readonly labels = [{ key: 'runtime', value: 'host' }];
  constructor(
    private readonly workspace: string,
    private readonly supervisor: JobSupervisor,
    private readonly mounts: JobMounts,
    private readonly log: (msg: string) => void = () => {},
    /** RC_JOB_USER: who jobs run as (null: the worker's own user). */
    private readonly user: JobUser | null = null,
  ) {}
  /** The previous run's processes are killed first; then nothing of its jobs' scratch (or secrets copies) may stay. */
  async reclaim(previous: PreviousJob[]): Promise<Reclaimed> {
    const r = await this.supervisor.reclaim(previous);
    for (const n of await this.mounts.wipeLeftovers()) this.log(`cannot wipe ${n.dir}, left by the previous run: ${n.reason}`);
    return r;
  }
  /**
   * Its copy of the secrets goes before its end is reported (a job the same user runs next must not find it); its
   * scratch right after, off the job's path (1-5 ms of its hold on its devices): no other job sees that folder (each
   * gets its own), and a failed wipe only takes disk space. A wipe a stop cuts short is finished by the next
   * start's wipeLeftovers.
   */
  async cleanUp(order: StartJob): Promise<DeviceProblem[]> {
    const say = (left: { dir: string; reason: string }[]) => {
      for (const n of left) this.log(`job ${order.jobId}: cannot wipe ${n.dir}: ${n.reason}`);
    };
    say(await this.mounts.wipeJobSecrets(order.jobId));
    void this.mounts.wipeJobScratch(order.jobId).then(say);
    return [];
  }
  /** Shells made ready ahead of jobs (ready-shells.ts), after reclaim. */
  warm(size: number): void {
    this.supervisor.warm(this.user, size);
  }
  prepare(): Promise<[]> {
    return Promise.resolve([]);
  }
  /** Chosen before the job runs anything: a ready shell's cgroup for a command (a terminal's pty spawns its own process), else the job's own. */
  jobCgroup(order: StartJob): string | null {
    return this.supervisor.reserve(order.jobId, order.kind === 'run' && order.argv.length ? order.argv : null, order.env ?? {});
  }
  close(): Promise<void> {
    return this.supervisor.close();
  }
  run(order: StartJob, cb: JobCallbacks): RunningJob {
    try {
      return runOnHost(order, this.workspace, this.supervisor, cb, this.mounts, this.user);
    } finally {
      // A job that failed before its command leaves its ready shell unused.
      this.supervisor.release(order.jobId);
    }
  }
  runTty(order: StartJob, cb: TtyCallbacks): RunningTty {
    return runTtyOnHost(order, this.workspace, this.supervisor, cb, this.mounts, this.user);
  }
}

const PASS_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'];

/** The job's environment: a few of the worker's own (`base`), the job's --env, then rc's (with `paths`: RC_WORKSPACE, RC_SCRATCH, RC_SHARED, RC_SECRETS, each when the job has it). */
export function jobEnv(order: StartJob, base: NodeJS.ProcessEnv = process.env, paths?: JobPaths): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of PASS_ENV) {
    const v = base[k];
    if (v !== undefined) env[k] = v;
  }
  // rc run --env, below what rc sets itself (the controller refuses those names; a worker never lets them through).
  for (const [k, v] of Object.entries(order.env ?? {})) if (!(RESERVED_ENV as readonly string[]).includes(k)) env[k] = v;
  // UUIDs name the same card whatever order CUDA enumerates them in.
  env.CUDA_VISIBLE_DEVICES = order.devices.map((d) => d.uuid ?? String(d.index)).join(',');
  env.CUDA_DEVICE_ORDER = 'PCI_BUS_ID';
  env.RC_JOB_ID = order.jobId;
  // Which attempt: clean-up after a worker's restart kills its own attempt, never another worker's attempt of the same job.
  env.RC_FENCE = String(order.fence);
  env.RC_DEVICES = order.devices.map((d) => d.name).join(',');
  if (order.array) {
    env.RC_ARRAY_ID = order.array.id;
    env.RC_ARRAY_INDEX = String(order.array.index);
  }
  // --preemptible: where a preemption's notice (its deadline) appears, before the SIGTERM.
  if (order.preemptFile) env.RC_PREEMPT_FILE = order.preemptFile;
  if (paths) {
    env.RC_WORKSPACE = paths.workspace;
    env.RC_SCRATCH = paths.scratch;
    if (paths.shared) env.RC_SHARED = paths.shared;
    if (paths.secrets) env.RC_SECRETS = paths.secrets;
  }
  return env;
}

/** jobEnv, and the job user's HOME, USER and LOGNAME when jobs run as one. */
function hostJobEnv(order: StartJob, paths: JobPaths, user: JobUser | null): Record<string, string> {
  const env = jobEnv(order, process.env, paths);
  if (user) {
    env.HOME = user.home;
    env.USER = user.name;
    env.LOGNAME = user.name;
  }
  return env;
}

/** The job's folders (scratch made, secrets copied, both the job user's), or why they cannot be made (rc's line for the job's stderr). */
function hostPaths(order: StartJob, workspace: string, mounts: JobMounts, user: JobUser | null): JobPaths | string {
  try {
    return mounts.forHostJob(order.jobId, resolve(workspace), user);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return `rc: cannot make the job's scratch folder or its copy of the secrets on this host: ${e.code ?? e.message}${e.path ? ` (${e.path})` : ''}\n`;
  }
}

export function runOnHost(
  order: StartJob,
  workspace: string,
  supervisor: JobSupervisor,
  cb: JobCallbacks,
  mounts: JobMounts,
  user: JobUser | null = null,
): RunningJob {
  const life = new JobLife({ say: (message) => cb.output(2, Buffer.from(message)), end: cb.exit });
  const cwd = order.cwd ?? workspace;
  if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
    life.failAtOnce(126, `rc: the working directory ${cwd} does not exist on this host\n`);
    return life;
  }
  const paths = hostPaths(order, workspace, mounts, user);
  if (typeof paths === 'string') {
    life.failAtOnce(126, paths);
    return life;
  }
  const env = hostJobEnv(order, paths, user);
  const command = order.argv[0]!;
  // Checked here, since the cgroup's shell would otherwise say it in its own words.
  const unusable = commandProblem(command, env.PATH, cwd);
  if (unusable) {
    life.failAtOnce(unusable.code, `rc: ${command}: ${unusable.why}\n`);
    return life;
  }
  // A shell made ready ahead (already in its cgroup, already the job user) is the quickest start; else the job's cgroup is made now.
  const tree = supervisor.open(order.jobId, order.fence);
  // The pipes get a moment to drain what was written before the exit.
  const cut = () => {
    child.stdout.destroy();
    child.stderr.destroy();
  };
  life.start({ tree, drain: { ms: 2000, cut } });
  let child: ChildProcessByStdio<Writable | null, Readable, Readable>;
  let stdin: Writable | null;
  if (tree.shell) {
    child = tree.shell.child;
    tree.shell.exec(cwd, env, order.argv);
    stdin = child.stdin;
    // Without a piped stdin the command reads an end at once, as from /dev/null.
    if (!order.stdin) {
      stdin?.on('error', () => {});
      stdin?.end();
      stdin = null;
    }
  } else {
    const asUser = user ? asJobUser(user, command, order.argv.slice(1)) : { file: command, args: order.argv.slice(1) };
    const spawned = tree.spawnArgs(asUser.file, asUser.args);
    child = spawn(spawned.file, spawned.args, {
      cwd,
      env: env as NodeJS.ProcessEnv,
      detached: true,
      // Without a piped stdin (rc run from a terminal, or --no-stdin) the command reads /dev/null: an end at once.
      stdio: [order.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    }) as ChildProcessByStdio<Writable | null, Readable, Readable>;
    stdin = child.stdin;
  }
  if (child.pid !== undefined) tree.started(child.pid);
  // Before followChild's: the moment of the exit, not after the reap's first (synchronous) steps.
  if (cb.exited) child.once('exit', cb.exited);
  followChild(child, life, cb, command);
  return Object.assign(life, { stdin: quietPipe(stdin) });
}

/** A child's stdin whose errors (EPIPE: the command closed it, or ended) are the writer's to see as its end, not the worker's to crash on. */
export function quietPipe(stdin: Writable | null): Writable | null {
  stdin?.on('error', () => stdin.destroy());
  return stdin;
}

/** Tells a job's life what its spawned command does: its output, a failed spawn (127 or 126, as a shell says it), its exit and its pipes' close. */
export function followChild(
  child: ChildProcessByStdio<Writable | null, Readable, Readable>,
  life: JobLife,
  cb: Pick<JobCallbacks, 'output'>,
  command: string,
): void {
  child.stdout.on('data', (d: Buffer) => cb.output(1, d));
  child.stderr.on('data', (d: Buffer) => cb.output(2, d));
  child.on('close', () => life.closed());
  child.on('error', (err: NodeJS.ErrnoException) => {
    // Only a failed spawn matters here; later errors end in 'exit' anyway.
    if (child.pid !== undefined) return;
    const [code, why] = err.code === 'ENOENT' ? [127, 'command not found'] : err.code === 'EACCES' ? [126, 'permission denied'] : [126, err.message];
    life.spawnFailed(code, `rc: ${command}: ${why}\n`);
  });
  // The command is over: nothing it started may outlive it, and its end waits until all of it is gone.
  child.on('exit', (code, signal) => life.exited(code, signal));
}

/** Why a command cannot run from this cwd with this PATH (as execvp would fail), or null when it can. */
function commandProblem(command: string, path: string | undefined, cwd: string): { code: number; why: string } | null {
  const at = (p: string) => (isAbsolute(p) ? p : resolve(cwd, p));
  if (findOnPath(command, path, (p) => isExecutableFile(at(p)))) return null;
  if (findOnPath(command, path, (p) => isFile(at(p)))) return { code: 126, why: 'permission denied' };
  return { code: 127, why: 'command not found' };
}

/** A job under a pseudo-terminal on the host: same cwd and environment as runOnHost, TERM=xterm-256color. */
export function runTtyOnHost(
  order: StartJob,
  workspace: string,
  supervisor: JobSupervisor,
  cb: TtyCallbacks,
  mounts: JobMounts,
  user: JobUser | null = null,
): RunningTty {
  const job = new PtyJob(cb);
  const cwd = order.cwd ?? workspace;
  const argv = order.argv.length ? order.argv : LOGIN_SHELL;
  if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
    job.failAtOnce(126, `rc: the working directory ${cwd} does not exist on this host\n`);
    return job;
  }
  const paths = hostPaths(order, workspace, mounts, user);
  if (typeof paths === 'string') {
    job.failAtOnce(126, paths);
    return job;
  }
  const env = hostJobEnv(order, paths, user);
  const file = findOnPath(argv[0]!, env.PATH, isExecutableFile);
  if (!file) {
    job.failAtOnce(127, `rc: ${argv[0]}: command not found\n`);
    return job;
  }
  const tree = supervisor.open(order.jobId, order.fence);
  const command = user ? asJobUser(user, file, argv.slice(1)) : { file, args: argv.slice(1) };
  const spawned = tree.spawnArgs(command.file, command.args);
  job.start({
    file: spawned.file,
    args: spawned.args,
    cwd,
    env,
    cols: order.tty?.cols ?? 80,
    rows: order.tty?.rows ?? 24,
    tree,
    onSpawn: (pid) => tree.started(pid),
    owner: user ?? undefined,
  });
  return job;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

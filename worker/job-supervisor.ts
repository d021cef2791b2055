// The host runtime's process supervisor: it knows every process of each job,
// signals them all, and after the job's main process exits kills what is left
// and waits until it is gone, so a job's end is reported only once nothing of
// it runs. runOnHost and runTtyOnHost share it.
//
// Two ways to know a job's processes:
// - a cgroup per job (job-cgroup.ts) where the host offers a writable cgroup v2:
//   nothing a job starts can leave it;
// - the fallback (no cgroup v2, or RC_CGROUPS=0): the job's process group and
//   session (the main process leads both), and every process whose environment
//   carries the attempt's RC_JOB_ID and RC_FENCE. A process that leaves the
//   session and clears its environment escapes it.
//
// At start-up the worker hands it the jobs its previous run left (state file)
// and it kills them (reclaim), with the job cgroups left in its folder. It
// matches processes by attempt (job id and fence), never by job id alone:
// another worker on this machine may run a later attempt of the same job.
import { readdirSync, readFileSync } from 'node:fs';
import { CgroupFolder, ENTER_CGROUP, isJobId, type JobCgroup, recordedJobCgroup, sendSignal, sleep } from './job-cgroup';
import type { JobUser } from './job-user';
import { attemptKey, attemptTag } from './proc-signal';
import { type ReadyShell, ReadyShells } from './ready-shells';
import type { PreviousJob, ProcessTree, Reclaimed, Unkillable } from './runtime';

/** How long a killed process may take to be gone before it counts as unkillable (it is stuck in the kernel). */
export const REAP_WAIT_MS = 5000;

export interface SupervisorOptions {
  host: string;
  stateDir: string;
  /** false: never cgroups (RC_CGROUPS=0). */
  cgroups: boolean;
  log: (msg: string) => void;
  /** How signals are sent (tests make a process that will not die). */
  signal?: (pid: number, sig: NodeJS.Signals) => void;
  reapWaitMs?: number;
}

/** One job's processes, as the runtime spawns and stops it. */
export interface HostJobTree extends ProcessTree {
  /** The job's cgroup, or null on the fallback. */
  readonly cgroup: string | null;
  /** What to spawn for this command: itself, or a shell that enters the job's cgroup and then execs it. */
  spawnArgs(file: string, args: string[]): { file: string; args: string[] };
  /** The job's main process, once spawned. */
  started(pid: number): void;
  /** A shell already in the job's cgroup, waiting for its command (reserve()): run the job in it, spawn nothing. */
  readonly shell?: ReadyShell;
}

export class JobSupervisor {
  private readonly signal: (pid: number, sig: NodeJS.Signals) => void;
  private readonly reapWaitMs: number;
  private ready: ReadyShells | null = null;
  /** Job id → the ready shell reserve() chose for it, until open() takes it. */
  private readonly reserved = new Map<string, ReadyShell>();

  private constructor(
    private readonly opts: SupervisorOptions,
    private readonly folder: CgroupFolder | null,
    readonly why: string,
  ) {
    this.signal = opts.signal ?? sendSignal;
    this.reapWaitMs = opts.reapWaitMs ?? REAP_WAIT_MS;
  }

  static start(opts: SupervisorOptions): JobSupervisor {
    if (!opts.cgroups) return new JobSupervisor(opts, null, 'RC_CGROUPS=0');
    const folder = CgroupFolder.open(opts.host, opts.stateDir);
    return folder instanceof CgroupFolder ? new JobSupervisor(opts, folder, '') : new JobSupervisor(opts, null, folder.why);
  }

  get mode(): 'cgroup' | 'tag' {
    return this.folder ? 'cgroup' : 'tag';
  }

  /** One line for the worker's log: how jobs are followed here. */
  describe(): string {
    return this.folder
      ? `each job runs in a cgroup of its own under ${this.folder.path}`
      : `jobs are followed by their RC_JOB_ID tag, process group and session (no job cgroups: ${this.why})`;
  }

  /** The cgroup a job gets (recorded in the state file before it starts), or null on the fallback. */
  cgroupOf(jobId: string): string | null {
    return this.folder && isJobId(jobId) ? this.folder.job(jobId).path : null;
  }

  /**
   * Keeps `size` shells ready for jobs (ready-shells.ts), as `user`: a job
   * then starts without waiting to enter its cgroup. Only with job cgroups;
   * after reclaim, which would kill them.
   */
  warm(user: JobUser | null, size: number): void {
    if (!this.folder || size <= 0) return;
    ReadyShells.clearLeftovers(this.folder.path);
    this.ready = new ReadyShells(this.folder.path, user, size, this.opts.log);
    this.ready.fill();
  }

  /** Shells ready for a job now (0 without them). */
  get readyShells(): number {
    return this.ready?.readyNow ?? 0;
  }

  /**
   * The cgroup a job will run in, chosen before it runs anything (the state
   * file records it): a ready shell's, when one is ready and the job can take
   * it (`argv` and `env`: what it will exec), else its own, made by open().
   */
  reserve(jobId: string, argv: string[] | null, env: Record<string, string>): string | null {
    const own = this.cgroupOf(jobId);
    const shell = own !== null && argv && this.ready?.take(env, argv);
    if (!shell) return own;
    this.reserved.set(jobId, shell);
    return shell.cgroup.path;
  }

  /** A reserved shell its job did not open (it failed before its command): discarded. */
  release(jobId: string): void {
    this.reserved.get(jobId)?.discard();
    this.reserved.delete(jobId);
  }

  /** `fence`: the attempt's (its processes carry it in RC_FENCE). */
  open(jobId: string, fence: number): HostJobTree {
    const shell = this.reserved.get(jobId);
    if (shell) {
      this.reserved.delete(jobId);
      return new CgroupTree(shell.cgroup, jobId, this.signal, this.reapWaitMs, shell);
    }
    if (this.folder && isJobId(jobId)) {
      const cg = this.folder.job(jobId);
      try {
        cg.create();
        return new CgroupTree(cg, jobId, this.signal, this.reapWaitMs);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') return new CgroupTree(cg, jobId, this.signal, this.reapWaitMs);
        this.opts.log(`job ${jobId}: cannot make its cgroup ${cg.path} (${(err as Error).message}); following it by its RC_JOB_ID tag instead`);
      }
    }
    return new TaggedTree(attemptKey(jobId, fence), this.signal, this.reapWaitMs);
  }

  /**
   * Kills every process of the jobs a previous run of the worker left (from
   * its state file, and the job cgroups left in this worker's folder) and
   * waits, at most REAP_WAIT_MS, until they are gone. What is still there then
   * is reported as unkillable.
   */
  async reclaim(previous: PreviousJob[]): Promise<Reclaimed> {
    // By job id: a job's cgroup, its devices. `attempts`: the tags of its processes
    // (RC_JOB_ID and RC_FENCE), only as the state file recorded them.
    const jobs = new Map<string, { devices: number[]; cgroups: JobCgroup[]; fence: number | null }>();
    const attempts = new Map<string, string>();
    const entry = (jobId: string) => {
      let e = jobs.get(jobId);
      if (!e) {
        e = { devices: [], cgroups: [], fence: null };
        jobs.set(jobId, e);
      }
      return e;
    };
    for (const p of previous) {
      const e = entry(p.jobId);
      for (const d of p.devices) if (!e.devices.includes(d)) e.devices.push(d);
      const cg = p.cgroup ? recordedJobCgroup(p.cgroup, p.jobId) : null;
      if (cg && !e.cgroups.some((c) => c.path === cg.path)) e.cgroups.push(cg);
      e.fence ??= p.fence ?? null;
      attempts.set(attemptKey(p.jobId, p.fence ?? null), p.jobId);
    }
    for (const id of this.folder?.jobIds() ?? []) {
      const cg = this.folder!.job(id);
      const e = entry(id);
      if (!e.cgroups.some((c) => c.path === cg.path)) e.cgroups.push(cg);
    }
    if (jobs.size === 0) return { killed: 0, jobs: 0, unkillable: [] };

    const signalled = new Map<string, Set<number>>();
    // Tagged processes seen by the last scan of /proc (a scan reads every process's environment: a few ms).
    let tagged = new Map<number, string>();
    const kill = async () => {
      for (const [jobId, e] of jobs) {
        const hit = signalled.get(jobId) ?? new Set<number>();
        signalled.set(jobId, hit);
        for (const cg of e.cgroups) {
          for (const pid of cg.pids()) hit.add(pid);
          await cg.kill(this.signal);
        }
      }
      tagged = taggedWith(attempts);
      for (const [pid, jobId] of tagged) {
        signalled.get(jobId)!.add(pid);
        this.signal(pid, 'SIGKILL');
      }
    };
    /** What is still there: the cgroups' processes, and the tagged ones (from a new scan, or those the last one saw). */
    const left = (rescan: boolean): Map<string, number[]> => {
      const out = new Map<string, number[]>();
      for (const [jobId, e] of jobs) {
        const pids = e.cgroups.filter((c) => c.populated()).flatMap((c) => c.pids().filter(isLive));
        if (pids.length) out.set(jobId, pids);
      }
      if (rescan) tagged = taggedWith(attempts);
      for (const [pid, jobId] of tagged) {
        if (!rescan && !isLive(pid)) continue;
        const pids = out.get(jobId) ?? [];
        if (!pids.includes(pid)) pids.push(pid);
        out.set(jobId, pids);
      }
      return out;
    };
    await kill();
    const deadline = Date.now() + this.reapWaitMs;
    let still = left(false);
    for (let round = 0; Date.now() < deadline; round++) {
      if (!still.size) {
        // All that was seen is gone: a last scan, in case a dying tree forked meanwhile.
        still = left(true);
        if (!still.size) break;
        await kill();
      }
      await sleep(Math.min(50, 2 * (round + 1)));
      still = left(false);
    }
    for (const [jobId, e] of jobs) if (!still.has(jobId)) for (const cg of e.cgroups) cg.remove();
    const unkillable: Unkillable[] = [...still].map(([jobId, pids]) => ({ jobId, fence: jobs.get(jobId)!.fence, devices: jobs.get(jobId)!.devices, pids }));
    const stuck = new Set(unkillable.flatMap((u) => u.pids));
    const hit = [...signalled.values()].flatMap((s) => [...s]);
    return {
      killed: new Set(hit.filter((p) => !stuck.has(p))).size,
      jobs: [...signalled.values()].filter((s) => s.size > 0).length,
      unkillable,
    };
  }

  /** A worker that stops: the empty job cgroups and the folder go. */
  async close(): Promise<void> {
    for (const id of [...this.reserved.keys()]) this.release(id);
    await this.ready?.close();
    this.folder?.removeEmpty();
  }
}

/** A job in a cgroup of its own. */
class CgroupTree implements HostJobTree {
  private pid: number | null = null;
  readonly cgroup: string;

  constructor(
    private readonly cg: JobCgroup,
    private readonly jobId: string,
    private readonly send: (pid: number, sig: NodeJS.Signals) => void,
    private readonly waitMs: number,
    readonly shell?: ReadyShell,
  ) {
    this.cgroup = cg.path;
  }

  spawnArgs(file: string, args: string[]): { file: string; args: string[] } {
    // Moved in before the command runs anything; exec keeps the pid (and node's child handle).
    return { file: '/bin/sh', args: ['-c', ENTER_CGROUP, this.cg.path, file, ...args] };
  }

  started(pid: number): void {
    this.pid = pid;
  }

  async signal(sig: 'TERM' | 'KILL'): Promise<void> {
    if (sig === 'KILL') {
      await this.cg.kill(this.send);
      // The main process, in case it had not entered the cgroup yet.
      if (this.pid) this.send(this.pid, 'SIGKILL');
      return;
    }
    // Frozen, so no shell sees its children die and exits 0 before its own TERM lands.
    const frozen = await this.cg.freeze(true);
    const pids = new Set(this.cg.pids());
    if (this.pid) pids.add(this.pid);
    if (!frozen) for (const p of pids) this.send(p, 'SIGSTOP');
    for (const p of pids) this.send(p, 'SIGTERM');
    if (!frozen) for (const p of pids) this.send(p, 'SIGCONT');
    else await this.cg.freeze(false);
  }

  async reap(): Promise<number[]> {
    // The common case, a command that left nothing: nothing to kill, and the empty cgroup goes off the job's path
    // (a cgroup's removal may wait on the kernel's cgroup lock: job-cgroup.ts createAsync).
    if (!this.cg.populated()) {
      void this.cg.removeAsync();
      return [];
    }
    await this.cg.kill(this.send);
    const deadline = Date.now() + this.waitMs;
    for (let round = 0; this.cg.populated() && Date.now() < deadline; round++) {
      await sleep(Math.min(50, 2 * (round + 1)));
      if (round % 10 === 9) await this.cg.kill(this.send);
    }
    if (this.cg.populated()) return this.cg.pids().filter(isLive);
    this.cg.remove();
    return [];
  }

  toString(): string {
    return `job ${this.jobId} (cgroup ${this.cgroup})`;
  }
}

/** The fallback: the main process's group and session, and the RC_JOB_ID tag. */
class TaggedTree implements HostJobTree {
  private pid: number | null = null;
  readonly cgroup = null;

  constructor(
    /** The attempt's tag (attemptKey). */
    private readonly attempt: string,
    private readonly send: (pid: number, sig: NodeJS.Signals) => void,
    private readonly waitMs: number,
  ) {}

  spawnArgs(file: string, args: string[]): { file: string; args: string[] } {
    return { file, args };
  }

  started(pid: number): void {
    this.pid = pid;
    // Every process of the job starts after its main one (null, if that is gone already: every process is looked at).
    this.since = procInfo(pid)?.start ?? null;
  }

  private since: number | null = null;

  private pids(): number[] {
    return jobProcesses(this.attempt, this.pid, this.since);
  }

  async signal(sig: 'TERM' | 'KILL'): Promise<void> {
    let pids = this.pids();
    if (sig === 'TERM') {
      // Stopped first, so no shell sees its children die and exits 0 before its own TERM lands.
      for (const p of pids) this.send(p, 'SIGSTOP');
      for (const p of pids) this.send(p, 'SIGTERM');
      for (const p of pids) this.send(p, 'SIGCONT');
      return;
    }
    // Again while some are found: a dying tree may still fork.
    for (let round = 0; pids.length && round < 10; round++) {
      for (const p of pids) this.send(p, 'SIGKILL');
      pids = this.pids();
    }
  }

  async reap(): Promise<number[]> {
    // One scan of /proc when nothing is left, the common case (a few ms).
    const deadline = Date.now() + this.waitMs;
    let left = this.pids();
    for (let round = 0; left.length && Date.now() < deadline; round++) {
      for (const p of left) this.send(p, 'SIGKILL');
      await sleep(Math.min(50, 1 + round));
      left = this.pids();
    }
    return left;
  }
}

interface ProcInfo {
  pid: number;
  state: string;
  pgrp: number;
  session: number;
  /** When it started, in clock ticks after boot. */
  start: number;
}

function procInfo(pid: number): ProcInfo | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid pgrp session ... starttime (the 20th after comm): comm may hold spaces and parentheses.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, state: f[0]!, pgrp: Number(f[2]), session: Number(f[3]), start: Number(f[19]) };
  } catch {
    return null;
  }
}

/** Still a process, not a zombie waiting for its parent (a dead process is no threat to the device). */
function isLive(pid: number): boolean {
  const info = procInfo(pid);
  return info !== null && info.state !== 'Z' && info.state !== 'X';
}

function procPids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
      .filter((p) => p !== process.pid);
  } catch {
    return [];
  }
}

/**
 * The fallback's view of a job: the main process, its process group and its
 * session (the pid stays reserved as their id while any member lives, so no
 * stranger can have it), and every process tagged with the attempt (`attempt`:
 * attemptKey of its RC_JOB_ID and RC_FENCE).
 */
export function jobProcesses(attempt: string, mainPid: number | null, since: number | null = null): number[] {
  const out: number[] = [];
  for (const p of procPids()) {
    const info = procInfo(p);
    if (!info || info.state === 'Z' || info.state === 'X') continue;
    if (mainPid !== null && (p === mainPid || info.pgrp === mainPid || info.session === mainPid)) out.push(p);
    // A process older than the job's main process is none of the job's: its environment is not read (most of a scan's cost).
    else if ((since === null || info.start >= since) && attemptTag(p) === attempt) out.push(p);
  }
  return out;
}

/** Live processes tagged with one of these attempts (attemptKey → job id), and whose job they are. */
function taggedWith(attempts: Map<string, string>): Map<number, string> {
  const out = new Map<number, string>();
  for (const p of procPids()) {
    const tag = attemptTag(p);
    const jobId = tag === null ? undefined : attempts.get(tag);
    if (jobId !== undefined && isLive(p)) out.set(p, jobId);
  }
  return out;
}

// A cgroup (v2) per host-runtime job. Every process a job starts is born in
// its cgroup and cannot leave it (moving a process needs write access to a
// common ancestor, which a job does not have unless it is root and tries), so
// the cgroup finds them all: a grandchild that called setsid, a double fork,
// one that cleared its environment. Only the core cgroup files are used
// (cgroup.procs, cgroup.events, cgroup.freeze, cgroup.kill): no controller
// needs to be enabled, so it works in any cgroup the worker may write to.
//
// Layout: <the worker's cgroup>/rc-<host>-<tag>/<jobId>. The tag is a short
// hash of the worker's state folder, so two workers of the same name on one
// machine (the tests' stacks, a second controller's worker) never see each
// other's jobs, while a restarted worker (same state folder) finds its own.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { mkdir, rmdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

/** Job ids are the controller's (j + base32): anything else never becomes a path. */
const JOB_ID = /^[A-Za-z0-9_-]{1,64}$/;
export const isJobId = (id: string) => JOB_ID.test(id);

/**
 * The cgroup2 mount and the cgroup path it shows at its mount point
 * (the fourth field of /proc/self/mountinfo: `/` unless a subtree is bind-mounted).
 */
export function cgroup2Mount(mountinfo: string): { mountPoint: string; root: string; options: string[] } | null {
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right || right.split(' ')[0] !== 'cgroup2') continue;
    const f = left.split(' ');
    if (f.length < 5) continue;
    // After the separator: the type, the source, then the file system's own options.
    return { root: unescapeMount(f[3]!), mountPoint: unescapeMount(f[4]!), options: (right.split(' ')[2] ?? '').split(',').filter(Boolean) };
  }
  return null;
}

/**
 * The doctor's word on how cheaply a job enters its cgroup. Without the cgroup2
 * mount option favordynmods (Linux 6.0+), the kernel waits for an RCU grace
 * period at every move: about 11 ms of each job start on an idle machine
 * (measured here: a shell that enters a cgroup and execs true, 15 ms against 4).
 */
export function cgroupMoveNote(mountinfo: string): string {
  const mount = cgroup2Mount(mountinfo);
  if (!mount) return 'no cgroup v2: jobs are followed by process group and RC_JOB_ID (a process that leaves both escapes)';
  if (mount.options.includes('favordynmods')) return `cgroup v2 at ${mount.mountPoint} with favordynmods: a job enters its cgroup at once`;
  return `cgroup v2 at ${mount.mountPoint}; each job start waits ~10 ms to enter its cgroup: mount -o remount,favordynmods ${mount.mountPoint} (Linux 6.0+) removes the wait`;
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** This process's cgroup v2 path (the `0::` line of /proc/self/cgroup), or null without one. */
export function ownCgroupPath(procCgroup: string): string | null {
  const line = procCgroup.split('\n').find((l) => l.startsWith('0::'));
  return line ? line.slice(3) : null;
}

/** Where the worker's own cgroup is in the file system, or why there is none to use. */
export function workerCgroupDir(mountinfo: string, procCgroup: string): { dir: string } | { why: string } {
  const mount = cgroup2Mount(mountinfo);
  if (!mount) return { why: 'no cgroup v2 file system is mounted' };
  const path = ownCgroupPath(procCgroup);
  if (path === null) return { why: 'the worker is in no cgroup v2 (/proc/self/cgroup has no 0:: line)' };
  // `(deleted)`: our cgroup was removed under us; a path outside the mount's root cannot be reached from it.
  if (path.endsWith(' (deleted)')) return { why: `the worker's cgroup ${path} was deleted` };
  const root = mount.root === '/' ? '' : mount.root;
  if (root && path !== root && !path.startsWith(`${root}/`))
    return { why: `the worker's cgroup ${path} is not under the cgroup2 mount at ${mount.mountPoint}` };
  return { dir: join(mount.mountPoint, path.slice(root.length)).replace(/(.)\/$/, '$1') };
}

export function folderName(host: string, stateDir: string): string {
  const tag = createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 8);
  return `rc-${host.replace(/[^A-Za-z0-9._-]/g, '-')}-${tag}`;
}

/** A shell that moves itself into the cgroup named by $0, then becomes the job's command ("$@"). Writing 0 moves the writer. */
export const ENTER_CGROUP = '{ echo 0 > "$0/cgroup.procs"; } 2>/dev/null || { echo "rc: cannot put the job in its cgroup $0" >&2; exit 126; }; exec "$@"';

/** The worker's folder of job cgroups. */
export class CgroupFolder {
  private constructor(
    readonly path: string,
    readonly mountPoint: string,
  ) {}

  /**
   * Makes (or finds) the folder and checks that a process can really be moved
   * into a cgroup below it; the reason it cannot be used otherwise.
   */
  static open(host: string, stateDir: string, proc = '/proc'): CgroupFolder | { why: string } {
    let mountinfo: string, procCgroup: string;
    try {
      mountinfo = readFileSync(`${proc}/self/mountinfo`, 'utf8');
      procCgroup = readFileSync(`${proc}/self/cgroup`, 'utf8');
    } catch (err) {
      return { why: `cannot read ${proc}/self: ${(err as Error).message}` };
    }
    const own = workerCgroupDir(mountinfo, procCgroup);
    if ('why' in own) return own;
    const mount = cgroup2Mount(mountinfo)!;
    const folder = new CgroupFolder(join(own.dir, folderName(host, stateDir)), mount.mountPoint);
    // A dot: never taken for a job id by jobIds().
    const probe = join(folder.path, `.probe-${process.pid}`);
    try {
      mkdirSync(probe, { recursive: true });
    } catch (err) {
      return {
        why: `cannot make ${folder.path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message} (under systemd the worker's unit needs Delegate=yes)`,
      };
    }
    try {
      const r = spawnSync('/bin/sh', ['-c', ENTER_CGROUP, probe, 'true'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
      if (r.status !== 0) return { why: `cannot move a process into ${probe}: ${r.error?.message ?? (r.stderr.toString().trim() || `exit ${r.status}`)}` };
    } finally {
      try {
        rmdirSync(probe);
      } catch {
        /* still in use: it is empty in a moment, and removed with the rest at the next start */
      }
    }
    return folder;
  }

  job(jobId: string): JobCgroup {
    if (!JOB_ID.test(jobId)) throw new Error(`bad job id ${JSON.stringify(jobId)}`);
    return new JobCgroup(join(this.path, jobId));
  }

  /** The job ids of the job cgroups in the folder (what a previous run left, at start-up). */
  jobIds(): string[] {
    try {
      return readdirSync(this.path, { withFileTypes: true })
        .filter((d) => d.isDirectory() && JOB_ID.test(d.name))
        .map((d) => d.name);
    } catch {
      return [];
    }
  }

  /** Removes the empty job cgroups, then the folder if it is empty (a worker that stops). */
  removeEmpty(): void {
    for (const id of this.jobIds()) new JobCgroup(join(this.path, id)).remove();
    try {
      rmdirSync(this.path);
    } catch {
      /* a job cgroup is still in use */
    }
  }
}

/**
 * A job cgroup named in a state file: used only if it looks like one of ours
 * (<mount>/…/rc-…/<jobId>, or a ready shell's <mount>/…/rc-…/.ready-<n>-<n>),
 * so a damaged file cannot aim cgroup.kill elsewhere.
 */
export function recordedJobCgroup(path: string, jobId: string): JobCgroup | null {
  const name = basename(path);
  if (!JOB_ID.test(jobId) || (name !== jobId && !/^\.ready-\d+-\d+$/.test(name)) || !basename(dirname(path)).startsWith('rc-')) return null;
  const mount = cgroup2MountPoint();
  if (!mount || !resolve(path).startsWith(`${mount}/`)) return null;
  return new JobCgroup(resolve(path));
}

function cgroup2MountPoint(): string | null {
  try {
    return cgroup2Mount(readFileSync('/proc/self/mountinfo', 'utf8'))?.mountPoint ?? null;
  } catch {
    return null;
  }
}

export class JobCgroup {
  constructor(readonly path: string) {}

  create(): void {
    mkdirSync(this.path);
  }

  /**
   * create() off the event loop. Making, removing or killing a cgroup waits for
   * the kernel's cgroup lock, which a process moving into any cgroup holds for
   * an RCU grace period (6-22 ms without favordynmods): done synchronously
   * beside such a move (a ready shell being made), it would stall the worker.
   */
  createAsync(): Promise<void> {
    return mkdir(this.path).then(() => {});
  }

  /** remove() off the event loop (see createAsync); false while a process is still in it. */
  removeAsync(): Promise<boolean> {
    return rmdir(this.path).then(
      () => true,
      (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
    );
  }

  exists(): boolean {
    return existsSync(join(this.path, 'cgroup.procs'));
  }

  /** Its processes (empty when it is gone). */
  pids(): number[] {
    try {
      return readFileSync(join(this.path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  }

  /** True while any process is in it (cgroup.events; zombies do not count). */
  populated(): boolean {
    try {
      return /^populated 1$/m.test(readFileSync(join(this.path, 'cgroup.events'), 'utf8'));
    } catch {
      return false;
    }
  }

  /** Freezes or thaws it; resolves once frozen (at most ~200 ms: a process in the kernel may take a moment), false without cgroup.freeze. */
  async freeze(on: boolean): Promise<boolean> {
    try {
      writeFileSync(join(this.path, 'cgroup.freeze'), on ? '1' : '0');
    } catch {
      return false;
    }
    if (!on) return true;
    for (let i = 0; i < 40; i++) {
      try {
        if (/^frozen 1$/m.test(readFileSync(join(this.path, 'cgroup.events'), 'utf8'))) return true;
      } catch {
        return true;
      }
      await sleep(5);
    }
    return true;
  }

  /** SIGKILL to every process in it: cgroup.kill (Linux 5.14), else each pid in cgroup.procs, frozen so none forks meanwhile. */
  async kill(signal: (pid: number, sig: NodeJS.Signals) => void = sendSignal): Promise<void> {
    try {
      // Off the event loop, as createAsync says why.
      await writeFile(join(this.path, 'cgroup.kill'), '1');
      return;
    } catch {
      // No cgroup.kill, or the cgroup is gone.
    }
    const frozen = await this.freeze(true);
    for (let round = 0; round < 10; round++) {
      const pids = this.pids();
      if (!pids.length) break;
      for (const pid of pids) signal(pid, 'SIGKILL');
      if (!frozen) await sleep(5);
    }
    if (frozen) await this.freeze(false);
  }

  /** Removes it once empty; false while a process is still in it. */
  remove(): boolean {
    try {
      rmdirSync(this.path);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT';
    }
  }
}

export function sendSignal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* gone */
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// Signalling a job's processes inside a container from the host's own /proc,
// when the worker can see them there (root, local dockerd): far cheaper than
// a `docker exec` of the signal script (about 1 ms against 80-100 ms).
// A device container runs one job at a time, so every process in its pid
// namespace but the container's own init and keep-alive is the job's
// (docker-signal.ts says why). And the tags rc puts in every job's
// environment: RC_JOB_ID (jobTag, which the GPU monitor uses to tell rc's
// processes from foreign ones) and RC_FENCE (attemptTag).
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** The container's pid namespace as /proc names it, or null when this worker cannot see (or read) its processes. */
export function containerNamespace(initPid: number): string | null {
  try {
    const ns = readlinkSync(`/proc/${initPid}/ns/pid`);
    readFileSync(`/proc/${initPid}/environ`);
    return ns;
  } catch {
    return null;
  }
}

/** The rc job a process belongs to (its RC_JOB_ID), or null when it has none or cannot be read. */
export function jobTag(pid: number): string | null {
  try {
    const env = readFileSync(`/proc/${pid}/environ`, 'latin1');
    const m = /(?:^|\0)RC_JOB_ID=([^\0]*)/.exec(env);
    return m ? m[1]! : null;
  } catch {
    return null;
  }
}

/**
 * The attempt a process belongs to, `<RC_JOB_ID>:<RC_FENCE>` (`<RC_JOB_ID>:`
 * for one started by a worker that did not set RC_FENCE), or null without an
 * RC_JOB_ID. Another worker's attempt of the same job has another fence.
 */
export function attemptTag(pid: number): string | null {
  try {
    const env = readFileSync(`/proc/${pid}/environ`, 'latin1');
    const job = /(?:^|\0)RC_JOB_ID=([^\0]*)/.exec(env);
    if (!job) return null;
    return attemptKey(job[1]!, /(?:^|\0)RC_FENCE=([^\0]*)/.exec(env)?.[1] ?? null);
  } catch {
    return null;
  }
}

/** An attempt's key, as attemptTag reads it from a process. */
export function attemptKey(jobId: string, fence: number | string | null): string {
  return `${jobId}:${fence ?? ''}`;
}

interface Stat {
  state: string;
  ppid: number;
  /** Clock ticks after boot. */
  start: number;
}

function procStat(pid: number): Stat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid …: comm may hold spaces and parentheses.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: f[0]!, ppid: Number(f[1]), start: Number(f[19]) };
  } catch {
    return null;
  }
}

/**
 * The job processes of a device container, by host pid: every live process
 * in its pid namespace `ns` but its init (`initPid`) and the keep-alive (the
 * init's child that started first: the container's command, there before any
 * job). Zombies do not count.
 */
export function containerJobPids(initPid: number, ns: string): number[] {
  const inside: { pid: number; stat: Stat }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === initPid) continue;
    try {
      if (readlinkSync(`/proc/${name}/ns/pid`) !== ns) continue;
    } catch {
      continue;
    }
    const stat = procStat(Number(name));
    if (stat) inside.push({ pid: Number(name), stat });
  }
  let keep: { pid: number; stat: Stat } | null = null;
  for (const p of inside) if (p.stat.ppid === initPid && (!keep || p.stat.start < keep.stat.start)) keep = p;
  return inside.filter((p) => p !== keep && p.stat.state !== 'Z' && p.stat.state !== 'X').map((p) => p.pid);
}

function send(pids: number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      /* gone */
    }
  }
}

/**
 * Signals the job processes of a device container (containerJobPids). TERM:
 * stops them all first, so a shell does not see its children die and exit 0
 * before its own TERM lands, then TERM and CONT. KILL: again while some are
 * found (a dying tree may still fork). Returns how many it found.
 */
export function signalContainerJobs(initPid: number, ns: string, sig: 'TERM' | 'KILL'): number {
  const first = containerJobPids(initPid, ns);
  if (sig === 'TERM') {
    send(first, 'SIGSTOP');
    send(first, 'SIGTERM');
    send(first, 'SIGCONT');
    return first.length;
  }
  let pids = first;
  for (let round = 0; pids.length && round < 10; round++) {
    send(pids, 'SIGKILL');
    pids = containerJobPids(initPid, ns);
  }
  return first.length;
}

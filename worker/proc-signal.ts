// Signalling a job's processes inside a container from the host's own /proc,
// when the worker can see them there (root, local dockerd): far cheaper than
// a `docker exec` of the signal script (about 1 ms against 80-100 ms).
// A process belongs to the job when it is in the container's pid namespace
// and carries RC_JOB_ID=<job> in its environment (jobTag, which the GPU
// monitor also uses to tell rc's processes from foreign ones). RC_FENCE tells
// the attempt (attemptTag).
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

function tagged(ns: string, jobId: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let inside = false;
    try {
      inside = readlinkSync(`/proc/${name}/ns/pid`) === ns;
    } catch {
      /* gone */
    }
    if (inside && jobTag(Number(name)) === jobId) out.push(Number(name));
  }
  return out;
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
 * TERM: stops them all first, so a shell does not see its children die and
 * exit 0 before its own TERM lands, then TERM and CONT. KILL: again while
 * some are found (a dying tree may still fork). Returns how many it found.
 */
export function signalJobOnHost(ns: string, jobId: string, sig: 'TERM' | 'KILL'): number {
  const first = tagged(ns, jobId);
  if (sig === 'TERM') {
    send(first, 'SIGSTOP');
    send(first, 'SIGTERM');
    send(first, 'SIGCONT');
    return first.length;
  }
  let pids = first;
  for (let round = 0; pids.length && round < 10; round++) {
    send(pids, 'SIGKILL');
    pids = tagged(ns, jobId);
  }
  return first.length;
}

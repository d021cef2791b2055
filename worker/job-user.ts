// The user a root worker runs host-runtime jobs as (RC_JOB_USER). A job that
// runs as the worker's own user can read everything the worker and the
// controller beside it can: the data folder's tokens, the database password,
// their /proc entries (environment, cwd, root). Another, unprivileged uid
// reaches none of them: files are 0600, folders 0700 or 0711, and /proc of
// another user's processes is closed to it by the kernel (ptrace access).
//
// The job's first process starts as root, enters its cgroup (which needs
// root: moving a process needs write access to the common ancestor's
// cgroup.procs), and then execs setpriv, which drops to the job's uid and gid
// with no supplementary groups before it execs the command: one exec more.
import { chownSync, readFileSync, statSync } from 'node:fs';
import { closedOnTheWay, findJobUser, type JobUser } from '../core/job-user';

export type { JobUser } from '../core/job-user';

/** setpriv from util-linux; a worker that needs it and does not find it refuses to start. */
export const SETPRIV = '/usr/bin/setpriv';

/** RC_JOB_USER, checked against this process: only root can run jobs as another user. */
export function jobUserFor(spec: string | undefined, uid: number | undefined, passwdFile = '/etc/passwd'): JobUser | null {
  if (!spec) return null;
  if (uid !== 0) throw new Error(`RC_JOB_USER=${spec} needs a worker running as root (this one is uid ${uid}); unset it, or start the worker as root`);
  const user = findJobUser(spec, readFileSync(passwdFile, 'utf8'));
  if ('why' in user) throw new Error(user.why);
  try {
    statSync(SETPRIV);
  } catch {
    throw new Error(`RC_JOB_USER needs ${SETPRIV} (util-linux) to drop to ${user.name}; install util-linux`);
  }
  return user;
}

/** The command as the job user: setpriv sets the uid, the gid and no other groups, then execs it. */
export function asJobUser(user: JobUser, file: string, args: string[]): { file: string; args: string[] } {
  return { file: SETPRIV, args: [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', file, ...args] };
}

/** Gives a folder the worker made to the job user. */
export function giveTo(user: JobUser, path: string): void {
  chownSync(path, user.uid, user.gid);
}

/** The first folder on the way to `dir` the job user may not enter, or null. */
export function unreachableBy(user: JobUser, dir: string): string | null {
  return closedOnTheWay(user, dir, statOrNull);
}

export function statOrNull(path: string): { uid: number; gid: number; mode: number } | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

// The unprivileged user a root worker runs host-runtime jobs as (RC_JOB_USER):
// found in /etc/passwd's text, and whether it can reach a folder by the mode
// bits of the folders on the way (root's own access() would say yes to anything).

export interface JobUser {
  name: string;
  uid: number;
  gid: number;
  /** Its home folder from /etc/passwd: the job's HOME. */
  home: string;
}

/** The user named (a name, or a uid) in a passwd file's text, or why it cannot run jobs. */
export function findJobUser(spec: string, passwd: string): JobUser | { why: string } {
  for (const line of passwd.split('\n')) {
    const f = line.split(':');
    if (f.length < 7) continue;
    const [name, , uid, gid, , home] = f as [string, string, string, string, string, string];
    if (name !== spec && uid !== spec) continue;
    if (uid === '0' || gid === '0') return { why: `RC_JOB_USER=${spec} is root (uid ${uid}, gid ${gid}); jobs must run as an unprivileged user` };
    return { name, uid: Number(uid), gid: Number(gid), home };
  }
  return { why: `RC_JOB_USER=${spec}: no such user in /etc/passwd; create it (useradd --system --user-group --create-home rc-job) or name another` };
}

/** What a folder's stat says (null: it does not exist). */
export type StatOf = (path: string) => { uid: number; gid: number; mode: number } | null;

/** The first folder on the way to `dir` (itself included) the user may not enter, or null. One not made yet is left to its parents. */
export function closedOnTheWay(user: JobUser, dir: string, stat: StatOf): string | null {
  const parts = dir.split('/').filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const d = `/${parts.slice(0, i).join('/')}`;
    const s = stat(d);
    if (!s) return null;
    const x = s.uid === user.uid ? 0o100 : s.gid === user.gid ? 0o010 : 0o001;
    if ((s.mode & x) === 0) return d;
  }
  return null;
}

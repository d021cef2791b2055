// Who `npm start`'s local worker runs jobs as. Its jobs run beside the data
// folder (tokens, the database password, the worker's key), so as root they
// run as an unprivileged user of their own, `rc-job` (made if missing), which
// can use the workspace and nothing else there (worker/job-user.ts). Not as
// root there is no other user to switch to: the jobs can read all of it, and
// the controller says so when it starts.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { closedOnTheWay, findJobUser, type JobUser } from '../core/job-user';

export const DEFAULT_JOB_USER = 'rc-job';
const HOME = '/var/lib/rc-job';

export type LocalJobs =
  /** Root: the worker's settings for jobs as `user`. */
  | { user: JobUser; env: { RC_JOB_USER: string; RC_SCRATCH_DIR: string } }
  /** Not root: the warning to print. */
  | { warning: string };

/**
 * As root: the job user (RC_JOB_USER, else rc-job, made if missing), the
 * workspace its own and the scratch folder one it can enter. The data folder
 * stays 0711: it can pass through to the workspace, not list or open the rest.
 */
export function prepareLocalJobs(dataDir: string, env: Record<string, string | undefined>, uid = process.getuid?.()): LocalJobs {
  if (uid !== 0)
    return {
      warning: `the local worker's jobs run as ${userInfo().username}, the user this controller runs as: any job can read ${join(dataDir, 'local.json')} (the admin token), the database password and the worker's key. Let only people you would give the admin token run jobs here, or start rc as root: its jobs then run as the unprivileged user ${DEFAULT_JOB_USER} (docs/operators.md, "Who a job runs as")`,
    };
  const name = env.RC_JOB_USER || DEFAULT_JOB_USER;
  const user = jobUser(name, name === DEFAULT_JOB_USER);
  mkdirSync(dataDir, { recursive: true });
  chmodSync(dataDir, 0o711);
  const workspace = env.RC_WORKSPACE ?? join(dataDir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  if (!env.RC_WORKSPACE) chownSync(workspace, user.uid, user.gid);
  const closed = closedOnTheWay(user, workspace, (p) => {
    try {
      return statSync(p);
    } catch {
      return null;
    }
  });
  if (closed)
    throw new Error(
      `the local worker's jobs run as ${user.name}, which cannot enter ${closed} on the way to the workspace ${workspace}; put the checkout elsewhere (not under /root), or set RC_DATA_DIR to a folder outside it`,
    );
  const scratch = env.RC_SCRATCH_DIR ?? join(dataDir, 'scratch');
  mkdirSync(scratch, { recursive: true, mode: 0o711 });
  if (!env.RC_SCRATCH_DIR) chmodSync(scratch, 0o711);
  return { user, env: { RC_JOB_USER: user.name, RC_SCRATCH_DIR: scratch } };
}

/** The user from /etc/passwd; rc-job is made when missing (another rc starting at the same time may make it first). */
function jobUser(name: string, make: boolean): JobUser {
  const found = findJobUser(name, readFileSync('/etc/passwd', 'utf8'));
  if (!('why' in found) || !make) {
    if ('why' in found) throw new Error(found.why);
    return found;
  }
  let failure = '';
  try {
    execFileSync(
      'useradd',
      ['--system', '--user-group', '--create-home', '--home-dir', HOME, '--shell', '/usr/sbin/nologin', '--comment', 'rc jobs (npm start)', name],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  } catch (err) {
    failure = (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message;
  }
  const made = findJobUser(name, readFileSync('/etc/passwd', 'utf8'));
  if ('why' in made)
    throw new Error(
      `cannot make the user ${name} that the local worker's jobs run as (${failure}); make it (useradd --system --user-group --create-home ${name}), or set RC_JOB_USER to an unprivileged user`,
    );
  return made;
}

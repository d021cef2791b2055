// The folders every job gets besides its workspace: /scratch (its own, on
// the host's local disk, wiped when the job ends), /shared (the host's
// persistent shared storage, RC_SHARED_DIR) and /secrets (files the operator
// put in RC_SECRETS_DIR, read-only). The docker runtime mounts them at those
// paths; the host runtime names them in RC_SCRATCH, RC_SHARED and RC_SECRETS.
//
// Under RC_SCRATCH_DIR the worker keeps three kinds of folder, and wipes only
// these:
//   jobs/<job id>     a host-runtime job's or a one-off container's scratch
//   secrets/<job id>  a host-runtime job's read-only copy of the secrets
//   gpu<N>            the scratch of device N's container (mounted once, when
//                     the container is made), emptied after each of its jobs
import { accessSync, chmodSync, constants, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { chmod, lstat, readdir, rmdir, unlink } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { giveTo, type JobUser } from './job-user';

export const CONTAINER_SCRATCH = '/scratch';
export const CONTAINER_SHARED = '/shared';
export const CONTAINER_SECRETS = '/secrets';
/** A host-runtime job's copy of the secrets stops here (they are meant to be small files: keys, tokens, configs). */
export const SECRETS_MAX_FILES = 1000;
export const SECRETS_MAX_BYTES = 64 * 1024 * 1024;

export interface MountDirs {
  /** Absolute: where jobs' scratch folders are made. */
  scratch: string;
  /** Absolute, or null: no /shared, RC_SHARED unset. */
  shared: string | null;
  /** Absolute, or null: no /secrets, RC_SECRETS unset. */
  secrets: string | null;
}

/** The paths a job is told about (RC_WORKSPACE, RC_SCRATCH, RC_SHARED, RC_SECRETS); null: not set. */
export interface JobPaths {
  workspace: string;
  scratch: string;
  shared: string | null;
  secrets: string | null;
}

/** A folder a job's scratch lives in: file names from the job id, never a path out of the scratch root. */
function safe(jobId: string): string {
  const s = jobId.replace(/[^a-zA-Z0-9_.-]/g, '-');
  return s === '.' || s === '..' || s === '' ? `-${s}` : s;
}

/** Whether one path is the other or inside it. */
function overlaps(a: string, b: string): boolean {
  const inside = (x: string, y: string) => {
    const r = relative(y, x);
    return r === '' || (!r.startsWith('..') && !isAbsolute(r));
  };
  return inside(a, b) || inside(b, a);
}

/**
 * The folders' problems that no environment parse can see: each a sentence
 * naming the variable. Empty when the worker can use them. The scratch
 * folder is made here when missing (`make`); the shared one never is (an absent
 * shared mount must not turn into a local folder that only looks shared).
 */
export function checkMountDirs(dirs: MountDirs, workspace: string, make = true): string[] {
  const problems: string[] = [];
  const named: [string, string | null][] = [
    ['RC_WORKSPACE', workspace],
    ['RC_SCRATCH_DIR', dirs.scratch],
    ['RC_SHARED_DIR', dirs.shared],
    ['RC_SECRETS_DIR', dirs.secrets],
  ];
  for (let i = 0; i < named.length; i++) {
    for (let j = i + 1; j < named.length; j++) {
      const [an, a] = named[i]!;
      const [bn, b] = named[j]!;
      if (a && b && overlaps(a, b)) problems.push(`${an} (${a}) and ${bn} (${b}) overlap; give each a folder of its own`);
    }
  }
  // rc-worker doctor only looks: a scratch folder not there yet is made by the worker.
  if (make || existsSync(dirs.scratch)) {
    try {
      if (make) mkdirSync(dirs.scratch, { recursive: true, mode: 0o700 });
      accessSync(dirs.scratch, constants.W_OK | constants.X_OK);
      if (!statSync(dirs.scratch).isDirectory()) problems.push(`RC_SCRATCH_DIR (${dirs.scratch}) is not a folder`);
    } catch (err) {
      problems.push(`RC_SCRATCH_DIR (${dirs.scratch}) cannot be used: ${why(err)}; jobs' scratch folders are made there`);
    }
  }
  if (dirs.shared) {
    const p = folderProblem(dirs.shared, constants.R_OK | constants.W_OK | constants.X_OK);
    if (p) problems.push(`RC_SHARED_DIR (${dirs.shared}) ${p}; mount the host's shared storage there, or unset RC_SHARED_DIR for no /shared`);
  }
  if (dirs.secrets) {
    const p = folderProblem(dirs.secrets, constants.R_OK | constants.X_OK) ?? secretsProblem(dirs.secrets);
    if (p) problems.push(`RC_SECRETS_DIR (${dirs.secrets}) ${p}; or unset RC_SECRETS_DIR for no /secrets`);
  }
  return problems;
}

function folderProblem(dir: string, mode: number): string | null {
  try {
    if (!statSync(dir).isDirectory()) return 'is not a folder';
    accessSync(dir, mode);
    return null;
  } catch (err) {
    return `cannot be used: ${why(err)}`;
  }
}

/** Files and folders only (symbolic links to them count as what they point to), readable, within the limits of a copy. */
function secretsProblem(dir: string): string | null {
  let files = 0;
  let bytes = 0;
  const walk = (d: string): string | null => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      let s: ReturnType<typeof statSync>;
      try {
        s = statSync(p);
        accessSync(p, s.isDirectory() ? constants.R_OK | constants.X_OK : constants.R_OK);
      } catch (err) {
        return `holds ${p}, which cannot be read: ${why(err)}`;
      }
      if (s.isDirectory()) {
        const inner = walk(p);
        if (inner) return inner;
      } else if (s.isFile()) {
        files += 1;
        bytes += s.size;
      } else {
        return `holds ${p}, which is neither a file nor a folder`;
      }
      if (files > SECRETS_MAX_FILES) return `holds more than ${SECRETS_MAX_FILES} files`;
      if (bytes > SECRETS_MAX_BYTES) return `holds more than ${SECRETS_MAX_BYTES / 1024 / 1024} MiB`;
    }
    return null;
  };
  try {
    return walk(dir);
  } catch (err) {
    return `cannot be read: ${why(err)}`;
  }
}

function why(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such folder';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'ENOTDIR') return 'a part of the path is not a folder';
  return code ?? (err as Error).message;
}

/** A folder that could not be wiped, and why (the worker then wipes it from inside a container, or reports it). */
export interface NotWiped {
  dir: string;
  reason: string;
}

export class JobMounts {
  constructor(readonly dirs: MountDirs) {}

  /** Device N's container's scratch. */
  deviceScratch(index: number): string {
    return join(this.dirs.scratch, `gpu${index}`);
  }
  jobScratch(jobId: string): string {
    return join(this.dirs.scratch, 'jobs', safe(jobId));
  }

  /** Makes a folder the worker owns (0700: other users of the host have no business in a job's scratch). */
  make(dir: string): void {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /**
   * A host-runtime job's folders: its scratch, made empty, and a copy of the
   * secrets the job cannot write without changing modes first (files 0444,
   * folders 0555): a job running as the worker's user could chmod its copy
   * back, and root ignores modes, but either way only its own copy changes.
   * With a job user (RC_JOB_USER) the scratch is that user's, and the folders
   * above it 0711: it can enter them to reach its own, not list them.
   */
  forHostJob(jobId: string, workspace: string, user: JobUser | null = null): JobPaths {
    const scratch = this.jobScratch(jobId);
    if (user) enterable(join(this.dirs.scratch, 'jobs'));
    this.make(scratch);
    if (user) giveTo(user, scratch);
    let secrets: string | null = null;
    if (this.dirs.secrets) {
      secrets = join(this.dirs.scratch, 'secrets', safe(jobId));
      if (user) enterable(join(this.dirs.scratch, 'secrets'));
      else this.make(join(this.dirs.scratch, 'secrets'));
      cpSync(this.dirs.secrets, secrets, { recursive: true, dereference: true });
      readOnly(secrets);
    }
    return { workspace, scratch, shared: this.dirs.shared, secrets };
  }

  /** After a job: its scratch and its copy of the secrets are gone. */
  async wipeJob(jobId: string): Promise<NotWiped[]> {
    return [...(await this.wipeJobSecrets(jobId)), ...(await this.wipeJobScratch(jobId))];
  }

  /** After a job: its copy of the secrets is gone (its scratch may go later: wipeJobScratch). */
  async wipeJobSecrets(jobId: string): Promise<NotWiped[]> {
    // Without RC_SECRETS_DIR no job gets a copy (a leftover of a run that had one goes with wipeLeftovers).
    if (!this.dirs.secrets) return [];
    return wiped(join(this.dirs.scratch, 'secrets', safe(jobId)));
  }

  /** After a job: its scratch folder is gone. */
  async wipeJobScratch(jobId: string): Promise<NotWiped[]> {
    return wiped(this.jobScratch(jobId));
  }

  /** After a job in device N's container: its scratch is empty again (the folder stays: the container has it mounted). */
  async emptyDevice(index: number): Promise<NotWiped | null> {
    const dir = this.deviceScratch(index);
    const r = await emptyTree(dir);
    return r ? { dir, reason: r } : null;
  }

  /**
   * At start-up, after the previous run's jobs were killed: every job folder
   * it left, and what is in the device scratches. Resolves to what could not
   * be wiped (with the device it belongs to, if any).
   */
  async wipeLeftovers(): Promise<(NotWiped & { device: number | null })[]> {
    const out: (NotWiped & { device: number | null })[] = [];
    for (const sub of ['jobs', 'secrets']) {
      const r = await emptyTree(join(this.dirs.scratch, sub));
      if (r) out.push({ dir: join(this.dirs.scratch, sub), reason: r, device: null });
    }
    let names: string[] = [];
    try {
      names = await readdir(this.dirs.scratch);
    } catch {
      return out;
    }
    for (const name of names) {
      const m = /^gpu(\d{1,3})$/.exec(name);
      if (!m) continue;
      const r = await this.emptyDevice(Number(m[1]));
      if (r) out.push({ ...r, device: Number(m[1]) });
    }
    return out;
  }
}

/** A folder others may enter but not list (0711): the way to a job user's own folder below it. */
function enterable(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  chmodSync(dir, 0o711);
}

/** Files 0444, folders 0555, from the bottom up. */
function readOnly(path: string): void {
  const s = lstatSync(path);
  if (s.isDirectory()) {
    for (const name of readdirSync(path)) readOnly(join(path, name));
    chmodSync(path, 0o555);
  } else {
    chmodSync(path, 0o444);
  }
}

/**
 * Removes a tree, folder by folder (node's rm reports a file it cannot unlink
 * as ENOTDIR, which says nothing); a read-only folder (a secrets copy, or one
 * the job made) is made writable first. Resolves to the first path that could
 * not be removed and why, or null.
 */
async function wiped(dir: string): Promise<NotWiped[]> {
  const reason = await removeTree(dir);
  return reason ? [{ dir, reason }] : [];
}

async function removeTree(path: string): Promise<string | null> {
  let s: Awaited<ReturnType<typeof lstat>>;
  try {
    s = await lstat(path);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : `${path}: ${why(err)}`;
  }
  try {
    if (!s.isDirectory()) {
      await unlink(path);
      return null;
    }
    if ((s.mode & 0o700) !== 0o700) await chmod(path, 0o700).catch(() => {});
    const inner = await emptyTree(path);
    if (inner) return inner;
    await rmdir(path);
    return null;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : `${path}: ${why(err)}`;
  }
}

/** Removes what is in a folder, keeping the folder; a missing folder is empty. */
async function emptyTree(dir: string): Promise<string | null> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : `${dir}: ${why(err)}`;
  }
  for (const name of names) {
    const r = await removeTree(join(dir, name));
    if (r) return r;
  }
  return null;
}

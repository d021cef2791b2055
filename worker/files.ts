// rc cp on the worker: reading and writing one file in the shared workspace,
// a piece at a time.
//
// A job can change the workspace while a copy runs: swap a folder for a link
// to somewhere else between a check of a path and its open. So no path is
// checked and then opened by name. Each step (a read, a write's begin, piece,
// commit) opens the workspace, then each component below it through the
// folder already open, with O_NOFOLLOW (/proc/self/fd/<fd>/<name>: Node has
// no openat), and reads or writes through the descriptors it got. No link is
// followed at any component below the workspace, not even one that stays in
// it. A write goes to a temporary file beside the destination, renamed into
// place within the same open folder only when it is whole, so a failed copy
// leaves nothing behind.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  unlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { CP_MAX_BYTES, workspaceRelative } from '../core/cp';

export class FileError extends Error {
  constructor(
    readonly code: 'not_found' | 'bad_request' | 'payload_too_large',
    message: string,
  ) {
    super(message);
  }
}

const TEMP = /^\.rc-cp-[0-9a-f]{16}\.part$/;
const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
/** O_NONBLOCK: a FIFO a job left in the workspace must not hang the worker in open. */
const NO_LINK = O_NOFOLLOW | O_NONBLOCK;
const PROC_FD = existsSync('/proc/self/fd');

/** A name in an open folder, as a path the kernel resolves from that folder (what openat would take). */
const at = (dir: number, name: string) => `/proc/self/fd/${dir}/${name}`;

interface Target {
  parts: string[];
  shown: string;
}

function target(path: string): Target {
  const rel = workspaceRelative(path);
  if (!rel.ok) throw new FileError('bad_request', rel.reason);
  if (rel.rel === '') throw new FileError('bad_request', `${path} is the workspace itself; name a file in it`);
  return { parts: rel.rel.split('/'), shown: `/workspace/${rel.rel}` };
}

/**
 * fn(folder, name): the folder that holds the target, open, reached from the
 * workspace one component at a time without following a link; closed after.
 * `want` picks the words when a folder on the way is missing: the file, or the folder.
 */
function inFolder<T>(workspace: string, t: Target, want: 'file' | 'parent', fn: (dir: number, name: string) => T): T {
  if (!PROC_FD) throw new Error('rc cp needs /proc/self/fd (Linux) to open files in the workspace without following links');
  // The workspace itself is the operator's setting and may be a link; nothing under it may.
  let dir = openSync(workspace, O_RDONLY | O_DIRECTORY);
  try {
    for (let i = 0; i < t.parts.length - 1; i++) {
      const next = openIn(workspace, dir, t, i, want, O_RDONLY | O_DIRECTORY);
      closeSync(dir);
      dir = next;
    }
    return fn(dir, t.parts.at(-1)!);
  } finally {
    closeSync(dir);
  }
}

/** Opens component i of the target in its open folder, never through a link. */
function openIn(workspace: string, dir: number, t: Target, i: number, want: 'file' | 'parent', flags: number): number {
  const name = t.parts[i]!;
  try {
    return openSync(at(dir, name), flags | NO_LINK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // O_NOFOLLOW gives ELOOP on a link, or ENOTDIR with O_DIRECTORY.
    if (code === 'ELOOP' || (code === 'ENOTDIR' && isLink(dir, name))) throw linkRefusal(workspace, t, i, want);
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new FileError(
        'not_found',
        want === 'file' ? `${t.shown} does not exist on the device host` : `the folder ${dirname(t.shown)} does not exist on the device host`,
      );
    }
    throw err;
  }
}

function isLink(dir: number, name: string): boolean {
  try {
    return lstatSync(at(dir, name)).isSymbolicLink();
  } catch {
    return false;
  }
}

function linkRefusal(workspace: string, t: Target, i: number, want: 'file' | 'parent'): FileError {
  const link = `/workspace/${t.parts.slice(0, i + 1).join('/')}`;
  if (!leadsOut(workspace, t.parts.slice(0, i + 1))) {
    return new FileError('bad_request', `${link} is a link; rc cp follows no links, even ones that stay in the workspace: name the path without it`);
  }
  return new FileError(
    'bad_request',
    want === 'file'
      ? `${link} is a link that leads out of the workspace; rc cp does not follow it`
      : `${dirname(t.shown)} leads out of the workspace through a link; rc cp does not follow it`,
  );
}

/** For the words only (the link is refused either way): whether it leads out of the workspace now. */
function leadsOut(workspace: string, parts: string[]): boolean {
  try {
    const root = realpathSync(workspace);
    const real = realpathSync(join(root, ...parts));
    return real !== root && !real.startsWith(root + sep);
  } catch {
    return false;
  }
}

export interface ReadPiece {
  data: Buffer;
  size: number;
  mtimeMs: number;
}

/** One piece of a file; `size` and `mtimeMs` let the caller notice a file that changes under the copy. */
export function readPiece(workspace: string, path: string, offset: number, length: number): ReadPiece {
  const t = target(path);
  return inFolder(workspace, t, 'file', (dir) => {
    const fd = openIn(workspace, dir, t, t.parts.length - 1, 'file', O_RDONLY);
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new FileError('bad_request', `${t.shown} is not a regular file`);
      if (st.size > CP_MAX_BYTES) {
        throw new FileError(
          'payload_too_large',
          `${t.shown} is ${st.size} bytes; rc cp moves at most ${CP_MAX_BYTES / 1024 / 1024} MiB through the controller: put bigger files on shared storage (the host's usage sheet says where)`,
        );
      }
      const buf = Buffer.alloc(Math.max(0, Math.min(length, st.size - offset)));
      const n = buf.length ? readSync(fd, buf, 0, buf.length, offset) : 0;
      return { data: buf.subarray(0, n), size: st.size, mtimeMs: st.mtimeMs };
    } finally {
      closeSync(fd);
    }
  });
}

/** Starts a write: a new temporary file beside the destination. Returns its name. */
export function beginWrite(workspace: string, path: string): string {
  const t = target(path);
  return inFolder(workspace, t, 'parent', (dir, name) => {
    checkDestination(dir, name, t);
    sweepStaleTemps(dir);
    const temp = `.rc-cp-${randomBytes(8).toString('hex')}.part`;
    closeSync(openSync(at(dir, temp), O_WRONLY | O_CREAT | O_EXCL | NO_LINK, 0o644));
    return temp;
  });
}

/** The destination may be new or a file, never a link (it would be written through) or a folder. */
function checkDestination(dir: number, name: string, t: Target): void {
  let st: Stats;
  try {
    st = lstatSync(at(dir, name));
  } catch {
    return;
  }
  if (st.isSymbolicLink()) throw new FileError('bad_request', `${t.shown} is a link; rc cp does not write through links`);
  if (st.isDirectory()) throw new FileError('bad_request', `${t.shown} is a folder; end the destination with / to copy into it`);
}

/** Temporary files of copies that never finished (a controller that died mid-copy) go after an hour. */
function sweepStaleTemps(dir: number): void {
  try {
    for (const f of readdirSync(`/proc/self/fd/${dir}`)) {
      if (!TEMP.test(f)) continue;
      if (Date.now() - lstatSync(at(dir, f)).mtimeMs > 3600_000) unlinkSync(at(dir, f));
    }
  } catch {
    /* best effort */
  }
}

/** fn(fd, stats) on this copy's temporary file in the open folder: a plain file of its own, not a link or another file's hard link. */
function withTemp(dir: number, temp: string, t: Target, flags: number, fn: (fd: number, st: Stats) => void): void {
  const changed = () =>
    new FileError('bad_request', `the temporary file of this copy in ${dirname(t.shown)} was changed or removed meanwhile; nothing was written`);
  let fd: number;
  try {
    fd = openSync(at(dir, temp), flags | NO_LINK);
  } catch {
    throw changed();
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.nlink !== 1) throw changed();
    fn(fd, st);
  } finally {
    closeSync(fd);
  }
}

function checkTemp(temp: string): void {
  if (!TEMP.test(temp)) throw new FileError('bad_request', 'not a temporary file of rc cp');
}

export function writePiece(workspace: string, path: string, temp: string, offset: number, data: Buffer): void {
  checkTemp(temp);
  const t = target(path);
  if (offset + data.length > CP_MAX_BYTES) throw new FileError('payload_too_large', `rc cp moves at most ${CP_MAX_BYTES / 1024 / 1024} MiB`);
  inFolder(workspace, t, 'parent', (dir) =>
    withTemp(dir, temp, t, O_WRONLY, (fd) => {
      writeSync(fd, data, 0, data.length, offset);
    }),
  );
}

/** The file is whole: onto disk, then into place in one rename within the open folder. */
export function commitWrite(workspace: string, path: string, temp: string, size: number): void {
  checkTemp(temp);
  const t = target(path);
  inFolder(workspace, t, 'parent', (dir, name) => {
    withTemp(dir, temp, t, O_RDONLY, (fd, st) => {
      if (st.size !== size) throw new FileError('bad_request', 'the copy arrived incomplete; nothing was written');
      // A root worker gives the file to its folder's owner: in a workspace of RC_JOB_USER, the jobs can change what was copied in.
      const folder = fstatSync(dir);
      if (process.getuid?.() === 0 && (st.uid !== folder.uid || st.gid !== folder.gid)) fchownSync(fd, folder.uid, folder.gid);
      fsyncSync(fd);
    });
    checkDestination(dir, name, t);
    renameSync(at(dir, temp), at(dir, name));
  });
}

export function abortWrite(workspace: string, path: string, temp: string): void {
  try {
    checkTemp(temp);
    inFolder(workspace, target(path), 'parent', (dir) => unlinkSync(at(dir, temp)));
  } catch {
    /* already gone, or out of reach: the sweep takes it within the hour */
  }
}

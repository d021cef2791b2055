// rc cp on the worker: reading and writing one file in the shared workspace,
// a piece at a time. Paths are checked against the workspace after every link
// is resolved, and a write goes to a temporary file that is renamed into
// place only when it is whole, so a failed copy leaves nothing behind.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, lstatSync, openSync, readdirSync, readSync, realpathSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { CP_MAX_BYTES, workspaceRelative } from '../core/cp';

export class FileError extends Error {
  constructor(readonly code: 'not_found' | 'bad_request' | 'payload_too_large', message: string) { super(message); }
}

const TEMP = /^\.rc-cp-[0-9a-f]{16}\.part$/;

/** The real path inside the workspace for a device path, links resolved; refuses anything that ends up outside it. */
function inside(workspace: string, path: string, must: 'file' | 'parent'): { real: string; shown: string } {
  const rel = workspaceRelative(path);
  if (!rel.ok) throw new FileError('bad_request', rel.reason);
  if (rel.rel === '') throw new FileError('bad_request', `${path} is the workspace itself; name a file in it`);
  const root = realpathSync(workspace);
  const within = (p: string) => p === root || p.startsWith(root + sep);
  const target = join(root, rel.rel);
  const shown = `/workspace/${rel.rel}`;
  if (must === 'file') {
    let real: string;
    try { real = realpathSync(target); } catch { throw new FileError('not_found', `${shown} does not exist on the device host`); }
    if (!within(real)) throw new FileError('bad_request', `${shown} is a link that leads out of the workspace; rc cp does not follow it`);
    const st = statSync(real);
    if (!st.isFile()) throw new FileError('bad_request', `${shown} is not a regular file`);
    return { real, shown };
  }
  let parent: string;
  try { parent = realpathSync(dirname(target)); } catch { throw new FileError('not_found', `the folder ${dirname(shown)} does not exist on the device host`); }
  if (!within(parent)) throw new FileError('bad_request', `${dirname(shown)} leads out of the workspace through a link; rc cp does not follow it`);
  const real = join(parent, basename(target));
  try {
    const st = lstatSync(real);
    if (st.isSymbolicLink()) throw new FileError('bad_request', `${shown} is a link; rc cp does not write through links`);
    if (st.isDirectory()) throw new FileError('bad_request', `${shown} is a folder; end the destination with / to copy into it`);
  } catch (err) {
    if (err instanceof FileError) throw err;
  }
  return { real, shown };
}

export interface ReadPiece { data: Buffer; size: number; mtimeMs: number }

/** One piece of a file; `size` and `mtimeMs` let the caller notice a file that changes under the copy. */
export function readPiece(workspace: string, path: string, offset: number, length: number): ReadPiece {
  const { real, shown } = inside(workspace, path, 'file');
  const st = statSync(real);
  if (st.size > CP_MAX_BYTES) {
    throw new FileError('payload_too_large', `${shown} is ${st.size} bytes; rc cp moves at most ${CP_MAX_BYTES / 1024 / 1024} MiB through the controller: put bigger files on shared storage (the host's usage sheet says where)`);
  }
  const fd = openSync(real, 'r');
  try {
    const buf = Buffer.alloc(Math.max(0, Math.min(length, st.size - offset)));
    const n = buf.length ? readSync(fd, buf, 0, buf.length, offset) : 0;
    return { data: buf.subarray(0, n), size: st.size, mtimeMs: st.mtimeMs };
  } finally {
    closeSync(fd);
  }
}

/** Starts a write: a new temporary file beside the destination. Returns its name. */
export function beginWrite(workspace: string, path: string): string {
  const { real } = inside(workspace, path, 'parent');
  sweepStaleTemps(dirname(real));
  const temp = `.rc-cp-${randomBytes(8).toString('hex')}.part`;
  closeSync(openSync(join(dirname(real), temp), 'wx', 0o644));
  return temp;
}

/** Temporary files of copies that never finished (a controller that died mid-copy) go after an hour. */
function sweepStaleTemps(dir: string): void {
  try {
    for (const f of readdirSync(dir)) {
      if (!TEMP.test(f)) continue;
      const p = join(dir, f);
      if (Date.now() - statSync(p).mtimeMs > 3600_000) unlinkSync(p);
    }
  } catch { /* best effort */ }
}

function tempPath(workspace: string, path: string, temp: string): { real: string; tempReal: string } {
  if (!TEMP.test(temp)) throw new FileError('bad_request', 'not a temporary file of rc cp');
  const { real } = inside(workspace, path, 'parent');
  return { real, tempReal: join(dirname(real), temp) };
}

export function writePiece(workspace: string, path: string, temp: string, offset: number, data: Buffer): void {
  const { tempReal } = tempPath(workspace, path, temp);
  if (offset + data.length > CP_MAX_BYTES) throw new FileError('payload_too_large', `rc cp moves at most ${CP_MAX_BYTES / 1024 / 1024} MiB`);
  const fd = openSync(tempReal, 'r+');
  try {
    writeSync(fd, data, 0, data.length, offset);
  } finally {
    closeSync(fd);
  }
}

/** The file is whole: onto disk, then into place in one rename. */
export function commitWrite(workspace: string, path: string, temp: string, size: number): void {
  const { real, tempReal } = tempPath(workspace, path, temp);
  const fd = openSync(tempReal, 'r+');
  try {
    if (statSync(tempReal).size !== size) throw new FileError('bad_request', 'the copy arrived incomplete; nothing was written');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tempReal, real);
}

export function abortWrite(workspace: string, path: string, temp: string): void {
  try { unlinkSync(tempPath(workspace, path, temp).tempReal); } catch { /* already gone */ }
}

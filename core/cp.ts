// rc cp's rules, apart from any I/O: which argument names a device, where on
// the device a path may point, and how big a file may be.
import { posix } from 'node:path';

/** Files go through the controller, so they are capped; bigger ones belong on shared storage. */
export const CP_MAX_BYTES = 16 * 1024 * 1024;
/** Pieces a file moves in between the controller and a worker. */
export const CP_CHUNK_BYTES = 1024 * 1024;
/** How rc cp names the device host's shared workspace, on every host and runtime. */
export const CP_ROOT = '/workspace';

export interface RemoteTarget {
  device: string;
  path: string;
}

/** `host:gpuN:/path` → the device and the path; anything else is a local path (null). */
export function parseRemote(arg: string): RemoteTarget | null {
  const m = /^([A-Za-z0-9][A-Za-z0-9._-]{0,62}:gpu\d{1,3}):(.*)$/.exec(arg);
  return m ? { device: m[1]!, path: m[2]! } : null;
}

export type WorkspacePath = { ok: true; rel: string } | { ok: false; reason: string };

/**
 * A device path as a path relative to the workspace: `/workspace/a/b`, or
 * `a/b` (relative to the workspace). Anything that leaves it (`..`, another
 * absolute path) is refused. '' is the workspace itself.
 */
export function workspaceRelative(path: string): WorkspacePath {
  if (path === '') return { ok: true, rel: '' };
  if (path.includes('\0')) return { ok: false, reason: 'a path cannot contain a NUL byte' };
  if (path.length > 4096) return { ok: false, reason: 'the path is longer than 4096 characters' };
  const abs = posix.normalize(path.startsWith('/') ? path : `${CP_ROOT}/${path}`);
  if (abs !== CP_ROOT && !abs.startsWith(`${CP_ROOT}/`)) {
    return { ok: false, reason: `${path} is outside ${CP_ROOT}: rc cp only reaches the host's shared workspace (${CP_ROOT}/...)` };
  }
  return { ok: true, rel: abs.slice(CP_ROOT.length + 1).replace(/\/+$/, '') };
}

/** Where a file lands when the destination names a folder (ends with / or is the workspace itself): that folder + the source's name. */
export function landingPath(dest: string, sourceName: string): string {
  return dest === '' || dest.endsWith('/') || dest === CP_ROOT || dest === '.' ? `${dest.replace(/\/?$/, '/')}${sourceName}` : dest;
}

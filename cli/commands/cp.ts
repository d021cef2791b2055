// rc cp: one file to or from a device's workspace, under a lease, through the controller.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CP_MAX_BYTES, CP_ROOT, landingPath, parseRemote } from '../../core/cp';
import { EXIT } from '../../core/exit-codes';
import type { Client } from '../client';
import { parseFlags } from '../flags';
import type { CopiedFile } from '../../protocol/cli-json';
import { fail, json, out, usage } from '../output';

export const CP_HELP = `usage: rc cp [--json] <local-file> <host:gpuN>:<path>
       rc cp [--json] <host:gpuN>:<path> <local-path>

Copies one file to or from the device host's shared workspace (${CP_ROOT} on
every host; a relative device path is relative to it). The device must be
free (the copy takes a short lease of its own) or held by you (rc hold); a
device someone else holds is refused. At most ${CP_MAX_BYTES / 1024 / 1024} MiB: put bigger files on shared
storage. A destination ending in / (or an existing local folder) gets the
source's name. A failed copy leaves no partial file. --json prints
{ "from", "to", "bytes" }.

  rc cp ./train.py gpubox:gpu0:/workspace/
  rc cp gpubox:gpu0:/workspace/out.json ./
`;

export async function cp(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'cp',
    args,
    [
      { name: 'json', type: 'boolean' },
      { name: 'help', short: 'h', type: 'boolean' },
    ],
    false,
  );
  const done = (copied: CopiedFile) => {
    if (parsed.flags.has('json')) json(copied);
    else out(`${copied.from} -> ${copied.to} (${copied.bytes} bytes)\n`);
    return EXIT.ok;
  };
  if (parsed.flags.has('help')) {
    out(CP_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length !== 2) usage('rc cp takes a source and a destination: rc cp ./file host:gpu0:/workspace/ (or the other way)');
  const [src, dst] = parsed.rest as [string, string];
  const from = parseRemote(src);
  const to = parseRemote(dst);
  if (from && to) usage('rc cp copies between this machine and one device; copy to here first');
  if (!from && !to) usage(`neither ${src} nor ${dst} names a device: write the device side as host:gpuN:/workspace/path`);
  const at = (device: string, path: string) => ({ name: device, query: { path, submitter: client.submitter } });

  if (to) {
    let data: Buffer;
    try {
      const st = statSync(src);
      if (!st.isFile()) usage(`${src} is not a regular file; rc cp copies one file`);
      if (st.size > CP_MAX_BYTES) {
        fail(
          'payload_too_large',
          `${src} is ${st.size} bytes; rc cp moves at most ${CP_MAX_BYTES / 1024 / 1024} MiB through the controller: put bigger files on shared storage (rc describe ${to.device} shows the host's usage sheet)`,
          EXIT.error,
        );
      }
      data = readFileSync(src);
    } catch (err) {
      if ((err as { exitCode?: number }).exitCode !== undefined) throw err;
      fail('not_found', `cannot read ${src}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, EXIT.not_found);
    }
    const path = landingPath(to.path === '' ? `${CP_ROOT}/` : to.path, basename(src));
    const r = await client.call('PUT /api/devices/:name/files', { ...at(to.device, path), body: data });
    return done({ from: src, to: `${to.device}:${path}`, bytes: r.bytes });
  }

  const source = from!;
  let dest = dst;
  try {
    if (statSync(dst).isDirectory()) dest = join(dst, basename(source.path));
  } catch {
    /* a new file */
  }
  dest = landingPath(dest, basename(source.path));
  const data = await client.bytes('GET /api/devices/:name/files', at(source.device, source.path));
  writeWhole(dest, data);
  return done({ from: `${source.device}:${source.path}`, to: dest, bytes: data.length });
}

/** Into a temporary file beside the destination, then renamed: a failed copy leaves no partial file. */
function writeWhole(dest: string, data: Buffer): void {
  const temp = join(dirname(dest), `.${basename(dest)}.rc-cp-${process.pid}.part`);
  let fd: number | null = null;
  try {
    fd = openSync(temp, 'wx', 0o644);
    writeSync(fd, data);
    fsyncSync(fd);
    closeSync(fd);
    fd = null;
    renameSync(temp, dest);
  } catch (err) {
    if (fd !== null) closeSync(fd);
    try {
      unlinkSync(temp);
    } catch {
      /* never made */
    }
    fail('error', `cannot write ${dest}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, EXIT.error);
  }
}

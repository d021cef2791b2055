// The worker as a new host installs it (GET /api/worker/package, fetched by
// the install script with the host's key): the bundled worker
// (dist/worker-package/rc-worker.cjs, from scripts/build.mjs) with node-pty
// beside it, prebuilt for this platform (an N-API module: any Node from 20 on
// the same OS and CPU loads it; the script rebuilds it elsewhere), as a
// .tar.gz made once per controller start with the system's tar, and its SHA-256.
// The same files make the same bytes (fixed times, owners and order): the
// SHA-256 that rc admin host add pins (RC_SHA256) holds across restarts of
// the controller and between controllers of one build.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { RcError } from '../core/errors';
import { ROOT } from './paths';

declare const RC_VERSION: string;

export interface WorkerPackage {
  bytes: Buffer;
  sha256: string;
  version: string;
}

let made: Promise<WorkerPackage> | null = null;

/** The package, made at the first request (a second of tar) and kept. */
export function workerPackage(): Promise<WorkerPackage> {
  made ??= makePackage().catch((err: unknown) => {
    made = null;
    throw err;
  });
  return made;
}

async function makePackage(): Promise<WorkerPackage> {
  const bundle = join(ROOT, 'dist', 'worker-package', 'rc-worker.cjs');
  const pty = join(ROOT, 'node_modules', 'node-pty');
  if (!existsSync(bundle) || !existsSync(join(pty, 'build', 'Release', 'pty.node')))
    throw new RcError('unavailable', 'this controller has no worker package to serve: run npm run build (and npm ci) in its checkout');
  const stage = mkdtempSync(join(tmpdir(), 'rc-worker-package-'));
  try {
    const top = join(stage, 'rc-worker');
    mkdirSync(join(top, 'node_modules'), { recursive: true });
    cpSync(bundle, join(top, 'rc-worker.cjs'));
    // What node-pty loads, and what a rebuild needs (its sources, node-addon-api's headers); not its Windows parts.
    for (const part of ['package.json', 'lib', 'build/Release', 'binding.gyp', 'src', 'scripts'])
      if (existsSync(join(pty, part))) cpSync(join(pty, part), join(top, 'node_modules', 'node-pty', part), { recursive: true });
    const addon = join(ROOT, 'node_modules', 'node-addon-api');
    if (existsSync(addon)) cpSync(addon, join(top, 'node_modules', 'node-addon-api'), { recursive: true });
    writeFileSync(join(top, 'package.json'), `${JSON.stringify({ name: 'rc-worker', version: RC_VERSION, private: true, main: 'rc-worker.cjs' }, null, 2)}\n`);
    writeFileSync(join(top, 'VERSION'), `${RC_VERSION}\n`);
    setTimes(top, PACKAGE_TIME);
    const out = join(stage, 'rc-worker.tar');
    await promisify(execFile)('tar', [...((await gnuTar()) ? GNU_REPRODUCIBLE : []), '-cf', out, '-C', stage, 'rc-worker']);
    // zlib's gzip header carries no time or name: the same tar, the same bytes (compressed off the event loop).
    const bytes = await promisify(gzip)(readFileSync(out), { level: 9 });
    return { bytes, sha256: createHash('sha256').update(bytes).digest('hex'), version: RC_VERSION };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** Every file's time in the package: the files' own times change with each copy. */
const PACKAGE_TIME = new Date('2000-01-01T00:00:00Z');
/** GNU tar's options for the same archive from the same files: entries by name, owned by root (as the script installs them). */
const GNU_REPRODUCIBLE = ['--sort=name', '--owner=0', '--group=0', '--numeric-owner'];

async function gnuTar(): Promise<boolean> {
  const { stdout } = await promisify(execFile)('tar', ['--version']).catch(() => ({ stdout: '' }));
  return stdout.includes('GNU tar');
}

/** Sets the time of a folder, everything in it, and the folder itself last. */
function setTimes(path: string, at: Date): void {
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const p = join(path, entry.name);
    if (entry.isDirectory()) setTimes(p, at);
    else if (!entry.isSymbolicLink()) utimesSync(p, at, at);
  }
  utimesSync(path, at, at);
}

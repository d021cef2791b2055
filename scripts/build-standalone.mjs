// The standalone CLI: dist/rc-standalone.cjs (the CLI with its terminal client
// built in) compiled by Bun into one executable for this machine's platform,
// dist/cli/rc-<platform>, and a gzip of it that the controller serves to
// `curl <controller>/install/rc.sh | sh` (server/cli-install.ts). Bun comes
// from npm: its platform package (@oven/bun-<platform>) carries the binary, so
// nothing is downloaded at install time (package.json keeps bun's postinstall
// off). Compiled again only when the bundle or Bun changed: a second or two,
// and 110 MB written.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist', 'cli');

/** rc's name for this platform, as the install script computes it from uname: linux-x64, linux-arm64, darwin-arm64 … */
export const platform = `${process.platform}-${process.arch}`;

/** Bun's binary for this platform, where npm put it; null where there is none (another OS or CPU, or bun not installed). */
export function bunBinary() {
  const arch = { x64: 'x64', arm64: 'aarch64' }[process.arch];
  if (!arch || !['linux', 'darwin'].includes(process.platform)) return null;
  const musl = process.platform === 'linux' && !process.report?.getReport?.().header?.glibcVersionRuntime;
  for (const file of [
    join(root, 'node_modules', '@oven', `bun-${process.platform}-${arch}${musl ? '-musl' : ''}`, 'bin', 'bun'),
    // Where bun's own postinstall moves it, had it run.
    join(root, 'node_modules', 'bun', 'bin', 'bun.exe'),
  ])
    if (existsSync(file) && statSync(file).size > 1_000_000) return file;
  return null;
}

const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

/**
 * Compiles dist/rc-standalone.cjs (already built) when it changed. Returns what
 * it did, in words; the build goes on without a standalone CLI where Bun is
 * missing (the controller then offers the Node CLI only).
 */
export async function buildStandalone(version) {
  const bun = bunBinary();
  const exe = join(dist, `rc-${platform}`);
  const stamp = join(dist, `rc-${platform}.stamp`);
  if (!bun) {
    rmSync(exe, { force: true });
    rmSync(`${exe}.gz`, { force: true });
    return `no standalone CLI for ${platform}: no Bun binary in node_modules (npm ci installs it with the bun package)`;
  }
  const input = join(root, 'dist', 'rc-standalone.cjs');
  const want = createHash('sha256')
    .update(readFileSync(input))
    .update(String(statSync(bun).size))
    .update(version)
    .digest('hex');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want && existsSync(exe) && existsSync(`${exe}.gz`)) return null;
  mkdirSync(dist, { recursive: true });
  const r = spawnSync(bun, ['build', '--compile', '--bytecode', '--minify', input, '--outfile', `${exe}.tmp`], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`bun build --compile failed:\n${r.stdout}${r.stderr}`);
  renameSync(`${exe}.tmp`, exe);
  // Level 1: 57 MB in 2 s against 53 MB in 5 s at level 6.
  await pipeline(createReadStream(exe), createGzip({ level: 1 }), createWriteStream(`${exe}.gz.tmp`));
  renameSync(`${exe}.gz.tmp`, `${exe}.gz`);
  writeFileSync(stamp, want);
  return `standalone CLI: dist/cli/rc-${platform} (${(statSync(exe).size / 2 ** 20).toFixed(0)} MiB, sha256 ${sha256(exe).slice(0, 12)}…)`;
}

// The CLI for people's and agents' machines (GET /install/rc.sh, GET
// /api/cli/:file): `curl -fsSL <controller>/install/rc.sh | sh` installs rc
// into ~/.local/bin (or the folder given). On the platforms this controller
// built a standalone rc for (scripts/build-standalone.mjs: Bun, for the
// controller's own OS and CPU) it is that one executable; elsewhere, where
// Node.js 20.16+ is installed, the Node CLI (dist/rc.cjs and dist/rc-tty.cjs)
// with a two-line wrapper. Every file's SHA-256 is in the script, which checks it.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RcError } from '../core/errors';
import { ROOT } from './paths';

declare const RC_VERSION: string;

export interface CliFile {
  name: string;
  path: string;
  bytes: number;
  sha256: string;
}

export interface CliFiles {
  /** Standalone executables by platform (linux-x64 …), each gzipped: rc-<platform>.gz. */
  standalone: Map<string, CliFile>;
  /** The Node CLI: rc.cjs and rc-tty.cjs; null where dist has no build. */
  node: CliFile[] | null;
}

const STANDALONE_GZ = /^rc-([a-z0-9]+-[a-z0-9]+)\.gz$/;
const hashed = new Map<string, { key: string; sha256: string }>();

function fileOf(name: string, path: string): CliFile {
  const st = statSync(path);
  // Hashed once per build of the file (57 MB take a quarter of a second): the key is its size and time.
  const key = `${st.size}:${st.mtimeMs}`;
  let h = hashed.get(path);
  if (h?.key !== key) {
    h = { key, sha256: createHash('sha256').update(readFileSync(path)).digest('hex') };
    hashed.set(path, h);
  }
  return { name, path, bytes: st.size, sha256: h.sha256 };
}

/** What this controller's dist has to give. */
export function cliFiles(dist = join(ROOT, 'dist')): CliFiles {
  const standalone = new Map<string, CliFile>();
  const dir = join(dist, 'cli');
  if (existsSync(dir))
    for (const name of readdirSync(dir).sort()) {
      const m = STANDALONE_GZ.exec(name);
      if (m) standalone.set(m[1]!, fileOf(name, join(dir, name)));
    }
  const nodeNames = ['rc.cjs', 'rc-tty.cjs'];
  const node = nodeNames.every((n) => existsSync(join(dist, n))) ? nodeNames.map((n) => fileOf(n, join(dist, n))) : null;
  return { standalone, node };
}

/** One of the files, to stream; `not_found` for any other name. */
export function cliFile(files: CliFiles, name: string): CliFile {
  const all = [...files.standalone.values(), ...(files.node ?? [])];
  const f = all.find((x) => x.name === name);
  if (!f)
    throw new RcError(
      'not_found',
      `this controller serves no CLI file ${JSON.stringify(name.slice(0, 100))}; it serves ${all.map((x) => x.name).join(', ') || 'none'} (curl -fsSL <controller>/install/rc.sh | sh picks the right one)`,
    );
  return f;
}

/** The installer, for a controller reached at `controllerUrl` (no trailing slash). */
export function cliInstallScript(controllerUrl: string, files: CliFiles): string {
  // Single quotes around every value: a quote in the URL (from the Host header or RC_PUBLIC_URL) cannot end them.
  const q = (s: string) => `'${s.replace(/'/g, '')}'`;
  const standalone = [...files.standalone].map(([platform, f]) => `${platform}:${f.sha256}`).join(' ');
  const node = files.node ? files.node.map((f) => `${f.name}:${f.sha256}`).join(' ') : '';
  return SCRIPT.replace('__CONTROLLER__', q(controllerUrl))
    .replace('__VERSION__', q(typeof RC_VERSION === 'string' ? RC_VERSION : 'dev'))
    .replace('__STANDALONE__', q(standalone))
    .replace('__NODE__', q(node));
}

const SCRIPT = `#!/bin/sh
# rc CLI installer, served by the rc controller.
#   curl -fsSL <controller>/install/rc.sh | sh                 into ~/.local/bin
#   curl -fsSL <controller>/install/rc.sh | sh -s -- <folder>   into another folder
# Run again, it updates rc. RC_CLI=node installs the Node CLI even where a
# standalone rc exists for this machine (it needs Node.js 20.16 or later).
set -eu
CONTROLLER=__CONTROLLER__
VERSION=__VERSION__
# platform:sha256 of each standalone rc (gzipped), and name:sha256 of the Node CLI's files.
STANDALONE=__STANDALONE__
NODE_FILES=__NODE__

say() { printf 'rc-install: %s\\n' "$*"; }
die() { printf 'rc-install: %s\\n' "$*" >&2; exit 1; }
warn() { printf 'rc-install: warning: %s\\n' "$*" >&2; }

case "\${1:-}" in
  -h | --help) say "usage: curl -fsSL $CONTROLLER/install/rc.sh | sh [-s -- <folder>]   (default ~/.local/bin; RC_CLI=node: the Node CLI)"; exit 0 ;;
  -*) die "unknown option $1: give the folder to install rc into, or nothing for ~/.local/bin" ;;
esac
if [ -n "\${1:-}" ]; then
  DIR=$1
else
  [ -n "\${HOME:-}" ] || die "HOME is not set: give the folder to install rc into (… | sh -s -- <folder>)"
  DIR="$HOME/.local/bin"
fi
case "$DIR" in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac
DIR="\${DIR%/}"
# The SHA-256s below came over the same connection as the files they check.
case "$CONTROLLER" in
  http://localhost | http://localhost[:/]* | http://127.* | http://\\[::1\\]*) ;;
  http://*) warn "$CONTROLLER is plain HTTP: the files are checked against SHA-256s that came with this script over the same connection, so the install is only as trustworthy as the network. Install over HTTPS, or check this script's SHA-256 before running it (the HTTPS section of docs/operators.md)" ;;
esac

# fetch URL FILE: the body into FILE; fails on an HTTP error.
fetch() {
  if command -v curl >/dev/null 2>&1; then curl -fsS -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then wget -q -O "$2" "$1"
  else die "neither curl nor wget is installed"; fi
}
sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then shasum -a 256 "$1" | cut -d' ' -f1
  else die "neither sha256sum nor shasum is installed: rc cannot check what it downloads"; fi
}
# sum_in LIST NAME: NAME's sha256 in a list of name:sha256.
sum_in() {
  for pair in $1; do
    if [ "\${pair%%:*}" = "$2" ]; then printf '%s' "\${pair#*:}"; return 0; fi
  done
  return 1
}
# get NAME SHA256 FILE: downloads /api/cli/NAME into FILE and checks it.
get() {
  fetch "$CONTROLLER/api/cli/$1" "$3" || die "cannot download $CONTROLLER/api/cli/$1"
  got=$(sha256_of "$3")
  [ "$got" = "$2" ] || die "$1 does not match its SHA-256 (got $got, want $2): not installed"
}

os=$(uname -s | tr 'A-Z' 'a-z')
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac
platform="$os-$arch"
# Bun's Linux build needs glibc: on musl (Alpine) the Node CLI it is.
if [ "$os" = linux ] && ls /lib/ld-musl-* >/dev/null 2>&1; then platform="$platform-musl"; fi

mkdir -p "$DIR" || die "cannot create $DIR"
tmp=$(mktemp -d "\${TMPDIR:-/tmp}/rc-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

sum=""
if [ "\${RC_CLI:-}" != node ]; then sum=$(sum_in "$STANDALONE" "$platform" || true); fi
if [ -n "$sum" ]; then
  get "rc-$platform.gz" "$sum" "$tmp/rc.gz"
  gzip -dc "$tmp/rc.gz" > "$tmp/rc" || die "cannot unpack rc-$platform.gz"
  chmod 755 "$tmp/rc"
  # A new file moved over the old one: an rc running now keeps its copy.
  mv -f "$tmp/rc" "$DIR/rc" || die "cannot write $DIR/rc"
  how="standalone, $platform"
else
  [ -n "$NODE_FILES" ] || die "this controller has no CLI for $platform, nor the Node CLI to offer instead"
  command -v node >/dev/null 2>&1 ||
    die "this controller has no standalone rc for $platform (it has: \${STANDALONE:-none}); the Node CLI needs Node.js 20.16 or later, and node is not on PATH"
  node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 16) ? 0 : 1)' ||
    die "the Node CLI needs Node.js 20.16 or later; this node is $(node --version)"
  lib="$DIR/.rc-cli"
  mkdir -p "$lib"
  for pair in $NODE_FILES; do
    name=\${pair%%:*}
    get "$name" "\${pair#*:}" "$tmp/$name"
    mv -f "$tmp/$name" "$lib/$name"
  done
  printf '#!/bin/sh\\nexec node "%s/rc.cjs" "$@"\\n' "$lib" > "$tmp/rc"
  chmod 755 "$tmp/rc"
  mv -f "$tmp/rc" "$DIR/rc"
  how="Node CLI, run by $(command -v node)"
fi

"$DIR/rc" --version >/dev/null 2>&1 || die "$DIR/rc was installed but does not run here: $("$DIR/rc" --version 2>&1 | head -n 3)"
say "rc $VERSION installed: $DIR/rc ($how)"
case ":\${PATH:-}:" in
  *":$DIR:"*) ;;
  *) say "$DIR is not on your PATH; add it: export PATH=\\"$DIR:\\$PATH\\"" ;;
esac
cat <<EOF

Set up, once per shell:

export RC_CONTROLLER=$CONTROLLER
export RC_TOKEN=<client token>                          # ask the operator
export RC_SUBMITTER="claude/\\$(hostname)/session-\\$\\$"     # optional: the name rc ps shows

Check it works:

rc devices
EOF
`;

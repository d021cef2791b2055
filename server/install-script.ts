// The script a new host runs to join (GET /install.sh; rc admin host add
// prints the command). POSIX sh: it checks what the host needs and says
// plainly what is missing, learns its name from its key, fetches the worker
// package and checks its SHA-256, keeps the key in a file only root reads,
// and runs rc-worker as a systemd unit (restarted when it stops, started at
// boot) or, without systemd, in the background, saying how to run it instead;
// then `rc-worker doctor`. Run again, it updates; `sh -s uninstall` removes it.
//
// The script and the package come from the controller, and over plain HTTP a
// man in the middle could swap both, with the SHA-256 the controller states.
// So the command rc admin host add prints pins both: it runs the script only
// if its SHA-256 is the one this controller serves, and RC_SHA256 makes the
// script install only the package with that SHA-256 (server/worker-package.ts
// makes the same bytes on every start). The pins hold as far as the command
// reached the host intact: docs/operators.md, "HTTPS".
import { createHash } from 'node:crypto';

/** Where the printed command saves the script before it checks it: the folder it is run in, where the user may write. */
const SAVED_AS = 'rc-install.sh';

/**
 * The command that joins a host: what rc admin host add prints (and gives
 * with --json). It checks the script against its SHA-256 before running it,
 * and with `packageSha256` (null: this controller has no package to pin)
 * pins the package too.
 */
export function joinCommand(controllerUrl: string, credential: string, packageSha256: string | null): string {
  const script = createHash('sha256').update(installScript(controllerUrl)).digest('hex');
  const pin = packageSha256 ? ` RC_SHA256=${packageSha256}` : '';
  return (
    `curl -fsSL ${controllerUrl}/install.sh -o ${SAVED_AS} && echo '${script}  ${SAVED_AS}' | sha256sum -c - && ` +
    `sudo RC_HOST_TOKEN=${credential}${pin} sh ${SAVED_AS}`
  );
}

/**
 * A warning for commands that install from `controllerUrl` when it is plain
 * HTTP to another machine: what they send and fetch crosses the network in
 * clear. Null for HTTPS and for this machine (localhost, 127.0.0.0/8, ::1).
 */
export function plainHttpWarning(controllerUrl: string): string | null {
  let url: URL;
  try {
    url = new URL(controllerUrl);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' || /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/.test(url.hostname)) return null;
  return (
    `${url.origin} is plain HTTP: the host's key crosses the network in clear, and the install is only as trustworthy as the network ` +
    'and the way this command reaches the host (its pins refuse a script or package swapped on the way). Serve the controller over HTTPS ' +
    '(a TLS proxy, RC_PUBLIC_URL=https://…): docs/operators.md, "HTTPS"'
  );
}

/** The script, for a controller reached at `controllerUrl` (no trailing slash). */
export function installScript(controllerUrl: string): string {
  // The URL goes in single quotes: a quote in it (it comes from the Host header or RC_PUBLIC_URL) cannot end them.
  const url = controllerUrl.replace(/'/g, '');
  return SCRIPT.replace('__CONTROLLER__', url);
}

const SCRIPT = `#!/bin/sh
# rc worker installer, served by the rc controller.
#   curl -fsSL <controller>/install.sh | sudo RC_HOST_TOKEN=rc_h_... sh    install, or update
#   curl -fsSL <controller>/install.sh | sudo sh -s uninstall              remove it
# RC_SHA256=<sha256> installs only a worker package with that SHA-256 (rc admin
# host add prints a command that pins it, and this script's own SHA-256).
# RC_INSTALL_ROOT=<dir> installs under another root (no systemd there: the
# worker is started in the background). RC_INSTALL_NO_START=1 only installs.
set -eu
CONTROLLER='__CONTROLLER__'
ROOT="\${RC_INSTALL_ROOT:-}"
ROOT="\${ROOT%/}"
APP="$ROOT/opt/rc-worker"
ETC="$ROOT/etc/rc-worker"
STATE="$ROOT/var/lib/rc-worker"
UNIT="$ROOT/etc/systemd/system/rc-worker.service"

say() { printf 'rc-install: %s\\n' "$*"; }
die() { printf 'rc-install: %s\\n' "$*" >&2; exit 1; }
warn() { printf 'rc-install: warning: %s\\n' "$*" >&2; }
has_systemd() { [ -z "$ROOT" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

# fetch URL FILE [KEY]: the body into FILE; fails on an HTTP error.
fetch() {
  if command -v curl >/dev/null 2>&1; then
    if [ -n "\${3:-}" ]; then curl -fsS -H "Authorization: Bearer $3" -o "$2" "$1"; else curl -fsS -o "$2" "$1"; fi
  else
    if [ -n "\${3:-}" ]; then wget -q --header="Authorization: Bearer $3" -O "$2" "$1"; else wget -q -O "$2" "$1"; fi
  fi
}

stop_worker() {
  if has_systemd && [ -f "$UNIT" ]; then systemctl stop rc-worker 2>/dev/null || true; fi
  if [ -f "$STATE/background.pid" ]; then
    pid=$(cat "$STATE/background.pid")
    if kill "$pid" 2>/dev/null; then
      # Its jobs are stopped first (the worker's SIGTERM): wait for it.
      i=0
      while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    fi
    rm -f "$STATE/background.pid"
  fi
}

if [ -z "$ROOT" ] && [ "$(id -u)" != 0 ]; then die "run it as root: curl -fsSL $CONTROLLER/install.sh | sudo ... sh"; fi

if [ "\${1:-}" = uninstall ]; then
  stop_worker
  if has_systemd && [ -f "$UNIT" ]; then
    systemctl disable rc-worker 2>/dev/null || true
    rm -f "$UNIT"
    systemctl daemon-reload || true
  fi
  rm -rf "$APP" "$ETC" "$STATE"
  say "rc-worker is removed from this host (its files, its key, its state). The host stays registered on the controller: rc admin host rm <name> removes it there."
  exit 0
fi

# The pinned package: 64 hex digits, checked before anything is fetched.
PIN=$(printf '%s' "\${RC_SHA256:-}" | tr 'A-F' 'a-f')
if [ -n "$PIN" ]; then
  case "$PIN" in *[!0-9a-f]*) PIN=bad ;; esac
  [ \${#PIN} -eq 64 ] || die "RC_SHA256 is not a SHA-256 (64 hex digits): give the worker package's, as rc admin host add prints it, or leave it out"
fi
case "$CONTROLLER" in
  http://localhost | http://localhost[:/]* | http://127.* | http://\\[::1\\]*) ;;
  http://*) warn "$CONTROLLER is plain HTTP: this host's key crosses the network in clear, and what is installed is only as trustworthy as the network; serve the controller over HTTPS (the HTTPS section of docs/operators.md)" ;;
esac

# ---- what the host needs ----
missing=""
need() { missing="$missing
  - $1"; }
if command -v node >/dev/null 2>&1; then
  node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=16)?0:1)' ||
    need "Node.js 20.16 or newer (this host has $(node --version)): https://nodejs.org, or your distribution's nodejs package"
else
  need "Node.js 20.16 or newer (node is not on PATH): https://nodejs.org, or your distribution's nodejs package"
fi
command -v curl >/dev/null 2>&1 || command -v wget >/dev/null 2>&1 || need "curl or wget"
command -v tar >/dev/null 2>&1 || need "tar"
command -v sha256sum >/dev/null 2>&1 || need "sha256sum (coreutils)"
if [ -n "$missing" ]; then die "this host is missing what the worker needs:$missing
Install them and run the same command again."; fi

KEY="\${RC_HOST_TOKEN:-}"
if [ -z "$KEY" ] && [ -f "$ETC/env" ]; then KEY=$(sed -n 's/^RC_HOST_TOKEN=//p' "$ETC/env"); fi
[ -n "$KEY" ] || die "RC_HOST_TOKEN is not set: run the command that rc admin host add <name> printed (it carries the host's key)"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if ! fetch "$CONTROLLER/api/worker/whoami" "$TMP/whoami" "$KEY"; then
  die "the controller at $CONTROLLER refused this key or did not answer: a key works only for the host it was made for, and not once revoked (rc admin host add <name> prints a new one)"
fi
NAME=$(node -e 'const h=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).host;if(!h)process.exit(1);console.log(h)' "$TMP/whoami") ||
  die "the key is not a host's key: rc admin host add <name> prints one"
say "joining $CONTROLLER as host $NAME"

if command -v docker >/dev/null 2>&1; then
  if docker info >/dev/null 2>&1; then
    if docker info 2>/dev/null | grep -qi 'runtimes:.*nvidia'; then say "docker: running, with the NVIDIA runtime (RC_RUNTIME=docker runs jobs in containers)"
    else say "docker: running, without the NVIDIA runtime: containers would not see the GPUs (install nvidia-container-toolkit for RC_RUNTIME=docker)"; fi
  else say "docker: installed but not answering (the worker runs jobs on the host; start dockerd for RC_RUNTIME=docker)"; fi
else say "docker: not installed (the worker runs jobs on the host)"; fi
if command -v nvidia-smi >/dev/null 2>&1; then say "GPUs: $(nvidia-smi -L 2>/dev/null | wc -l) (nvidia-smi)"
else say "GPUs: none found (no nvidia-smi): this host offers CPU slots"; fi

# ---- the package ----
fetch "$CONTROLLER/api/worker/package" "$TMP/rc-worker.tar.gz" "$KEY" || die "could not download the worker package from $CONTROLLER"
fetch "$CONTROLLER/api/worker/package/sha256" "$TMP/sha256" "$KEY" || die "could not download the worker package's SHA-256 from $CONTROLLER"
want=$(cut -c1-64 "$TMP/sha256")
got=$(sha256sum "$TMP/rc-worker.tar.gz" | cut -c1-64)
if [ -n "$PIN" ]; then
  [ "$got" = "$PIN" ] ||
    die "the worker package's SHA-256 is $got, not $PIN as RC_SHA256 pins it: it was altered on the way, or the controller was upgraded since the command was printed (rc admin host add prints one with the new pins); nothing was installed"
  say "package $(cut -c67- "$TMP/sha256") verified (sha256 $got, as RC_SHA256 pins it)"
else
  [ "$want" = "$got" ] || die "the worker package's SHA-256 is $got, not $want as the controller says: the download is damaged or was altered; nothing was installed"
  say "package $(cut -c67- "$TMP/sha256") verified (sha256 $got); not pinned: that SHA-256 came from the controller with the package (RC_SHA256 pins it: rc admin host add prints a command that does)"
fi
mkdir -p "$TMP/new"
tar -xzf "$TMP/rc-worker.tar.gz" -C "$TMP/new"
if ! (cd "$TMP/new/rc-worker" && node -e 'require("node-pty")') 2>/dev/null; then
  say "node-pty's prebuilt binary does not load here ($(uname -m), Node $(node --version)); building it"
  for tool in make g++ python3; do command -v $tool >/dev/null 2>&1 || need "$tool (to build node-pty for this host)"; done
  if [ -n "$missing" ]; then die "this host is missing what building node-pty needs:$missing
Install them and run the same command again."; fi
  (cd "$TMP/new/rc-worker" && npm rebuild node-pty >/dev/null) || die "building node-pty failed: run npm rebuild node-pty in $APP by hand to see why"
fi

# ---- install: the files, the key, the service ----
stop_worker
mkdir -p "$ROOT/opt" "$STATE/workspace"
rm -rf "$APP.old"
[ ! -d "$APP" ] || mv "$APP" "$APP.old"
mv "$TMP/new/rc-worker" "$APP"
rm -rf "$APP.old"
old_umask=$(umask)
umask 077
mkdir -p "$ETC"
cat > "$ETC/env" <<EOF
RC_CONTROLLER=$CONTROLLER
RC_HOST_TOKEN=$KEY
RC_HOST_NAME=$NAME
RC_WORKSPACE=$STATE/workspace
RC_STATE_DIR=$STATE
EOF
chmod 600 "$ETC/env"
umask "$old_umask"
cat > "$APP/rc-worker" <<EOF
#!/bin/sh
# Runs the worker with its settings (the key among them: $ETC/env, readable by root only).
set -a
. "$ETC/env"
set +a
exec node "$APP/rc-worker.cjs" "\\$@"
EOF
chmod 755 "$APP/rc-worker"

if [ "\${RC_INSTALL_NO_START:-}" = 1 ]; then
  say "installed; not started (RC_INSTALL_NO_START=1). Start it with: $APP/rc-worker"
elif has_systemd; then
  mkdir -p "$(dirname "$UNIT")"
  cat > "$UNIT" <<EOF
[Unit]
Description=rc worker ($NAME)
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=$APP/rc-worker
Restart=always
RestartSec=2
# 78: the host was removed (rc admin host rm): the worker stopped for good.
# 75: another worker holds this host (one credential used twice): a person must stop one of them.
RestartPreventExitStatus=78 75
Delegate=yes

[Install]
WantedBy=multi-user.target
EOF
  systemctl daemon-reload
  systemctl enable rc-worker >/dev/null 2>&1
  systemctl restart rc-worker
  say "rc-worker runs as the systemd unit rc-worker (journalctl -u rc-worker for its log)"
else
  nohup "$APP/rc-worker" >> "$STATE/worker.log" 2>&1 &
  echo $! > "$STATE/background.pid"
  say "no systemd here: rc-worker was started in the background (pid $(cat "$STATE/background.pid"), log $STATE/worker.log)."
  say "It is not restarted if it stops, nor started at boot: run $APP/rc-worker under your own supervisor (runit, s6, a container's init) instead."
fi

say "checking it: rc-worker doctor"
if "$APP/rc-worker" doctor; then say "done: host $NAME is installed"; else say "rc-worker doctor found problems (above); the worker is installed"; fi
`;

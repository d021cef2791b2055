#!/usr/bin/env bash
# Makes a base image from Debian's archive, without a registry: mmdebstrap
# builds a root file system of Debian stable with the packages named, and
# `docker import` turns it into the image (docker/worker-image/build.sh does the
# same for the stock job image). The controller, Postgres and proxy images of
# compose.yaml start FROM these.
#
#   docker/debian-base.sh [--force] TAG PACKAGE...
#
#   --force   build even when TAG is there (default: keep it, exit 0)
#
# Environment: DEBIAN_MIRROR (http://deb.debian.org/debian),
# DEBIAN_SECURITY_MIRROR (http://deb.debian.org/debian-security). Needs docker,
# and mmdebstrap run as root. Exit status: 0 built or already there, 1 the
# build failed, 2 bad usage or a missing tool.
set -euo pipefail
force=0
if [ "${1:-}" = --force ]; then force=1; shift; fi
[ $# -ge 2 ] || { echo "debian-base.sh: usage: debian-base.sh [--force] TAG PACKAGE..." >&2; exit 2; }
tag="$1"
shift
case "$tag" in
  ''|*[!A-Za-z0-9._/:@-]*|[!A-Za-z0-9]*) echo "debian-base.sh: TAG must be an image reference like rc-base:node" >&2; exit 2 ;;
esac
command -v docker >/dev/null || { echo "debian-base.sh: docker is not installed" >&2; exit 2; }
if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag is already there ($(docker image inspect -f '{{index .Config.Labels "rc.base"}}' "$tag")); --force builds it again"
  exit 0
fi
command -v mmdebstrap >/dev/null || { echo "debian-base.sh: mmdebstrap is not installed: apt-get install mmdebstrap" >&2; exit 2; }
debian="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
release="$(curl -fsS --max-time 15 "$debian/dists/stable/Release" 2>/dev/null | sed -n '1,20p')" ||
  { echo "debian-base.sh: Debian's archive ($debian) does not answer; set DEBIAN_MIRROR" >&2; exit 1; }
codename="$(sed -n 's/^Codename: //p' <<<"$release" | head -n1)"
version="$(sed -n 's/^Version: //p' <<<"$release" | head -n1)"
base="debian ${version%%.*} ($codename)"
sources=("deb $debian $codename main" "deb $debian $codename-updates main")
if curl -fsS --max-time 15 -o /dev/null "$security/dists/$codename-security/Release"; then sources+=("deb $security $codename-security main"); fi
packages="$*"
started=$(date +%s)
echo "building $tag from $base with: $packages"
# minbase: no apt in the image, only what the packages need. Documentation and
# manuals go; copyright files stay. apt's lists and caches are not kept.
mmdebstrap --variant=minbase --include="${packages// /,}" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
  "$codename" - "${sources[@]}" |
  docker import \
    --change 'ENV LANG=C.UTF-8 LC_ALL=C.UTF-8' \
    --change 'CMD ["bash"]' \
    --change "LABEL rc.base=\"$base\" rc.contents=\"$packages\"" \
    - "$tag" >/dev/null
echo "built $tag from $base in $(($(date +%s) - started)) s"

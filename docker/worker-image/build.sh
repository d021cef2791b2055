#!/usr/bin/env bash
# Builds rc's stock job image (RC_DOCKER_IMAGE's default, rc-job:stock) with
# the packages listed in ./packages, without a registry: mmdebstrap makes the
# root file system from a package archive and `docker import` turns it into
# the image. Ubuntu 24.04 (noble) when Ubuntu's archive answers and its
# keyring is here to check it with; otherwise the current Debian stable with
# the same packages. It says which it built, and so does the image's rc.base
# label (rc describe: image_base). Where a registry is reachable,
# --dockerfile builds ./Dockerfile (FROM ubuntu:24.04) instead.
#
#   docker/worker-image/build.sh [--tag NAME] [--force] [--debian | --dockerfile]
#
#   --tag NAME     the image's name (default: $RC_DOCKER_IMAGE, else rc-job:stock)
#   --force        build even when the image is there (default: keep it, exit 0)
#   --debian       Debian stable, without trying Ubuntu
#   --dockerfile   docker build of ./Dockerfile (needs Docker Hub or a mirror of it)
#
# Environment: UBUNTU_MIRROR (http://archive.ubuntu.com/ubuntu), DEBIAN_MIRROR
# (http://deb.debian.org/debian), DEBIAN_SECURITY_MIRROR
# (http://deb.debian.org/debian-security), UBUNTU_KEYRING
# (/usr/share/keyrings/ubuntu-archive-keyring.gpg, from the ubuntu-keyring
# package). Needs docker, and mmdebstrap run as root (apt-get install
# mmdebstrap). Exit status: 0 built or already there, 1 the build failed,
# 2 bad usage or a missing tool.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tag="${RC_DOCKER_IMAGE:-rc-job:stock}"
force=0
mode=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) [ $# -ge 2 ] || { echo "build.sh: --tag needs a name" >&2; exit 2; }; tag="$2"; shift 2 ;;
    --force) force=1; shift ;;
    --debian) mode=debian; shift ;;
    --dockerfile) mode=dockerfile; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$tag" in
  ''|*[!A-Za-z0-9._/:@-]*|[!A-Za-z0-9]*) echo "build.sh: --tag must be an image reference like rc-job:stock" >&2; exit 2 ;;
esac
command -v docker >/dev/null || { echo "build.sh: docker is not installed" >&2; exit 2; }
if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag is already there ($(docker image inspect -f '{{index .Config.Labels "rc.base"}}' "$tag")); --force builds it again"
  exit 0
fi

packages="$(grep -v '^#' "$here/packages" | grep -v '^[[:space:]]*$' | paste -sd' ')"
started=$(date +%s)
done_msg() { echo "built $tag from $1 in $(($(date +%s) - started)) s"; }

if [ "$mode" = dockerfile ]; then
  docker build --build-arg RC_CONTENTS="$packages" -t "$tag" "$here"
  done_msg "ubuntu 24.04 (noble), with docker build"
  exit 0
fi

command -v mmdebstrap >/dev/null || { echo "build.sh: mmdebstrap is not installed: apt-get install mmdebstrap (or use --dockerfile where a registry is reachable)" >&2; exit 2; }
ubuntu="${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}"
debian="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
keyring="${UBUNTU_KEYRING:-/usr/share/keyrings/ubuntu-archive-keyring.gpg}"
answers() { curl -fsS --max-time 15 -o /dev/null "$1"; }

keyopt=()
if [ "$mode" = auto ] && answers "$ubuntu/dists/noble/Release" && [ -r "$keyring" ]; then
  base="ubuntu 24.04 (noble)"
  suite=noble
  sources=("deb $ubuntu noble main universe" "deb $ubuntu noble-updates main universe" "deb $ubuntu noble-security main universe")
  keyopt=(--keyring="$keyring")
else
  if [ "$mode" = auto ]; then
    if [ -r "$keyring" ]; then why="Ubuntu's archive ($ubuntu) does not answer"; else why="no Ubuntu keyring to check its archive with ($keyring: apt-get install ubuntu-keyring, or set UBUNTU_KEYRING)"; fi
    echo "build.sh: $why; building Debian stable with the same packages"
  fi
  release="$(curl -fsS --max-time 15 "$debian/dists/stable/Release")" || { echo "build.sh: Debian's archive ($debian) does not answer either; set DEBIAN_MIRROR" >&2; exit 1; }
  codename="$(sed -n 's/^Codename: //p' <<<"$release" | head -n1)"
  version="$(sed -n 's/^Version: //p' <<<"$release" | head -n1)"
  base="debian ${version%%.*} ($codename)"
  suite="$codename"
  sources=("deb $debian $codename main" "deb $debian $codename-updates main")
  if answers "$security/dists/$codename-security/Release"; then sources+=("deb $security $codename-security main"); fi
fi

echo "building $tag from $base with: $packages"
# Documentation and manuals go (a third of the size); copyright files stay.
mmdebstrap --variant=apt --include="${packages// /,}" "${keyopt[@]}" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='mkdir -p "$1/workspace" "$1/scratch"' \
  "$suite" - "${sources[@]}" |
  docker import \
    --change 'ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 LC_ALL=C.UTF-8 PIP_DISABLE_PIP_VERSION_CHECK=1' \
    --change 'WORKDIR /workspace' \
    --change 'CMD ["bash"]' \
    --change "LABEL rc.base=\"$base\" rc.contents=\"$packages\"" \
    - "$tag" >/dev/null
done_msg "$base"

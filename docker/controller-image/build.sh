#!/usr/bin/env bash
# Builds rc's controller image (rc-controller:latest) without a registry: its
# base, rc-base:node (Node, tini, bash), is made from Debian's archive by
# docker/debian-base.sh (mmdebstrap and docker import, as the stock job image
# is), then ./Dockerfile builds the repository on it (multi-stage: the build,
# then only Node, dist/, the dashboard's .next build and production
# node_modules). The build reads this checkout's node_modules: run `npm ci`
# first.
#
#   docker/controller-image/build.sh [--tag NAME] [--force]
#
#   --tag NAME   the image's name (default: rc-controller:latest)
#   --force      build even when the image is there (default: keep it, exit 0);
#                the base is kept either way (docker/debian-base.sh --force
#                rc-base:node ... builds it again)
#
# Exit status: 0 built or already there, 1 the build failed, 2 bad usage or a
# missing tool.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tag=rc-controller:latest
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) [ $# -ge 2 ] || { echo "build.sh: --tag needs a name" >&2; exit 2; }; tag="$2"; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v docker >/dev/null || { echo "build.sh: docker is not installed" >&2; exit 2; }
if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag is already there; --force builds it again"
  exit 0
fi
[ -d "$root/node_modules/next" ] || { echo "build.sh: $root/node_modules is missing: run npm ci first (the image is built from it, with no registry)" >&2; exit 2; }
"$root/docker/debian-base.sh" rc-base:node nodejs ca-certificates tini
started=$(date +%s)
# The classic builder: it takes FROM a local image as it is (no registry lookup).
DOCKER_BUILDKIT=0 docker build --build-arg BASE=rc-base:node -f "$here/Dockerfile" -t "$tag" "$root"
echo "built $tag in $(($(date +%s) - started)) s ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1e6}'))"

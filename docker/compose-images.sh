#!/usr/bin/env bash
# Builds the images compose.yaml runs, each from Debian's archive (no
# registry): rc-controller:latest (docker/controller-image/build.sh),
# rc-postgres:latest (Debian's postgresql) and rc-proxy:latest (Debian's
# nginx). An image already there is kept; --force builds all three again
# (their bases are kept: docker/debian-base.sh --force builds one again).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
force=()
[ "${1:-}" != --force ] || force=(--force)
"$root/docker/controller-image/build.sh" "${force[@]}"
for spec in "rc-postgres:latest rc-base:postgres postgres-image postgresql" "rc-proxy:latest rc-base:nginx proxy-image nginx"; do
  read -r tag base dir packages <<<"$spec"
  if [ "${#force[@]}" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "$tag is already there; --force builds it again"
    continue
  fi
  "$root/docker/debian-base.sh" "$base" $packages
  DOCKER_BUILDKIT=0 docker build -q --build-arg BASE="$base" -t "$tag" "$root/docker/$dir" >/dev/null
  echo "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1e6}'))"
done

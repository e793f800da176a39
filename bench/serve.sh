#!/bin/bash
# sbx serve: what the Docker Engine API costs over sbx's own CLI, on the
# busybox test image (hyperfine, warm): `docker run --rm IMAGE true` through
# sbx serve beside `sbx run IMAGE true`, and `docker exec` beside `sbx exec`
# into one long-lived container. (podman system service: not measured yet.)
# Usage: bench/serve.sh [SBX] [RUNS]   (root; tests/images/out built; docker CLI)
set -eu
SBX=$(readlink -f "${1:-$(dirname "$0")/../build/sbx}")
RUNS=${2:-30}
IMAGES=${SBX_IMAGES:-$(cd "$(dirname "$0")/../tests/images/out" && pwd)}
T=$(mktemp -d /tmp/sbx-bench-serve.XXXXXX)
export SBX_ROOT=$T/root SBX_RUN_ROOT=$T/run DOCKER_HOST=unix://$T/docker.sock DOCKER_CONFIG=$T/docker-config
SERVER=""
cleanup() {
  docker rm -f bench-serve >/dev/null 2>&1 || true
  [ -n "$SERVER" ] && kill "$SERVER" && wait "$SERVER" 2>/dev/null
  for id in $("$SBX" ps -aq --no-trunc 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  rm -rf "$T"
}
trap cleanup EXIT
"$SBX" import -q "$IMAGES/busybox-oci" busybox >/dev/null
"$SBX" serve --socket "$T/docker.sock" 2>/dev/null &
SERVER=$!
for _ in $(seq 100); do [ -S "$T/docker.sock" ] && break; sleep 0.05; done
docker run -d --name bench-serve busybox tail -f /dev/null >/dev/null
hyperfine -N --warmup 3 --runs "$RUNS" --export-markdown "$T/out.md" \
  -n 'docker run --rm busybox true (sbx serve)' 'docker run --rm busybox true' \
  -n 'sbx run busybox true' "$SBX run busybox true" \
  -n 'docker exec (sbx serve)' 'docker exec bench-serve true' \
  -n 'sbx exec' "$SBX exec bench-serve true"
cat "$T/out.md"

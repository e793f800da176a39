#!/bin/bash
# The `pull` scenario: the python test image from a loopback registry
# (Debian's docker-registry on 127.0.0.1, plain HTTP, temp storage) into an
# empty store, RUNS times each, interleaved: `sbx pull`; `skopeo copy` to an
# OCI dir followed by `sbx import` of it; `skopeo copy` alone; and
# `podman pull` (when podman is installed; its own temp --root, vfs or
# overlay as podman picks). Prints the median wall time of each in ms.
# Usage: bench/pull.sh [SBX] [RUNS]   (root; tests/images/out/python-oci built)
set -eu
SBX=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/sbx}
RUNS=${2:-5}
IMAGES=${SBX_IMAGES:-$(cd "$(dirname "$0")/../tests/images/out" && pwd)}
T=$(mktemp -d /tmp/sbx-bench-pull.XXXXXX)
REG=""
cleanup() {
  [ -n "$REG" ] && kill "$REG" 2>/dev/null && wait "$REG" 2>/dev/null
  findmnt -rn -o TARGET | grep -F "$T/" | sort -r | while read -r m; do umount "$m" || umount -l "$m"; done
  rm -rf "$T"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$T/config.yml" <<YML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $T/storage
http:
  addr: 127.0.0.1:$PORT
YML
env -u REGISTRY_AUTH_FILE docker-registry serve "$T/config.yml" >"$T/reg.log" 2>&1 &
REG=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/v2/" && break; sleep 0.1; done
R=127.0.0.1:$PORT/python:latest
skopeo copy -q --dest-tls-verify=false "oci:$IMAGES/python-oci:latest" "docker://$R" >/dev/null
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
sbx_pull() { rm -rf "$T/s"; ms "$SBX" --root "$T/s" pull -q "$R"; }
skopeo_only() { rm -rf "$T/o"; ms skopeo copy -q --src-tls-verify=false "docker://$R" "oci:$T/o:latest"; }
skopeo_import() {
  rm -rf "$T/o" "$T/s"
  local a b
  a=$(ms skopeo copy -q --src-tls-verify=false "docker://$R" "oci:$T/o:latest")
  b=$(ms "$SBX" --root "$T/s" import -q "$T/o" python)
  echo $((a + b))
}
have_podman=0
command -v podman >/dev/null && have_podman=1
podman_pull() {
  [ -d "$T/p" ] && podman --root "$T/p" --runroot "$T/pr" rmi -af >/dev/null 2>&1 || true
  rm -rf "$T/p" "$T/pr"
  ms podman --root "$T/p" --runroot "$T/pr" --runtime runc --cgroup-manager=cgroupfs pull -q --tls-verify=false "$R"
}
for f in sbx skopeo_import skopeo podman; do : >"$T/$f"; done
sbx_pull >/dev/null  # warm-up (page cache)
for _ in $(seq "$RUNS"); do
  sbx_pull >>"$T/sbx"
  skopeo_import >>"$T/skopeo_import"
  skopeo_only >>"$T/skopeo"
  [ $have_podman = 1 ] && podman_pull >>"$T/podman"
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}'; }
echo "python image ($(du -sh "$IMAGES/python-oci" | cut -f1) compressed), $RUNS runs, median wall ms:"
echo "  sbx pull:                  $(median "$T/sbx")"
echo "  skopeo copy + sbx import:  $(median "$T/skopeo_import")"
echo "  skopeo copy (OCI dir):     $(median "$T/skopeo")"
[ $have_podman = 1 ] && echo "  podman pull:               $(median "$T/podman")"
[ $have_podman = 1 ] && awk -v a="$(median "$T/sbx")" -v b="$(median "$T/podman")" 'BEGIN {printf "  sbx / podman:              %.2fx\n", a / b}'
true

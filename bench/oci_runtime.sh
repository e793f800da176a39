#!/bin/bash
# sbx-runc beside runc as the OCI runtime of the same client (target
# >= 1.5x faster than runc through the same client), interleaved (runc,
# sbx-runc, runc, ...: drift on the host hits both alike):
#   1. `podman run --rm busybox true` with --runtime runc / sbx-runc (podman's
#      own work -- storage, conmon, cleanup -- is in both);
#   2. `ctr run --rm busybox true` with --runc-binary runc / sbx-runc, through a
#      containerd started here (own root, state, socket; no CRI plugin);
#   3. `runc run` / `sbx-runc run` of one bundle (busybox rootfs, `runc spec`'s
#      config.json, no network namespace joined): the runtime alone.
# Prints medians and the ratio runc/sbx-runc (> 1: sbx-runc is faster).
# Usage: bench/oci_runtime.sh [SBX_RUNC] [RUNS]   (root; podman, containerd, runc; tests/images/out built)
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
SBXRUNC=${1:-$HERE/build/sbx-runc} RUNS=${2:-20}
SBXRUNC=$(cd "$(dirname "$SBXRUNC")" && pwd)/$(basename "$SBXRUNC")  # absolute, the symlink kept (argv[0])
RUNC=$(command -v runc)
IMAGES=${SBX_IMAGES:-$HERE/tests/images/out}
T=$(mktemp -d /tmp/sbx-bench-oci.XXXXXX)
CGP=/sbx-bench-oci-$$
P=(podman --root "$T/proot" --runroot "$T/prun" --tmpdir "$T/ptmp" --events-backend none --cgroup-manager cgroupfs)
OPTS=(--network none --cgroup-parent "$CGP" --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
CPID=""
cleanup() {
  if [ -n "$CPID" ]; then kill "$CPID" 2>/dev/null; wait "$CPID" 2>/dev/null; fi
  [ "$RUN_CONTAINERD_EXISTED" = 1 ] || rm -rf /run/containerd
  "${P[@]}" rm -a -f >/dev/null 2>&1 || true
  "${P[@]}" rmi -a -f >/dev/null 2>&1 || true
  grep -F " $T/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount "$m" 2>/dev/null; done
  for d in /sys/fs/cgroup/*/"${CGP#/}"; do
    [ -d "$d" ] && { find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null; rmdir "$d" 2>/dev/null; }
  done
  rm -rf "$T"
}
RUN_CONTAINERD_EXISTED=0; [ -e /run/containerd ] && RUN_CONTAINERD_EXISTED=1
trap cleanup EXIT
mkdir -p "$T/ctrd"
printf 'version = 2\nroot = "%s/root"\nstate = "%s/state"\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "%s/c.sock"\n[ttrpc]\n  address = "%s/c.sock.ttrpc"\n' \
  "$T/ctrd" "$T/ctrd" "$T/ctrd" "$T/ctrd" >"$T/ctrd/config.toml"
containerd --config "$T/ctrd/config.toml" >"$T/ctrd/log" 2>&1 &
CPID=$!
CT=(ctr --address "$T/ctrd/c.sock")
for _ in $(seq 100); do "${CT[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
"${CT[@]}" image import --base-name localhost/busybox "$IMAGES/busybox.oci.tar" >/dev/null
"${P[@]}" load -q -i "$IMAGES/busybox.oci.tar" >/dev/null
"${P[@]}" tag localhost/latest localhost/busybox
mkdir -p "$T/bundle/rootfs"
cid=$("${P[@]}" create --network none localhost/busybox true)
"${P[@]}" export "$cid" | tar -x -C "$T/bundle/rootfs"
"${P[@]}" rm "$cid" >/dev/null
(cd "$T/bundle" && "$RUNC" spec && python3 - <<'PY'
import json
c = json.load(open("config.json"))
c["process"]["terminal"] = False
c["process"]["args"] = ["true"]
c["linux"]["cgroupsPath"] = "CGP/bench"
json.dump(c, open("config.json", "w"))
PY
sed -i "s#CGP/bench#$CGP/bench#" config.json)

ms() {  # CMD...: its wall time in µs; a failure stops the bench
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>"$T/err" || { echo "failed: $* ($(cat "$T/err"))" >&2; exit 1; }
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000 ))
}
podman_run() { "${P[@]}" --runtime "$1" run --rm "${OPTS[@]}" localhost/busybox true; }
ctr_run() { "${CT[@]}" run --rm --runtime io.containerd.runc.v2 --runc-binary "$1" --cgroup "$CGP/ctr" localhost/busybox:latest "b$RANDOM$RANDOM" true; }
direct_run() { "$1" --root "$T/state-$(basename "$1")" run --bundle "$T/bundle" "bench$RANDOM$RANDOM"; }

for kind in podman_run ctr_run direct_run; do
  : >"$T/a"; : >"$T/b"
  ms "$kind" "$RUNC" >/dev/null; ms "$kind" "$SBXRUNC" >/dev/null  # warm-up
  for _ in $(seq "$RUNS"); do ms "$kind" "$RUNC" >>"$T/a"; ms "$kind" "$SBXRUNC" >>"$T/b"; done
  python3 - "$T/a" "$T/b" "$kind" <<'PY'
import statistics as s, sys
a = [int(x) / 1000 for x in open(sys.argv[1])]
b = [int(x) / 1000 for x in open(sys.argv[2])]
what = {"podman_run": "podman run --rm busybox true", "ctr_run": "ctr run --rm busybox true",
        "direct_run": "<runtime> run (bundle, true)"}[sys.argv[3]]
for name, v in (("runc", a), ("sbx-runc", b)):
    print("%-32s %-9s n=%d median %6.1f ms  p90 %6.1f  min %6.1f" % (what, name, len(v), s.median(v),
          sorted(v)[int(0.9 * (len(v) - 1))], min(v)))
print("%-32s ratio runc/sbx-runc (median): %.2fx" % (what, s.median(a) / s.median(b)))
PY
done

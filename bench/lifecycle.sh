#!/bin/bash
# Long-lived sandboxes: `exec -- true` latency of sbx, runc and podman on the
# same busybox image (hyperfine), and host memory per idle sandbox (N holders).
# Usage: bench/lifecycle.sh [SBX] [N]   (root; tests/images/out built)
set -eu
SBX=${1:-$(dirname "$0")/../build/sbx}
N=${2:-200}
IMAGES=${SBX_IMAGES:-$(cd "$(dirname "$0")/../tests/images/out" && pwd)}
T=$(mktemp -d /tmp/sbx-bench-life.XXXXXX)
S() { "$SBX" --root "$T/root" --run-root "$T/run" "$@"; }
cleanup() {
  runc --root "$T/runc" kill bench-runc KILL 2>/dev/null || true; sleep 0.2
  runc --root "$T/runc" delete -f bench-runc 2>/dev/null || true
  podman rm -f bench-podman >/dev/null 2>&1 || true
  for id in $(S ps -aq --no-trunc 2>/dev/null); do S rm -f "$id" >/dev/null 2>&1; done
  umount "$T/bundle/rootfs" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
S import "$IMAGES/busybox-oci" busybox >/dev/null
ID=$(S create busybox)

# runc: a bundle whose rootfs is the same image's layers (overlay), sleeping init.
mkdir -p "$T/bundle/rootfs" "$T/upper" "$T/work"
LOWER=$(S inspect busybox | python3 -c 'import json,sys; print(":".join(reversed(json.load(sys.stdin)["LayerDirs"])))')
mount -t overlay overlay -o "lowerdir=$LOWER,upperdir=$T/upper,workdir=$T/work" "$T/bundle/rootfs"
(cd "$T/bundle" && runc spec && python3 - <<'PY'
import json; c=json.load(open("config.json")); c["process"]["args"]=["sleep","100000"]; c["process"]["terminal"]=False
json.dump(c,open("config.json","w"))
PY
)
runc --root "$T/runc" run -d --bundle "$T/bundle" bench-runc >/dev/null 2>&1 </dev/null
# podman
podman load -i "$IMAGES/busybox.docker.tar" >/dev/null 2>&1 || true
PIMG=$(podman images --format '{{.Id}}' | head -1)
podman run -d --name bench-podman --runtime runc --cgroup-manager=cgroupfs --ulimit nofile=1024:1024 \
  --ulimit nproc=1024:1024 --network none "$PIMG" sleep 100000 >/dev/null 2>&1 || echo "podman run failed"
hyperfine -N --warmup 5 --runs 100 --export-markdown "$T/exec.md" --export-json "$T/exec.json" \
  -n "sbx exec" "$SBX --root $T/root --run-root $T/run exec $ID -- true" \
  -n "runc exec" "runc --root $T/runc exec bench-runc true" \
  -n "podman exec" "podman exec bench-podman true" 2>&1 | grep -vE '^\s*$'
cat "$T/exec.md"
python3 -c 'import json,sys; [print("median %-12s %.1f ms  (min %.1f)" % (r["command"], 1000*r["median"], 1000*r["min"])) for r in json.load(open(sys.argv[1]))["results"]]' "$T/exec.json"

# Memory: N idle (hold-only) sandboxes.
for id in $(S ps -aq --no-trunc); do S rm -f "$id" >/dev/null; done
sync; echo 3 > /proc/sys/vm/drop_caches
before=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
for i in $(seq "$N"); do S create busybox >/dev/null; done
sleep 1
after=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
pss=0; rss=0
for d in "$T/run"/*/; do
  pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$d/state.json")
  p=$(awk '/^Pss:/ {print $2}' /proc/$pid/smaps_rollup); r=$(awk '/^Rss:/ {print $2}' /proc/$pid/smaps_rollup)
  pss=$((pss + p)); rss=$((rss + r))
done
echo "idle sandboxes: $N"
echo "MemAvailable drop: $(( (before - after) / N )) KiB per sandbox (kernel + processes; includes page cache noise)"
echo "holder PSS: $((pss / N)) KiB per sandbox; holder RSS: $((rss / N)) KiB per sandbox"

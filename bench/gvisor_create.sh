#!/bin/bash
# `sbx create --runtime gvisor` latency of two sbx binaries, interleaved
# (A, B, A, B, ...: drift on the host hits both alike), each sandbox removed
# after it is timed. For before/after comparisons of the gVisor start path.
# Usage: bench/gvisor_create.sh SBX_A SBX_B [RUNS]   (root; tests/images/out built)
set -eu
A=$1 B=$2 RUNS=${3:-20}
IMAGES=${SBX_IMAGES:-$(cd "$(dirname "$0")/../tests/images/out" && pwd)}
T=$(mktemp -d /tmp/sbx-bench-gcreate.XXXXXX)
cleanup() {
  for s in "$A" "$B"; do
    for id in $("$s" --root "$T/root" --run-root "$T/run" ps -aq --no-trunc 2>/dev/null); do
      "$s" --root "$T/root" --run-root "$T/run" rm -f "$id" >/dev/null 2>&1 || true
    done
  done
  rm -rf "$T"
}
trap cleanup EXIT
"$A" --root "$T/root" --run-root "$T/run" import "$IMAGES/busybox-oci" busybox >/dev/null
one() {  # SBX: prints the create's wall time in ms
  local t0 t1 id
  t0=$(date +%s%N)
  id=$("$1" --root "$T/root" --run-root "$T/run" create --runtime gvisor busybox sleep 1000)
  t1=$(date +%s%N)
  "$1" --root "$T/root" --run-root "$T/run" rm -f "$id" >/dev/null
  echo $(( (t1 - t0) / 1000 ))
}
one "$A" >/dev/null; one "$B" >/dev/null  # warm-up
: >"$T/a"; : >"$T/b"
for _ in $(seq "$RUNS"); do one "$A" >>"$T/a"; one "$B" >>"$T/b"; done
python3 - "$T/a" "$T/b" "$A" "$B" <<'PY'
import statistics as s, sys
for f, n in ((sys.argv[1], sys.argv[3]), (sys.argv[2], sys.argv[4])):
    v = [int(x) / 1000 for x in open(f)]
    print("%-40s n=%d median %.1f ms  mean %.1f  min %.1f  max %.1f" % (n, len(v), s.median(v), s.mean(v), min(v), max(v)))
PY

#!/bin/bash
# Start cost of the default bounds: `sbx run busybox -- true` with
# a baseline sbx (no default bounds) and this one, interleaved: ROUNDS rounds
# of hyperfine, each timing both binaries back to back, so that load on a
# shared host hits both alike. Prints one line per round and the medians.
#
#   bench/default_bounds.sh BASELINE_SBX NEW_SBX [ROUNDS] [RUNS]
# Environment: SBX_IMAGES (tests/images/out). Needs root and hyperfine.
set -eu
BASE=${1:?baseline sbx}; NEW=${2:?new sbx}; ROUNDS=${3:-5}; RUNS=${4:-30}
IMAGES=${SBX_IMAGES:-$(dirname "$0")/../tests/images/out}
T=$(mktemp -d /tmp/sbx-bench-bounds.XXXXXX)
trap 'rm -rf "$T"' EXIT
for b in base new; do
  bin=$BASE; [ $b = new ] && bin=$NEW
  "$bin" --root "$T/$b/root" --run-root "$T/$b/run" import "$IMAGES/busybox-oci" busybox >/dev/null
done
for r in $(seq "$ROUNDS"); do
  hyperfine -N -w 3 -r "$RUNS" --export-json "$T/r$r.json" \
    -n baseline "$BASE --root $T/base/root --run-root $T/base/run run busybox -- true" \
    -n defaults "$NEW --root $T/new/root --run-root $T/new/run run busybox -- true" >/dev/null
  python3 - "$T/r$r.json" "$r" <<'PY'
import json, sys
res = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
b, n = res["baseline"], res["defaults"]
print(f"round {sys.argv[2]}: baseline {b['median']*1e3:.2f} ms (±{b['stddev']*1e3:.2f}), "
      f"defaults {n['median']*1e3:.2f} ms (±{n['stddev']*1e3:.2f}), ratio {n['median']/b['median']:.3f}")
PY
done
python3 - "$T" "$ROUNDS" <<'PY'
import json, statistics, sys
t, rounds = sys.argv[1], int(sys.argv[2])
times = {"baseline": [], "defaults": []}
for r in range(1, rounds + 1):
    for x in json.load(open(f"{t}/r{r}.json"))["results"]:
        times[x["command"]] += x["times"]
b, n = statistics.median(times["baseline"]), statistics.median(times["defaults"])
print(f"all rounds: baseline median {b*1e3:.2f} ms, defaults median {n*1e3:.2f} ms, "
      f"difference {(n-b)*1e3:+.2f} ms ({(n/b-1)*100:+.1f}%), n={len(times['baseline'])} each")
PY

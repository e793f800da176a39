#!/bin/bash
# `sbx run --runtime gvisor` start-to-exit time on two runsc binaries, with
# hyperfine, interleaved: ROUNDS rounds of one hyperfine run each over both
# commands, the order flipped every round, so that drift on the host (other
# load, caches) hits both alike. Reports each command's mean and median over
# all runs and the ratio B/A.
# Usage: bench/runsc_old_vs_new.sh RUNSC_A RUNSC_B [ROUNDS] [RUNS_PER_ROUND] [IMAGE] [CMD...]
#   e.g. bench/runsc_old_vs_new.sh /var/cache/sbx-test/runsc-20221219/runsc /usr/bin/runsc 10 5
#   (root; SBX= the sbx binary, default build/sbx; images from $SBX_IMAGES or
#   tests/images/out; IMAGE busybox (default) or python; CMD default: true)
set -eu
A=$1 B=$2 ROUNDS=${3:-10} RUNS=${4:-5} IMG=${5:-busybox}
shift $(( $# < 5 ? $# : 5 ))
CMD=("$@"); [ ${#CMD[@]} -gt 0 ] || CMD=(true)
SBX=$(readlink -f "${SBX:-$(dirname "$0")/../build/sbx}")
IMAGES=${SBX_IMAGES:-$(cd "$(dirname "$0")/../tests/images/out" && pwd)}
T=$(mktemp -d /tmp/sbx-bench-runsc.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$SBX" --root "$T/root" --run-root "$T/run" import "$IMAGES/$IMG-oci" "$IMG" >/dev/null
cmd() { echo "$SBX --root $T/root --run-root $T/run run --runtime gvisor --runsc $1 --network none $IMG -- ${CMD[*]}"; }
echo "A: $("$A" --version | head -1) ($A)"
echo "B: $("$B" --version | head -1) ($B)"
echo "sbx run --runtime gvisor --network none $IMG -- ${CMD[*]}; $ROUNDS rounds x $RUNS runs each, order flipped per round"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then first=$A second=$B; else first=$B second=$A; fi
  hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$T/r$r.json" -n "$first" "$(cmd "$first")" -n "$second" "$(cmd "$second")" >/dev/null
done
python3 - "$T" "$A" "$B" "$ROUNDS" <<'PY'
import json, statistics as st, sys
d, a, b, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t = {a: [], b: []}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{d}/r{r}.json"))["results"]:
        t[res["command"]] += [x * 1000 for x in res["times"]]
for k, name in ((a, "A"), (b, "B")):
    v = t[k]
    print(f"{name}: n={len(v)} mean={st.mean(v):.1f} ms  median={st.median(v):.1f} ms  stdev={st.stdev(v):.1f} ms  min={min(v):.1f} ms")
print(f"B/A: mean {st.mean(t[b]) / st.mean(t[a]):.3f}, median {st.median(t[b]) / st.median(t[a]):.3f}")
PY

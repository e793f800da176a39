#!/usr/bin/env bash
# Native memory snapshots through CRIU (sbx checkpoint / sbx restore of a
# native sandbox), on the real python image:
#  - a python3 process keeping a counter in memory is checkpointed with
#    --leave-running: the original goes on counting;
#  - restored 3 times: each copy continues from the same count, and each
#    goes on independently (a file one copy sees changes only its output);
#  - `sbx exec` works in a copy, `sbx rm -f` removes it with its cgroups,
#    state dir and mounts;
#  - a checkpoint without --leave-running stops the original;
#  - refusals before anything is written (a user-namespaced sandbox, not
#    restorable yet); a corrupt checkpoint gives a clear error and a failed
#    restore leaves nothing behind.
# Skipped (with a message) only when CRIU is not installed or fails `criu check`.
set -euo pipefail
SBX=${SBX:-build/sbx}
IMAGES=${SBX_IMAGES:-$(dirname "$0")/../images/out}
if [ ! -d "$IMAGES/python-oci" ]; then
  echo "SKIP: test images not built (tests/images/build.sh)"; exit 0
fi
T=$(mktemp -d /tmp/sbx-test.XXXX)
cleanup() {
  for d in "$T"/run/*/; do
    [ -f "$d/state.json" ] && "$SBX" --root "$T/root" --run-root "$T/run" rm -f "$(basename "$d")" >/dev/null 2>&1
  done
  rm -rf "$T"
}
trap cleanup EXIT
sbx() { "$SBX" --root "$T/root" --run-root "$T/run" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_code() {  # expect_code CODE PATTERN CMD...
  local want=$1 pat=$2; shift 2
  set +e; out=$("$@" 2>&1); code=$?; set -e
  [ "$code" = "$want" ] || fail "'$*' exited $code, want $want: $out"
  echo "$out" | grep -q -- "$pat" || fail "'$*' said '$out', want '$pat'"
}
if [ "$(sbx info --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["runtimes"]["native"]["features"].get("criu"))')" != True ]; then
  echo "SKIP: CRIU is not installed or fails 'criu check' (.ci/criu-build.sh installs it): $(sbx info | grep -i criu)"
  exit 0
fi

sbx import -q "$IMAGES/python-oci" python >/dev/null
counter='import os, time
i = 0
while True:
    i += 1
    print(i, "flag" if os.path.exists("/tmp/flag") else "", flush=True)
    time.sleep(0.05)'
last() { sbx logs "$1" | awk 'NF {n = $1} END {print n + 0}'; }
first() { sbx logs "$1" | awk 'NF {print $1; exit}'; }
wait_count() {  # NAME N: until NAME's log reaches count N
  for _ in $(seq 300); do [ "$(last "$1")" -ge "$2" ] && return 0; sleep 0.05; done
  fail "$1 did not count to $2 (log: $(sbx logs "$1" 2>&1 | tail -3 | tr '\n' ' '))"
}
leftovers() {  # what a removed sandbox ID could have left
  local id12=${1:0:12}
  ls -d "$T/run/$1" /sys/fs/cgroup/*/sbx-"$id12" /sys/fs/cgroup/*/sbx/sbx-"$id12" 2>/dev/null || true
  grep -F "$1" /proc/self/mountinfo || true
}

echo "== refusals before anything is written"
sbx create --network none --name userns python sleep 600 >/dev/null
expect_code 125 "user namespace" sbx checkpoint userns --name never
[ -z "$(ls -A "$T/root/snapshots/checkpoints" 2>/dev/null)" ] || fail "a refused checkpoint left files in the store"
sbx ps | grep -q " userns$" || fail "a refused checkpoint stopped the sandbox"
sbx rm -f userns >/dev/null

echo "== checkpoint a python counter (--leave-running), restore 3 copies"
orig=$(sbx create --userns host --network none --name counter python python3 -c "$counter")
wait_count counter 5
sbx checkpoint counter --name c0 --leave-running >/dev/null
n0=$(last counter); wait_count counter $((n0 + 5))
sbx ps | grep -q " counter$" || fail "the original stopped after checkpoint --leave-running"
sbx snapshots --json | python3 -c '
import json, sys
s = {r["Name"]: r for r in json.load(sys.stdin)}
assert s["c0"]["Kind"] == "memory" and s["c0"]["Runtime"] == "native" and s["c0"]["Size"] > 0, s' \
  || fail "sbx snapshots does not list c0 as a native memory snapshot: $(sbx snapshots)"

mapfile -t copies < <(sbx restore c0 --count 3 --name copy)
[ "${#copies[@]}" = 3 ] || fail "restore --count 3 printed ${#copies[*]} lines"
starts=()
for i in 1 2 3; do
  [ "${#copies[$((i - 1))]}" = 64 ] || fail "restore printed '${copies[$((i - 1))]}', want an id"
  wait_count copy-$i 3
  starts+=("$(first copy-$i)")
done
[ "${starts[0]}" -ge 6 ] || fail "copy-1 starts at ${starts[0]}, want a count after the checkpoint (>= 6)"
[ "${starts[0]}" = "${starts[1]}" ] && [ "${starts[1]}" = "${starts[2]}" ] \
  || fail "the copies start at different counts: ${starts[*]} (one checkpoint, so one count)"
echo "3 copies continue from ${starts[0]}"
# Independent: a file one copy sees shows in its output only; the original goes on.
sbx exec copy-2 sh -c 'touch /tmp/flag'
n2=$(last copy-2); wait_count copy-2 $((n2 + 3))
sbx logs copy-2 | tail -1 | grep -q flag || fail "copy-2 does not see its own /tmp/flag: $(sbx logs copy-2 | tail -1)"
for c in copy-1 copy-3 counter; do
  sbx logs $c | grep -q flag && fail "$c sees copy-2's /tmp/flag"
done
no=$(last counter); wait_count counter $((no + 3))
[ "$(sbx exec copy-1 python3 -c 'print(6 * 7)')" = 42 ] || fail "exec in a restored copy"
sbx ps | grep -q " copy-3$" || fail "ps does not list copy-3"
# Copies do not share processes: each has its own holder.
pids=$(for i in 1 2 3; do python3 -c "import json; print(json.load(open('$T/run/${copies[$((i - 1))]}/state.json'))['pid'])"; done | sort -u | wc -l)
[ "$pids" = 3 ] || fail "the copies share a holder pid"

for i in 1 2 3; do sbx rm -f copy-$i >/dev/null; done
for id in "${copies[@]}"; do
  [ -z "$(leftovers "$id")" ] || fail "rm of restored copy $id left: $(leftovers "$id")"
done

echo "== checkpoint without --leave-running stops the original"
sbx checkpoint counter --name c1 >/dev/null
sleep 0.3; at=$(last counter); sleep 0.3
[ "$(last counter)" = "$at" ] || fail "the original still counts after its checkpoint"
sbx ps | grep -q " counter$" && fail "the original is still listed as running"
one=$(sbx restore c1 --name again)
wait_count again 3
[ "$(first again)" -ge "$at" ] || fail "the copy of c1 starts at $(first again), before the checkpoint's $at"
sbx rm -f again counter >/dev/null
[ -z "$(leftovers "$one")" ] || fail "rm left: $(leftovers "$one")"
[ -z "$(leftovers "$orig")" ] || fail "rm left: $(leftovers "$orig")"

echo "== a corrupt checkpoint: a clear error, nothing left behind"
dir_of() { sbx snapshots --json | python3 -c "import json,sys; print([r['Id'] for r in json.load(sys.stdin) if r['Name']=='$1'][0])"; }
cdir="$T/root/snapshots/checkpoints/$(dir_of c1)"
[ -f "$cdir/image/inventory.img" ] || fail "no CRIU images in $cdir"
before=$(ls "$T/run" | wc -l)
cp "$cdir/image/pstree.img" "$T/pstree.img"
head -c 10 "$T/pstree.img" > "$cdir/image/pstree.img"
expect_code 125 "restore of memory snapshot 'c1' failed" sbx restore c1 --count 2 --name bad
[ "$(ls "$T/run" | wc -l)" = "$before" ] || fail "a failed restore left state dirs: $(ls "$T/run")"
grep -F "$T/run" /proc/self/mountinfo && fail "a failed restore left mounts"
cp "$T/pstree.img" "$cdir/image/pstree.img"
echo '{' > "$cdir/meta.json"
expect_code 125 "is corrupt" sbx restore c1
[ "$(ls "$T/run" | wc -l)" = "$before" ] || fail "a restore of a corrupt snapshot left state dirs"
sbx snapshots rm c0 c1 >/dev/null
[ -z "$(ls -A "$T/root/snapshots/checkpoints" 2>/dev/null)" ] || fail "checkpoint images left after snapshots rm"
echo "PASS"

#!/usr/bin/env bash
# Many live sandboxes on one host: a start must cost the same with N idle
# sandboxes alive as with a few (it must not read every sandbox's state:
# user-namespace ranges and names are claimed by links, the start's gc is a
# bounded step), start and exec must still work, dead sandboxes must still be
# found (by `sbx gc`, by the starts' bounded steps, by a claim that hits a
# dead owner), and removing them all must leave nothing.
#
# SBX_SCALE_N (default 300) idle busybox sandboxes created at parallelism
# SBX_SCALE_P (default 4). Counts, not times: how many files of other
# sandboxes one `sbx run` opens (strace), at 10 and at N alive.
source "$(dirname "$0")/../sandbox_lib.sh"
source "$(dirname "$0")/../serve_lib.sh"

if [ "$RUNTIME" != native ]; then echo "SKIP: native only (the gVisor start shares the same gc and claims)"; finish; fi
if ! command -v strace >/dev/null; then echo "SKIP: needs strace"; finish; fi
n=${SBX_SCALE_N:-300}
p=${SBX_SCALE_P:-4}
export SBX BB T

create_many() {  # COUNT: idle sandboxes, at parallelism $p
  seq "$1" | xargs -P "$p" -I{} bash -c '$SBX create $BB sleep 100000 >>"$T/ids" 2>>"$T/create.err"'
}
live() { ls "$SBX_RUN_ROOT" | grep -cE '^[0-9a-f]{64}$'; }
# Files of *other* sandboxes (state dirs under the run root other than the
# run's own) that one `sbx run $BB true` opens, and how many distinct ones.
other_opens() {
  strace -f -qq -e trace=openat,open -o "$T/strace" $SBX run $BB true >/dev/null 2>&1
  local own
  own=$(grep -oE "$SBX_RUN_ROOT/[0-9a-f]{64}" "$T/strace" | sort | uniq -c | sort -rn | head -1 | grep -oE '[0-9a-f]{64}$')
  grep -oE "$SBX_RUN_ROOT/[0-9a-f]{64}[^\"]*" "$T/strace" | grep -v "$own" | wc -l
}

: >"$T/ids"
create_many 10
check "10 sandboxes created" test "$(live)" = 10
at10=0
for _ in 1 2 3; do c=$(other_opens); [ "$c" -gt "$at10" ] && at10=$c; done
echo "a start with 10 alive opens $at10 files of other sandboxes (most of 3)"

start=$(date +%s%N)
create_many $((n - 10))
echo "created $((n - 10)) more at parallelism $p in $(( ($(date +%s%N) - start) / 1000000 )) ms"
check "$n sandboxes alive (create errors: $(sort "$T/create.err" | uniq -c | head -3))" test "$(live)" = "$n"
check "every sandbox has its own user-namespace range" \
  test "$(cat "$SBX_RUN_ROOT"/*/userns | sort -u | wc -l)" = "$n"
check "... and one claim link per range" test "$(ls -A "$SBX_RUN_ROOT" | grep -c '^\.userns-')" = "$n"

atn=999999
for _ in 1 2 3; do c=$(other_opens); [ "$c" -lt "$atn" ] && atn=$c; done
echo "a start with $n alive opens $atn files of other sandboxes (fewest of 3)"
check "a start with $n alive opens no more files of other sandboxes than with 10 ($atn vs $at10 + the gc step's few)" \
  test "$atn" -le $((at10 + 12))

out=$($SBX run $BB echo started 2>&1)
check "sbx run works with $n alive ($out)" test "$out" = started
some=$(shuf -n 3 "$T/ids")
for id in $some; do
  out=$($SBX exec "$id" echo exec-ok 2>&1)
  check "sbx exec into ${id:0:12} of $n works ($out)" test "$out" = exec-ok
done
one=$(head -1 "$T/ids")
check "sbx inspect of one sandbox with $n alive" bash -c "$SBX inspect $one | grep -q '\"running\"'"

# --- dead sandboxes are still found ------------------------------------------
# `sbx run`s SIGKILLed (their sandboxes go with them, their state dirs, ranges
# and names stay): the starts' bounded gc steps alone must remove them.
k=6
pids=()
for i in $(seq $k); do $SBX run --name "killed-run-$i" $BB sleep 100000 >/dev/null 2>&1 & pids+=($!); done
for _ in $(seq 200); do [ "$(ls "$SBX_RUN_ROOT"/.names 2>/dev/null | grep -c '^killed-run-')" = $k ] && break; sleep 0.05; done
dead_dirs=$(for i in $(seq $k); do readlink "$SBX_RUN_ROOT/.names/killed-run-$i"; done)
check "$k sbx runs started" test "$(echo "$dead_dirs" | grep -cE '^[0-9a-f]{64}$')" = $k
sleep 0.5
kill -9 "${pids[@]}"; wait "${pids[@]}" 2>/dev/null
sleep 2.2  # (the gc leaves cgroups younger than 2 s alone: a start may be in flight)
left() { local c=0 d; for d in $dead_dirs; do [ -e "$SBX_RUN_ROOT/$d" ] && c=$((c + 1)); done; echo $c; }
check "the killed runs' state dirs are there before any gc" test "$(left)" = $k
runs=0
while [ "$(left)" != 0 ] && [ $runs -lt $((n / 2 + 40)) ]; do $SBX run $BB true >/dev/null 2>&1; runs=$((runs + 1)); done
check "the starts' bounded gc steps removed all $k killed runs ($(left) left after $runs starts)" test "$(left)" = 0
for i in $(seq $k); do
  expect_rc "... the name killed-run-$i is free again" 0 $SBX create --name "killed-run-$i" $BB sleep 100000
done

# A create SIGKILLed after it claimed its range and name: `sbx gc` frees them.
SBX_TEST_CRASH_AT=create-name $SBX create --name killed-create $BB sleep 100000 >/dev/null 2>&1
kc=$(readlink "$SBX_RUN_ROOT/.names/killed-create")
check "the killed create left its dir and range" test -f "$SBX_RUN_ROOT/$kc/userns"
kslot=$(cat "$SBX_RUN_ROOT/$kc/userns" 2>/dev/null)
$SBX gc >/dev/null
check "sbx gc removed the killed create's dir" test ! -e "$SBX_RUN_ROOT/$kc"
check "... and its range's claim (slot $kslot)" test ! -L "$SBX_RUN_ROOT/.userns-$kslot"
expect_rc "... and its name is free again" 0 $SBX create --name killed-create $BB sleep 100000

# A claim link whose owner's dir vanished without a release (an rm killed
# between its steps, a host crash): `sbx gc` drops it (and a start that hits
# its slot takes it over: tests/unit/test_userns.cpp).
free_slot=0
while [ -L "$SBX_RUN_ROOT/.userns-$free_slot" ]; do free_slot=$((free_slot + 1)); done
ln -s "$(printf 'f%.0s' $(seq 64))" "$SBX_RUN_ROOT/.userns-$free_slot"
$SBX gc >/dev/null
check "sbx gc drops a claim whose owner is gone" test ! -L "$SBX_RUN_ROOT/.userns-$free_slot"

# --- sbx serve: one watcher for all, not a thread per sandbox ----------------------
# Each sandbox the server creates is watched until its end (to reap its holder,
# the server's child): the server's thread count must not grow with them.
threads() { awk '/^Threads:/ {print $2}' "/proc/$SERVER_PID/status"; }
start_server
v1() { curl -sf --unix-socket "$SOCK" "$@"; }
v1 -X POST -d '{"image": "busybox", "command": ["true"]}' http://sbx/sbx/v1/sandboxes >/dev/null  # (warm-up)
sleep 1
t0=$(threads)
m=40
: >"$T/v1ids"
for _ in $(seq $m); do
  v1 -X POST -d '{"image": "busybox", "command": ["sleep", "100000"]}' http://sbx/sbx/v1/sandboxes |
    grep -oE '"id":"[0-9a-f]{64}"' | cut -d'"' -f4 >>"$T/v1ids"
done
check "$m sandboxes created through /sbx/v1" test "$(wc -l <"$T/v1ids")" = $m
t1=$(threads)
echo "sbx serve threads: $t0 before, $t1 with $m more sandboxes it created alive"
check "the server's threads do not grow with its sandboxes ($t0 -> $t1 with $m)" test "$t1" -le $((t0 + 4))
docker_ids=$(docker ps -q --no-trunc | wc -l)
check "docker ps through sbx serve lists all $(live) ($docker_ids)" test "$docker_ids" = "$(live)"
listed=$(v1 http://sbx/sbx/v1/sandboxes | grep -oE '"id":"[0-9a-f]{64}"' | wc -l)
check "GET /sbx/v1/sandboxes lists all $(live) ($listed)" test "$listed" = "$(live)"
# Their ends are still noticed: kill the holders of some, the watcher reaps them.
for id in $(head -5 "$T/v1ids"); do $SBX kill "$id" >/dev/null; done
for _ in $(seq 100); do
  z=$(ps -o stat= --ppid "$SERVER_PID" | grep -c '^Z')
  ended=$(for id in $(head -5 "$T/v1ids"); do v1 "http://sbx/sbx/v1/sandboxes/$id"; done | grep -o '"status":"exited"' | wc -l)
  [ "$z" = 0 ] && [ "$ended" = 5 ] && break
  sleep 0.1
done
check "5 killed sandboxes of the server ended ($ended) and their holders were reaped ($z zombies)" \
  test "$ended" = 5 -a "$z" = 0
for id in $(cat "$T/v1ids"); do v1 -X DELETE "http://sbx/sbx/v1/sandboxes/$id" >/dev/null; done
check "... and removed through /sbx/v1" test -z "$(for id in $(cat "$T/v1ids"); do [ -d "$SBX_RUN_ROOT/$id" ] && echo "$id"; done)"
check "no zombie child left in the server" test "$(ps -o stat= --ppid "$SERVER_PID" | grep -c '^Z')" = 0
stop_server

# --- holder programs of other sbx builds -----------------------------------------
# RUN_ROOT/.init/sbx-init-<sha256>: one per build that started a sandbox here.
# `sbx gc` removes another build's file once no process executes it (checked by
# file identity: holders exec it through a mount of the same inode), never the
# current build's. A copy of sleep stands in for another build's holder.
cur=$(ls "$SBX_RUN_ROOT"/.init/ | grep -E '^sbx-init-[0-9a-f]{64}$')
check "the current build's holder program is there (one: $cur)" test "$(echo "$cur" | wc -l)" = 1
old_busy="$SBX_RUN_ROOT/.init/sbx-init-$(printf 'a%.0s' $(seq 64))"
old_idle="$SBX_RUN_ROOT/.init/sbx-init-$(printf 'b%.0s' $(seq 64))"
cp "$(command -v sleep)" "$old_busy"; cp "$(command -v sleep)" "$old_idle"
chmod 0111 "$old_busy" "$old_idle"
"$old_busy" 100000 & busy_pid=$!
$SBX gc >"$T/gc.out"
check "sbx gc removed the holder program no process executes" test ! -e "$old_idle"
check "... and said so ($(grep sbx-init "$T/gc.out" | head -2))" grep -q "removed $old_idle" "$T/gc.out"
check "... kept the one a live process executes" test -e "$old_busy"
check "... and the current build's, with $(live) sandboxes alive" test -e "$SBX_RUN_ROOT/.init/$cur"
kill "$busy_pid"; wait "$busy_pid" 2>/dev/null
$SBX gc >/dev/null
check "sbx gc removed the other build's program once its process ended" test ! -e "$old_busy"

bad=0
for l in "$SBX_RUN_ROOT"/.userns-*; do [ -d "$SBX_RUN_ROOT/$(readlink "$l")" ] || bad=$((bad + 1)); done
check "every claim link names a live state dir ($bad do not)" test $bad = 0

# --- remove them all ------------------------------------------------------------
# (This test's own cgroups, by name: the leak check below also counts what
# other sbx users on the host make meanwhile under sbx's parent cgroup.)
cat "$SBX_RUN_ROOT"/*/state.json | grep -oE '"/sys/fs/cgroup/[^"]*sbx-[0-9a-f]{12}"' | tr -d '"' | sort -u >"$T/cgroups"
check "the sandboxes' cgroups are recorded ($(wc -l <"$T/cgroups"))" test "$(wc -l <"$T/cgroups")" -ge "$(live)"
start=$(date +%s%N)
$SBX ps -aq --no-trunc | xargs -r -P "$p" -n 25 $SBX rm -f >/dev/null 2>"$T/rm.err"
echo "removed all in $(( ($(date +%s%N) - start) / 1000000 )) ms"
check "sbx rm -f of all: no error ($(head -3 "$T/rm.err"))" test ! -s "$T/rm.err"
check "no sandbox left" test "$(live)" = 0
cg_left=$(while read -r c; do [ -d "$c" ] && echo "$c"; done <"$T/cgroups")
check "none of this test's $(wc -l <"$T/cgroups") cgroups is left ($(echo $cg_left | head -c 200))" test -z "$cg_left"
check "no claim link left" test -z "$(ls -A "$SBX_RUN_ROOT" | grep '^\.userns-')"
$SBX gc >/dev/null
check "sbx gc with none alive keeps the current build's holder program" test -e "$SBX_RUN_ROOT/.init/$cur"
rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null
finish

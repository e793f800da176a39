#!/usr/bin/env bash
# Many short `sbx run`s side by side: each run's state dir must be gone the
# instant its sbx exits, and no run may print a word about another's.
#
# Every `sbx run` removes its own state dir at the end and, at its start,
# garbage-collects what killed runs left behind (runtime/lifecycle.h gc). A
# run whose command has just ended (its init dead, its sbx still alive and
# about to clean up) must not look like such a leftover to the gc of a run
# starting beside it: otherwise the two remove the same dir at once, one of
# them warns ("cannot remove ...: Directory not empty", "gc: remove
# .trash-...: ENOENT") and the dir can outlive both.
#
# SBX_STRESS_RUNS (default 400 native, 40 gVisor) runs at parallelism
# SBX_STRESS_P (default 4).
source "$(dirname "$0")/../sandbox_lib.sh"

if [ "$RUNTIME" = native ]; then n=${SBX_STRESS_RUNS:-400}; else n=${SBX_STRESS_RUNS:-40}; fi
p=${SBX_STRESS_P:-4}
mkdir -p "$T/out"
export SBX BB T
start=$(date +%s%N)
# Each run: its exit status and its stderr in files of its own.
seq "$n" | xargs -P "$p" -I{} bash -c '$SBX run $BB true 2>"$T/out/{}.err"; echo $? >"$T/out/{}.rc"'
# The instant the last run has exited (xargs waits for every one).
left=$(ls -A "$SBX_RUN_ROOT" 2>/dev/null)
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "$n runs at parallelism $p in ${ms} ms"

check "every run's state dir is gone when the last run exits (left: ${left:-nothing})" test -z "$left"
rcs=$(cat "$T"/out/*.rc | sort | uniq -c | tr -s ' ' | tr '\n' ';')
check "all $n runs exit 0 (exit codes:$rcs)" test "$(grep -lvx 0 "$T"/out/*.rc | wc -l)" = 0
check "all $n runs reported an exit status" test "$(ls "$T"/out/*.rc | wc -l)" = "$n"
errs=$(cat "$T"/out/*.err)
[ -n "$errs" ] && { echo "stderr of the runs (first lines):"; sort "$T"/out/*.err | uniq -c | sort -rn | head -10; }
check "no run printed anything on stderr" test -z "$errs"
check "no 'cannot remove' warning" not_grep "cannot remove" "$errs"
check "no gc error" not_grep "gc:" "$errs"

finish

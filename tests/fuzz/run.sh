#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan+UBSan) into build-fuzz/ and runs
# each for a bounded time, starting from its seed corpus in
# tests/fuzz/corpus/<name>/ (the checked-in seeds are never modified: new
# inputs go to build-fuzz/corpus/<name>/).
#
#   tests/fuzz/run.sh [SECONDS_PER_FUZZER=60] [FUZZER...]
#
# Exit status 1 when a fuzzer found a crash, leak or timeout; the reproducer is
# build-fuzz/crashes/<name>-crash-<sha1> (run `build-fuzz/tests/fuzz/<name> FILE`
# to replay it), and each fixed one becomes a case in
# tests/unit/test_fuzz_regressions.cpp. A summary (runs, execs/s, coverage) is
# appended to build-fuzz/fuzz-stats.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
shift || true
build=${SBX_FUZZ_BUILD:-build-fuzz}
jobs=${SBX_FUZZ_JOBS:-2}
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSBX_FUZZ=ON -DSBX_SANITIZE=ON -DSBX_TESTS=OFF >/dev/null
cmake --build "$build" --target fuzzers -j"$jobs"

fuzzers=("$@")
if [ ${#fuzzers[@]} -eq 0 ]; then
  for f in "$build"/tests/fuzz/fuzz_*; do [ -x "$f" ] && fuzzers+=("$(basename "$f")"); done
fi
mkdir -p "$build/crashes"
# The harnesses make their work dirs with mkdtemp under TMPDIR and cannot
# remove them (libFuzzer ends them with exit or a crash): give them one dir
# for the whole run and remove it at the end, so no run leaves dirs in /tmp.
fuzz_tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-fuzz-run.XXXXXX")
trap 'rm -rf "$fuzz_tmp"' EXIT
export TMPDIR=$fuzz_tmp
# Each fuzzer is one process on one core: $jobs of them run at a time.
fuzz_one() {
  local name=$1 bin="$build/tests/fuzz/$1" seeds="tests/fuzz/corpus/${1#fuzz_}" work="$build/corpus/$1"
  local log="$build/$1.log" rc runs cov
  mkdir -p "$work"
  local dict=() dirs=("$work")
  [ -f "tests/fuzz/${name#fuzz_}.dict" ] && dict=(-dict="tests/fuzz/${name#fuzz_}.dict")
  [ -d "$seeds" ] && dirs+=("$seeds")
  echo "fuzz: $name for ${secs}s (seeds: $seeds)"
  set +e
  "$bin" "${dirs[@]}" "${dict[@]}" \
    -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=1048576 \
    -artifact_prefix="$build/crashes/$name-" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  echo "$(date -u +%FT%TZ) $name secs=$secs runs=${runs:-0} cov=${cov:-0} rc=$rc" | tee -a "$build/fuzz-stats.txt"
  if [ $rc -ne 0 ]; then
    echo "fuzz: $name FAILED (rc=$rc); see $log and $build/crashes/" >&2
    grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -20 >&2 || true
    return 1
  fi
}
status=0
pids=()
for name in "${fuzzers[@]}"; do
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  fuzz_one "$name" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status

#!/usr/bin/env bash
# All 164 HumanEval problems (prompt + canonical solution + test +
# check(entry_point)), each in its own sandbox of the python image with
# --network none --timeout 10s --memory 256m: all must pass. The same with a
# deliberately wrong solution must fail. Parallelism 2.
source "$(dirname "$0")/../sandbox_lib.sh"
# The data ships with the repository (tests/data/HumanEval.LICENSE: MIT).
data=$SBX_TEST_SRC/tests/data/HumanEval.jsonl.gz
[ -f "$data" ] || { echo "FAIL: $data not found (SBX_TEST_SRC must be the repository)"; exit 1; }
[ -n "$PY" ] || { echo "FAIL: no python image (run tests/images/build.sh)"; exit 1; }

# Runs every program of DIR in its own sandbox; prints "NAME EXIT" lines.
run_all() {
  local dir=$1
  export SBX PY dir
  ls "$dir" | xargs -P 2 -I{} bash -c \
    '$SBX run --network none --timeout 10s --memory 256m -v "$dir:/work:ro" $PY python3 /work/{} >/dev/null 2>>"$dir.err"; echo "{} $?"'
}

n=$(python3 "$SBX_TEST_SRC/tests/humaneval_prepare.py" "$data" "$T/good")
check "164 problems prepared ($n)" test "$n" = 164
start=$(date +%s)
run_all "$T/good" >"$T/good.results"
secs=$(( $(date +%s) - start ))
passed=$(awk '$2 == 0' "$T/good.results" | wc -l)
echo "canonical solutions: $passed/164 passed in ${secs}s"
awk '$2 != 0 {print "  failed: " $0}' "$T/good.results" | head -20
check "HumanEval canonical solutions: 164/164 pass" test "$passed" = 164

python3 "$SBX_TEST_SRC/tests/humaneval_prepare.py" "$data" "$T/wrong" --wrong >/dev/null
run_all "$T/wrong" >"$T/wrong.results"
wrong_passed=$(awk '$2 == 0' "$T/wrong.results" | wc -l)
wrong_total=$(wc -l <"$T/wrong.results")
echo "wrong solutions: $wrong_passed/$wrong_total passed"
check "all 164 wrong programs ran" test "$wrong_total" = 164
check "HumanEval with wrong solutions fails (passed $wrong_passed/164)" test "$wrong_passed" -lt 10
check "wrong solutions fail by their assertions (exit 1), not by sbx (125)" \
  bash -c "! awk '\$2 >= 124' '$T/wrong.results' | grep -q ."

finish

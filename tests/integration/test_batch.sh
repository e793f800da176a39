#!/usr/bin/env bash
# sbx batch end to end: HumanEval through batch (164/164 canonical
# solutions pass, 0/164 wrong ones), malformed lines, --resume, SIGINT in the
# middle of a batch (then the leak check), and tasks that fork-bomb or run out
# of memory (bounded) beside tasks that must not notice.
source "$(dirname "$0")/../sandbox_lib.sh"
data=$SBX_TEST_SRC/tests/data/HumanEval.jsonl.gz
[ -f "$data" ] || { echo "FAIL: $data not found (SBX_TEST_SRC must be the repository)"; exit 1; }
[ -n "$PY" ] || { echo "FAIL: no python image (run tests/images/build.sh)"; exit 1; }
[ "$PY" = python ] || { echo "SKIP: sbx batch needs an image store (no --rootfs)"; exit 77; }

# Column N of the result lines of FILE, one per line: "ID VALUE".
results() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["id"] or "-", *[r.get(k) for k in sys.argv[2:]])' "$@"; }

# --- HumanEval: one task per problem, the program given as a file.
humaneval_tasks() {  # DIR (of programs) → task lines
  python3 -c '
import json, os, sys
d = sys.argv[1]
for n in sorted(os.listdir(d)):
    prog = open(os.path.join(d, n)).read()
    print(json.dumps({"id": n[:-3], "cmd": ["python3", "/work/p.py"], "files": {"/work/p.py": prog}, "timeout": 10}))' "$1"
}
python3 "$SBX_TEST_SRC/tests/humaneval_prepare.py" "$data" "$T/good" >/dev/null
python3 "$SBX_TEST_SRC/tests/humaneval_prepare.py" "$data" "$T/wrong" --wrong >/dev/null
humaneval_tasks "$T/good" >"$T/good.jsonl"
humaneval_tasks "$T/wrong" >"$T/wrong.jsonl"
start=$(date +%s.%N)
$SBX batch -q -P 4 --image $PY --memory 256m -o "$T/good.out" "$T/good.jsonl"
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
passed=$(results "$T/good.out" exit_code end_reason | awk '$2 == 0 && $3 == "exit"' | wc -l)
echo "canonical: $passed/164 passed in ${secs}s (P=4)"
results "$T/good.out" exit_code end_reason error | awk '$2 != 0' | head -5
check "HumanEval canonical through batch: 164/164 pass" test "$passed" = 164
check "batch exit 0 when every task exited 0 (got $rc)" test "$rc" = 0
check "one result per task" test "$(wc -l <"$T/good.out")" = 164
check "results carry the accounting" bash -c "head -1 '$T/good.out' | grep -q '\"cpu_ms\".*\"max_rss_bytes\"'"
expect_rc "wrong solutions: batch exits 1" 1 $SBX batch -q -P 4 --image $PY --memory 256m -o "$T/wrong.out" "$T/wrong.jsonl"
wrong_passed=$(results "$T/wrong.out" exit_code | awk '$2 == 0' | wc -l)
by_assert=$(results "$T/wrong.out" exit_code end_reason | awk '$2 == 1 && $3 == "exit"' | wc -l)
echo "wrong: $wrong_passed/164 passed, $by_assert failed by their assertions"
check "HumanEval wrong solutions through batch: 0/164 pass" test "$wrong_passed" = 0
check "they fail by their assertions (exit 1), not by sbx ($by_assert/164)" test "$by_assert" = 164
check "stderr of a failing task is in its result" grep -q 'AssertionError' "$T/wrong.out"

# --- malformed lines: each gets an "invalid" result with its line number; the others run.
cat >"$T/bad.jsonl" <<'J'
{"id": "ok1", "cmd": ["echo", "one"]}
this is not json
{"cmd": ["echo", "no id"]}
{"id": "both", "cmd": ["true"], "script": "true"}
{"id": "unknown", "cmd": ["true"], "colour": "red"}

{"id": "ok2", "script": "echo two; echo $K", "env": {"K": "kv"}}
{"id": "ok1", "cmd": ["echo", "duplicate"]}
{"id": "b64", "cmd": ["cat", "/in/b"], "files": {"/in/b": {"base64": "aGVsbG8="}}, "stdin": "x"}
J
echo '{"id": "one", "cmd": ["true"]}' >"$T/one.jsonl"
$SBX batch -P 1 --image $BB "$T/one.jsonl" >/dev/null 2>"$T/one.err"
check "the summary of a batch without --resume names no skipped tasks" grep -q "^sbx batch: 1 done, 0 failed, 1 total" "$T/one.err"
expect_rc "a batch with malformed lines exits 1" 1 $SBX batch -q --image $BB -o "$T/bad.out" "$T/bad.jsonl"
check "9 lines, 1 blank: 8 results" test "$(wc -l <"$T/bad.out")" = 8
inv=$(results "$T/bad.out" line end_reason | awk '$3 == "invalid" {print $2}' | sort -n | tr '\n' ' ')
check "invalid results for lines 2 3 4 5 8 (got: $inv)" test "$inv" = "2 3 4 5 8 "
check "the error names the line" grep -q '"error":"line 5 (id unknown): unknown key' "$T/bad.out"
check "the good lines ran" test "$(results "$T/bad.out" stdout | grep -c -e '^ok1 one' -e '^ok2 two')" = 2
check "env reached the task" grep -q '"stdout":"two\\nkv\\n"' "$T/bad.out"
check "a base64 file reached the task" grep -q '"id":"b64".*"stdout":"hello"' "$T/bad.out"

# --- --resume: only the ids without a result run.
for i in 1 2 3 4 5 6; do echo "{\"id\": \"r$i\", \"script\": \"echo run-r$i >>/dev/stderr; echo r$i\"}"; done >"$T/res.jsonl"
$SBX batch -q -P 2 --image $BB -o "$T/res.out" "$T/res.jsonl"
grep -v -e '"id":"r2"' -e '"id":"r5"' "$T/res.out" >"$T/res.keep" && cp "$T/res.keep" "$T/res.out"
printf '{"id":"r6","stdo' >>"$T/res.out"  # a line torn by a killed batch counts as absent
$SBX batch -P 2 --image $BB -o "$T/res.out" --resume "$T/res.jsonl" 2>"$T/res.err"
check "--resume: summary says 2 done, 4 skipped" grep -q "2 done, 0 failed, 4 skipped" "$T/res.err"
ids=$(python3 -c 'import sys, json
ids = []
for l in open(sys.argv[1]):
    try: ids.append(json.loads(l)["id"])
    except Exception: ids.append("TORN")
print(" ".join(sorted(ids)))' "$T/res.out")
check "--resume: every id has one result, the torn line kept apart (got: $ids)" test "$ids" = "TORN r1 r2 r3 r4 r5 r6"
expect_rc "--resume without -o is refused" 125 $SBX batch --resume --image $BB "$T/res.jsonl"
expect_rc "a missing task file: 125" 125 $SBX batch --image $BB "$T/nope.jsonl"

# --- neighbours: a fork bomb (pids_limit 64, 3 s) and an OOM (64 MiB) beside ordinary tasks.
{
  echo '{"id": "bomb", "script": "b() { b | b & }; b; i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); done; sleep 1", "pids_limit": 64, "timeout": 3}'
  echo '{"id": "oom", "cmd": ["python3", "-c", "b = bytearray(1 << 30)"], "memory": "64m"}'
  for i in 1 2 3 4 5 6; do
    echo "{\"id\": \"n$i\", \"cmd\": [\"python3\", \"-c\", \"import time; time.sleep(0.5); print(sum(range($i * 1000)))\"]}"
  done
} >"$T/nb.jsonl"
$SBX batch -q -P 4 --image $PY -o "$T/nb.out" "$T/nb.jsonl"
results "$T/nb.out" exit_code end_reason pids_max_hits | sed 's/^/  /'
check "the OOM task ends with end_reason oom" grep -q '"end_reason":"oom".*"id":"oom"' "$T/nb.out"
check "the fork bomb hit its pids limit" bash -c "grep '\"id\":\"bomb\"' '$T/nb.out' | grep -qv '\"pids_max_hits\":0'"
good=0
for i in 1 2 3 4 5 6; do
  want=$(python3 -c "print(sum(range($i * 1000)))")
  grep -q "\"exit_code\":0,\"id\":\"n$i\".*\"stdout\":\"$want\\\\n\"" "$T/nb.out" && good=$((good + 1))
done
check "every neighbour exited 0 with its own output ($good/6)" test "$good" = 6

# --- SIGINT in the middle: running sandboxes killed and removed, no result for them.
for i in $(seq 1 12); do echo "{\"id\": \"s$i\", \"script\": \"sleep 30\"}"; done >"$T/sig.jsonl"
$SBX batch -q -P 4 --image $BB -o "$T/sig.out" "$T/sig.jsonl" &
bpid=$!
for _ in $(seq 100); do
  [ "$(ls "$SBX_RUN_ROOT" 2>/dev/null | grep -cE '^[0-9a-f]{64}$')" -ge 4 ] && break
  sleep 0.1
done
check "4 sandboxes running before the interrupt" test "$(ls "$SBX_RUN_ROOT" | grep -cE '^[0-9a-f]{64}$')" -ge 4
sleep 0.3
t0=$(date +%s)
kill -INT $bpid
wait $bpid
rc=$?
check "SIGINT: batch exits 130 (got $rc)" test "$rc" = 130
check "SIGINT: it stopped at once, not after the 30 s tasks ($(( $(date +%s) - t0 )) s)" test $(( $(date +%s) - t0 )) -lt 10
check "SIGINT: interrupted tasks have no result" test ! -s "$T/sig.out"
check "SIGINT: no sandbox dir left" test -z "$(ls -A "$SBX_RUN_ROOT" 2>/dev/null | grep -vE '^\.(names|init)$')"

# --- SIGKILL of the batch itself: its workers end their sandboxes (parent-death
# signal), and `sbx gc` removes the task files it kept in RUN_ROOT/.batch-<pid>.
# (Fresh sandboxes: --pool 0. A pooled task's files are written inside its
# sandbox, never on the host; the pool's SIGKILL case is test_pool.sh's.)
for i in 1 2 3; do echo "{\"id\": \"k$i\", \"script\": \"sleep 30\", \"files\": {\"/work/f\": \"x\"}}"; done >"$T/kill.jsonl"
$SBX batch -q -P 3 --pool 0 --image $BB -o "$T/kill.out" "$T/kill.jsonl" &
bpid=$!
for _ in $(seq 100); do
  [ "$(ls "$SBX_RUN_ROOT" 2>/dev/null | grep -cE '^[0-9a-f]{64}$')" -ge 3 ] && break
  sleep 0.1
done
kill -KILL $bpid
wait $bpid 2>/dev/null
for _ in $(seq 150); do
  [ "$(ls "$SBX_RUN_ROOT" | grep -cE '^[0-9a-f]{64}$')" = 0 ] && break
  sleep 0.1
done
check "SIGKILL of the batch: its sandboxes are gone within 15 s" test "$(ls "$SBX_RUN_ROOT" | grep -cE '^[0-9a-f]{64}$')" = 0
check "the killed batch's task files are there before gc" test -d "$SBX_RUN_ROOT/.batch-$bpid"
$SBX gc >/dev/null
check "sbx gc removes them" test ! -e "$SBX_RUN_ROOT/.batch-$bpid"

finish

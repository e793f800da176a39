#!/usr/bin/env bash
# The warm pool (engine/pool.h) through `sbx batch --pool`: a
# pooled sandbox runs one command and is destroyed, so what one task writes
# is never seen by the next, and each task has its own pid, net, mount, ipc,
# uts, cgroup and user namespaces and its own cgroup; files, env, stdin, exit
# codes, timeouts and a missing command behave as in a fresh sandbox; an
# owner killed with SIGKILL leaves nothing (its guardian removes the rest).
source "$(dirname "$0")/../sandbox_lib.sh"
[ -n "$BB" ] || { echo "FAIL: no busybox image (run tests/images/build.sh)"; exit 1; }
[ "$BB" = busybox ] || { echo "SKIP: sbx batch needs an image store (no --rootfs)"; exit 77; }
[ "$RUNTIME" = native ] || { echo "SKIP: the warm pool holds native sandboxes only"; exit 77; }

field() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["id"], *[json.dumps(r.get(k)) for k in sys.argv[2:]])' "$@"; }

# --- isolation: 8 tasks one after another, the pool 2 ahead of them.
for i in $(seq 1 8); do
  echo "{\"id\": \"i$i\", \"script\": \"ls /work/leak* /tmp/leak* 2>/dev/null && echo LEAKED; mkdir -p /work; echo s > /work/leak$i; echo s > /tmp/leak$i; for n in pid net mnt ipc uts cgroup user; do echo \$n \$(readlink /proc/self/ns/\$n); done; echo host \$(hostname); echo pid1 \$(cat /proc/1/comm)\"}"
done >"$T/iso.jsonl"
expect_rc "8 tasks through a pool of 2 (-P 1)" 0 $SBX batch -q -P 1 --pool 2 --image $BB -o "$T/iso.out" "$T/iso.jsonl"
check "every task ran pooled" test "$(grep -c '"pooled":true' "$T/iso.out")" = 8
check "no task saw a file an earlier one wrote (/work, /tmp)" not_grep LEAKED "$(cat "$T/iso.out")"
# Namespace inode numbers are reused once a namespace is gone: compare each
# task with the next (the next one's sandbox was waiting in the pool while
# this one ran: both existed at once), and count distinct values overall.
python3 - "$T/iso.out" >"$T/iso.ns" <<'P'
import json, sys
seen = {}
for l in open(sys.argv[1]):
    for line in json.loads(l)["stdout"].splitlines():
        k, _, v = line.partition(" ")
        seen.setdefault(k, []).append(v)
for k, vs in sorted(seen.items()):
    print(k, len(vs), sum(a != b for a, b in zip(vs, vs[1:])), len(set(vs)))
P
sed 's/^/  /' "$T/iso.ns"
for n in pid net mnt ipc uts cgroup user host; do
  check "$n: 8 tasks, each different from the one before (namespace inode / hostname)" grep -q "^$n 8 7 " "$T/iso.ns"
done
check "hostnames: 8 different" grep -qx "host 8 7 8" "$T/iso.ns"
check "the command's init is sbx's (pid 1 in its own pid namespace)" grep -qx "pid1 8 0 1" "$T/iso.ns"

# --- own cgroup: seen from the host while tasks run (P=2, pool 2).
for i in 1 2 3 4; do echo "{\"id\": \"c$i\", \"script\": \"sleep 2.5\"}"; done >"$T/cg.jsonl"
$SBX batch -q -P 2 --pool 2 --image $BB -o "$T/cg.out" "$T/cg.jsonl" &
bpid=$!
: >"$T/cg.seen"
while kill -0 $bpid 2>/dev/null; do
  for d in "$SBX_RUN_ROOT"/*/; do
    id=$(basename "$d")
    [[ $id =~ ^[0-9a-f]{64}$ ]] || continue
    pid=$(grep -o '"pid": *[0-9]*' "$d/state.json" 2>/dev/null | head -1 | grep -o '[0-9]*$') || continue
    for c in $(cat /proc/$pid/task/$pid/children 2>/dev/null); do
      # The workload (the init's child): its memory cgroup, as the host names it.
      cg=$(grep -E '^[0-9]+:memory:' /proc/$c/cgroup 2>/dev/null | cut -d: -f3)
      [ -n "$cg" ] && echo "$id $cg" >>"$T/cg.seen"
    done
  done
  sleep 0.1
done
wait $bpid
sort -u "$T/cg.seen" >"$T/cg.uniq"
sed 's/^/  /' "$T/cg.uniq"
check "4 workloads seen from the host" test "$(cut -d' ' -f1 "$T/cg.uniq" | sort -u | wc -l)" = 4
check "each in its own sandbox's cgroup (sbx-<id12>)" \
  bash -c "awk '{ if (\$2 !~ (\"/sbx-\" substr(\$1, 1, 12) \"\$\")) bad = 1 } END { exit bad }' '$T/cg.uniq'"
check "4 different cgroups" test "$(cut -d' ' -f2 "$T/cg.uniq" | sort -u | wc -l)" = 4

# --- a task's parts, pooled as in a fresh sandbox.
cat >"$T/parts.jsonl" <<'J'
{"id": "file", "cmd": ["cat", "/work/sub/in.txt"], "files": {"/work/sub/in.txt": "hello"}}
{"id": "b64", "cmd": ["cat", "/in/b"], "files": {"/in/b": {"base64": "aGVsbG8="}}}
{"id": "stdin", "cmd": ["cat"], "stdin": "abc"}
{"id": "nostdin", "script": "cat; echo end"}
{"id": "env", "script": "echo $K", "env": {"K": "kv"}}
{"id": "code", "script": "echo out; echo err >&2; exit 3"}
{"id": "slow", "script": "sleep 20", "timeout": 1}
{"id": "missing", "cmd": ["no-such-command"]}
{"id": "own", "script": "echo mem", "memory": "64m"}
J
expect_rc "a batch with failing tasks exits 1" 1 $SBX batch -q -P 2 --image $BB -o "$T/parts.out" "$T/parts.jsonl"
field "$T/parts.out" exit_code end_reason stdout stderr pooled | sed 's/^/  /'
row() { field "$T/parts.out" exit_code end_reason stdout stderr pooled | grep "^$1 "; }
check "files (parents created) reach the task" test "$(row file)" = 'file 0 "exit" "hello" "" true'
check "base64 files reach the task" test "$(row b64)" = 'b64 0 "exit" "hello" "" true'
check "stdin reaches the task" test "$(row stdin)" = 'stdin 0 "exit" "abc" "" true'
check "no stdin: /dev/null" test "$(row nostdin)" = 'nostdin 0 "exit" "end\n" "" true'
check "env reaches the task" test "$(row env)" = 'env 0 "exit" "kv\n" "" true'
check "exit code, stdout and stderr apart" test "$(row code)" = 'code 3 "exit" "out\n" "err\n" true'
check "a timeout: 124, end_reason timeout" test "$(row slow)" = 'slow 124 "timeout" "" "" true'
check "a missing command: 127, failed" test "$(field "$T/parts.out" exit_code end_reason | grep '^missing ')" = 'missing 127 "failed"'
check "a task with its own limits gets a fresh sandbox" test "$(row own)" = 'own 0 "exit" "mem\n" "" null'
slow_ms=$(field "$T/parts.out" duration_ms | awk '$1 == "slow" {print $2}')
check "the timeout was counted from the command's start (${slow_ms} ms)" test "${slow_ms:-0}" -ge 900 -a "${slow_ms:-0}" -lt 5000
check "no sandbox left after the batch" test -z "$(ls -A "$SBX_RUN_ROOT" 2>/dev/null | grep -E '^[0-9a-f]{64}$')"

# --- the owner SIGKILLed: the pooled sandboxes (running and waiting) go.
for i in 1 2 3 4; do echo "{\"id\": \"k$i\", \"script\": \"sleep 30\"}"; done >"$T/kill.jsonl"
$SBX batch -q -P 2 --pool 3 --image $BB -o "$T/kill.out" "$T/kill.jsonl" &
bpid=$!
for _ in $(seq 100); do
  [ "$(ls "$SBX_RUN_ROOT" 2>/dev/null | grep -cE '^[0-9a-f]{64}$')" -ge 5 ] && break
  sleep 0.1
done
check "2 running + 3 waiting before the kill" test "$(ls "$SBX_RUN_ROOT" | grep -cE '^[0-9a-f]{64}$')" -ge 5
kill -KILL $bpid
wait $bpid 2>/dev/null
for _ in $(seq 150); do
  [ "$(ls "$SBX_RUN_ROOT" | grep -cE '^[0-9a-f]{64}$')" = 0 ] && break
  sleep 0.1
done
check "SIGKILL of the owner: every pooled sandbox is gone within 15 s" \
  test "$(ls "$SBX_RUN_ROOT" | grep -cE '^[0-9a-f]{64}$')" = 0
$SBX gc >/dev/null

finish

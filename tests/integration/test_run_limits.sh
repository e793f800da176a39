#!/usr/bin/env bash
# sbx run: containment of misbehaving programs (timeout, OOM, fork bomb,
# rlimits) and clean-up when sbx itself is signalled or SIGKILLed.
source "$(dirname "$0")/../sandbox_lib.sh"
run() { $SBX run "$@"; }

# --- timeout --------------------------------------------------------------------
start=$(date +%s%N)
expect_rc "infinite loop is killed at --timeout (124)" 124 run --timeout 1s $BB sh -c 'while :; do :; done' 2>"$T/err"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "timeout fired on time ($ms ms)" test "$ms" -lt 4000
check "timeout says so on stderr" grep -q 'sbx: sandbox killed: timeout after 1s' "$T/err"
expect_rc "timeout kills the whole sandbox, children too" 124 run --timeout 500ms $BB sh -c 'sleep 100 & sleep 100 & wait'

# --- memory -------------------------------------------------------------------
expect_rc "memory hog is OOM-killed under --memory (137)" 137 run --memory 32m $BB sh -c 'tail /dev/zero' 2>"$T/err"
check "OOM says so on stderr" grep -q 'sbx: sandbox killed: out of memory (--memory 32m)' "$T/err"
# ... and a created sandbox's record says so too (inspect reads its memory cgroup's OOM count).
id=$($SBX create --memory 32m $BB sh -c 'tail /dev/zero')
$SBX wait "$id" >/dev/null
out=$($SBX inspect "$id" | python3 -c 'import json,sys; j=json.load(sys.stdin); j=j[0] if isinstance(j,list) else j; s=j["State"]; print(s["OOMKilled"], s["OomKills"] > 0, s.get("Reason"))')
# (OomKills is read from the memory cgroup while it exists: gVisor's monitor
# removes runsc's cgroups at the end, so there only OOMKilled and Reason.)
[ "$RUNTIME" = gvisor ] && out=$(awk '{print $1, "True", $3}' <<<"$out")
check "inspect of an OOM-killed sandbox: OOMKilled, OomKills, Reason oom ($out)" test "$out" = "True True oom"
$SBX rm -f "$id" >/dev/null
if [ -n "$PY" ]; then
  expect_rc "python memory bomb is OOM-killed under --memory (137)" 137 \
    run --memory 64m $PY python3 -c 'a = []
while True: a.append(bytearray(1 << 20))' 2>"$T/err"
  check "... and says so on stderr" grep -q 'sbx: sandbox killed: out of memory (--memory 64m)' "$T/err"
fi
if [ "$RUNTIME" = gvisor ]; then
  # Too little for gVisor's own Sentry and runsc: the OOM kill hits them while
  # the sandbox starts; still an OOM (137 and the message), not "runsc failed".
  expect_rc "gvisor: --memory too small for the Sentry is an OOM (137)" 137 run --memory 6m $BB true 2>"$T/err"
  check "... and says so on stderr" grep -q 'sbx: sandbox killed: out of memory (--memory 6m)' "$T/err"
fi
expect_rc "a small program fits under --memory" 0 run --memory 32m $BB sh -c 'head -c 1000000 /dev/zero | wc -c >/dev/null'

# --- disk (the writable layer) -------------------------------------------------------
out=$(run --disk 16m $BB sh -c 'dd if=/dev/zero of=/big bs=1M count=64 2>&1; stat -c %s /big')
check "--disk 16m: a filler gets ENOSPC" grep -q 'No space left on device' <<<"$out"
check "--disk 16m: at most 16 MiB written ($(tail -1 <<<"$out") bytes)" test "$(tail -1 <<<"$out")" -le 16777216
mkdir -p "$T/dvol" && chown 4242:4242 "$T/dvol"  # writable by the sandbox's root (keep-id)
check "--disk: volumes are not limited by it" bash -c "$SBX run --disk 4m -v $T/dvol:/vol $BB dd if=/dev/zero of=/vol/v bs=1M count=8 2>/dev/null && test \$(stat -c %s $T/dvol/v) = 8388608"
rm -rf "$T/dvol"
# Inodes too: one per 4 KiB of --disk (at least 4096), so empty files cannot
# use up kernel memory that size= does not count.
n=$(run --disk 16m $BB sh -c 'mkdir /m && cd /m && seq 6000 | xargs touch 2>/dev/null; ls | wc -l')
check "--disk 16m: about 4096 files fit, not 6000 (made $n)" bash -c "[ '$n' -ge 3500 ] && [ '$n' -le 4096 ]"
expect_rc "--disk 0 is refused (125)" 125 run --disk 0 $BB true
expect_rc "--disk 1x is refused (125)" 125 run --disk 1x $BB true
# The native runtime's writable layer is a tmpfs: its bytes are memory charged
# to the sandbox's memory cgroup (man sbx-run: --disk), so --memory bounds them too.
if native_only; then
  out=$(run --memory 64m --disk 256m $BB sh -c 'dd if=/dev/zero of=/big bs=1M count=128 2>/dev/null; echo rc=$?; stat -c %s /big' 2>/dev/null)
  rc=$?
  size=$(tail -1 <<<"$out")
  check "--disk bytes count against --memory (rc $rc, ${size:-no} bytes written of 128 MiB)" \
    bash -c "[ $rc = 137 ] || { [ -n '$size' ] && [ '$size' -lt 67108864 ]; }"
fi

# --- pids -------------------------------------------------------------------------
start=$(date +%s%N)
# (The shell stays 2 s so the bomb surely grows to the limit: with `wait` it
# could exit before its detached grandchildren did, ending the run early.)
run --pids-limit 64 --timeout 3s $BB sh -c 'b() { b | b & }; b; sleep 2' 2>"$T/err"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "fork bomb is over within the timeout ($ms ms)" test "$ms" -lt 6000
native_only && check "the fork bomb hit the pids limit, reported" grep -q 'failed at the pids limit (64)' "$T/err"
expect_rc "the host is fine afterwards" 0 run $BB true
# busybox sh stops at the first failed fork; each line is one started process.
out=$(run --pids-limit 20 $BB sh -c 'i=0; while [ $i -lt 40 ]; do sleep 5 & echo started; i=$((i + 1)); done' 2>/dev/null | grep -c started)
native_only && check "--pids-limit 20 caps the process count (started $out of 40)" bash -c "[ $out -ge 10 ] && [ $out -lt 20 ]"

# --- rlimits, cpus -----------------------------------------------------------------
out=$(run --ulimit nofile=100:200 $BB sh -c 'ulimit -n; ulimit -Hn')
check "--ulimit nofile=100:200" test "$out" = "$(printf '100\n200')"
hard=$(ulimit -Hn)
out=$(run --ulimit nofile=64:$((hard + 1000)) $BB sh -c 'ulimit -Hn' 2>"$T/err")
check "--ulimit above the host's hard limit is clamped ($out)" test "$out" = "$hard"
check "... with a warning" grep -q 'CAP_SYS_RESOURCE' "$T/err"
expect_rc "--cpus 0.5 runs" 0 run --cpus 0.5 $BB true
expect_rc "bad --ulimit is 125" 125 run --ulimit nofile=abc $BB true

# --- sbx itself signalled -------------------------------------------------------
wait_for_state() {  # waits until a sandbox's state.json exists; prints its dir
  local d
  for _ in $(seq 200); do
    d=$(ls -d "$SBX_RUN_ROOT"/*/ 2>/dev/null | head -1)
    [ -n "$d" ] && [ -f "$d/state.json" ] && { echo "${d%/}"; return 0; }
    sleep 0.05
  done
  return 1
}
state_pid() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/state.json"; }

$SBX run $BB sleep 100 &
sbxpid=$!
dir=$(wait_for_state)
kill -TERM $sbxpid
wait $sbxpid
rc=$?
# (gVisor: the command is pid 1 of its kernel and, like any init, ignores a
# SIGTERM it has no handler for.)
native_only && check "SIGTERM to sbx run is forwarded: the command dies of it (143, got $rc)" test "$rc" -eq 143
check "SIGTERM: state dir removed" test ! -e "$dir"

# The first SIGTERM goes only once the trap is set (the command says so):
# a fixed wait raced with gVisor's slower start, and the first signal then
# ended the shell (143).
$SBX run $BB sh -c 'trap "" TERM; echo trap-set; sleep 100' >"$T/trap.out" &
sbxpid=$!
dir=$(wait_for_state)
for _ in $(seq 200); do grep -q trap-set "$T/trap.out" 2>/dev/null && break; sleep 0.05; done
kill -TERM $sbxpid; sleep 0.2; kill -TERM $sbxpid
wait $sbxpid
rc=$?
check "a second SIGTERM kills a sandbox that ignores the first (137, got $rc)" test "$rc" -eq 137

$SBX run $BB sleep 100 &
sbxpid=$!
dir=$(wait_for_state)
init=$(state_pid "$dir")
kill -KILL $sbxpid
wait $sbxpid 2>/dev/null
for _ in $(seq 100); do kill -0 "$init" 2>/dev/null || break; sleep 0.05; done
check "SIGKILL of sbx run takes the sandbox down (init $init gone)" bash -c "! kill -0 $init 2>/dev/null"
check "SIGKILL of sbx run leaves its state dir (for the next run / gc)" test -d "$dir"
sleep 2.2  # stale cgroups younger than 2 s are never touched (a start may be in flight)
expect_rc "the next sbx run works" 0 run $BB true
check "... and removed the stale state dir" test ! -e "$dir"

finish

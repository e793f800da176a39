#!/bin/bash
# Crash injection: sbx is SIGKILLed at every named step of create, exec and rm
# (SBX_TEST_CRASH_AT, test-only, see runtime/lifecycle.h crash_point) and at
# random moments of create; after each, `sbx ps -a` must tell the truth and
# `sbx rm -f` / `sbx gc` must leave no mount, cgroup, process or state dir.
# Also: the sandbox's own --timeout fires when every sbx that touched it was
# SIGKILLed.
set -u
SBX=${SBX:?set SBX to the sbx binary}
IMAGES=${SBX_IMAGES:?set SBX_IMAGES to tests/images/out}
T=$(mktemp -d /tmp/sbx-test-crash.XXXXXX)
ROOT=$T/root RUN=$T/run
S() { "$SBX" --root "$ROOT" --run-root "$RUN" "$@"; }
FAILS=0
# SBX_TEST_RUNTIME=gvisor: the same on gVisor (ctest: test_lifecycle_crash_gvisor).
RUNTIME=${SBX_TEST_RUNTIME:-native}
[ "$RUNTIME" = native ] || export SBX_RUNTIME=$RUNTIME
echo "runtime under test: $RUNTIME"
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }
expect_eq() { if [ "$1" == "$2" ]; then ok "$3"; else fail "$3: expected '$2', got '$1'"; fi; }
cleanup() {
  for id in $(S ps -aq --no-trunc 2>/dev/null); do S rm -f "$id" >/dev/null 2>&1; done
  S gc >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
# Processes of ours: any sbx with our run root on its command line (the
# holder, or gVisor's monitor, is a fork of `sbx create`, so it carries it
# too; runsc's processes name their --root under it), not zombies.
our_procs() {
  for p in $(pgrep -f -- "$RUN" 2>/dev/null); do
    grep -qE '^State:[[:space:]]+[^Z[:space:]]' /proc/$p/status 2>/dev/null && echo "$p"
  done
}
leak_check() {  # $1: what
  expect_eq "$(ls -A "$RUN" 2>/dev/null | grep -vE '^\.(names|init)$')" "" "$1: run root empty"
  expect_eq "$(ls -A "$RUN/.names" 2>/dev/null)" "" "$1: no names"
  expect_eq "$(grep -c "$RUN" /proc/self/mountinfo)" "0" "$1: no mounts"
  expect_eq "$(our_procs)" "" "$1: no processes"
  local left=""
  for id in $IDS; do
    left+=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "sbx-${id:0:12}" 2>/dev/null)
  done
  expect_eq "$left" "" "$1: no cgroups"
}
ids_now() { ls "$RUN" 2>/dev/null | grep -E '^[0-9a-f]{64}$'; ls -a "$RUN" 2>/dev/null | sed -n 's/^\.\(new\|trash\)-//p'; }

S import "$IMAGES/busybox-oci" busybox >/dev/null || { echo "FAIL: import"; exit 1; }
IDS=""

# --- create --disk killed half-way: its host tmpfs is unmounted by rm -f / gc ------
[ "$RUNTIME" = gvisor ] && echo "skip (create --runtime gvisor refuses --disk): --disk crash cases"
[ "$RUNTIME" = gvisor ] || for step in create-dir create-state create-started; do
  SBX_TEST_CRASH_AT=$step S create --disk 8m busybox >/dev/null 2>&1
  expect_eq "$?" "137" "create --disk killed at $step"
  IDS+=" $(ids_now)"
  expect_eq "$(grep -c " $RUN/.* - tmpfs sbx-disk " /proc/self/mountinfo)" "1" "$step: the --disk tmpfs is mounted"
  # Before the start, gc alone removes it (its creator is dead); once started,
  # its holder lives on and `rm -f` ends it (as the named steps below).
  [ "$step" == create-started ] && for id in $(S ps -aq --no-trunc); do S rm -f "$id" >/dev/null || fail "$step: rm -f"; done
  S gc >/dev/null
  leak_check "create --disk killed at $step, then rm -f/gc"
done

# --- named steps of create ------------------------------------------------------
for step in create-dir create-state create-name create-started create-done; do
  SBX_TEST_CRASH_AT=$step S create --name "n-$step" busybox >/dev/null 2>&1
  expect_eq "$?" "137" "create killed at $step"
  IDS+=" $(ids_now)"
  PS=$(S ps -a --json) || fail "ps -a after a crash at $step"
  case $step in
    create-dir) expect_eq "$(S ps -aq)" "" "$step: ps shows nothing (nothing was started)" ;;
    create-state|create-name|create-started) echo "$PS" | grep -q '"Status": "dead"' \
      && ok "$step: ps says dead" || fail "$step: ps: $(echo "$PS" | grep Status)" ;;
    create-done) echo "$PS" | grep -q '"Status": "running"' \
      && ok "$step: ps says running" || fail "$step: ps: $(echo "$PS" | grep Status)" ;;
  esac
  if [ "$step" == create-done ]; then
    expect_eq "$(S exec "n-$step" echo alive)" "alive" "$step: the sandbox works"
  fi
  for id in $(S ps -aq --no-trunc); do S rm -f "$id" >/dev/null || fail "$step: rm -f"; done
  S gc >/dev/null
  leak_check "$step"
done

# --- exec killed after joining ------------------------------------------------------
ID=$(S create busybox); IDS+=" $ID"
SBX_TEST_CRASH_AT=exec-joined S exec "$ID" sleep 30 >/dev/null 2>&1
expect_eq "$?" "137" "exec killed after joining"
S ps | grep -q "${ID:0:12}.*Up" && ok "exec-joined: sandbox still running" || fail "exec-joined: ps"
expect_eq "$(S exec "$ID" echo fine)" "fine" "exec-joined: the next exec works"
S rm -f "$ID" >/dev/null || fail "exec-joined: rm -f"
leak_check "exec-joined"

# --- rm killed half-way -----------------------------------------------------------------
for step in rm-killed rm-cgroups rm-renamed; do
  ID=$(S create --name "r-$step" busybox); IDS+=" $ID"
  S exec "$ID" sh -c 'echo x > /tmp/x'
  SBX_TEST_CRASH_AT=$step S rm -f "$ID" >/dev/null 2>&1
  expect_eq "$?" "137" "rm killed at $step"
  S ps -a >/dev/null || fail "$step: ps -a"
  S ps | grep -q "${ID:0:12}" && fail "$step: ps still says running" || ok "$step: ps no longer shows it running"
  [ "$step" != rm-renamed ] && { S rm -f "$ID" >/dev/null || fail "$step: second rm -f"; }
  S gc >/dev/null
  leak_check "$step"
done

# --- random kills during create ------------------------------------------------------------
for i in $(seq 20); do
  S create busybox >/dev/null 2>&1 &
  pid=$!
  sleep "0.0$((RANDOM % 10))"
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  IDS+=" $(ids_now)"
  S ps -a >/dev/null || fail "ps -a after random kill $i"
done
for id in $(S ps -aq --no-trunc); do S rm -f "$id" >/dev/null || fail "rm -f after random kills"; done
sleep 11  # gc leaves a dir without state.json alone for 10 s (a create may be writing it)
S gc >/dev/null
leak_check "random kills"

# --- random kills of a create with a long-running command: gc alone leaves nothing alive ---
# (a SIGKILLed create left its init and workload running, "dead" in
# ps, and gc did not end them.) The sandbox dies with its create until create
# has recorded it as running; gc ends any sandbox whose create died earlier.
MARK="10$((RANDOM % 9000 + 1000))7"
for i in $(seq 20); do
  disk=""
  [ "$RUNTIME" = native ] && [ $((i % 2)) = 0 ] && disk="--disk 8m"
  # (sbx itself, not a subshell running S: kill -9 must hit the create.)
  "$SBX" --root "$ROOT" --run-root "$RUN" create $disk busybox -- sleep "$MARK" >/dev/null 2>&1 &
  pid=$!
  sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"  # a create takes ~0.1 s here: most kills land mid-start
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  IDS+=" $(ids_now)"
done
# The ones whose create finished are running and stay so; every other one is
# dead (and gone after one gc) (a dir without state.json waits 10 s: a create may be writing it).
sleep 11
S gc >/dev/null
for id in $(S ps -aq --no-trunc); do
  st=$(S inspect "$id" 2>/dev/null | grep -m1 '"Status"')
  # running (committed), or exited (killed between its "running" record and
  # the commit: it died with its create); never "dead"/"creating" with a live init.
  echo "$st" | grep -qE '"(running|exited)"' || fail "random create kills: after gc ${id:0:12} is left as $st"
done
running=$(S ps -q | wc -l)
# (gVisor's workloads run inside the Sentry, invisible to the host's pgrep;
# there the status check above and the leak check below hold.)
[ "$RUNTIME" = native ] && expect_eq "$(pgrep -fc -- "^sleep $MARK")" "$running" \
  "random create kills: after gc only the $running committed sandbox(es) still run their command"
for id in $(S ps -aq --no-trunc); do S rm -f "$id" >/dev/null || fail "rm -f after random create kills"; done
S gc >/dev/null
[ "$RUNTIME" = native ] && expect_eq "$(pgrep -fc -- "^sleep $MARK")" "0" "random create kills: no workload left"
leak_check "random create kills, then gc"

# --- limits fire with no sbx left ------------------------------------------------------------
ID=$(S create --timeout 1500ms --name lonely busybox); IDS+=" $ID"
( SBX_TEST_CRASH_AT=exec-joined S exec lonely sleep 60 >/dev/null 2>&1 ) # the exec's sbx is SIGKILLed too
# The orphaned exec's parent is the host's pid 1, which must reap it before the
# pid namespace can end (this VM's pid 1 reaps every few seconds).
for i in $(seq 100); do S inspect lonely | grep -q '"Status": "exited"' && break; sleep 0.2; done
S inspect lonely | grep -q '"Reason": "timeout"' && ok "timeout fired with every sbx gone" || fail "timeout: $(S inspect lonely | grep -E 'Status|Reason')"
S rm lonely >/dev/null || fail "rm of an ended sandbox (no -f)"
leak_check "timeout without sbx"

echo "$FAILS failure(s)"
[ "$FAILS" -eq 0 ]

# Shared by tests/integration/test_run*.sh and test_humaneval.sh (sourced).
#
# Gives each test its own temp --root/--run-root and its own cgroup
# ("sbxtest-PID", a child of the cgroup the test runs in, in every hierarchy),
# so that sandboxes it starts get their "sbx-*" cgroups under it and the leak
# check at the end sees only this test's (other tests may run beside it).
# Provides: $T, $BB and $PY (image or --rootfs arguments), check, expect_rc,
# finish (leak check + summary; the test's exit status).
set -uo pipefail
: "${SBX:?set SBX to the sbx binary}"
SBX_TEST_SRC=${SBX_TEST_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
SBX_IMAGES=${SBX_IMAGES:-$SBX_TEST_SRC/tests/images/out}
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (namespaces, mounts, cgroups)"; exit 77; fi

TEST_START=$(date +%s)
T=$(mktemp -d /tmp/sbx-test.XXXXXX)
export SBX_ROOT=$T/root SBX_RUN_ROOT=$T/run
# The backend under test: SBX_TEST_RUNTIME=gvisor runs every `sbx run` of the
# test under runsc (through SBX_RUNTIME, the CLI's default for --runtime).
RUNTIME=${SBX_TEST_RUNTIME:-native}
[ "$RUNTIME" = native ] || export SBX_RUNTIME=$RUNTIME
echo "runtime under test: $RUNTIME"
# Guards the cases gVisor does differently by design (its own kernel: the
# command is pid 1, seccomp/caps/no_new_privs apply to the sentry, pids and
# OOM are accounted to the sentry's cgroup); prints what it skips.
native_only() {
  [ "$RUNTIME" = native ] && return 0
  echo "skip (gvisor differs by design): line ${BASH_LINENO[0]}"
  return 1
}
# The runsc of a gVisor sandbox makes cgroups in every hierarchy, under sbx's
# own (linux.cgroupsPath sbx-<id12>, relative): the test enters a cgroup of its
# own in every hierarchy it can (below), and the leak check also looks at the
# top of any hierarchy it could not enter. (Not at the others' tops: sandboxes
# of other people on the host may be there.)
ROOT_SBX_CGROUPS_BEFORE=$(ls -d /sys/fs/cgroup/*/sbx-* 2>/dev/null | sort)
# Every sandbox's memory cgroup sits below sbx's parent cgroup "sbx" (memory
# hierarchy on v1, the top on v2), outside the test's own cgroup: what is
# below it now is not this test's, and the parent goes with the last sandbox.
SBX_PARENT_CGROUP=/sys/fs/cgroup/memory/sbx
[ -d /sys/fs/cgroup/memory ] || SBX_PARENT_CGROUP=/sys/fs/cgroup/sbx
PARENT_CHILDREN_BEFORE=$(ls -d "$SBX_PARENT_CGROUP"/sbx-* 2>/dev/null | sort)
# Per-sandbox network index dirs (RUN/sbx-net/sandboxes/<id>) there before
# the test: only new ones can be this test's.
NET_INDEX_BEFORE=$(ls "${SBX_NETWORK_STATE:-/run/sbx-net}/sandboxes" 2>/dev/null | sort)
fails=0
passes=0

check() {  # DESCRIPTION COMMAND... : passes when COMMAND succeeds
  local desc=$1
  shift
  if "$@"; then
    passes=$((passes + 1)); echo "ok   $desc"
  else
    fails=$((fails + 1)); echo "FAIL $desc"
  fi
}

not_grep() {  # PATTERN TEXT : true when TEXT does not contain PATTERN
  ! grep -q -- "$1" <<<"$2"
}

expect_rc() {  # DESCRIPTION WANT COMMAND... : passes when COMMAND exits WANT
  local desc=$1 want=$2 rc
  shift 2
  "$@"
  rc=$?
  if [ "$rc" -eq "$want" ]; then
    passes=$((passes + 1)); echo "ok   $desc (exit $rc)"
  else
    fails=$((fails + 1)); echo "FAIL $desc: exit $rc, want $want"
  fi
}

# --- this test's own cgroups ------------------------------------------------
TEST_CGROUPS=()
enter_test_cgroup() {
  local line ctrls path dir lines
  mapfile -t lines </proc/self/cgroup  # read it all before moving (it changes)
  for line in "${lines[@]}"; do
    ctrls=${line#*:}; path=${ctrls#*:}; ctrls=${ctrls%%:*}
    if [ -z "$ctrls" ]; then
      [ -d /sys/fs/cgroup/unified ] && dir=/sys/fs/cgroup/unified || dir=/sys/fs/cgroup
    else
      ctrls=${ctrls%%,*}
      dir=/sys/fs/cgroup/${ctrls#name=}  # named hierarchies too (name=systemd: runsc makes one there)
    fi
    dir=$dir${path%/}/sbxtest-$$
    [ -d "${dir%/*}" ] || continue
    mkdir "$dir" 2>/dev/null || continue
    # cpuset refuses tasks until cpus/mems are set: the parent's.
    if [ -f "$dir/cpuset.cpus" ]; then
      cat "${dir%/*}/cpuset.cpus" >"$dir/cpuset.cpus" 2>/dev/null
      cat "${dir%/*}/cpuset.mems" >"$dir/cpuset.mems" 2>/dev/null
    fi
    if ! echo $$ 2>/dev/null >"$dir/cgroup.procs"; then rmdir "$dir"; continue; fi
    TEST_CGROUPS+=("$dir")
  done
}
leave_test_cgroup() {
  local dir
  for dir in "${TEST_CGROUPS[@]}"; do
    echo $$ >"${dir%/*}/cgroup.procs" 2>/dev/null
  done
  for dir in "${TEST_CGROUPS[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$dir" 2>/dev/null && break; sleep 0.1; done
    [ -d "$dir" ] && { echo "warning: could not remove test cgroup $dir:"; ps -o pid,ppid,stat,args -p "$(paste -sd, "$dir/cgroup.procs")"; }
  done
}
enter_test_cgroup

# --- images -----------------------------------------------------------------
# The real test images (tests/images/build.sh) imported into $SBX_ROOT when
# this sbx has an image store; otherwise root file systems for --rootfs.
BB="" PY=""
if $SBX import --help >/dev/null 2>&1 && [ -d "$SBX_IMAGES/busybox-oci" ]; then
  $SBX import -q "$SBX_IMAGES/busybox-oci" busybox:latest >/dev/null || { echo "FAIL import busybox"; exit 1; }
  BB=busybox
  if [ -d "$SBX_IMAGES/python-oci" ]; then
    $SBX import -q "$SBX_IMAGES/python-oci" python:latest >/dev/null || { echo "FAIL import python"; exit 1; }
    PY=python
  fi
else
  bb=$(command -v busybox)
  mkdir -p "$T/bbroot/bin" "$T/bbroot/etc" "$T/bbroot/tmp" "$T/bbroot/root"
  cp "$bb" "$T/bbroot/bin/busybox"
  for a in $("$bb" --list); do [ -e "$T/bbroot/bin/$a" ] || ln -s busybox "$T/bbroot/bin/$a"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$T/bbroot/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$T/bbroot/etc/group"
  chmod 1777 "$T/bbroot/tmp"
  BB="--rootfs $T/bbroot"
  [ -n "${SBX_TEST_PYROOT:-}" ] && PY="--rootfs $SBX_TEST_PYROOT"
fi

# --- the leak check -----------------------------------------------------------
leak_check() {
  local dir leaked
  if grep -F -e "$T" -e "$SBX_RUN_ROOT" /proc/self/mountinfo >/dev/null; then
    fails=$((fails + 1)); echo "FAIL leak: mounts left:"; grep -F "$T" /proc/self/mountinfo
  else
    passes=$((passes + 1)); echo "ok   leak: no mounts left"
  fi
  leaked=""
  for dir in "${TEST_CGROUPS[@]}"; do
    leaked+=$(find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'sbx-*' -printf '%p ' 2>/dev/null)
  done
  leaked+=$(comm -13 <(echo "$PARENT_CHILDREN_BEFORE") <(ls -d "$SBX_PARENT_CGROUP"/sbx-* 2>/dev/null | sort) | tr '\n' ' ')
  if [ -z "$(ls -d "$SBX_PARENT_CGROUP"/sbx-* 2>/dev/null)" ] && [ -d "$SBX_PARENT_CGROUP" ]; then
    leaked+=" $SBX_PARENT_CGROUP (sbx's parent cgroup, with no sandbox left below it)"
  fi
  if [ -n "$leaked" ]; then
    fails=$((fails + 1)); echo "FAIL leak: cgroups left: $leaked"
    # What holds each and when it was made: the clue to which case left it.
    for dir in $leaked; do
      [ -d "$dir" ] || continue
      echo "     $dir: made $(($(stat -c %Z "$dir") - TEST_START)) s into the test; processes: $(tr '\n' ' ' <"$dir/cgroup.procs" 2>/dev/null)"
    done
  else
    passes=$((passes + 1)); echo "ok   leak: no sbx-* cgroups left, nor sbx's parent cgroup"
  fi
  # Every process of this test's cgroup but the test shell itself is a leak.
  leaked=""
  for dir in "${TEST_CGROUPS[@]}"; do
    while read -r p; do [ "$p" = $$ ] || leaked+=" $p"; done <"$dir/cgroup.procs"
    break
  done
  if [ -n "$leaked" ]; then
    fails=$((fails + 1)); echo "FAIL leak: processes left:$leaked"; ps -o pid,args -p ${leaked// /,} || true
  else
    passes=$((passes + 1)); echo "ok   leak: no processes left"
  fi
  if [ "$RUNTIME" = gvisor ]; then
    local entered=" ${TEST_CGROUPS[*]} " top
    leaked=$(comm -13 <(echo "$ROOT_SBX_CGROUPS_BEFORE") <(ls -d /sys/fs/cgroup/*/sbx-* 2>/dev/null | sort) |
      while read -r top; do
        # (A hierarchy the test has its own cgroup in holds this test's under it.)
        [[ $entered == *" ${top%/sbx-*}/"* ]] || echo "$top"
      done | tr '\n' ' ')
    leaked+=$(pgrep -f -- "runsc.*$T" | tr '\n' ' ')
    if [ -n "$leaked" ]; then
      fails=$((fails + 1)); echo "FAIL leak: runsc cgroups or processes left: $leaked"
    else
      passes=$((passes + 1)); echo "ok   leak: no runsc cgroups or processes left"
    fi
  fi
  # --network private: leases of this test's sandboxes (they name its run
  # root); with no lease of anyone left, sbx's nft table and sbv* veths too.
  local netstate=${SBX_NETWORK_STATE:-/run/sbx-net}
  leaked=$(grep -l -F "$SBX_RUN_ROOT" "$netstate"/*.json 2>/dev/null | tr '\n' ' ')
  # ... and index dirs made during the test and left empty (a live sandbox's
  # holds its records; an empty one is a killed sandbox's that gc missed).
  local d
  for d in "$netstate"/sandboxes/*/; do
    [ -d "$d" ] || continue
    grep -qx "$(basename "$d")" <<<"$NET_INDEX_BEFORE" && continue
    [ -z "$(ls -A "$d")" ] && leaked+="empty index dir $d "
  done
  if ! ls "$netstate"/*.json >/dev/null 2>&1; then
    # (A sandbox's veth goes with its namespace, asynchronously: give it a moment.)
    for _ in 1 2 3 4 5 6 7 8 9 10; do ip -o link show 2>/dev/null | grep -Eq ': sbv[0-9a-f]{12}[@:]' || break; sleep 0.1; done
    command -v nft >/dev/null && nft list table inet sbxnet >/dev/null 2>&1 && leaked+="nft table inet sbxnet "
    leaked+=$(ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^sbv[0-9a-f]{12}(@|$)/ {print $2}' | tr '\n' ' ')
  fi
  if [ -n "$leaked" ]; then
    fails=$((fails + 1)); echo "FAIL leak: network left: $leaked"
  else
    passes=$((passes + 1)); echo "ok   leak: no network leases, nft table or veths left"
  fi
  # (.init: the native holder's program, written once per run root and kept.)
  if [ -d "$SBX_RUN_ROOT" ] && [ -n "$(ls -A "$SBX_RUN_ROOT" | grep -v '^\.init$')" ]; then
    fails=$((fails + 1)); echo "FAIL leak: run root not empty: $(ls -A "$SBX_RUN_ROOT")"
  else
    passes=$((passes + 1)); echo "ok   leak: run root empty"
  fi
}

finish() {
  leak_check
  leave_test_cgroup
  rm -rf "$T"
  echo "$passes passed, $fails failed"
  [ "$fails" -eq 0 ]
  exit $?
}

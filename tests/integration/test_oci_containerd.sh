#!/bin/bash
# sbx-runc under the real containerd (Debian's 1.6): containerd started by the
# test with its own root, state and socket (no CRI plugin, no network),
# `ctr image import` of the test image, `ctr run --runtime io.containerd.runc.v2
# --runc-binary sbx-runc` with output and exit code, task exec / ps / pause /
# resume / kill, and the json log the shim reads. Leak check at the end.
source "$(dirname "$0")/../sandbox_lib.sh"
command -v containerd >/dev/null && command -v ctr >/dev/null ||
  { echo "SKIP: containerd is not installed"; leave_test_cgroup; rm -rf "$T"; exit 77; }
RUNC=$(dirname "$(readlink -f "$SBX")")/sbx-runc
cd "$T" || exit 1
CGP=/sbxtest-ctr-$$
RUN_CONTAINERD_EXISTED=0; [ -e /run/containerd ] && RUN_CONTAINERD_EXISTED=1
C=$T/containerd
mkdir -p "$C"
cat >"$C/config.toml" <<TOML
version = 2
root = "$C/root"
state = "$C/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$C/c.sock"
[ttrpc]
  address = "$C/c.sock.ttrpc"
TOML
containerd --config "$C/config.toml" >"$C/log" 2>&1 &
CPID=$!
CT=(ctr --address "$C/c.sock")
for _ in $(seq 100); do "${CT[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
check "containerd started" "${CT[@]}" version >/dev/null
"${CT[@]}" image import --base-name localhost/busybox "$SBX_IMAGES/busybox.oci.tar" >/dev/null
IMG=localhost/busybox:latest
check "ctr image import" grep -q "$IMG" <<<"$("${CT[@]}" image ls -q)"
CRUN=(--runtime io.containerd.runc.v2 --runc-binary "$RUNC")

out=$("${CT[@]}" run --rm "${CRUN[@]}" --cgroup "$CGP/t1" "$IMG" t1 sh -c 'echo hello-ctr; exit 4'); rc=$?
check "ctr run --rm: output" [ "$out" = hello-ctr ]
check "ctr run --rm: exit code 4" [ "$rc" = 4 ]
"${CT[@]}" run --rm "${CRUN[@]}" --cgroup "$CGP/t2" "$IMG" t2 no-such-cmd >/dev/null 2>"$T/err"; rc=$?
check "ctr run of a missing command fails" [ "$rc" != 0 ]
check "  with sbx-runc's message (from its json log)" grep -q 'executable file not found' "$T/err"

if command -v runsc >/dev/null || [ -n "${SBX_RUNSC:-}" ]; then
  out=$("${CT[@]}" run --rm "${CRUN[@]}" --annotation dev.sbx.runtime=gvisor --cgroup "$CGP/g1" "$IMG" g1 sh -c 'dmesg | head -1; exit 3'); rc=$?
  check "gvisor annotation: ctr run under gVisor" grep -q 'Starting gVisor' <<<"$out"
  check "gvisor annotation: exit code 3" [ "$rc" = 3 ]
  # The runc shim's sequences: kill a running task, kill it again once it has
  # ended (the shim must read sbx-runc's answer as "already gone", not hang),
  # delete. Each ctr call is bounded: a shim that hangs fails the check.
  G=(--annotation dev.sbx.runtime=gvisor)
  timeout 60 "${CT[@]}" run -d "${CRUN[@]}" "${G[@]}" --cgroup "$CGP/g2" "$IMG" g2 sh -c 'while :; do sleep 0.1; done' >/dev/null; rc=$?
  check "gvisor: ctr run -d returns" [ "$rc" = 0 ]
  for _ in $(seq 50); do "${CT[@]}" task ls | grep -q 'g2.*RUNNING' && break; sleep 0.1; done
  check "gvisor: task RUNNING" grep -q 'g2.*RUNNING' <<<"$("${CT[@]}" task ls)"
  timeout 60 "${CT[@]}" task kill -s SIGKILL g2; rc=$?
  check "gvisor: task kill SIGKILL" [ "$rc" = 0 ]
  for _ in $(seq 100); do "${CT[@]}" task ls | grep -q 'g2.*STOPPED' && break; sleep 0.1; done
  check "gvisor: task STOPPED after kill" grep -q 'g2.*STOPPED' <<<"$("${CT[@]}" task ls)"
  timeout 60 "${CT[@]}" task kill -s SIGKILL g2 2>"$T/err"; rc=$?
  check "gvisor: a second kill answers at once (not a hang)" [ "$rc" != 124 ]
  check "gvisor: ... as 'already gone' (not found / already finished)" grep -qiE 'not found|already finished' "$T/err"
  timeout 60 "${CT[@]}" task rm g2 >/dev/null; rc=$?
  check "gvisor: task rm" [ "$rc" = 0 ]
  "${CT[@]}" container rm g2
else
  echo "skip: no runsc (gVisor annotation)"
fi

"${CT[@]}" run -d "${CRUN[@]}" --cgroup "$CGP/t3" "$IMG" t3 sh -c 'trap "exit 0" TERM; while :; do sleep 0.1; done' >/dev/null
for _ in $(seq 50); do "${CT[@]}" task ls | grep -q 't3.*RUNNING' && break; sleep 0.1; done
check "run -d: task RUNNING" grep -q 't3.*RUNNING' <<<"$("${CT[@]}" task ls)"
out=$("${CT[@]}" task exec --exec-id e1 t3 sh -c 'echo exec-ok; exit 6'); rc=$?
check "task exec: output" [ "$out" = exec-ok ]
check "task exec: exit code 6" [ "$rc" = 6 ]
check "task ps: two processes (sh and sleep)" [ "$("${CT[@]}" task ps t3 | tail -n +2 | wc -l)" -ge 2 ]
"${CT[@]}" task pause t3
check "task pause: PAUSED" grep -q 't3.*PAUSED' <<<"$("${CT[@]}" task ls)"
"${CT[@]}" task resume t3
check "task resume: RUNNING" grep -q 't3.*RUNNING' <<<"$("${CT[@]}" task ls)"
"${CT[@]}" task kill -s SIGTERM t3
for _ in $(seq 50); do "${CT[@]}" task ls | grep -q 't3.*STOPPED' && break; sleep 0.1; done
check "task kill TERM: STOPPED" grep -q 't3.*STOPPED' <<<"$("${CT[@]}" task ls)"
"${CT[@]}" task rm t3 >/dev/null; "${CT[@]}" container rm t3
check "no container left" [ -z "$("${CT[@]}" container ls -q)" ]

# --- leaks -----------------------------------------------------------------------------
SR=/run/containerd/runc/default
check "no sbx-runc record left in the shim's root" \
  [ -z "$(ls -A $SR 2>/dev/null | grep -vxE '.gvisor|.gvisor-bundles')$(ls -A $SR/.gvisor 2>/dev/null | grep -vx runsc)$(ls -A $SR/.gvisor/runsc $SR/.gvisor-bundles 2>/dev/null | grep -v ':$' | grep .)" ]
left=$(find /sys/fs/cgroup/*/"${CGP#/}" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)
check "no container cgroup left under $CGP" [ -z "$left" ] || echo "$left"
for d in /sys/fs/cgroup/*/"${CGP#/}"; do
  [ -d "$d" ] && { find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null; rmdir "$d" 2>/dev/null; }
done
"${CT[@]}" image rm "$IMG" >/dev/null 2>&1
kill "$CPID"; wait "$CPID" 2>/dev/null
grep -F " $T/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount "$m" 2>/dev/null; done
[ "$RUN_CONTAINERD_EXISTED" = 1 ] || rm -rf /run/containerd
finish

#!/usr/bin/env bash
# Snapshots through the CLI on the real test images:
#  - filesystem: changes made through a real overlay on busybox's layers (an
#    upper dir on disk, as a long-lived sandbox has) become a new image with
#    `sbx snapshot --upper`; a new sandbox of it sees the writes and the
#    deletions; it shares its parent's layers; rmi works on it.
#  - export: oci-archive and docker-archive that skopeo reads and copies, and
#    that re-import into a fresh store with the same image id and digest.
#  - directory: files a python sandbox wrote are captured (snapshot-dir),
#    extracted and mounted into a busybox sandbox; the snapshot never changes;
#    `create --mount-snapshot` gives a long-lived sandbox its own writable
#    copy, removed by `sbx rm`.
#  - snapshots ls/rm/prune; clear errors and exit codes.
#  - `sbx snapshot ID` / `snapshot-dir ID` / `checkpoint ID` on sandboxes from
#    `sbx create`, named by id, name or prefix.
#  - a running sandbox that writes and forks without pause is frozen while it
#    is snapshotted (its freezer cgroup is seen frozen; the files it keeps in
#    lock-step are consistent in the snapshot), goes on after, and `sbx rm`
#    removes the freezer cgroup made for it.
# Leaves nothing behind (checked at the end).
set -euo pipefail
SBX=${SBX:-build/sbx}
IMAGES=${SBX_IMAGES:-$(dirname "$0")/../images/out}
if [ ! -d "$IMAGES/busybox-oci" ] || [ ! -d "$IMAGES/python-oci" ]; then
  echo "SKIP: test images not built (tests/images/build.sh)"; exit 0
fi
T=$(mktemp -d /tmp/sbx-test.XXXX)
MOUNTED=()
cleanup() {
  for m in "${MOUNTED[@]}"; do umount -l "$m" 2>/dev/null || true; done
  # A failed check leaves its sandboxes: remove them (processes, cgroups, runsc state) first.
  for d in "$T"/run/*/; do
    [ -f "$d/state.json" ] && "$SBX" --root "$T/root" --run-root "$T/run" rm -f "$(basename "$d")" >/dev/null 2>&1
  done
  rm -rf "$T"
}
trap cleanup EXIT
sbx() { "$SBX" --root "$T/root" --run-root "$T/run" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_code() {  # expect_code CODE PATTERN CMD...
  local want=$1 pat=$2; shift 2
  set +e; out=$("$@" 2>&1); code=$?; set -e
  [ "$code" = "$want" ] || fail "'$*' exited $code, want $want: $out"
  echo "$out" | grep -q -- "$pat" || fail "'$*' said '$out', want '$pat'"
}

sbx import -q "$IMAGES/busybox-oci" busybox >/dev/null
sbx import -q "$IMAGES/python-oci" python >/dev/null

echo "== filesystem snapshot"
layers=$(sbx inspect busybox | python3 -c 'import json,sys; print(":".join(reversed(json.load(sys.stdin)["LayerDirs"])))')
mkdir -p "$T/sb/upper" "$T/sb/work" "$T/sb/merged"
mount -t overlay overlay -o "lowerdir=$layers,upperdir=$T/sb/upper,workdir=$T/sb/work" "$T/sb/merged"
MOUNTED+=("$T/sb/merged")
mkdir -p "$T/sb/merged/root/work"
echo "result 42" > "$T/sb/merged/root/work/result.txt"
rm "$T/sb/merged/etc/passwd"
rm -rf "$T/sb/merged/home"; mkdir "$T/sb/merged/home"; echo only > "$T/sb/merged/home/new"
umount "$T/sb/merged"; MOUNTED=()
id=$(sbx snapshot --upper "$T/sb/upper" --image busybox --name snap:v1)
[ "${#id}" = 64 ] || fail "snapshot printed '$id', want an image id"
sbx images | grep -q '^snap ' || fail "snap not in sbx images"
[ "$(sbx run snap:v1 -- cat /root/work/result.txt)" = "result 42" ] || fail "new sandbox does not see the written file"
sbx run snap:v1 -- sh -c 'test ! -e /etc/passwd' || fail "the deletion did not survive (whiteout)"
[ "$(sbx run snap:v1 -- ls /home)" = "new" ] || fail "the replaced dir is not opaque"
sbx run snap:v1 -- test -x /bin/busybox || fail "lower layers missing"
parent_layers=$(sbx inspect busybox | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["LayerDirs"]))')
snap_layers=$(sbx inspect snap:v1 | python3 -c 'import json,sys; d=json.load(sys.stdin)["LayerDirs"]; print(" ".join(d[:-1]), len(d))')
[ "$snap_layers" = "$parent_layers 4" ] || fail "snapshot layers '$snap_layers' do not extend '$parent_layers'"

echo "== export and re-import"
digest=$(sbx inspect snap:v1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["Digest"])')
sbx export snap:v1 -o "$T/snap.oci.tar" >/dev/null
skopeo inspect "oci-archive:$T/snap.oci.tar" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["Layers"])==4, d' \
  || fail "skopeo cannot read the oci-archive"
skopeo --insecure-policy copy -q "oci-archive:$T/snap.oci.tar" "dir:$T/copied" || fail "skopeo copy of the oci-archive"
[ -f "$T/copied/manifest.json" ] || fail "skopeo copy wrote no manifest"
sbx export snap:v1 -o "$T/snap.docker.tar" --format docker-archive >/dev/null
skopeo inspect "docker-archive:$T/snap.docker.tar" >/dev/null || fail "skopeo cannot read the docker-archive"
id2=$("$SBX" --root "$T/root2" --run-root "$T/run" import -q "$T/snap.oci.tar")
[ "$id2" = "$id" ] || fail "re-imported oci-archive has id $id2, want $id"
d2=$("$SBX" --root "$T/root2" inspect "$id2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Digest"])')
[ "$d2" = "$digest" ] || fail "re-imported digest $d2, want $digest"
"$SBX" --root "$T/root2" --run-root "$T/run" images | grep -q '^snap ' || fail "the name did not survive export"
id3=$("$SBX" --root "$T/root3" --run-root "$T/run" import -q "$T/snap.docker.tar")
[ "$id3" = "$id" ] || fail "re-imported docker-archive has id $id3, want $id"
[ "$("$SBX" --root "$T/root2" --run-root "$T/run" run snap:v1 -- cat /root/work/result.txt)" = "result 42" ] \
  || fail "the moved snapshot does not run"
expect_code 125 "unknown archive format" sbx export snap:v1 -o "$T/x.tar" --format zip
expect_code 125 "not found" sbx export nosuch -o "$T/x.tar"
[ ! -e "$T/x.tar" ] || fail "a failed export left a file"

echo "== directory snapshot: python writes, busybox mounts"
mkdir -p "$T/proj"
# :idmap=host: the sandbox's ids are the host's on disk (uid 1000 stays 1000).
sbx run -v "$T/proj:/work:idmap=host" python -- python3 -c '
import os
os.makedirs("/work/src", exist_ok=True)
open("/work/src/model.py", "w").write("W = [1, 2, 3]\n")
os.symlink("src/model.py", "/work/latest")
os.chmod("/work/src/model.py", 0o640)
os.chown("/work/src/model.py", 1000, 1000)'
name=$(sbx snapshot-dir --host-dir "$T/proj" --name proj)
[ "$name" = proj ] || fail "snapshot-dir printed '$name'"
sbx snapshots extract proj "$T/copy1"
out=$(sbx run -v "$T/copy1:/mnt/proj:idmap=host" busybox -- sh -c 'cat /mnt/proj/latest; stat -c "%u %a" /mnt/proj/src/model.py; echo changed > /mnt/proj/src/model.py')
[ "$out" = "$(printf 'W = [1, 2, 3]\n1000 640')" ] || fail "busybox sandbox sees '$out'"
sbx snapshots extract proj "$T/copy2"
[ "$(cat "$T/copy2/src/model.py")" = "W = [1, 2, 3]" ] || fail "the snapshot changed after a sandbox wrote to its copy"
expect_code 125 "not empty" sbx snapshots extract proj "$T/copy2"

echo "== create --mount-snapshot: a long-lived sandbox's own writable copy, gone with sbx rm"
cid=$(sbx create --mount-snapshot proj:/mnt/proj busybox)
[ "$(sbx exec "$cid" -- cat /mnt/proj/src/model.py)" = "W = [1, 2, 3]" ] || fail "create --mount-snapshot: the snapshot is not at /mnt/proj"
sbx exec "$cid" -- sh -c 'echo changed > /mnt/proj/src/model.py; echo new > /mnt/proj/new.txt' || fail "create --mount-snapshot: the copy is not writable"
[ "$(sbx exec "$cid" -- cat /mnt/proj/src/model.py /mnt/proj/new.txt | tr '\n' ' ')" = "changed new " ] || fail "create --mount-snapshot: writes not kept"
[ -d "$T/run/.snapshot-copies/$cid" ] || fail "create --mount-snapshot: no copy under the run root"
sbx rm -f "$cid" >/dev/null
[ ! -e "$T/run/.snapshot-copies" ] || fail "sbx rm left the sandbox's snapshot copies: $(ls -R "$T/run/.snapshot-copies")"
sbx snapshots extract proj "$T/copy3"
[ "$(cat "$T/copy3/src/model.py")" = "W = [1, 2, 3]" ] && [ ! -e "$T/copy3/new.txt" ] || fail "the snapshot changed after a created sandbox wrote to its copy"
expect_code 125 "nosnap" sbx create --mount-snapshot nosnap:/x busybox
expect_code 125 "expected NAME:/ABSOLUTE/TARGET" sbx create --mount-snapshot proj busybox
[ -z "$(sbx ps -a -q)" ] || fail "a refused create --mount-snapshot left a sandbox: $(sbx ps -a)"
[ ! -e "$T/run/.snapshot-copies" ] || fail "a refused create --mount-snapshot left copies"

echo "== snapshots list, rm, prune"
sbx snapshots --json | python3 -c '
import json, sys
s = {r["Name"]: r for r in json.load(sys.stdin)}
assert s["proj"]["Kind"] == "dir" and s["proj"]["Size"] > 0 and s["proj"]["LastUsed"], s
assert s["snap:v1"]["Kind"] == "fs" and s["snap:v1"]["Parent"] == "busybox", s' || fail "sbx snapshots --json"
sbx snapshots | grep -q '^proj  *dir' || fail "sbx snapshots table"
sbx snapshots prune --older-than 1d >/dev/null
[ "$(sbx snapshots --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 2 ] || fail "prune removed recent snapshots"
sbx snapshots rm proj snap:v1 >/dev/null
[ "$(sbx snapshots --json)" = "[]" ] || fail "snapshots left after rm"
sbx run busybox -- true || fail "parent image broken after removing its snapshot"
expect_code 125 "not found" sbx snapshots rm proj
expect_code 125 "not found" sbx restore nosuch
# Sandbox ids resolve as in every lifecycle command (full id, name, unique prefix).
expect_code 125 "no such sandbox 'nosuch'" sbx snapshot nosuch
expect_code 125 "no such sandbox 'nosuch'" sbx snapshot-dir nosuch /root
expect_code 125 "no such sandbox 'nosuch'" sbx checkpoint nosuch

echo "== snapshots of sandboxes made with sbx create (by id, name and prefix)"
sid=$(sbx create --name box busybox)
sbx exec "$sid" -- sh -c 'echo from-create > /root/c.txt; rm /etc/group'
sbx snapshot box --name created:v1 >/dev/null
[ "$(sbx run created:v1 -- cat /root/c.txt)" = from-create ] || fail "snapshot of a running sandbox (by name)"
sbx run created:v1 -- sh -c 'test ! -e /etc/group' || fail "deletion in a running sandbox"
sbx snapshot "${sid:0:10}" --name created:v2 >/dev/null || fail "snapshot by id prefix"
sbx snapshot-dir box /root --name croot >/dev/null
sbx snapshots extract croot "$T/croot"
[ "$(cat "$T/croot/c.txt")" = from-create ] || fail "snapshot-dir of a running sandbox"

# A sandbox in a user namespace (create's default) writes 2^31+ host ids to
# its upper dir; its snapshots must hold the ids it saw (0, 1000).
uid=$(awk '/^Uid:/{print $2}' /proc/$(sbx inspect "$sid" | sed -n 's/.*"Pid": \([0-9]*\).*/\1/p' | head -1)/status)
[ "${uid:-0}" -ge 65536 ] || fail "sbx create did not use a user namespace (holder uid '$uid')"
sbx exec "$sid" -- sh -c 'mkdir -p /data && echo r > /data/root.txt && echo u > /data/u.txt && chown 1000:1001 /data/u.txt'
sbx snapshot "$sid" --name owners:v1 >/dev/null || fail "snapshot of a userns sandbox"
[ "$(sbx run --userns host owners:v1 -- stat -c %u:%g /data/root.txt /data/u.txt | tr '\n' ' ')" = "0:0 1000:1001 " ] \
  || fail "owners in a snapshot of a userns sandbox: $(sbx run --userns host owners:v1 -- stat -c '%n %u:%g' /data/root.txt /data/u.txt | tr '\n' ' ')"
sbx snapshot-dir "$sid" /data --name odata >/dev/null || fail "snapshot-dir of a userns sandbox"
sbx snapshots extract odata "$T/odata"
[ "$(stat -c %u:%g "$T/odata/root.txt" "$T/odata/u.txt" | tr '\n' ' ')" = "0:0 1000:1001 " ] \
  || fail "owners in a dir snapshot of a userns sandbox: $(stat -c '%n %u:%g' "$T/odata/root.txt" "$T/odata/u.txt" | tr '\n' ' ')"
sbx snapshots rm odata >/dev/null
sbx rmi owners:v1 >/dev/null || fail "rmi owners:v1"
# With sbx's CRIU (.ci/criu-build.sh): sbx info names it, and a native
# sandbox in a user namespace is refused with the reason (restoring one is not
# done yet; tests/integration/test_native_checkpoint.sh covers --userns host);
# without CRIU the refusal names --runtime gvisor. Nothing is written.
if [ -x /usr/local/lib/sbx/criu/sbin/criu ] && [ -z "${SBX_CRIU:-}" ]; then
  sbx info | grep -q "memory snapshots: CRIU 4\.[0-9.]* at /usr/local/lib/sbx/criu/sbin/criu" \
    || fail "sbx info does not report sbx's CRIU: $(sbx info | grep -i criu)"
  [ "$(sbx info --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["runtimes"]["native"]["features"]["criu"])')" = True ] \
    || fail "sbx info --json: runtimes.native.features.criu is not true"
  expect_code 125 "user namespace" sbx checkpoint box
else
  expect_code 125 "runtime gvisor" sbx checkpoint box
fi
[ -z "$(ls -A "$T/root/snapshots/checkpoints" 2>/dev/null)" ] || fail "a refused native checkpoint left files in the store"

echo "== a running sandbox is frozen while it is snapshotted"
# The writer keeps /w/a and /w/z in lock-step (each replaced atomically, a
# first), so at any instant a == z or a == z+1. Between them in the layer
# (sorted by name) sits 64 MB, so an unfrozen read of a, then the big file,
# then z sees z run ahead of a. Every mv forks: the sandbox keeps forking
# while sbx gathers it into the freezer.
wid=$(sbx create --name writer busybox sh -c '
  mkdir -p /w; dd if=/dev/urandom of=/w/m-big bs=1M count=64 2>/dev/null
  i=0; while :; do i=$((i+1)); echo $i > /w/a.new; mv /w/a.new /w/a; echo $i > /w/z.new; mv /w/z.new /w/z; done')
for _ in $(seq 200); do [ "$(sbx exec writer cat /w/z 2>/dev/null || echo 0)" -gt 50 ] && break; sleep 0.05; done
short=${wid:0:12}
# Where the freezer appears: a cgroup2 cgroup (hybrid: /sys/fs/cgroup/unified;
# unified: the sandbox's own) or the v1 freezer; under the caller's cgroup.
v2self=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup); v2self=${v2self%/}
frself=$(awk -F: '$2 == "freezer" {print $3}' /proc/self/cgroup); frself=${frself%/}
watch=("/sys/fs/cgroup/unified$v2self/sbx-$short/cgroup.events" "/sys/fs/cgroup$v2self/sbx-$short/cgroup.events"
       "/sys/fs/cgroup/freezer$frself/sbx-$short/freezer.state")
( while :; do
    for f in "${watch[@]}"; do
      s=$(cat "$f" 2>/dev/null) || continue
      case "$s" in *"frozen 1"*|FROZEN*) echo "$f" > "$T/saw-frozen"; exit 0;; esac
    done
  done ) &
poller=$!
sbx snapshot writer --name written:v1 >/dev/null
sleep 0.2; kill "$poller" 2>/dev/null || true; wait "$poller" 2>/dev/null || true
[ -s "$T/saw-frozen" ] || fail "the sandbox's cgroup was never seen frozen during the snapshot"
echo "seen frozen: $(cat "$T/saw-frozen")"
pair=$(sbx run written:v1 -- sh -c 'echo $(cat /w/a) $(cat /w/z)')
read -r a z <<<"$pair"
{ [ "$a" -ge 50 ] && [ $((a - z)) -ge 0 ] && [ $((a - z)) -le 1 ]; } \
  || fail "snapshot is not consistent: a=$a z=$z (a running writer was read unfrozen)"
echo "consistent: a=$a z=$z"
frozen_cg=$(cat "$T/saw-frozen"); frozen_cg=${frozen_cg%/*}
grep -qx "frozen 1\|FROZEN" "$frozen_cg/cgroup.events" "$frozen_cg/freezer.state" 2>/dev/null && fail "the sandbox was left frozen"
z1=$(sbx exec writer cat /w/z); sleep 0.3; z2=$(sbx exec writer cat /w/z)
[ "$z2" -gt "$z1" ] || fail "the writer did not go on after the snapshot ($z1 -> $z2)"
# A second snapshot reuses the freezer cgroup; its processes are all inside.
sbx snapshot writer --name written:v2 >/dev/null
pair=$(sbx run written:v2 -- sh -c 'echo $(cat /w/a) $(cat /w/z)'); read -r a2 z2 <<<"$pair"
{ [ "$a2" -gt "$a" ] && [ $((a2 - z2)) -ge 0 ] && [ $((a2 - z2)) -le 1 ]; } || fail "second snapshot: a=$a2 z=$z2"
# Two snapshots at once take turns (one's thaw must not run the other's read unfrozen).
sbx snapshot writer --name par:1 >/dev/null & p1=$!
sbx snapshot writer --name par:2 >/dev/null & p2=$!
wait $p1 || fail "parallel snapshot 1"; wait $p2 || fail "parallel snapshot 2"
for t in 1 2; do
  pair=$(sbx run par:$t -- sh -c 'echo $(cat /w/a) $(cat /w/z)'); read -r pa pz <<<"$pair"
  { [ $((pa - pz)) -ge 0 ] && [ $((pa - pz)) -le 1 ]; } || fail "parallel snapshot $t is not consistent: a=$pa z=$pz"
done
sbx snapshots rm par:1 par:2 >/dev/null
# SIGTERM (or Ctrl-C) while the sandbox is frozen: sbx thaws it before it dies.
# (SIGTERM: a background job of a script ignores SIGINT.)
frozen_file=$(cat "$T/saw-frozen")
"$SBX" --root "$T/root" --run-root "$T/run" snapshot writer --name intr:1 >/dev/null 2>&1 & sp=$!
seen=0
for _ in $(seq 3000); do grep -qx "frozen 1\|FROZEN" "$frozen_file" 2>/dev/null && { seen=1; break; }; done
[ $seen = 1 ] || fail "the interrupted snapshot was never seen freezing the sandbox"
kill -TERM $sp; wait $sp && fail "sbx snapshot went on after SIGTERM"
grep -qx "frozen 1\|FROZEN" "$frozen_file" && fail "SIGTERM during a snapshot left the sandbox frozen"
z1=$(sbx exec writer cat /w/z); sleep 0.2; [ "$(sbx exec writer cat /w/z)" -gt "$z1" ] || fail "the writer stopped after an interrupted snapshot"
sbx gc >/dev/null  # the interrupted snapshot's temp files in the store
sbx snapshot-dir writer /w --name wdir >/dev/null
sbx snapshots extract wdir "$T/wdir"
a3=$(cat "$T/wdir/a"); z3=$(cat "$T/wdir/z")
{ [ $((a3 - z3)) -ge 0 ] && [ $((a3 - z3)) -le 1 ]; } || fail "directory snapshot is not consistent: a=$a3 z=$z3"
sbx rm -f writer box >/dev/null
[ ! -e "$frozen_cg" ] || fail "sbx rm left the freezer cgroup $frozen_cg"
sbx snapshots rm written:v1 written:v2 wdir created:v1 created:v2 croot >/dev/null

if sbx create --runtime gvisor --name probe busybox sleep 60 >/dev/null 2>"$T/gvisor-create.err"; then
  sbx rm -f probe >/dev/null
  echo "== memory snapshots: checkpoint a gVisor python counter, restore 3 copies"
  counter='import os, time
i = 0
while True:
    i += 1
    print(i, "flag" if os.path.exists("/tmp/flag") else "", flush=True)
    time.sleep(0.05)'
  last() { sbx logs "$1" | awk 'NF {n = $1} END {print n + 0}'; }
  wait_count() {  # NAME N: until NAME's log reaches count N
    for _ in $(seq 300); do [ "$(last "$1")" -ge "$2" ] && return 0; sleep 0.05; done
    fail "$1 did not count to $2 (log: $(sbx logs "$1" | tail -3 | tr '\n' ' '))"
  }
  gid=$(sbx create --runtime gvisor --name counter python python3 -c "$counter")
  wait_count counter 5
  # --leave-running: a checkpoint, and the original goes on counting.
  if [ -n "${SBX_TEST_LEAVE_RUNNING-1}" ]; then
    sbx checkpoint counter --name c0 --leave-running >/dev/null
    n0=$(last counter); wait_count counter $((n0 + 5))
    sbx ps | grep -q " counter$" || fail "the original stopped after checkpoint --leave-running"
  fi
  # Without it, the original stops at the checkpoint.
  [ "$(sbx checkpoint "${gid:0:10}" --name c1)" = c1 ] || fail "checkpoint by id prefix"
  # checkpoint returns once the end is recorded: ps right after it says so.
  sbx ps -a | grep " counter$" | grep -q Exited || fail "ps right after the checkpoint does not say the original ended: $(sbx ps -a | grep counter)"
  sleep 0.3; at=$(last counter); sleep 0.3
  [ "$(last counter)" = "$at" ] || fail "the original still counts after its checkpoint ($at -> $(last counter))"
  sbx snapshots --json | python3 -c '
import json, sys
s = {r["Name"]: r for r in json.load(sys.stdin)}
assert s["c1"]["Kind"] == "memory" and s["c1"]["Runtime"] == "gvisor" and s["c1"]["Size"] > 0, s' || fail "sbx snapshots lists c1"
  mapfile -t copies < <(sbx restore c1 --count 3 --name copy)
  [ "${#copies[@]}" = 3 ] || fail "restore --count 3 printed ${#copies[*]}"
  for i in 1 2 3; do
    [ "${#copies[$((i - 1))]}" = 64 ] || fail "restore printed '${copies[$((i - 1))]}', want an id"
    wait_count copy-$i $((at + 3))
    first=$(sbx logs copy-$i | awk 'NF {print $1; exit}')
    [ "$first" = $((at + 1)) ] || fail "copy-$i starts at $first, want $((at + 1)) (the count after the checkpoint)"
  done
  echo "checkpointed at $at; 3 copies continue from $((at + 1))"
  image_of() { sbx ps -a | awk -v n="$1" '$NF == n {print $2}'; }
  [ "$(image_of copy-1)" = "$(image_of counter)" ] || fail "a restored copy's IMAGE is '$(image_of copy-1)', want the original's '$(image_of counter)'"
  # Diverge: each copy writes its own file; siblings do not see it.
  for i in 1 2 3; do sbx exec copy-$i sh -c "echo $i > /tmp/mine-$i"; done
  for i in 1 2 3; do
    for j in 1 2 3; do
      if [ $i = $j ]; then
        [ "$(sbx exec copy-$i cat /tmp/mine-$j)" = "$j" ] || fail "copy-$i lost its own write"
      else
        sbx exec copy-$i test ! -e /tmp/mine-$j || fail "copy-$i sees copy-$j's file"
      fi
    done
  done
  # ... and their processes diverge: only copy-2 sees the flag.
  sbx exec copy-2 touch /tmp/flag
  n=$(last copy-1); wait_count copy-1 $((n + 5)); wait_count copy-2 $((n + 5)); wait_count copy-3 $((n + 5))
  sbx logs copy-2 | tail -1 | grep -q flag || fail "copy-2 does not see its own flag"
  ! sbx logs copy-1 | grep -q flag || fail "copy-1 sees copy-2's flag"
  ! sbx logs copy-3 | grep -q flag || fail "copy-3 sees copy-2's flag"
  # Killing one copy leaves the others counting.
  sbx rm -f copy-3 >/dev/null
  n=$(last copy-1); wait_count copy-1 $((n + 3))
  r0=$(sbx restore c1 --name again)
  wait_count again $((at + 2))
  expect_code 125 "already" sbx restore c1 --name again
  sbx rm -f counter copy-1 copy-2 again >/dev/null
  for id in "$gid" "${copies[@]}" "$r0"; do
    [ -z "$(ls -d /sys/fs/cgroup/*/sbx-"${id:0:12}" 2>/dev/null)" ] || fail "cgroups of ${id:0:12} left: $(ls -d /sys/fs/cgroup/*/sbx-"${id:0:12}")"
  done
  ! pgrep -f -- "--root $T/run" >/dev/null || fail "runsc processes left: $(pgrep -af -- "--root $T/run")"
  sbx snapshots rm c1 >/dev/null; sbx snapshots rm c0 >/dev/null 2>&1 || true
  [ -z "$(ls -A "$T/root/snapshots/checkpoints" 2>/dev/null)" ] || fail "checkpoint images left after snapshots rm"
else
  echo "SKIP: memory snapshots from the CLI: 'sbx create --runtime gvisor' is refused here: $(cat "$T/gvisor-create.err")"
  # (covered at the library level against real runsc: tests/unit/test_snapshot_checkpoint.cpp)
fi

echo "== nothing leaked"
! grep -q "$T" /proc/self/mountinfo || fail "mounts left under $T"
# (RUN_ROOT/userns is the runtime's id-range pool: only its .lock may stay;
# RUN_ROOT/.names holds the name links: it may stay, empty)
[ -z "$(ls -A "$T/run" 2>/dev/null | grep -vx 'userns\|\.names\|\.init')" ] || fail "state left in the run root: $(ls -A "$T/run")"
[ -z "$(ls -A "$T/run/.names" 2>/dev/null)" ] || fail "sandbox names left: $(ls -A "$T/run/.names")"
[ -z "$(ls -d /sys/fs/cgroup/*/sbx-"${wid:0:12}" /sys/fs/cgroup/*/*/sbx-"${wid:0:12}" 2>/dev/null)" ] || fail "cgroups of the writer left"
! pgrep -f "w/z.new" >/dev/null || fail "the writer's processes are still running"
[ -z "$(ls "$T/run/userns" 2>/dev/null)" ] || fail "user namespace ranges still held: $(ls "$T/run/userns")"
[ -z "$(ls -A "$T/root/tmp" 2>/dev/null)" ] || fail "temp files left in the store"
echo PASS

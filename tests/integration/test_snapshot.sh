#!/usr/bin/env bash
# Snapshots through the CLI on the real test images:
#  - filesystem: changes made through a real overlay on busybox's layers (an
#    upper dir on disk, as a long-lived sandbox has) become a new image with
#    `sbx snapshot --upper`; a new sandbox of it sees the writes and the
#    deletions; it shares its parent's layers; rmi works on it.
#  - export: oci-archive and docker-archive that skopeo reads and copies, and
#    that re-import into a fresh store with the same image id and digest.
#  - directory: files a python sandbox wrote are captured (snapshot-dir),
#    extracted and mounted into a busybox sandbox; the snapshot never changes.
#  - snapshots ls/rm/prune; clear errors and exit codes.
#  - `sbx snapshot ID` / `snapshot-dir ID` / `checkpoint ID` on sandboxes from
#    `sbx create`, when this build has it.
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
sbx run -v "$T/proj:/work" python -- python3 -c '
import os
os.makedirs("/work/src", exist_ok=True)
open("/work/src/model.py", "w").write("W = [1, 2, 3]\n")
os.symlink("src/model.py", "/work/latest")
os.chmod("/work/src/model.py", 0o640)
os.chown("/work/src/model.py", 1000, 1000)'
name=$(sbx snapshot-dir --host-dir "$T/proj" --name proj)
[ "$name" = proj ] || fail "snapshot-dir printed '$name'"
sbx snapshots extract proj "$T/copy1"
out=$(sbx run -v "$T/copy1:/mnt/proj" busybox -- sh -c 'cat /mnt/proj/latest; stat -c "%u %a" /mnt/proj/src/model.py; echo changed > /mnt/proj/src/model.py')
[ "$out" = "$(printf 'W = [1, 2, 3]\n1000 640')" ] || fail "busybox sandbox sees '$out'"
sbx snapshots extract proj "$T/copy2"
[ "$(cat "$T/copy2/src/model.py")" = "W = [1, 2, 3]" ] || fail "the snapshot changed after a sandbox wrote to its copy"
expect_code 125 "not empty" sbx snapshots extract proj "$T/copy2"

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
expect_code 1 "not found" sbx snapshots rm proj
expect_code 1 "not found" sbx restore nosuch
expect_code 1 "no sandbox" sbx snapshot nosuch
expect_code 1 "no sandbox" sbx checkpoint nosuch

if "$SBX" --help | grep -q '^  create '; then
  echo "== snapshots of sandboxes made with sbx create"
  sid=$(sbx create busybox)
  sbx exec "$sid" -- sh -c 'echo from-create > /root/c.txt; rm /etc/group'
  sbx snapshot "$sid" --name created:v1 >/dev/null
  [ "$(sbx run created:v1 -- cat /root/c.txt)" = from-create ] || fail "snapshot of a running sandbox"
  sbx run created:v1 -- sh -c 'test ! -e /etc/group' || fail "deletion in a running sandbox"
  sbx snapshot-dir "$sid" /root --name croot >/dev/null
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
  expect_code 125 "runtime gvisor" sbx checkpoint "$sid"
  sbx rm -f "$sid" >/dev/null
  # Memory snapshots need `sbx create --runtime gvisor`; until create runs on
  # gvisor they are covered at the library level against real runsc
  # (tests/unit/test_snapshot_checkpoint.cpp: python counter, 3 copies).
else
  echo "SKIP: sbx create is not in this build: snapshot/snapshot-dir/checkpoint of live sandboxes not tested here"
fi

echo "== nothing leaked"
! grep -q "$T" /proc/self/mountinfo || fail "mounts left under $T"
# (RUN_ROOT/userns is the runtime's id-range pool: only its .lock may stay)
[ -z "$(ls -A "$T/run" 2>/dev/null | grep -vx userns)" ] || fail "state left in the run root: $(ls "$T/run")"
[ -z "$(ls "$T/run/userns" 2>/dev/null)" ] || fail "user namespace ranges still held: $(ls "$T/run/userns")"
[ -z "$(ls -A "$T/root/tmp" 2>/dev/null)" ] || fail "temp files left in the store"
echo PASS

#!/usr/bin/env bash
# Image store on real images: import busybox and python in all three formats
# (OCI layout, oci-archive, docker-archive), check that the image ids agree,
# check the unpacked trees through a real read-only overlay mount (whiteout
# hides the file, opaque dir hides the old entries, python3 runs), then
# rmi/gc and corrupt archives (exit 125, nothing left behind).
set -euo pipefail

SRC=${SBX_TEST_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
SBX=${SBX:-$SRC/build/sbx}
export SBX_IMAGES=${SBX_IMAGES:-$SRC/tests/images/out}
IMAGES=$SBX_IMAGES
for f in busybox-oci busybox.oci.tar busybox.docker.tar python-oci python.oci.tar python.docker.tar; do
  [ -e "$IMAGES/$f" ] || { "$SRC/tests/images/build.sh"; break; }
done

T=$(mktemp -d /tmp/sbx-test.XXXXXX)
cleanup() {
  local rc=$?
  set +e
  findmnt -rn -o TARGET | grep -F "$T/" | sort -r | while read -r m; do umount "$m" || umount -l "$m"; done
  rm -rf "$T"
  exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# --- 1. every format of both images, each into its own store, and all into one.
for img in busybox python; do
  ids=()
  for fmt in -oci .oci.tar .docker.tar; do
    root=$T/r-$img$fmt
    id=$("$SBX" --root "$root" import "$IMAGES/$img$fmt" "$img")
    [[ $id =~ ^[0-9a-f]{64}$ ]] || fail "import $img$fmt printed '$id', not an image id"
    ids+=("$id")
    [ -z "$(ls "$root/tmp")" ] || fail "import $img$fmt left temp files"
    id2=$("$SBX" --root "$T/all" import "$IMAGES/$img$fmt")
    [ "$id2" = "$id" ] || fail "$img$fmt: id differs between stores"
  done
  [ "${ids[0]}" = "${ids[1]}" ] && [ "${ids[1]}" = "${ids[2]}" ] ||
    fail "$img: ids differ across formats: ${ids[*]}"
  # The id is the config digest that umoci wrote.
  man=$(json "d['manifests'][0]['digest'].split(':')[1]" <"$IMAGES/$img-oci/index.json")
  cfg=$(json "d['config']['digest'].split(':')[1]" <"$IMAGES/$img-oci/blobs/sha256/$man")
  [ "$cfg" = "${ids[0]}" ] || fail "$img: id ${ids[0]} is not the config digest $cfg"
  pass "$img: OCI layout, oci-archive and docker-archive all give id ${ids[0]:0:12}"
done

S() { "$SBX" --root "$T/all" --run-root "$T/run" "$@"; }
mkdir -p "$T/run"

# --- 2. listing and inspect.
S images | grep -Eq '^busybox +latest +[0-9a-f]{12} ' || { S images; fail "sbx images does not list busybox:latest"; }
S images | grep -Eq '^python +latest ' || fail "sbx images does not list python:latest"
[ "$(S images --json | json "len(d)")" = 2 ] || fail "sbx images --json does not hold 2 images"
[ "$(S inspect busybox --json | json "d['Config']['Cmd']")" = "['/bin/sh']" ] || fail "busybox Cmd"
[ "$(S inspect python --json | json "d['Config']['Cmd']")" = "['/usr/bin/python3']" ] || fail "python Cmd"
S inspect python | json "d['Config']['Env']" | grep -q LANG=C.UTF-8 || fail "python Env"
bid=$(S inspect busybox | json "d['Id']")
[ "$(S inspect "${bid:0:8}" | json "d['Id']")" = "$bid" ] || fail "inspect by id prefix"
[ "$(S inspect "localhost/busybox:latest" | json "d['Id']")" = "$bid" ] || fail "inspect by localhost/ name"
pass "images, images --json, inspect by name, prefix and localhost/ name"

# --- 3. the unpacked trees, through a real read-only overlay of the layers.
mount_image() {  # IMAGE MOUNTPOINT
  local dirs
  # Top layer first in lowerdir=; an empty dir as the last lower makes even a
  # one-layer image a valid read-only overlay.
  dirs=$(S inspect "$1" | json "':'.join(reversed(d['LayerDirs']))")
  mkdir -p "$2" "$T/empty"
  mount -t overlay overlay -o "ro,lowerdir=$dirs:$T/empty" "$2"
}
mount_image busybox "$T/bb"
[ "$(S inspect busybox | json "len(d['LayerDirs'])")" -ge 3 ] || fail "busybox should have 3 layers"
[ -e "$T/bb/etc/sbx-test/removed" ] && fail "whiteout does not hide /etc/sbx-test/removed"
[ "$(cat "$T/bb/etc/sbx-test/kept")" = "this file stays" ] || fail "/etc/sbx-test/kept missing"
[ "$(ls "$T/bb/opt/opaque")" = "new" ] || fail "opaque dir shows: $(ls "$T/bb/opt/opaque")"
[ "$(stat -c %i "$T/bb/bin/busybox")" = "$(stat -c %i "$T/bb/bin/busybox-hardlink")" ] || fail "hard link lost"
[ "$(stat -c %a "$T/bb/tmp")" = 1777 ] || fail "/tmp mode is $(stat -c %a "$T/bb/tmp")"
[ "$(chroot "$T/bb" /bin/sh -c 'echo $((6*7))')" = 42 ] || fail "busybox sh does not run in the unpacked tree"
# The lower layer still has the file: it really is the whiteout that hides it.
first=$(S inspect busybox | json "d['LayerDirs'][0]")
[ -f "$first/etc/sbx-test/removed" ] || fail "bottom layer lacks the file the whiteout hides"
umount "$T/bb"
pass "busybox: whiteout hides the file, opaque dir, hard link, modes, sh runs"

mount_image python "$T/py"
[ -x "$T/py/usr/bin/python3" ] || fail "python image has no /usr/bin/python3"
out=$(chroot "$T/py" /usr/bin/python3 -B -c 'import json, sys; print(json.dumps({"v": sys.version_info[0]}))')
[ "$out" = '{"v": 3}' ] || fail "python3 in the unpacked tree printed '$out'"
umount "$T/py"
pass "python: /usr/bin/python3 runs from the unpacked layers"

# --- 4. rmi refuses while a sandbox uses the image, then removes it; gc.
mkdir -p "$T/run/sbx-busy"
echo "{\"id\":\"sbx-busy\",\"image_id\":\"sha256:$bid\"}" >"$T/run/sbx-busy/state.json"
set +e
S rmi busybox 2>"$T/err"; rc=$?
set -e
[ $rc = 2 ] || fail "rmi of an image in use exited $rc, expected 2"
grep -q sbx-busy "$T/err" || fail "rmi error does not name the sandbox: $(cat "$T/err")"
rm -rf "$T/run/sbx-busy"
layers_before=$(ls "$T/all/layers" | wc -l)
S rmi busybox | grep -q "Deleted: $bid" || fail "rmi busybox did not delete $bid"
S images | grep -q '^busybox ' && fail "busybox still listed after rmi"
layers_after=$(ls "$T/all/layers" | wc -l)
[ $((layers_before - layers_after)) = 3 ] || fail "rmi removed $((layers_before - layers_after)) layers, expected 3"
set +e
S rmi busybox 2>/dev/null; rc=$?
set -e
[ $rc = 1 ] || fail "rmi of a missing image exited $rc, expected 1"
mkdir -p "$T/all/tmp/import-crashed/layer-0"
S gc | grep -q "1 temp dirs" || fail "gc did not report the stale temp dir"
[ -z "$(ls "$T/all/tmp")" ] || fail "gc left $(ls "$T/all/tmp")"
pass "rmi refuses while in use (exit 2), removes layers; gc removes stale temp dirs"

# --- 5. corrupt input: exit 125, a clear message, nothing half-written.
C=$T/corrupt
size=$(stat -c %s "$IMAGES/busybox.oci.tar")
head -c $((size / 2)) "$IMAGES/busybox.oci.tar" >"$T/truncated.oci.tar"
cp -r "$IMAGES/busybox-oci" "$T/flipped-oci"
man=$(json "d['manifests'][0]['digest'].split(':')[1]" <"$T/flipped-oci/index.json")
big=$(json "d['layers'][0]['digest'].split(':')[1]" <"$T/flipped-oci/blobs/sha256/$man")
chmod u+w "$T/flipped-oci/blobs/sha256/$big"
printf '\xff\xff\xff\xff' | dd of="$T/flipped-oci/blobs/sha256/$big" bs=1 seek=5000 conv=notrunc status=none
cp -r "$IMAGES/busybox-oci" "$T/missing-oci"
rm -f "$T/missing-oci/blobs/sha256/$big"
for bad in truncated.oci.tar flipped-oci missing-oci; do
  set +e
  "$SBX" --root "$C" import "$T/$bad" 2>"$T/err" >/dev/null; rc=$?
  set -e
  [ $rc = 125 ] || fail "import of $bad exited $rc, expected 125"
  grep -q '^sbx: error: ' "$T/err" || fail "import of $bad: no error message"
  [ -z "$(ls "$C/tmp")" ] || fail "import of $bad left temp files: $(ls "$C/tmp")"
  [ -z "$(ls "$C/layers")" ] || fail "import of $bad left layers"
  echo "  $bad: $(cat "$T/err")"
done
# A second import after the failures just works.
"$SBX" --root "$C" import "$IMAGES/busybox.oci.tar" >/dev/null || fail "import after failures"
pass "corrupt archives exit 125 and leave nothing; a later import works"

findmnt -rn -o TARGET | grep -qF "$T/" && fail "mounts leaked under $T"
echo "PASS test_images"

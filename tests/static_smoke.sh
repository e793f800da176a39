#!/usr/bin/env bash
# The fully static sbx (-DSBX_STATIC=ON, the README's command) builds from the
# packages of .ci/packages alone, is static, and runs a sandbox: imports the
# busybox test image into a temp root and checks `run -- echo`'s output.
# Builds in build-static/ (through ccache when it is installed), without the
# unit tests: the whole suite runs once, on the normal build.
# Usage: tests/static_smoke.sh   (as root, after tests/images/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SBX_STATIC_BUILD:-build-static}
images=${SBX_IMAGES:-$PWD/tests/images/out}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Same settings as tests/setup.sh: objects of build/ are hits here.
  export CCACHE_NOHASHDIR=true CCACHE_BASEDIR=$PWD
fi
cmake -S . -B "$build" -DSBX_STATIC=ON -DSBX_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build "$build" --target sbx -j"${SBX_JOBS:-$(nproc)}"
sbx=$PWD/$build/sbx

fail() { echo "static smoke: FAIL $*"; exit 1; }
# A static(-pie) binary has no program interpreter and needs no library
# (ldd says "not a dynamic executable" for -static, "statically linked" for
# -static-pie, which is what CMakeLists.txt links).
if readelf -lW "$sbx" | grep -q INTERP || readelf -dW "$sbx" | grep -q NEEDED; then
  fail "$sbx is dynamic: $(ldd "$sbx" 2>&1 | head -3 | tr '\n' ' ')"
fi
if command -v file >/dev/null; then
  file "$sbx" | grep -Eq 'statically linked|static-pie linked' || fail "file(1) does not call it static: $(file "$sbx")"
fi

T=$(mktemp -d /tmp/sbx-static.XXXXXX)
# (A sandbox a failed check left running goes first.)
trap '"$sbx" --root "$T/root" --run-root "$T/run" rm -f --all >/dev/null 2>&1; rm -rf "$T"' EXIT
"$sbx" --root "$T/root" --run-root "$T/run" import -q "$images/busybox-oci" busybox:latest >/dev/null ||
  fail "import of $images/busybox-oci"
out=$("$sbx" --root "$T/root" --run-root "$T/run" run busybox -- echo static-sbx-ok) || fail "run exited $?"
[ "$out" = static-sbx-ok ] || fail "run printed '$out', want 'static-sbx-ok'"
[ -z "$(ls -A "$T/run" 2>/dev/null)" ] || fail "run root not empty: $(ls -A "$T/run")"
# A created sandbox: its holder is sbx-init, embedded in this one file and
# written to the run root's .init/ (runtime/native/init_binary.h).
S() { "$sbx" --root "$T/root" --run-root "$T/run" "$@"; }
id=$(S create busybox -- sleep 1000) || fail "create exited $?"
out=$(S exec "$id" -- echo static-exec-ok) || fail "exec exited $?"
[ "$out" = static-exec-ok ] || fail "exec printed '$out', want 'static-exec-ok'"
ls "$T/run/.init/" | grep -q '^sbx-init-[0-9a-f]\{64\}$' || fail "no sbx-init in $T/run/.init"
S rm -f "$id" >/dev/null || fail "rm -f exited $?"
[ -z "$(ls -A "$T/run" 2>/dev/null | grep -vE '^\.(names|init)$')" ] || fail "run root not empty after rm: $(ls -A "$T/run")"
# sbx serve: starts (its socket's group is read from /etc/group itself: a
# static glibc's getgrnam loads the host's NSS modules, which crashed it),
# answers _ping, seals its embedded sbx-helper, and creates and starts a
# container (the create goes through that helper; the exec after is the CLI's).
serve_log=$T/serve.log
"$sbx" --root "$T/root" --run-root "$T/run" serve --socket "$T/docker.sock" 2>"$serve_log" &  # (not through S: $! must be sbx)
serve_pid=$!
trap 'kill $serve_pid 2>/dev/null; wait $serve_pid 2>/dev/null; "$sbx" --root "$T/root" --run-root "$T/run" rm -f --all >/dev/null 2>&1; rm -rf "$T"' EXIT
for _ in $(seq 100); do [ -S "$T/docker.sock" ] && break; kill -0 $serve_pid 2>/dev/null || break; sleep 0.05; done
ping=$(curl -s --unix-socket "$T/docker.sock" http://d/_ping 2>&1) || true
helper=$( (ls -l /proc/$serve_pid/fd 2>/dev/null || true) | grep -o '/memfd:sbx[^ ]*' | head -1) || true
created=$(curl -s --unix-socket "$T/docker.sock" -H 'Content-Type: application/json' \
  -d '{"Image": "busybox", "Cmd": ["sleep", "1000"]}' http://d/v1.44/containers/create) || true
id=$(sed -n 's/.*"Id":"\([0-9a-f]*\)".*/\1/p' <<<"$created")
started=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$T/docker.sock" -X POST "http://d/v1.44/containers/$id/start") || true
exec_out=$(S exec "$id" -- echo up 2>&1) || true
[ "$ping" = OK ] || fail "sbx serve did not answer _ping ('$ping'): $(tail -3 "$serve_log")"
[ "$helper" = /memfd:sbx-helper ] || fail "sbx serve's helper program is '$helper', not the embedded sbx-helper"
[ -n "$id" ] && [ "$started" = 204 ] || fail "container create/start through sbx serve: '$created', start $started"
[ "$exec_out" = up ] || fail "the container sbx serve started does not run: exec said '$exec_out'"
echo "static smoke: ok ($sbx: static, import + run -- echo, create + exec + rm, serve)"

#!/usr/bin/env bash
# Recorded sandboxes, the parts beyond tests/integration/test_trajectory.sh:
#  - clocks: a recorded sandbox (and `sbx create --timens`) sees
#    CLOCK_MONOTONIC/CLOCK_BOOTTIME (/proc/uptime) start near 0, in its
#    first process and in every exec; an ordinary one (and --record
#    --no-timens) sees the host's; the header says which; a replay and a
#    branch of a recorded sandbox start near 0 too;
#  - hostile trajectory files (a checkpoint path with "..", an object name
#    that is a path, a copy's source name with a "/", files under a
#    symlink of the same state): refused with a clear error (exit 125),
#    nothing written outside the scratch dir, no sandbox left;
#  - /sbx/v1 on trajectory FILES against a real `sbx serve`: show, branch
#    and replay of an uploaded export (curl and the SDK), a path under
#    --trajectory-dir, a path outside it or through a symlink out (403),
#    no --trajectory-dir (403), a hostile upload (400, nothing made).
# Leaves nothing behind.
set -euo pipefail
SBX=${SBX:-build/sbx}
IMAGES=${SBX_IMAGES:-$(dirname "$0")/../images/out}
SRC=${SBX_TEST_SRC:-.}
if [ ! -d "$IMAGES/busybox-oci" ]; then
  echo "SKIP: test images not built (tests/images/build.sh)"; exit 0
fi
T=$(mktemp -d /tmp/sbx-test.XXXX)
SERVE=""
cleanup() {
  [ -n "$SERVE" ] && { kill "$SERVE" 2>/dev/null; wait "$SERVE" 2>/dev/null; }
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
  grep -q -- "$pat" <<<"$out" || fail "'$*' said '$out', want '$pat'"
}
live() { ls "$1" | grep -c '^[0-9a-f]\{64\}$' || true; }
# Seconds of /proc/uptime's first field, as an integer.
uptime_of() { sbx exec "$1" cat /proc/uptime | cut -d. -f1; }
host_uptime() { cut -d. -f1 /proc/uptime; }

sbx import -q "$IMAGES/busybox-oci" busybox >/dev/null
# The host must have been up a while, or "near 0" tells nothing.
[ "$(host_uptime)" -ge 600 ] || { echo "SKIP: the host has been up under 10 minutes"; exit 0; }

echo "== clocks: a recorded sandbox's start near 0, an ordinary one's the host's"
rec_id=$(sbx create --record --name rec busybox)
# The first process sees it too (not only execs): sbx run the same way.
sbx create --timens --name tn busybox sh -c 'cat /proc/uptime > /up; sleep 600' >/dev/null
for _ in $(seq 50); do sbx exec tn test -s /up && break; sleep 0.1; done
u=$(sbx exec tn cut -d. -f1 /up)
[ "$u" -lt 60 ] || fail "--timens: the sandbox's first process saw uptime $u s"
sbx create --name plain busybox >/dev/null
u=$(uptime_of plain); h=$(host_uptime)
[ $((h - u)) -lt 60 ] && [ $((u - h)) -lt 60 ] || fail "an ordinary sandbox's uptime $u s is not the host's $h s"
rh_id=$(sbx create --record --no-timens --name rec_host busybox)
u=$(uptime_of rec_host)
[ $((h - u)) -lt 60 ] || fail "--record --no-timens: uptime $u s, want the host's $h s"
expect_code 125 "excludes\|--timens" sbx create --timens --no-timens busybox
F=$T/run/$rec_id/trajectory/trajectory.jsonl
head -n 1 "$F" | grep -q '"timens":true' || fail "the recorded header does not say timens: $(head -n 1 "$F")"
FH=$T/run/$rh_id/trajectory/trajectory.jsonl
head -n 1 "$FH" | grep -q '"timens":false' && head -n 1 "$FH" | grep -q 'monotonic and boot clocks' ||
  fail "--no-timens: the header does not say the clocks are the host's: $(head -n 1 "$FH")"
# Steps, then a replay and a branch: their clocks start near 0 too.
sbx exec rec sh -c 'mkdir -p /w && cut -d. -f1 /proc/uptime > /w/up; echo done' >/dev/null
sbx trajectory export rec -o "$T/rec.tar" >/dev/null
# (read after the export: this step's output, with the host's idle time in
# /proc/uptime's second field, is not among the steps replayed below)
u=$(uptime_of rec)
[ "$u" -lt 60 ] || fail "a recorded sandbox's /proc/uptime is $u s, want near 0 (a time namespace)"
# (the step wrote its uptime: the replay's is another number, also near 0)
expect_code 0 "match" sbx replay --tolerate-path '^/w/up$' "$T/rec.tar"
b=$(sbx branch "$T/rec.tar" --at 1)
u=$(uptime_of "$b")
[ "$u" -lt 60 ] || fail "a branch's uptime is $u s, want near 0"
[ "$(sbx exec "$b" cat /w/up)" -lt 60 ] || fail "the recorded step's uptime was not near 0"
sbx rm -f "$b" >/dev/null
for n in rec tn plain rec_host; do sbx rm -f $n >/dev/null; done
for d in "$T"/run/*/; do [ -f "$d/state.json" ] && sbx rm -f "$(basename "$d")" >/dev/null; done
[ "$(live "$T/run")" = 0 ] || fail "the clock checks left sandboxes"

echo "== hostile trajectory files are refused, nothing written outside"
mkdir -p "$T/h" "$T/outside"
hdr=$(tar -xOf "$T/rec.tar" trajectory.jsonl | head -n 1)
obj=$(printf 'x' | sha256sum | cut -d' ' -f1)
mkdir -p "$T/h/objects" && printf 'x' >"$T/h/objects/$obj"
hostile() {  # hostile NAME STEP-JSON: a trajectory.jsonl in $T/h/NAME
  mkdir -p "$T/h/$1"; ln -sfn ../objects "$T/h/$1/objects"
  { echo "$hdr"; echo "$2"; } >"$T/h/$1/trajectory.jsonl"
}
ck() { echo '{"step":1,"kind":"exec","argv":["true"],"exit_code":0,"checkpoint":{"files":['"$1"'],"deleted":[],"bytes":1}}'; }
hostile dotdot "$(ck '{"path":"/../../../../'"${T#/}"'/outside/pwned","type":"file","mode":420,"size":1,"sha256":"'"$obj"'"}')"
hostile objpath "$(ck '{"path":"/etc/x","type":"file","mode":420,"size":1,"sha256":"../../../../../../etc/passwd"}')"
hostile undersym "$(ck '{"path":"/l","type":"symlink","target":"'"$T"'/outside"},{"path":"/l/pwned","type":"file","mode":420,"size":1,"sha256":"'"$obj"'"}')"
hostile srcname '{"step":1,"kind":"cp_in","path":"/x","source_name":"../../pwned","files":1,"size":1,"content_stored":true,"manifest":[{"path":"","type":"file","mode":420,"size":1,"sha256":"'"$obj"'"}],"sha256":"0"}'
hostile manifest '{"step":1,"kind":"cp_in","path":"/x","source_name":"d","files":1,"size":1,"content_stored":true,"manifest":[{"path":"../../pwned","type":"file","mode":420,"size":1,"sha256":"'"$obj"'"}],"sha256":"0"}'
for n in dotdot objpath srcname manifest; do
  expect_code 125 "refused" sbx branch "$T/h/$n/trajectory.jsonl" --at 1
  expect_code 125 "refused" sbx replay "$T/h/$n/trajectory.jsonl"
done
expect_code 125 "under the symlink /l" sbx branch "$T/h/undersym/trajectory.jsonl" --at 1
[ -z "$(ls -A "$T/outside")" ] || fail "a hostile trajectory wrote outside: $(ls -A "$T/outside")"
[ "$(live "$T/run")" = 0 ] || fail "a hostile trajectory left a sandbox"

echo "== /sbx/v1 on trajectory files (sbx serve, curl and the SDK)"
mkdir -p "$T/tdir/sub" && cp "$T/rec.tar" "$T/tdir/sub/rec.tar"
ln -s "$T/rec.tar" "$T/tdir/out.tar"   # a symlink that leads out of the dir
start_serve() {  # start_serve [ARGS]: sbx serve on $T/sock
  rm -f "$T/sock"
  # ("$SBX" itself, not the sbx function: $! must be the server, not a subshell)
  "$SBX" --root "$T/root" --run-root "$T/run" serve --socket "$T/sock" "$@" >"$T/serve.log" 2>&1 &
  SERVE=$!
  for _ in $(seq 100); do [ -S "$T/sock" ] && return; sleep 0.1; done
  fail "sbx serve did not start: $(cat "$T/serve.log")"
}
stop_serve() { kill $SERVE; wait $SERVE 2>/dev/null || true; SERVE=""; }
api() { curl -s -o "$T/r" -w '%{http_code}' --unix-socket "$T/sock" "$@"; }
start_serve --trajectory-dir "$T/tdir"
code=$(api -X POST --data-binary @"$T/rec.tar" http://x/sbx/v1/trajectories/show)
[ "$code" = 200 ] || fail "show of an upload: $code $(cat "$T/r")"
python3 - "$T/r" <<'EOF' || fail "show of an upload: not the header and its steps: $(head -c 300 "$T/r")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["format"] == "sbx-trajectory" and lines[0]["timens"] is True, lines[0]
assert lines[1]["kind"] == "exec" and lines[1]["checkpoint"]["files"], lines[1]
EOF
code=$(api -X POST "http://x/sbx/v1/trajectories/branch?step=1&path=sub/rec.tar")
[ "$code" = 201 ] || fail "branch of a path under --trajectory-dir: $code $(cat "$T/r")"
bid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/r")
sbx exec "$bid" test -f /w/up || fail "the branch from the server's file lacks step 1's file"
sbx rm -f "$bid" >/dev/null
code=$(api -X POST "http://x/sbx/v1/trajectories/show?path=$T/tdir/sub/rec.tar")
[ "$code" = 200 ] || fail "an absolute path under --trajectory-dir: $code $(cat "$T/r")"
code=$(api -X POST "http://x/sbx/v1/trajectories/show?path=../rec.tar")
[ "$code" = 403 ] && grep -q "leads out" "$T/r" || fail "a path with .. out of the dir: $code $(cat "$T/r")"
code=$(api -X POST "http://x/sbx/v1/trajectories/show?path=out.tar")
[ "$code" = 403 ] || fail "a symlink out of the dir: $code $(cat "$T/r")"
code=$(api -X POST "http://x/sbx/v1/trajectories/show?path=$T/rec.tar")
[ "$code" = 403 ] && grep -q "not under" "$T/r" || fail "an absolute path outside the dir: $code $(cat "$T/r")"
code=$(api -X POST "http://x/sbx/v1/trajectories/show?path=sub/nope.tar")
[ "$code" = 404 ] || fail "a missing file: $code $(cat "$T/r")"
code=$(api -X POST http://x/sbx/v1/trajectories/replay)
[ "$code" = 400 ] && grep -q "no trajectory" "$T/r" || fail "no body, no path: $code $(cat "$T/r")"
code=$(api -X POST --data-binary @"$T/h/dotdot/trajectory.jsonl" "http://x/sbx/v1/trajectories/branch?step=1")
[ "$code" = 400 ] && grep -q "refused" "$T/r" || fail "a hostile upload: $code $(cat "$T/r")"
code=$(api -X POST --data-binary 'garbage' "http://x/sbx/v1/trajectories/replay")
[ "$code" = 400 ] && grep -q "uploaded trajectory" "$T/r" || fail "a garbage upload: $code $(cat "$T/r")"
[ "$(live "$T/run")" = 0 ] || fail "refused requests left sandboxes"
# The SDK: upload a local export, replay it; branch one; a path the server refuses.
SBX_HOST="unix://$T/sock" PYTHONPATH=$SRC/python python3 - "$T/rec.tar" <<'EOF' || fail "the SDK's trajectory file calls: $(tail -5 "$T/serve.log")"
import sys, sbx
f = sys.argv[1]
lines = sbx.trajectory_file(f)
assert lines[0]["format"] == "sbx-trajectory" and len(lines) == 2, lines
res = sbx.replay_file(f, tolerate_path=[r"^/w/up$"])
assert res.matched and res.first_divergence is None and res.steps[0]["result"] == "match", res
res = sbx.replay_file(open(f, "rb").read(), path=None, until=1, tolerate_path=[r"^/w/up$"], keep=True)
assert res.matched and res.sandbox is not None, res
res.sandbox.terminate()
b = sbx.branch_file(path="sub/rec.tar", step=1, count=2, name="fromfile")
assert len(b) == 2 and b[0].exec("cat", "/w/up").stdout.read().strip(), b
for s in b:
    s.terminate()
try:
    sbx.trajectory_file(path="../rec.tar")
    raise SystemExit("a path out of the dir was read")
except sbx.Forbidden as e:
    assert "leads out" in str(e), e
try:
    sbx.branch_file(b"not a trajectory", step=1)
    raise SystemExit("garbage was branched")
except sbx.InvalidArgument as e:
    assert "uploaded trajectory" in str(e), e
EOF
stop_serve
start_serve   # no --trajectory-dir: uploads only
code=$(api -X POST "http://x/sbx/v1/trajectories/show?path=sub/rec.tar")
[ "$code" = 403 ] && grep -q "trajectory-dir" "$T/r" || fail "a path without --trajectory-dir: $code $(cat "$T/r")"
stop_serve
expect_code 125 "not a directory" sbx serve --socket "$T/sock" --trajectory-dir "$T/nope"

echo "== clean up"
sleep 0.5
for d in "$T"/run/*/; do [ -f "$d/state.json" ] && sbx rm -f "$(basename "$d")" >/dev/null; done
[ "$(live "$T/run")" = 0 ] || fail "sandboxes left"
ls -a "$T/run" | grep -q '^\.trajectory-' && fail "scratch dirs left in the run root"
echo "PASS"

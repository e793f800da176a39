#!/usr/bin/env bash
# Recorded sandboxes (`sbx create --record`) on the real busybox image:
#  - a 10-step session (writes, a failing command, stdin, a secret env, a cp
#    in and out, a step that changes nothing): the trajectory lists every
#    step with its digests; a checkpoint exists exactly for the steps that
#    changed the writable layer; secrets are digests only;
#  - `trajectory show` (table, --json), `trajectory export`;
#  - `branch --at 6 --count 2` sees step 6's files and not step 7's (also a
#    file deleted at step 5 stays deleted);
#  - `replay` matches every step (exit 0); a trajectory with a changed
#    command reports that step as the first divergence (exit 1, the stream
#    and byte offset; or, for a step with the same output, the file it
#    wrote otherwise); --tolerate-regex; --until;
#  - recording from /sbx/v1 and the SDK, the Docker API (label sbx.record=1,
#    through the docker CLI) and E2B's create (metadata sbx.record);
#  - export, move to a fresh store (another --root/--run-root), branch there;
#  - bad input: a truncated or corrupt file, a step out of range, a missing
#    checkpoint object: exit 125 and no sandbox left.
# Leaves nothing behind.
set -euo pipefail
SBX=${SBX:-build/sbx}
IMAGES=${SBX_IMAGES:-$(dirname "$0")/../images/out}
if [ ! -d "$IMAGES/busybox-oci" ]; then
  echo "SKIP: test images not built (tests/images/build.sh)"; exit 0
fi
T=$(mktemp -d /tmp/sbx-test.XXXX)
SERVE=""
cleanup() {
  [ -n "$SERVE" ] && { kill "$SERVE" 2>/dev/null; wait "$SERVE" 2>/dev/null; }
  for r in run run2; do
    for d in "$T"/$r/*/; do
      [ -f "$d/state.json" ] || continue
      root=root; [ $r = run2 ] && root=root2
      "$SBX" --root "$T/$root" --run-root "$T/$r" rm -f "$(basename "$d")" >/dev/null 2>&1 || true
    done
  done
  rm -rf "$T"
}
trap cleanup EXIT
sbx() { "$SBX" --root "$T/root" --run-root "$T/run" "$@"; }
sbx2() { "$SBX" --root "$T/root2" --run-root "$T/run2" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_code() {  # expect_code CODE PATTERN CMD...
  local want=$1 pat=$2; shift 2
  set +e; out=$("$@" 2>&1); code=$?; set -e
  [ "$code" = "$want" ] || fail "'$*' exited $code, want $want: $out"
  grep -q -- "$pat" <<<"$out" || fail "'$*' said '$out', want '$pat'"
}
live() { ls "$1" | grep -c '^[0-9a-f]\{64\}$' || true; }
jq_py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }

sbx import -q "$IMAGES/busybox-oci" busybox >/dev/null

echo "== a recorded 10-step session"
sb=$(sbx create --record --name rec busybox)
sbx exec rec sh -c 'mkdir -p /work && echo one > /work/a'              # 1 changes
sbx exec rec sh -c 'echo two > /work/b; echo hello'                    # 2 changes
set +e; sbx exec rec sh -c 'echo oops >&2; exit 3' 2>/dev/null; c=$?; set -e  # 3 fails, no change
[ "$c" = 3 ] || fail "the failing step exited $c, want 3"
echo "piped input" | sbx exec -i rec sh -c 'cat > /work/c'             # 4 stdin
sbx exec -e API_TOKEN=s3cret -e PLAIN=visible rec sh -c 'rm /work/a; echo $PLAIN'  # 5 deletes, secret env
sbx exec rec sh -c 'echo six > /work/six'                              # 6
sbx exec rec sh -c 'echo seven > /work/seven; echo 7 > /work/b'        # 7
echo "copied" > "$T/in.txt"
sbx cp "$T/in.txt" rec:/work/in.txt                                    # 8 cp in
sbx cp rec:/work/six "$T/out.txt"                                      # 9 cp out
sbx exec rec cat /work/in.txt >/dev/null                               # 10 reads only
[ "$(cat "$T/out.txt")" = six ] || fail "cp out gave '$(cat "$T/out.txt")'"
[ "$(sbx exec rec hostname)" = sandbox ] || fail "a recorded sandbox's hostname is not pinned"   # 11
[ "$(sbx exec rec sh -c 'echo $PYTHONHASHSEED')" = 0 ] || fail "PYTHONHASHSEED is not pinned"   # 12

F=$T/run/$sb/trajectory/trajectory.jsonl
[ -f "$F" ] || fail "no trajectory at $F"
[ "$(wc -l <"$F")" = 13 ] || fail "trajectory has $(wc -l <"$F") lines, want a header and 12 steps"
python3 - "$F" <<'EOF' || fail "the trajectory's steps are not as recorded"
import json, sys, base64, hashlib
lines = [json.loads(l) for l in open(sys.argv[1])]
h, steps = lines[0], lines[1:]
assert h["format"] == "sbx-trajectory" and h["version"] == 1, h
epoch = [e for e in h["spec"]["process"]["env"] if e.startswith("SOURCE_DATE_EPOCH=")]
assert len(epoch) == 1 and abs(int(epoch[0].split("=")[1]) - h["created_ms"] // 1000) <= 1, epoch
assert len(h["image"]["id"].replace("sha256:", "")) == 64, h["image"]
assert [s["step"] for s in steps] == list(range(1, 13))
kinds = [s["kind"] for s in steps]
assert kinds == ["exec"] * 7 + ["cp_in", "cp_out"] + ["exec"] * 3, kinds
s2 = steps[1]
assert base64.b64decode(s2["stdout"]["data_b64"]) == b"hello\n"
assert s2["stdout"]["sha256"] == hashlib.sha256(b"hello\n").hexdigest()
assert steps[2]["exit_code"] == 3 and steps[2]["end_reason"] == "exited"
assert base64.b64decode(steps[2]["stderr"]["data_b64"]) == b"oops\n"
assert base64.b64decode(steps[3]["stdin"]["data_b64"]) == b"piped input\n"
env = {e["name"]: e for e in steps[4]["env"]}
assert env["PLAIN"]["value"] == "visible"
assert "value" not in env["API_TOKEN"] and env["API_TOKEN"]["sha256"] == hashlib.sha256(b"s3cret").hexdigest()
assert b"s3cret" not in open(sys.argv[1], "rb").read()
# checkpoints exactly where the writable layer changed
changed = {s["step"] for s in steps if s.get("checkpoint")}
assert changed == {1, 2, 4, 5, 6, 7, 8}, changed
assert all(s.get("checkpoint") is None for s in steps if s["step"] in (3, 10, 11, 12) )
c5 = steps[4]["checkpoint"]
assert "/work/a" in c5["deleted"], c5
assert steps[8]["kind"] == "cp_out" and steps[8]["size"] == 4
for s in steps:
    if s["kind"] == "exec":
        for k in ("argv", "env", "workdir", "user", "exit_code", "end_reason", "start_ms", "duration_ms"):
            assert k in s, (k, s)
EOF
# content stored once: /work/b's two versions are two objects; in.txt one
objs=$(ls "$T/run/$sb/trajectory/objects" | wc -l)
[ "$objs" -ge 5 ] && [ "$objs" -le 9 ] || fail "$objs objects stored, want one per distinct content"

echo "== trajectory show, export"
sbx trajectory show rec | grep -Eq '^3 +exec +sh -c echo oops.* 3 +[0-9]+ms' ||
  fail "show has no failing step 3: $(sbx trajectory show rec)"
[ "$(sbx trajectory show rec | wc -l)" = 14 ] || fail "show has $(sbx trajectory show rec | wc -l) lines, want 14"
sbx trajectory show --json rec | jq_py 'assert len(d["steps"]) == 12' || fail "show --json"
sbx trajectory show "$F" >/dev/null || fail "show FILE"
sbx trajectory export rec -o "$T/rec.tar"
tar tf "$T/rec.tar" >"$T/rec.list"
grep -qx trajectory.jsonl "$T/rec.list" || fail "the export has no trajectory.jsonl"
[ "$(grep -c '^objects/' "$T/rec.list")" = "$objs" ] || fail "the export lacks objects"
sbx trajectory show "$T/rec.tar" | grep -q 'cp_in' || fail "show ARCHIVE"

echo "== branch --at 6"
mapfile -t br < <(sbx branch rec --at 6 --count 2 --name br)
[ "${#br[@]}" = 2 ] || fail "branch printed ${#br[@]} ids"
for b in br-1 br-2; do
  [ "$(sbx exec $b cat /work/six)" = six ] || fail "$b does not see step 6's file"
  [ "$(sbx exec $b cat /work/b)" = two ] || fail "$b sees /work/b as $(sbx exec $b cat /work/b), want step 6's 'two'"
  sbx exec $b test ! -e /work/seven || fail "$b sees step 7's file"
  sbx exec $b test ! -e /work/a || fail "$b sees /work/a, deleted at step 5"
  [ "$(sbx exec $b cat /work/c)" = "piped input" ] || fail "$b lacks step 4's file"
done
sbx exec br-1 sh -c 'echo mine > /work/six'
[ "$(sbx exec br-2 cat /work/six)" = six ] || fail "branches share their files"
python3 - "$T/run/${br[0]}/trajectory/trajectory.jsonl" "$sb" <<'EOF' || fail "the branch's trajectory does not name its parent"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["parent"]["trajectory"] == sys.argv[2] and lines[0]["parent"]["at"] == 6, lines[0]
assert lines[1]["kind"] == "branch" and lines[1]["checkpoint"], lines[1]
EOF
sbx rm -f br-1 br-2 >/dev/null

echo "== replay"
expect_code 0 "match" sbx replay "$T/rec.tar"
sbx replay --json "$T/rec.tar" | python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
assert [x["step"] for x in r] == list(range(1, 13)), r
assert all(x["result"] == "match" for x in r), r' || fail "replay did not match every step"
[ "$(live "$T/run")" = 1 ] || fail "replay left its sandbox"
expect_code 0 "match" sbx replay --until 3 "$F"
# a changed command at step 7: the first divergence is step 7, in stdout
mkdir -p "$T/changed"
cp -r "$T/run/$sb/trajectory/objects" "$T/changed/"
# with_argv STEP SCRIPT: $T/changed/trajectory.jsonl, $F with step STEP's command `sh -c SCRIPT`
with_argv() {
  python3 - "$F" "$T/changed/trajectory.jsonl" "$1" "$2" <<'EOF'
import json, sys
out = []
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d.get("step") == int(sys.argv[3]):
        d["argv"] = ["sh", "-c", sys.argv[4]]
    out.append(json.dumps(d))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
EOF
}
with_argv 2 'echo two > /work/b; echo hellO'
expect_code 1 "stdout differs at byte 4" sbx replay "$T/changed/trajectory.jsonl"
grep -q '^2 ' <<<"$out" || fail "replay does not name step 2: $out"
grep -q '^3 ' <<<"$out" && fail "replay went on after the divergence: $out"
expect_code 0 "match" sbx replay --tolerate-regex '^hell' "$T/changed/trajectory.jsonl"
# a step that writes other content with the same exit code and no output:
# only the files it changed tell, and the replay names them
with_argv 6 'echo SIX > /work/six'
expect_code 1 "files differ: /work/six (other content)" sbx replay "$T/changed/trajectory.jsonl"
grep -q '^6 ' <<<"$out" || fail "replay does not name step 6: $out"
grep -q '^7 ' <<<"$out" && fail "replay went on after the divergence: $out"
# (until 8: step 9 copies /work/six out, and that copy differs)
expect_code 0 "match" sbx replay --tolerate-path '^/work/six$' --until 8 "$T/changed/trajectory.jsonl"
expect_code 125 "not a regex" sbx replay --tolerate-path '(' "$T/changed/trajectory.jsonl"
[ "$(live "$T/run")" = 1 ] || fail "replay left a sandbox"

echo "== a mini-swe-agent trajectory (its bash actions) replays"
MSA=$(dirname "$0")/../data/trajectory/mini-swe-agent.traj.json
[ -f "$MSA" ] || MSA=${SBX_TEST_SRC:-.}/tests/data/trajectory/mini-swe-agent.traj.json
expect_code 125 "give one with --image" sbx replay "$MSA"
expect_code 0 "match" sbx replay --image busybox "$MSA"
[ "$(echo "$out" | grep -c match)" = 3 ] || fail "the import has not 3 matching steps: $out"
sed 's/none\\n<\/output>/nothing\\n<\/output>/' "$MSA" >"$T/msa-changed.json"
expect_code 1 "stdout differs at byte 2" sbx replay --image busybox "$T/msa-changed.json"
sbx trajectory show "$MSA" | grep -q 'grep 43' || fail "show of an import"
[ "$(live "$T/run")" = 1 ] || fail "replay of an import left a sandbox"

echo "== through the SDK and /sbx/v1 (record=True): the same engine code records"
"$SBX" --root "$T/root" --run-root "$T/run" serve --socket "$T/sock" >"$T/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 50); do [ -S "$T/sock" ] && break; sleep 0.1; done
sdk_id=$(SBX_HOST="unix://$T/sock" PYTHONPATH=${SBX_TEST_SRC:-.}/python python3 -c '
import sbx
sb = sbx.Sandbox.create("busybox", record=True, redact=["MYVAR"], env={"MYVAR": "hidden"}, timeout=0)
p = sb.exec("sh", "-c", "echo sdk > /f; echo $MYVAR")
p.wait()
print(sb.object_id)') || fail "the SDK's record=True failed: $(cat "$T/serve.log")"
SF=$T/run/$sdk_id/trajectory/trajectory.jsonl
[ -f "$SF" ] || fail "no trajectory for the SDK's sandbox $sdk_id"
python3 - "$SF" <<'EOF' || fail "the SDK sandbox's trajectory"
import json, sys, base64
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["redact"] == ["MYVAR"], lines[0]
assert "MYVAR=hidden" not in json.dumps(lines[0]), lines[0]["spec"]["process"]["env"]
s = lines[1]
assert s["kind"] == "exec" and s["checkpoint"]["files"][0]["path"] == "/f", s
assert base64.b64decode(s["stdout"]["data_b64"]) == b"hidden\n", s
EOF
sbx rm -f "$sdk_id" >/dev/null

echo "== the Docker API records a container with the label sbx.record=1"
export DOCKER_HOST="unix://$T/sock"
dk=$(docker create --label sbx.record=1 --label sbx.record.redact=DKVAR -e DKVAR=s3cret busybox sleep 600) ||
  fail "docker create --label sbx.record=1: $(cat "$T/serve.log")"
docker start "$dk" >/dev/null
docker exec "$dk" sh -c 'echo docker > /dk' >/dev/null
dk_id=$(grep -l '"sbx.record"' "$T"/run/*/state.json 2>/dev/null | head -1 | xargs -r dirname | xargs -r basename)
DF=$T/run/$dk_id/trajectory/trajectory.jsonl
[ -f "$DF" ] || fail "no trajectory for the Docker container $dk ($dk_id): $(ls "$T/run")"
python3 - "$DF" <<'EOF2' || fail "the Docker container's trajectory"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["redact"] == ["DKVAR"] and "s3cret" not in json.dumps(lines[0]), lines[0]
ex = [s for s in lines[1:] if s["kind"] == "exec" and s["argv"][-1] == "echo docker > /dk"]
assert ex and ex[0]["checkpoint"]["files"][0]["path"] == "/dk", lines[1:]
EOF2
# (the Docker API makes the sandbox at start: a bad value is refused there)
bad=$(docker create --label sbx.record=maybe busybox true)
set +e; out=$(docker start "$bad" 2>&1); code=$?; set -e
[ "$code" != 0 ] && grep -q "give 1 or true" <<<"$out" || fail "a bad sbx.record label: $code $out"
docker rm -f "$dk" "$bad" >/dev/null
unset DOCKER_HOST
kill $SERVE; wait $SERVE 2>/dev/null || true; SERVE=""

echo "== E2B's create records with the metadata sbx.record"
printf 'e2b_%s' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/token" && chmod 600 "$T/token"
TOKEN=$(cat "$T/token")
PORT=""
for p in $(shuf -i 20000-60000 -n 5); do
  "$SBX" --root "$T/root" --run-root "$T/run" serve --socket "$T/sock2" --e2b "127.0.0.1:$p" \
    --token-file "$T/token" >"$T/serve2.log" 2>&1 &
  SERVE=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$T/serve2.log" 2>/dev/null && { PORT=$p; break; }
    kill -0 $SERVE 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$PORT" ] && break
  kill $SERVE 2>/dev/null; wait $SERVE 2>/dev/null || true
done
[ -n "$PORT" ] || fail "sbx serve --e2b did not start: $(cat "$T/serve2.log")"
e2b() { curl -s -o "$T/r" -w '%{http_code}' -H "X-API-Key: $TOKEN" -H 'Content-Type: application/json' "$@"; }
code=$(e2b -X POST -d '{"templateID":"busybox","metadata":{"sbx.record":"1"}}' "http://127.0.0.1:$PORT/sandboxes")
[ "$code" = 201 ] || [ "$code" = 200 ] || fail "E2B create with sbx.record: $code $(cat "$T/r")"
e2b_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandboxID"])' "$T/r")
rec_e2b=$(grep -l '"sbx.e2b"' "$T"/run/*/state.json 2>/dev/null | head -1 | xargs -r dirname | xargs -r basename)
[ -n "$rec_e2b" ] && [ -f "$T/run/$rec_e2b/trajectory/trajectory.jsonl" ] || rec_e2b=""
[ -n "$rec_e2b" ] || fail "the E2B sandbox $e2b_id records no trajectory"
code=$(e2b -X POST -d '{"templateID":"busybox","metadata":{"sbx.record":"yes"}}' "http://127.0.0.1:$PORT/sandboxes")
[ "$code" = 400 ] || fail "E2B create with sbx.record=yes: $code, want 400"
code=$(e2b -X DELETE "http://127.0.0.1:$PORT/sandboxes/$e2b_id")
kill $SERVE; wait $SERVE 2>/dev/null || true; SERVE=""

echo "== export to another store, branch there"
sbx2 import -q "$IMAGES/busybox-oci" busybox >/dev/null
b2=$(sbx2 branch "$T/rec.tar" --at 8)
[ "$(sbx2 exec "$b2" cat /work/in.txt)" = copied ] || fail "the branch in another store lacks the copied file"
[ "$(sbx2 exec "$b2" cat /work/b)" = 7 ] || fail "the branch in another store has the wrong /work/b"
sbx2 rm -f "$b2" >/dev/null

echo "== bad input"
head -c -20 "$F" >"$T/trunc.jsonl"
expect_code 125 "truncated" sbx branch "$T/trunc.jsonl" --at 1
{ head -n 3 "$F"; echo '{not json'; } >"$T/corrupt.jsonl"
expect_code 125 "line 4 is not JSON" sbx replay "$T/corrupt.jsonl"
expect_code 125 "out of range" sbx branch rec --at 13
expect_code 125 "out of range" sbx branch rec --at 0
expect_code 125 "out of range" sbx replay --until 99 "$F"
mkdir -p "$T/missing" && cp "$F" "$T/missing/" && mkdir "$T/missing/objects"
expect_code 125 "missing" sbx branch "$T/missing/trajectory.jsonl" --at 6
expect_code 125 "records no trajectory" sbx trajectory show "$(sbx create busybox)"
expect_code 125 "needs --record" sbx create --redact X busybox
expect_code 125 "no such" sbx trajectory show "$T/nope.jsonl"
[ "$(live "$T/run")" = 2 ] || fail "bad input left sandboxes: $(ls "$T/run")"

echo "== a snapshot of a recorded sandbox is a step"
sbx snapshot rec --name recsnap:v1 >/dev/null
tail -n 1 "$F" | python3 -c '
import json, sys
s = json.loads(sys.stdin.read())
assert s["step"] == 13 and s["kind"] == "snapshot" and s["type"] == "fs" and s["name"] == "recsnap:v1", s' ||
  fail "the snapshot is not step 13: $(tail -n 1 "$F")"

echo "== clean up"
for d in "$T"/run/*/; do [ -f "$d/state.json" ] && sbx rm -f "$(basename "$d")" >/dev/null; done
[ "$(live "$T/run")" = 0 ] || fail "sandboxes left"
ls -a "$T/run" | grep -q '^\.trajectory-' && fail "scratch dirs left in the run root"
echo "PASS"

#!/usr/bin/env bash
# sbx serve --sandbox-fusion: SandboxFusion's /run_code (and /run_jupyter,
# /v1/ping, /metrics) answered from fresh warm-pool sandboxes. A client
# sending exactly verl's requests (tests/sandbox_fusion_client.py) checks
# stdin/stdout, runtime and compile errors, time-outs, memory limits, files
# and fetch_files, bad input; HumanEval's 164 problems at concurrency 4 (the
# canonical solutions pass, wrong ones fail); the queue's 504; the token in
# the URL path; a sandbox killed mid-request (500 requests at concurrency 8
# with programs killed meanwhile); that the server's SIGTERM
# leaves nothing behind; and, when tests/images/langs.sh has built them, real
# compilers and interpreters: python with numpy/pandas, pytest, cpp (g++),
# nodejs, and go/java/rust if its optional second image is there.
source "$(dirname "$0")/../sandbox_lib.sh"
[ "$BB" = busybox ] && [ "$PY" = python ] || { echo "SKIP: needs the busybox and python images in a store"; exit 77; }
[ "$RUNTIME" = native ] || { echo "SKIP: the warm pool holds native sandboxes only"; exit 77; }
CLIENT=$SBX_TEST_SRC/tests/sandbox_fusion_client.py
DATA=$SBX_TEST_SRC/tests/data/HumanEval.jsonl.gz

# The languages of this test: python and bash on the test images; cpp on a
# stand-in compiler in busybox that fails on "SYNTAX" and else writes ./test,
# so compile steps are tested even without the langs image (real g++, node,
# … on it further down, when tests/images/langs.sh has built it).
cat >"$T/languages.json" <<'J'
{"python": {"image": "python"},
 "bash": {"image": "busybox", "run": ["sh", "main.sh"]},
 "cpp": {"image": "busybox",
         "compile": ["sh", "-c", "if grep -q SYNTAX main.cpp; then echo 'main.cpp:1: error: expected expression' >&2; exit 1; fi; printf '#!/bin/sh\\necho \"compiled program ran: $(cat)\"\\n' > test; chmod +x test"]}}
J
printf 'sf_%s' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/token"
chmod 600 "$T/token"
TOKEN=$(cat "$T/token")

SERVER_PID="" PORT=""
start_server() {  # extra serve flags...
  local p
  for p in $(shuf -i 20000-60000 -n 5); do
    "$SBX" --log-level info serve --socket "$T/docker.sock" --sandbox-fusion "127.0.0.1:$p" \
      --languages "$T/languages.json" "$@" 2>"$T/serve.log" &
    SERVER_PID=$!
    for _ in $(seq 200); do
      grep -q "listening on" "$T/serve.log" 2>/dev/null && { PORT=$p; return 0; }
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.05
    done
    wait "$SERVER_PID" 2>/dev/null
  done
  echo "FAIL server did not start:"; cat "$T/serve.log"; return 1
}
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null
  wait "$SERVER_PID" 2>/dev/null
  SERVER_PID=""
}
trap 'stop_server' EXIT

# --- flags refused --------------------------------------------------------------------
expect_rc "--sandbox-fusion on a non-loopback address without a token is refused" 125 \
  "$SBX" serve --socket "$T/x.sock" --sandbox-fusion 0.0.0.0:1
expect_rc "--sandbox-fusion with a runtime without warm sandboxes (gvisor) is refused" 125 \
  "$SBX" serve --socket "$T/x.sock" --sandbox-fusion 127.0.0.1:1 --runtime gvisor
echo '{"python": {"image": "python", "colour": "blue"}}' >"$T/bad-languages.json"
out=$("$SBX" serve --socket "$T/x.sock" --sandbox-fusion 127.0.0.1:1 --languages "$T/bad-languages.json" 2>&1)
check "a languages file with an unknown key is refused, naming it" grep -q '"python": unknown key "colour"' <<<"$out"

# --- verl's requests, each language, bad input ----------------------------------------
start_server --max-concurrency 4 || finish
URL=http://127.0.0.1:$PORT
python3 "$CLIENT" verl "$URL" >"$T/verl.out" 2>&1
rc=$?
sed 's/^/  /' "$T/verl.out"
check "verl's reward and tool requests answered as SandboxFusion answers them" [ $rc = 0 ]
python3 "$CLIENT" jupyter "$URL" >"$T/jupyter.out" 2>&1
rc=$?
sed 's/^/  /' "$T/jupyter.out"
check "/run_jupyter: state across cells, display, error, cell time-out, files" [ $rc = 0 ]

# --- many memory limits, one pool ------------------------------------------------------------
# Each limit is the request's own (set on the pooled sandbox when it is taken,
# not left from the one before): 128 MiB allocated under 64, 512, 64, 100, 300
# MB fails, passes, fails, fails, passes; and those limits (with verl's 64,
# 256 and 1024 above) made no pool beyond the python image's one.
mem_status() {  # MB -> the /run_code status of allocating and touching 128 MiB under MB
  curl -s "$URL/run_code" -d "{\"code\": \"x = bytearray(128 << 20)\\nprint(len(x))\", \"language\": \"python\", \"memory_limit_MB\": $1, \"run_timeout\": 60}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])'
}
got=""
for mb in 64 512 64 100 300; do got="$got $(mem_status $mb)"; done
check "128 MiB under 64, 512, 64, 100, 300 MB in turn: Failed Success Failed Failed Success (got:$got)" \
  [ "$got" = " Failed Success Failed Failed Success" ]
check "requests with six different memory limits (and none) share one pool for the python image" \
  [ "$(grep -c 'a warm pool of .* for python$' "$T/serve.log")" = 1 ]

# --- HumanEval at concurrency 4 ----------------------------------------------------------
out=$(python3 "$CLIENT" humaneval "$URL" "$DATA" -P 4)
echo "  canonical: $out"
check "HumanEval through /run_code at concurrency 4: 164/164 canonical solutions pass" grep -qx "passed 164/164" <<<"$out"
out=$(python3 "$CLIENT" humaneval "$URL" "$DATA" --wrong -P 4)
echo "  wrong: $out"
check "HumanEval with wrong solutions: none passes" grep -qx "passed 0/164" <<<"$out"
metrics=$(curl -s "$URL/metrics")
check "/metrics counts the 164 canonical successes (and more)" \
  awk -F' ' '/^sbx_sandbox_fusion_requests_total\{endpoint="run_code",language="python",status="Success"\}/ {exit !($2 >= 164)}' <<<"$metrics"
check "/metrics: pool hits counted" grep -q 'sbx_sandbox_fusion_pool_takes_total{result="hit"} [1-9]' <<<"$metrics"
# A request holds its pool's refill back until its answer is out (while
# another sandbox is ready); once the requests are answered every pool fills
# up again to its size (the server's log says each pool's size).
pools_full() {
  local want
  want=$(grep -o 'a warm pool of [0-9]* for' "$T/serve.log" | awk '{n += $5} END {print n + 0}')
  [ "$want" -gt 0 ] || return 1
  for _ in $(seq 150); do
    curl -s "$URL/metrics" | grep -qx "sbx_sandbox_fusion_pool_ready $want" && return 0
    sleep 0.1
  done
  echo "  want pool_ready $want: $(curl -s "$URL/metrics" | grep '^sbx_sandbox_fusion_pool_ready')"
  return 1
}
curl -s "$URL/run_code" -d '{"code": "print(1)", "language": "python"}' >/dev/null
check "/metrics: after the last answer the warm pools refill to their size (pool_ready)" pools_full

# --- a sandbox killed mid-request -------------------------------------------------------------
( curl -s "$URL/run_code" -d '{"code": "import time\nprint(1, flush=True)\ntime.sleep(30)", "language": "python", "run_timeout": 40}' >"$T/killed.json" ) &
cpid=$!
victim=""
for _ in $(seq 200); do
  victim=$(pgrep -f '^python3 main\.py$' | head -1)  # the request's program (in its sandbox)
  [ -n "$victim" ] && break
  sleep 0.05
done
check "the request's program found on the host" [ -n "$victim" ]
[ -n "$victim" ] && kill -9 "$victim"
wait $cpid
check "a request whose program was killed (SIGKILL) is answered: Failed, return code 137" \
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(not (r["status"]=="Failed" and r["run_result"]["return_code"]==137))' "$T/killed.json"
# --- 500 requests at concurrency 8, programs killed (SIGKILL) meanwhile: every
# request answered (the killed ones Failed), the others right.
python3 "$CLIENT" stress "$URL" 500 8 >"$T/stress.out" 2>&1 &
spid=$!
killed=0
while kill -0 $spid 2>/dev/null; do
  v=$(pgrep -f '^python3 main\.py$' | shuf -n 1)
  [ -n "$v" ] && [ $killed -lt 5 ] && kill -9 "$v" 2>/dev/null && killed=$((killed + 1))
  sleep 0.5
done
wait $spid
out=$(cat "$T/stress.out")
echo "  500 requests at P=8, $killed programs killed: $out"
check "500 requests at concurrency 8 with programs killed: every one answered" grep -q "^answered 500/500 " <<<"$out"
right=$(sed -n 's/^answered [0-9]*\/500 right \([0-9]*\).*/\1/p' <<<"$out")
check "all but the killed ones right (right $right, killed $killed)" [ "$((right + killed))" -ge 500 ]

# A request still running when the server stops: its sandbox is killed, the
# request answered, and nothing is left.
( curl -s "$URL/run_code" -d '{"code": "import time\ntime.sleep(60)", "language": "python", "run_timeout": 90}' >"$T/stopped.json" ) &
cpid=$!
for _ in $(seq 200); do pgrep -f '^python3 main\.py$' >/dev/null && break; sleep 0.05; done
stop_server
wait $cpid
check "a request running when the server stops is answered" grep -q '"status"' "$T/stopped.json"
check "after the server's SIGTERM no sandbox is left in the run root" [ -z "$(ls "$SBX_RUN_ROOT" | grep -E '^[0-9a-f]{64}$')" ]

# --- the queue: a slot not free within --queue-timeout is 504 --------------------------------
start_server --max-concurrency 1 --queue-timeout 1s || finish
URL=http://127.0.0.1:$PORT
slow='{"code": "import time\ntime.sleep(3)", "language": "python", "run_timeout": 10}'
qpids=""
for i in 1 2 3; do
  curl -s -o /dev/null -w '%{http_code}\n' "$URL/run_code" -d "$slow" >"$T/q$i" &
  qpids="$qpids $!"
done
wait $qpids
codes=$(cat "$T"/q? | sort | tr '\n' ' ')
echo "  3 slow requests at --max-concurrency 1 --queue-timeout 1s: $codes"
check "one request ran (200), the ones that could not start within 1 s got 504" [ "$codes" = "200 504 504 " ]
check "/metrics counts the 504s" grep -q 'status="504"} 2' <<<"$(curl -s "$URL/metrics")"
stop_server

# --- the token in the URL path -----------------------------------------------------------------
start_server --token-file "$T/token" || finish
URL=http://127.0.0.1:$PORT
# (GETs: a refusal ends the connection before a body is read, and a client
# still sending one may see the reset rather than the answer.)
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/ping")
check "with --token-file, a request without the token: 401 (got $code)" [ "$code" = 401 ]
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/sf_wrong$TOKEN/v1/ping")
check "a wrong token: 401 (got $code)" [ "$code" = 401 ]
out=$(curl -s "$URL/$TOKEN/run_code" -d '{"code": "print(6 * 7)", "language": "python"}')
check "http://HOST:PORT/TOKEN/run_code answers" grep -q '"stdout":"42\\n"' <<<"$out"
check "http://HOST:PORT/TOKEN/v1/ping answers pong" [ "$(curl -s "$URL/$TOKEN/v1/ping")" = '"pong"' ]
stop_server
check "nothing of the fetch_files copies is left" [ -z "$(ls -A "$SBX_RUN_ROOT" | grep sandbox-fusion)" ]

# --- real compilers and interpreters (tests/images/langs.sh), when built -----------
# python (numpy, pandas, …), pytest, cpp (g++) and nodejs on the "langs" image;
# go, java and rust on "langs-extra" (langs.sh --with go,java,rust), which CI
# does not build.
if [ -d "$SBX_IMAGES/langs-oci" ]; then
  $SBX import -q "$SBX_IMAGES/langs-oci" langs:latest >/dev/null
  extra=""
  if [ -d "$SBX_IMAGES/langs-extra-oci" ]; then
    $SBX import -q "$SBX_IMAGES/langs-extra-oci" langs-extra:latest >/dev/null
    for l in go java rust; do
      # Only the languages that image has (langs.sh --with may have named fewer).
      if $SBX run --network none langs-extra -- sh -c "command -v $(case $l in go) echo go ;; java) echo javac ;; rust) echo rustc ;; esac)" >/dev/null 2>&1; then
        extra="$extra,$l"
      fi
    done
    extra=${extra#,}
  fi
  python3 - "$extra" >"$T/languages.json" <<'P'
import json, sys
t = {l: {"image": "langs"} for l in ("python", "pytest", "cpp", "nodejs")}
t.update({l: {"image": "langs-extra"} for l in sys.argv[1].split(",") if l})
print(json.dumps(t))
P
  if [ -n "$extra" ]; then echo "  langs-extra image found: also $extra"
  else echo "skip: no langs-extra image with go/java/rust in $SBX_IMAGES (tests/images/langs.sh --with go,java,rust builds it): go, java, rust not run"; fi
  start_server --max-concurrency 2 || finish
  URL=http://127.0.0.1:$PORT
  python3 "$CLIENT" langs "$URL" "$extra" >"$T/langs.out" 2>&1
  rc=$?
  sed 's/^/  /' "$T/langs.out"
  check "real images: python with numpy/pandas, pytest, cpp (g++) and nodejs${extra:+, $extra} answered as SandboxFusion answers" [ $rc = 0 ]
  stop_server
elif [ "${SBX_REQUIRE_LANGS_IMAGE:-0}" = 1 ]; then
  # .ci/run requires it (its tests/setup.sh builds it): missing there fails, never a silent skip.
  check "real images: the langs image is in $SBX_IMAGES (tests/setup.sh builds it with tests/images/langs.sh)" false
else
  echo "skip: no langs image in $SBX_IMAGES (tests/images/langs.sh builds it): python with numpy/pandas, pytest, cpp and nodejs on real images not run"
fi
finish

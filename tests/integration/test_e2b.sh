#!/bin/bash
# sbx serve --e2b: the unmodified `e2b` npm package (E2B's JS SDK) drives sbx
# sandboxes, pointed at the server by its documented settings E2B_API_URL,
# E2B_SANDBOX_URL and E2B_API_KEY (docs/e2b.md): Sandbox.create(image),
# commands.run with exit codes and output, a background command and its
# kill, stdin, files.write/read/list and the other file calls, hostile paths,
# authentication, setTimeout (killed when it passes), kill(). The checks are
# tests/integration/e2b_sdk.test.cjs under node's test runner; the raw
# protocol's refusals are checked here with curl. Then the server's SIGTERM
# takes its sandboxes with it, and the leak check of tests/sandbox_lib.sh.
#
# The e2b package: SBX_TEST_NODE_MODULES=DIR/node_modules with e2b in it, or
# tests/e2b_npm.sh installs it once with npm into the build tree (next to
# $SBX: e2b-npm/node_modules) and reuses it. Skipped, with the reason, only
# where node or npm is absent.
. "$(dirname "$0")/../sandbox_lib.sh"

if ! command -v node >/dev/null; then echo "SKIP: node is not installed (the e2b SDK test needs it)"; exit 77; fi
MODS=${SBX_TEST_NODE_MODULES:-}
if [ -z "$MODS" ]; then
  MODS=$(bash "$SBX_TEST_SRC/tests/e2b_npm.sh" "$(dirname "$SBX")" 2>"$T/npm.log")
  rc=$?
  [ $rc = 77 ] && { echo "SKIP: $(cat "$T/npm.log") (needed for the e2b SDK)"; exit 77; }
  [ $rc = 0 ] || { echo "FAIL npm install of the e2b SDK:"; cat "$T/npm.log"; exit 1; }
fi
check "the e2b package loads" env NODE_PATH="$MODS" node -e "require('e2b')"

[ -n "$BB" ] && [ "${BB#--rootfs}" = "$BB" ] || { echo "SKIP: needs the image store and the busybox test image"; exit 77; }
RT_ARGS=()
[ "$RUNTIME" = gvisor ] && RT_ARGS=(--runtime gvisor)

printf 'e2b_%s' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/token"  # the form E2B's Python SDK insists on
chmod 600 "$T/token"
TOKEN=$(cat "$T/token")
PORT=""
SERVER_PID=""
start_server() {
  local p
  for p in $(shuf -i 20000-60000 -n 5); do
    "$SBX" --log-level info serve --socket "$T/docker.sock" --e2b "127.0.0.1:$p" --token-file "$T/token" \
      "${RT_ARGS[@]}" 2>"$T/serve.log" &
    SERVER_PID=$!
    for _ in $(seq 100); do
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
rm_all() {
  for id in $("$SBX" ps -aq --no-trunc 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null
}
trap 'stop_server; rm_all' EXIT

expect_rc "--e2b without --token-file is refused" 125 "$SBX" serve --socket "$T/x.sock" --e2b 127.0.0.1:1
expect_rc "--e2b on a non-loopback address is refused" 125 "$SBX" serve --socket "$T/x.sock" --e2b 0.0.0.0:1 --token-file "$T/token"

start_server || finish
URL=http://127.0.0.1:$PORT
echo "server on $URL (runtime $RUNTIME)"

# --- the raw protocol's refusals ---------------------------------------------------
code=$(curl -s -o "$T/r" -w '%{http_code}' -X POST -d '{"templateID":"busybox"}' "$URL/sandboxes")
check "REST without the API key: 401" [ "$code" = 401 ]
code=$(curl -s -o "$T/r" -w '%{http_code}' -H "X-API-Key: $TOKEN" -X POST -d '{"templateID":"no-such-image"}' "$URL/sandboxes")
check "create from an unknown image: 404 with E2B's error body" [ "$code" = 404 ]
check "… {\"code\": 404, \"message\": …}" grep -q '"code":404' "$T/r"
code=$(curl -s -o "$T/r" -w '%{http_code}' -H "X-API-Key: $TOKEN" -X POST "$URL/sandboxes/abc/pause")
check "an endpoint sbx does not serve: 501" [ "$code" = 501 ]
code=$(curl -s -o "$T/r" -w '%{http_code}' -H 'Content-Type: application/json' -H 'E2b-Sandbox-Id: nope' \
  -X POST -d '{}' "$URL/process.Process/List")
check "envd call for an unknown sandbox: Connect's unavailable (503)" [ "$code" = 503 ]
check "… with a Connect error body" grep -q '"code":"unavailable"' "$T/r"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'E2b-Sandbox-Id: nope' "$URL/health")
check "envd /health of an unknown sandbox: 502, what the SDK's isRunning() reads as not running" [ "$code" = 502 ]

# --- a file read is bounded: a 1 TiB sparse file is refused, not streamed ---------
# GET /files sends a file's holes as zeros: past the bound (4 GiB, holes
# included) it answers 413 before a byte is sent.
code=$(curl -s -o "$T/r" -w '%{http_code}' -H "X-API-Key: $TOKEN" -H 'Content-Type: application/json' \
  -X POST -d '{"templateID":"busybox","timeout":300}' "$URL/sandboxes")
check "REST create ($code)" [ "$code" = 201 -o "$code" = 200 ]
E2B_ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandboxID"])' "$T/r")
E2B_TOK=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("envdAccessToken") or "")' "$T/r")
sbx_id=$("$SBX" ps -q --no-trunc | head -1)
"$SBX" exec "$sbx_id" sh -c 'printf head >/big1t && truncate -s 1099511627776 /big1t'
code=$(curl -s -o "$T/r" -w '%{http_code}' --max-time 60 -H "E2b-Sandbox-Id: $E2B_ID" -H "X-Access-Token: $E2B_TOK" \
  "$URL/files?path=/big1t")
check "GET /files of a 1 TiB sparse file: 413 ($code)" [ "$code" = 413 ]
check "… naming the bound" grep -q 'at most 4294967296 bytes' "$T/r"
curl -s -o /dev/null -H "X-API-Key: $TOKEN" -X DELETE "$URL/sandboxes/$E2B_ID"

# --- a timeout in seconds keeps its fraction: 2.5 s is 2500 ms, not 2 ------------
code=$(curl -s -o "$T/r" -w '%{http_code}' -H "X-API-Key: $TOKEN" -H 'Content-Type: application/json' \
  -X POST -d '{"templateID":"busybox","timeout":2.5}' "$URL/sandboxes")
E2B_ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandboxID"])' "$T/r" 2>/dev/null)
span=$(curl -s -H "X-API-Key: $TOKEN" "$URL/sandboxes/$E2B_ID" | python3 -c '
import datetime, json, sys
j = json.load(sys.stdin)
t = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
print(round((t(j["endAt"]) - t(j["startedAt"])).total_seconds() * 1000))' 2>&1)
check "REST create with timeout 2.5: endAt is 2500 ms after startedAt ($code, $span)" [ "$span" = 2500 ]
curl -s -o /dev/null -H "X-API-Key: $TOKEN" -X DELETE "$URL/sandboxes/$E2B_ID"

# --- the SDK ----------------------------------------------------------------------------
MARK=$T/host-mark
NODE_PATH=$MODS E2B_API_URL=$URL E2B_SANDBOX_URL=$URL E2B_API_KEY=$TOKEN SBX_E2B_TEMPLATE=busybox \
  SBX_E2B_HOST_MARK=$MARK SBX_TEST_RUNTIME=$RUNTIME timeout 120 node --test --test-reporter=spec \
  "$SBX_TEST_SRC/tests/integration/e2b_sdk.test.cjs" >"$T/node.log" 2>&1
rc=$?
sed 's/^/  node: /' "$T/node.log" | grep -v '^  node: *$'
check "e2b SDK checks under node --test" [ "$rc" = 0 ]
check "nothing reached the host through hostile paths" [ ! -e "$MARK" -a ! -e "$MARK-dots" ]
# The python image has bash: commands.run's /bin/bash -l -c runs as given.
if [ -n "$PY" ]; then
  out=$(NODE_PATH=$MODS E2B_API_URL=$URL E2B_SANDBOX_URL=$URL E2B_API_KEY=$TOKEN timeout 60 node -e "
    const { Sandbox } = require('e2b');
    (async () => {
      const s = await Sandbox.create('python');
      const r = await s.commands.run('python3 -c \"print(6*7)\"; echo \$BASH_VERSION | cut -c1');
      await s.kill();
      console.log(r.stdout.trim().split('\n').join(','));
    })().catch((e) => { console.error(e); process.exit(1); });" 2>&1)
  check "python image: commands.run with its bash and python3 ($out)" [ "$out" = "42,5" ]
fi

# --- SIGTERM: the server's sandboxes go with it ---------------------------------------
NODE_PATH=$MODS E2B_API_URL=$URL E2B_SANDBOX_URL=$URL E2B_API_KEY=$TOKEN timeout 60 node -e "
  const { Sandbox } = require('e2b');
  Sandbox.create('busybox').then((s) => s.commands.run('sleep 300', { background: true })).then(() => process.exit(0),
    (e) => { console.error(e); process.exit(1); });" 2>&1
check "a sandbox with a background command runs before SIGTERM" [ "$("$SBX" ps -q | wc -l)" -ge 1 ]
stop_server
check "after the server's SIGTERM no sandbox of its E2B endpoint is left" [ -z "$("$SBX" ps -aq)" ]
grep -q "reached its timeout: killed" "$T/serve.log"
check "the server log says it killed the sandbox whose timeout passed" [ $? = 0 ]
echo "sandboxes this test's server made: $(sed -n 's/.*sandbox \([0-9a-f]*\) (.*created.*/\1/p' "$T/serve.log" | cut -c1-12 | tr '\n' ' ')"
finish

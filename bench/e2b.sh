#!/bin/bash
# sbx serve --e2b: what E2B's JS SDK costs over sbx's own CLI, on the busybox
# test image (warm, one machine): Sandbox.create + kill, and
# commands.run('true') into one sandbox, beside `sbx create` + `sbx rm -f` and
# `sbx exec ID true` (hyperfine). The SDK numbers are the mean of N calls in
# one node process (what a harness pays per call, no node start-up).
# Usage: bench/e2b.sh [SBX] [RUNS]   (root; tests/images/out built; node; the
# e2b package: tests/e2b_npm.sh BUILD_DIR installs it)
set -eu
SBX=$(readlink -f "${1:-$(dirname "$0")/../build/sbx}")
RUNS=${2:-30}
SRC=$(cd "$(dirname "$0")/.." && pwd)
IMAGES=${SBX_IMAGES:-$SRC/tests/images/out}
MODS=$(bash "$SRC/tests/e2b_npm.sh" "$(dirname "$SBX")")
T=$(mktemp -d /tmp/sbx-bench-e2b.XXXXXX)
export SBX_ROOT=$T/root SBX_RUN_ROOT=$T/run
SERVER=""
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" && wait "$SERVER" 2>/dev/null
  for id in $("$SBX" ps -aq --no-trunc 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  rm -rf "$T"
}
trap cleanup EXIT
"$SBX" import -q "$IMAGES/busybox-oci" busybox >/dev/null
printf 'e2b_%s' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/token"
chmod 600 "$T/token"
PORT=$(shuf -i 20000-60000 -n 1)
"$SBX" serve --socket "$T/docker.sock" --e2b "127.0.0.1:$PORT" --token-file "$T/token" 2>"$T/serve.log" &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$T/serve.log" && break; sleep 0.05; done
echo "## E2B JS SDK through sbx serve --e2b (mean of $RUNS, ms)"
NODE_PATH=$MODS E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT E2B_API_KEY=$(cat "$T/token") \
  node -e "
const { Sandbox } = require('e2b');
const n = $RUNS;
const ms = (t) => (Number(process.hrtime.bigint() - t) / 1e6);
(async () => {
  for (let i = 0; i < 3; i++) await (await Sandbox.create('busybox')).kill();
  let t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await (await Sandbox.create('busybox')).kill();
  console.log('| Sandbox.create + kill | ' + (ms(t) / n).toFixed(1) + ' |');
  const s = await Sandbox.create('busybox');
  for (let i = 0; i < 3; i++) await s.commands.run('true');
  t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await s.commands.run('true');
  console.log('| commands.run(\"true\") | ' + (ms(t) / n).toFixed(1) + ' |');
  await s.files.write('/tmp/f', 'x'.repeat(1024));
  t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await s.files.read('/tmp/f');
  console.log('| files.read (1 KiB) | ' + (ms(t) / n).toFixed(1) + ' |');
  t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await s.files.list('/tmp');
  console.log('| files.list | ' + (ms(t) / n).toFixed(1) + ' |');
  await s.kill();
})().catch((e) => { console.error(e); process.exit(1); });"
echo "## sbx CLI (hyperfine)"
ID=$("$SBX" create busybox)
hyperfine -N --warmup 3 --runs "$RUNS" --export-markdown "$T/out.md" \
  -n 'sbx create busybox + sbx rm -f' "sh -c '$SBX rm -f \$($SBX create busybox) >/dev/null'" \
  -n 'sbx exec ID true' "$SBX exec $ID true" >/dev/null
cat "$T/out.md"

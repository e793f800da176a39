#!/bin/bash
# Stress (not a CI test, not a timing): N docker-py containers.run at
# parallelism P against a fresh `sbx serve`, each checked for its own output;
# a failing container is kept and its state dir (state.json, end, log) is
# printed before it is removed. How the rare exit 137 of concurrent creates
# was found (runtime/state.h read_state_settled).
# Usage: bench/serve_stress.sh [SBX] [N=300] [P=8]   (root; tests/images/out built; python3-docker)
set -u
SBX=$(readlink -f "${1:-$(dirname "$0")/../build/sbx}")
N=${2:-300}
P=${3:-8}
IMAGES=${SBX_IMAGES:-$(cd "$(dirname "$0")/../tests/images/out" && pwd)}
T=$(mktemp -d /tmp/sbx-serve-stress.XXXXXX)
export SBX_ROOT=$T/root SBX_RUN_ROOT=$T/run
"$SBX" import -q "$IMAGES/busybox-oci" busybox >/dev/null
"$SBX" serve --socket "$T/d.sock" 2>"$T/serve.log" &
S=$!
cleanup() {
  kill "$S" 2>/dev/null && wait "$S" 2>/dev/null
  for id in $("$SBX" ps -aq --no-trunc 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  grep -F " $T/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount "$m" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$T/d.sock" ] && break; sleep 0.05; done
python3 - "unix://$T/d.sock" "$N" "$P" "$T/run" <<'PY'
import sys, os, time, docker, concurrent.futures as cf
url, n, p, run_root = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
c = docker.DockerClient(base_url=url, version="auto", timeout=120)
def dump(cid):
    d = os.path.join(run_root, cid)
    out = ["  dir %s exists=%s" % (d, os.path.isdir(d))]
    if os.path.isdir(d):
        for f in sorted(os.listdir(d)):
            fp = os.path.join(d, f)
            out.append("  --- %s: %s" % (f, open(fp, errors="replace").read()[:1500] if f in ("state.json", "end", "log") else ""))
    return "\n".join(out)
def one(i):
    t0, ctr = time.time(), None
    try:
        ctr = c.containers.create("busybox", ["echo", "run%d" % i])
        ctr.start()
        r = ctr.wait()
        out = ctr.logs()
        if r["StatusCode"] != 0 or out != b"run%d\n" % i:
            return (i, time.time() - t0, "status %s output %r\n%s" % (r, out, dump(ctr.id)))
        ctr.remove()
        return None
    except Exception as e:
        return (i, time.time() - t0, "%s: %s\n%s" % (type(e).__name__, e, dump(ctr.id) if ctr else ""))
t0 = time.time()
with cf.ThreadPoolExecutor(p) as ex: res = list(ex.map(one, range(n)))
bad = [r for r in res if r]
for i, dt, what in bad: print("FAIL run %d after %.2f s: %s" % (i, dt, what))
print("%d containers.run at P=%d: %d failed, %.1f s" % (n, p, len(bad), time.time() - t0))
sys.exit(1 if bad else 0)
PY

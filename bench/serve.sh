#!/bin/bash
# sbx serve: what the Docker Engine API costs, on the busybox test image
# (hyperfine, warm), through three doors:
#   - `docker run --rm IMAGE true` and `docker exec` through sbx serve,
#   - the same docker commands through `podman system service` (Debian's
#     podman, --runtime runc --cgroup-manager=cgroupfs and the ulimits of
#     bench/lifecycle.sh, its own --root/--runroot under the temp dir),
#   - sbx's own CLI: `sbx run IMAGE true` and `sbx exec`;
# then 200 docker-py containers.run(IMAGE, "true", remove=True) at
# parallelism 4 against each service (containers per second). Prints the
# hyperfine table, the throughput rows and the ratios the issue asks for
# (podman service / sbx serve; sbx serve − sbx CLI).
# Usage: bench/serve.sh [SBX] [RUNS]   (root; tests/images/out built; docker CLI;
#        podman and python3-docker optional: their rows are left out without them)
#   SBX_BENCH_BASE=OLD_SBX: the same rows through `OLD_SBX serve` too (its own
#     store), beside the new one in the same run, and "new / base" ratios:
#     a before/after of a change to the server.
#   SBX_BENCH_NO_PODMAN=1: leave podman's rows out (they take minutes).
set -eu
SBX=$(readlink -f "${1:-$(dirname "$0")/../build/sbx}")
RUNS=${2:-30}
N=${SBX_BENCH_SERVE_N:-200}
IMAGES=${SBX_IMAGES:-$(cd "$(dirname "$0")/../tests/images/out" && pwd)}
T=$(mktemp -d /tmp/sbx-bench-serve.XXXXXX)
export SBX_ROOT=$T/root SBX_RUN_ROOT=$T/run DOCKER_CONFIG=$T/docker-config
SOCK=unix://$T/docker.sock PSOCK=unix://$T/podman.sock
P=(podman --root "$T/proot" --runroot "$T/prun" --tmpdir "$T/ptmp" --runtime runc --cgroup-manager=cgroupfs --events-backend none)
BASE=${SBX_BENCH_BASE:+$(readlink -f "$SBX_BENCH_BASE")}
BSOCK=unix://$T/base.sock
SERVER="" PSERVER="" BSERVER=""
cleanup() {
  DOCKER_HOST=$SOCK docker rm -f bench-serve >/dev/null 2>&1 || true
  [ -n "$SERVER" ] && kill "$SERVER" && wait "$SERVER" 2>/dev/null
  if [ -n "$BSERVER" ]; then
    DOCKER_HOST=$BSOCK docker rm -f bench-base >/dev/null 2>&1 || true
    kill "$BSERVER" && wait "$BSERVER" 2>/dev/null
    for id in $(SBX_ROOT=$T/broot SBX_RUN_ROOT=$T/brun "$BASE" ps -aq --no-trunc 2>/dev/null); do
      SBX_ROOT=$T/broot SBX_RUN_ROOT=$T/brun "$BASE" rm -f "$id" >/dev/null 2>&1
    done
  fi
  if [ -n "$PSERVER" ]; then
    DOCKER_HOST=$PSOCK docker rm -f bench-podman >/dev/null 2>&1 || true
    kill "$PSERVER" && wait "$PSERVER" 2>/dev/null
    "${P[@]}" rm -a -f >/dev/null 2>&1 || true
    "${P[@]}" rmi -a -f >/dev/null 2>&1 || true
  fi
  for id in $("$SBX" ps -aq --no-trunc 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  grep -F " $T/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount "$m" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
"$SBX" import -q "$IMAGES/busybox-oci" busybox >/dev/null
"$SBX" serve --socket "$T/docker.sock" 2>/dev/null &
SERVER=$!
for _ in $(seq 100); do [ -S "$T/docker.sock" ] && break; sleep 0.05; done
DOCKER_HOST=$SOCK docker run -d --name bench-serve busybox tail -f /dev/null >/dev/null
CMDS=(-n 'docker run --rm busybox true (sbx serve)' "env DOCKER_HOST=$SOCK docker run --rm busybox true"
  -n 'docker exec (sbx serve)' "env DOCKER_HOST=$SOCK docker exec bench-serve true")
if [ -n "$BASE" ]; then
  SBX_ROOT=$T/broot SBX_RUN_ROOT=$T/brun "$BASE" import -q "$IMAGES/busybox-oci" busybox >/dev/null
  SBX_ROOT=$T/broot SBX_RUN_ROOT=$T/brun "$BASE" serve --socket "$T/base.sock" 2>/dev/null &
  BSERVER=$!
  for _ in $(seq 100); do [ -S "$T/base.sock" ] && break; sleep 0.05; done
  DOCKER_HOST=$BSOCK docker run -d --name bench-base busybox tail -f /dev/null >/dev/null
  CMDS+=(-n 'docker run --rm busybox true (base sbx serve)' "env DOCKER_HOST=$BSOCK docker run --rm busybox true"
    -n 'docker exec (base sbx serve)' "env DOCKER_HOST=$BSOCK docker exec bench-base true")
fi
if [ "${SBX_BENCH_NO_PODMAN:-0}" = 1 ]; then
  echo "note: SBX_BENCH_NO_PODMAN=1: podman's rows are left out"
elif command -v podman >/dev/null; then
  source "$(dirname "$0")/podman_service.sh"
  podman_service_start "$T/podman.sock"
  DOCKER_HOST=$PSOCK docker run -d --network none --name bench-podman busybox tail -f /dev/null >/dev/null
  CMDS+=(-n 'docker run --rm busybox true (podman service)' "env DOCKER_HOST=$PSOCK docker run --rm --network none busybox true"
    -n 'docker exec (podman service)' "env DOCKER_HOST=$PSOCK docker exec bench-podman true")
else
  echo "note: no podman: its rows are left out"
fi
CMDS+=(-n 'sbx run busybox true' "$SBX run busybox true" -n 'sbx exec' "$SBX exec bench-serve true")
hyperfine -N --warmup 3 --runs "$RUNS" --export-markdown "$T/out.md" --export-json "$T/out.json" "${CMDS[@]}" >/dev/null
cat "$T/out.md"
echo
# Throughput: N containers.run at parallelism 4 (docker-py, as the harnesses).
thru() {  # DOCKER_HOST LABEL EXTRA_KWARGS
  python3 - "$1" "$N" "$3" <<'PY' | sed "s/^/| $2 | /"
import sys, time, docker, concurrent.futures as cf
c = docker.DockerClient(base_url=sys.argv[1], version="auto"); n = int(sys.argv[2]); kw = eval("dict(%s)" % sys.argv[3])
def one(i):
    try: c.containers.run("busybox", "true", remove=True, **kw); return 0
    except Exception as e: return 1  # counted (a failed or hung run), not fatal
t0 = time.time()
with cf.ThreadPoolExecutor(4) as ex: failed = sum(ex.map(one, range(n)))
dt = time.time() - t0
print("%d (%d failed) | %.1f s | %.1f containers/s |" % (n, failed, dt, n / dt))
PY
}
if python3 -c 'import docker' 2>/dev/null; then
  echo "| Service | containers.run | Wall | Throughput |"
  echo "|:---|---:|---:|---:|"
  thru "$SOCK" "sbx serve" "" | tee "$T/thru-sbx"
  [ -n "$BSERVER" ] && thru "$BSOCK" "base sbx serve" "" | tee "$T/thru-base"
  [ -n "$BSERVER" ] && thru "$SOCK" "sbx serve (again)" "" | tee "$T/thru-sbx2"
  [ -n "$PSERVER" ] && thru "$PSOCK" "podman service" "network_mode='none'" | tee "$T/thru-podman"
  echo
fi
# Ratios.
python3 - "$T/out.json" "$T" <<'PY'
import json, os, re, sys
m = {r["command"]: r["mean"] * 1000 for r in json.load(open(sys.argv[1]))["results"]}
def g(k): return m.get(k)
rows = []
for what in ("docker run --rm busybox true", "docker exec"):
    s, p = g(what + " (sbx serve)"), g(what + " (podman service)")
    if s and p: rows.append("| %s: podman service / sbx serve | %.1f× |" % (what, p / s))
    b = g(what + " (base sbx serve)")
    if s and b: rows.append("| %s: sbx serve / base sbx serve | %.2f× |" % (what, s / b))
s, c = g("docker run --rm busybox true (sbx serve)"), g("sbx run busybox true")
if s and c: rows.append("| docker run --rm through sbx serve − sbx run | %+.1f ms |" % (s - c))
s, c = g("docker exec (sbx serve)"), g("sbx exec")
if s and c: rows.append("| docker exec through sbx serve − sbx exec | %+.1f ms |" % (s - c))
def rate(f):
    try: return float(re.search(r"([0-9.]+) containers/s", open(f).read()).group(1))
    except Exception: return None
a, b = rate(os.path.join(sys.argv[2], "thru-sbx")), rate(os.path.join(sys.argv[2], "thru-podman"))
if a and b: rows.append("| 200 containers.run at P=4: sbx serve / podman service | %.1f× |" % (a / b))
a2, base = rate(os.path.join(sys.argv[2], "thru-sbx2")), rate(os.path.join(sys.argv[2], "thru-base"))
if a and a2 and base: rows.append("| containers.run throughput: sbx serve (mean of its two runs) / base | %.2f× |" % ((a + a2) / 2 / base))
print("| Ratio | Value |\n|:---|---:|")
print("\n".join(rows))
PY

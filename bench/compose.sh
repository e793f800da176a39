#!/bin/bash
# docker-compose through sbx serve and through podman's service: how long a
# small Compose project takes from `docker-compose up -d` to the first answer
# of its client service, and then `down` — the start of a terminal-bench
# task. The project (busybox only): a server service (httpd on port 8000 of
# the project's network) and a client service that asks it by its service
# name (busybox nc: the static busybox's wget crashes resolving) until it answers, on the default network, with a named volume.
# Rounds alternate between the two services (interleaved); medians and the
# ratio sbx / podman.
# Usage: bench/compose.sh [SBX] [ROUNDS]   (root; tests/images/out built; the
#        docker CLI and docker-compose; podman with CNI's dnsname plugin
#        (.ci/packages) for podman's rows, else they are left out)
set -eu
SBX=$(readlink -f "${1:-$(dirname "$0")/../build/sbx}")
ROUNDS=${2:-5}
IMAGES=${SBX_IMAGES:-$(cd "$(dirname "$0")/../tests/images/out" && pwd)}
T=$(mktemp -d /tmp/sbx-bench-compose.XXXXXX)
export SBX_ROOT=$T/root SBX_RUN_ROOT=$T/run DOCKER_CONFIG=$T/docker-config
SOCK=unix://$T/docker.sock PSOCK=unix://$T/podman.sock
P=(podman --root "$T/proot" --runroot "$T/prun" --tmpdir "$T/ptmp" --runtime runc --cgroup-manager=cgroupfs --events-backend none
   --network-config-dir "$T/pnet")
SERVER="" PSERVER=""
cleanup() {
  (cd "$T/proj" && DOCKER_HOST=$SOCK timeout 120 docker-compose -p sbxbench down -v >/dev/null 2>&1) || true
  [ -n "$SERVER" ] && kill "$SERVER" && wait "$SERVER" 2>/dev/null
  if [ -n "$PSERVER" ]; then
    (cd "$T/proj" && DOCKER_HOST=$PSOCK timeout 120 docker-compose -p sbxbench down -v >/dev/null 2>&1) || true
    kill "$PSERVER" && wait "$PSERVER" 2>/dev/null
    "${P[@]}" rm -a -f >/dev/null 2>&1 || true
    "${P[@]}" network prune -f >/dev/null 2>&1 || true
    "${P[@]}" rmi -a -f >/dev/null 2>&1 || true
    rm -rf /var/lib/cni/networks/sbxbench_default  # (CNI's address records of the project's network)
  fi
  for id in $("$SBX" ps -aq --no-trunc 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  grep -F " $T/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount "$m" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$T/proj" "$T/pnet"
cat >"$T/proj/docker-compose.yml" <<'EOF'
version: "2.4"
services:
  server:
    image: busybox:latest
    command: ["sh", "-c", "mkdir -p /www && echo hello >/www/id && exec httpd -f -p 8000 -h /www"]
  client:
    image: busybox:latest
    depends_on: [server]
    command: ["sh", "-c", "until r=$$(printf 'GET /id HTTP/1.0\\r\\n\\r\\n' | nc -w 1 server 8000 2>/dev/null | tail -n 1) && [ -n \"$$r\" ]; do sleep 0.05; done; echo \"got $$r\" >/cache/last; echo \"got $$r\"; exec sleep 1000"]
    volumes: ["cache:/cache"]
volumes:
  cache: {}
EOF

"$SBX" import -q "$IMAGES/busybox-oci" busybox:latest >/dev/null
"$SBX" serve --socket "$T/docker.sock" 2>"$T/serve.log" &
SERVER=$!
for _ in $(seq 100); do [ -S "$T/docker.sock" ] && break; sleep 0.05; done
HOSTS=("$SOCK")
LABELS=("sbx serve")
if [ "${SBX_BENCH_NO_PODMAN:-0}" = 1 ]; then
  echo "note: SBX_BENCH_NO_PODMAN=1: podman's rows are left out"
elif ! command -v podman >/dev/null; then
  echo "note: no podman: its rows are left out"
elif [ ! -x /usr/lib/cni/dnsname ]; then
  echo "note: no CNI dnsname plugin (golang-github-containernetworking-plugin-dnsname): podman's service names would not resolve; its rows are left out"
else
  source "$(dirname "$0")/podman_service.sh"
  podman_service_start "$T/podman.sock"
  HOSTS+=("$PSOCK")
  LABELS+=("podman service")
fi

now_ms() { date +%s%3N; }
# One round against DOCKER_HOST $1: prints "UP_TO_ANSWER_MS DOWN_MS", or
# "fail WHY".
round() {
  local host=$1 t0 t1 t2 out
  cd "$T/proj"
  t0=$(now_ms)
  out=$(DOCKER_HOST=$host timeout 300 docker-compose -p sbxbench up -d 2>&1) || { echo "fail up: $(tail -n 2 <<<"$out" | tr '\n' ' ')"; return; }
  # (docker logs, not docker-compose logs: a Python start per poll would be
  # most of what is measured.) At most 60 s.
  while [ $(($(now_ms) - t0)) -lt 60000 ]; do
    DOCKER_HOST=$host docker logs sbxbench_client_1 2>/dev/null | grep -q "got hello" && break
    sleep 0.02
  done
  t1=$(now_ms)
  DOCKER_HOST=$host docker logs sbxbench_client_1 2>/dev/null | grep -q "got hello" ||
    { echo "fail: the client got no answer in 60 s"; DOCKER_HOST=$host timeout 300 docker-compose -p sbxbench down -v >/dev/null 2>&1; return; }
  out=$(DOCKER_HOST=$host timeout 300 docker-compose -p sbxbench down -v 2>&1) || { echo "fail down: $(tail -n 2 <<<"$out" | tr '\n' ' ')"; return; }
  t2=$(now_ms)
  echo "$((t1 - t0)) $((t2 - t1))"
}

# A warm-up round each (images, first network), then ROUNDS interleaved.
for i in "${!HOSTS[@]}"; do round "${HOSTS[$i]}" >/dev/null; done
for r in $(seq "$ROUNDS"); do
  for i in "${!HOSTS[@]}"; do
    res=$(round "${HOSTS[$i]}")
    echo "${LABELS[$i]}|$res" >>"$T/rounds"
    case $res in fail*) echo "round $r, ${LABELS[$i]}: $res" >&2 ;; esac
  done
done

python3 - "$T/rounds" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, res = line.rstrip("\n").split("|", 1)
    rows.setdefault(label, []).append(None if res.startswith("fail") else tuple(map(int, res.split())))
print("| Service | rounds (failed) | up -d → first answer, median [ms] | down, median [ms] | total, median [ms] |")
print("|:---|---:|---:|---:|---:|")
med = {}
for label, rs in rows.items():
    ok = [r for r in rs if r]
    if not ok:
        print("| %s | %d (%d) | – | – | – |" % (label, len(rs), len(rs)))
        continue
    up, down = statistics.median(r[0] for r in ok), statistics.median(r[1] for r in ok)
    tot = statistics.median(r[0] + r[1] for r in ok)
    med[label] = (up, tot)
    print("| %s | %d (%d) | %.0f | %.0f | %.0f |" % (label, len(rs), len(rs) - len(ok), up, down, tot))
if "sbx serve" in med and "podman service" in med:
    s, p = med["sbx serve"], med["podman service"]
    print()
    print("| Ratio | Value |\n|:---|---:|")
    print("| up -d → first answer: sbx serve / podman service | %.2f× |" % (s[0] / p[0]))
    print("| up → answer → down: sbx serve / podman service | %.2f× |" % (s[1] / p[1]))
PY

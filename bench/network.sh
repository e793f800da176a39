#!/bin/bash
# --network private: what it costs.
#  1. start latency of `sbx run busybox true` with --network none and with
#     --network private, interleaved (none, private, none, …: drift on the
#     host hits both alike); with PODMAN=1 also `podman run --network bridge`.
#  2. TCP throughput (iperf3, 5 s) to a test host in a network namespace this
#     script makes (198.51.100.10, documentation range, on this machine only):
#     from the host, and from a sandbox (--network private, --rootfs / so that
#     the host's iperf3 runs in it). Target: sandbox ≥ 90% of host.
# Usage: sudo bench/network.sh [RUNS]   (tests/images/out built; nftables, iperf3)
# Prints medians and p90 in ms and Gbit/s; no packet leaves the machine.
set -eu
RUNS=${1:-40}
SBX=${SBX:-$(cd "$(dirname "$0")/.." && pwd)/build/sbx}
IMAGES=${SBX_IMAGES:-$(cd "$(dirname "$0")/../tests/images/out" && pwd)}
T=$(mktemp -d /tmp/sbx-bench-net.XXXXXX)
NS=sbxbench-$$ V=tbn$$
export SBX_ROOT=$T/root SBX_RUN_ROOT=$T/run
cleanup() {
  [ -n "${IPERF:-}" ] && kill "$IPERF" 2>/dev/null
  ip link del "$V" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  "$SBX" gc >/dev/null 2>&1 || true
  rm -rf "$T"
}
trap cleanup EXIT
"$SBX" import -q "$IMAGES/busybox-oci" busybox >/dev/null

stats() {  # FILE: "median p90" of the numbers in FILE
  sort -n "$1" | awk '{a[NR]=$1} END {printf "median %.1f  p90 %.1f", a[int((NR+1)/2)], a[int(NR*0.9+0.5)]}'
}
one() {  # NETWORK: ms of one run
  local t0 t1
  t0=$(date +%s%N)
  "$SBX" run --network "$1" busybox true
  t1=$(date +%s%N)
  echo "scale=2; ($t1 - $t0) / 1000000" | bc
}
one none >/dev/null; one private >/dev/null  # warm-up
echo "start latency, sbx run busybox true, $RUNS runs each, interleaved (ms):"
for phase in alone beside; do
  # alone: each private run is the only one (makes and removes sbx's nft
  # table); beside: another private sandbox holds the table (steady state).
  [ $phase = beside ] && HELD=$("$SBX" create --network private busybox sleep 3600)
  : >"$T/none"; : >"$T/private"
  for _ in $(seq "$RUNS"); do one none >>"$T/none"; one private >>"$T/private"; done
  echo "  $phase: --network none     $(stats "$T/none")"
  echo "  $phase: --network private  $(stats "$T/private")"
done
"$SBX" rm -f "$HELD" >/dev/null
if [ "${PODMAN:-0}" = 1 ]; then
  podman load -q -i "$IMAGES/busybox.docker.tar" >/dev/null
  : >"$T/podman"
  for _ in $(seq "$RUNS"); do
    t0=$(date +%s%N)
    podman run --rm --network bridge busybox true || { echo "  podman run failed: no podman numbers"; : >"$T/podman"; break; }
    t1=$(date +%s%N)
    echo "scale=2; ($t1 - $t0) / 1000000" | bc >>"$T/podman"
  done
  [ -s "$T/podman" ] && echo "  podman --network bridge  $(stats "$T/podman")"
fi

ip netns add "$NS"
ip link add "$V" type veth peer name eth0 netns "$NS"
ip addr add 198.51.100.1/24 dev "$V"; ip link set "$V" up
ip -n "$NS" addr add 198.51.100.10/24 dev eth0; ip -n "$NS" link set eth0 up; ip -n "$NS" link set lo up
ip -n "$NS" route add default via 198.51.100.1
ip netns exec "$NS" iperf3 -s -1 >/dev/null 2>&1 &
IPERF=$!
sleep 0.5
host=$(iperf3 -c 198.51.100.10 -t 5 -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
wait "$IPERF" || true
ip netns exec "$NS" iperf3 -s -1 >/dev/null 2>&1 &
IPERF=$!
sleep 0.5
sbx=$("$SBX" run --network private --allow-egress 198.51.100.10 --rootfs / iperf3 -c 198.51.100.10 -t 5 -J |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
wait "$IPERF" || true
IPERF=""
printf "TCP throughput to a test host (iperf3 -t 5, Gbit/s): host %.2f, sandbox %.2f (%.0f%%)\n" "$host" "$sbx" \
  "$(echo "100 * $sbx / $host" | bc -l)"

#!/usr/bin/env bash
# sbx batch --network: each task gets the network it asks for; a
# private network per sandbox, made ahead with its warm-pool sandbox and
# removed with it; the egress allow-list as `sbx run` has it; tasks do not
# see each other's networks; a task line's "network" overrides the batch's;
# nothing is left (veths, nft rules, leases) after a batch, after SIGINT in
# the middle of one, and after SIGKILL of the batch.
#
# The "outside world" is built here, on 192.0.2.0/24 only (a documentation
# range; test_network.sh uses the other two, so both may run at once):
#   web A 192.0.2.10/26 in a netns of its own (host side 192.0.2.1)
#   web B 192.0.2.74/26 in another             (host side 192.0.2.65)
# and the sandboxes' pool is 192.0.2.128/25 (SBX_NETWORK_POOL): every packet
# of this test goes to a documentation address on this machine.
source "$(dirname "$0")/../sandbox_lib.sh"
if ! command -v nft >/dev/null || ! command -v ip >/dev/null || ! command -v python3 >/dev/null; then
  echo "SKIP: needs nft, ip and python3"; leave_test_cgroup; rm -rf "$T"; exit 77
fi
[ -n "$BB" ] || { echo "FAIL: no busybox image (run tests/images/build.sh)"; exit 1; }
[ "$BB" = busybox ] || { echo "SKIP: sbx batch needs an image store (no --rootfs)"; leave_test_cgroup; rm -rf "$T"; exit 77; }
export SBX_NETWORK_POOL=192.0.2.128/25
NSA=sbxbt-a-$$ NSB=sbxbt-b-$$
VA=tba$$ VB=tbb$$  # (never "sbx…": that prefix is sbx's own)
SRV_PIDS=()
cleanup_world() {
  local p
  for p in "${SRV_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  ip link del "$VA" 2>/dev/null
  ip link del "$VB" 2>/dev/null
  ip netns del "$NSA" 2>/dev/null
  ip netns del "$NSB" 2>/dev/null
}
trap cleanup_world EXIT
make_host() {  # NS VETH HOST_CIDR NS_CIDR NS_GW NAME
  ip netns add "$1" && ip link add "$2" type veth peer name eth0 netns "$1" &&
    ip addr add "$3" dev "$2" && ip link set "$2" up &&
    ip -n "$1" addr add "$4" dev eth0 && ip -n "$1" link set eth0 up && ip -n "$1" link set lo up &&
    ip -n "$1" route add default via "$5" || return 1
  mkdir -p "$T/www-$6" && echo "$6" >"$T/www-$6/id"
  ip netns exec "$1" python3 -m http.server 80 --bind 0.0.0.0 --directory "$T/www-$6" >/dev/null 2>&1 &
  SRV_PIDS+=($!)
}
make_host "$NSA" "$VA" 192.0.2.1/26 192.0.2.10/26 192.0.2.1 A || { echo "FAIL cannot build web A"; exit 1; }
make_host "$NSB" "$VB" 192.0.2.65/26 192.0.2.74/26 192.0.2.65 B || { echo "FAIL cannot build web B"; exit 1; }
for _ in $(seq 50); do
  curl -s -m 1 http://192.0.2.10/id >/dev/null && curl -s -m 1 http://192.0.2.74/id >/dev/null && break
  sleep 0.1
done
check "the test world answers from the host" test "$(curl -s -m 2 http://192.0.2.10/id)$(curl -s -m 2 http://192.0.2.74/id)" = AB

# get HOST/PATH → shell text fetching it in the sandbox (busybox nc): the
# body's last line, or nc's error.
get() { echo "printf 'GET /${1#*/} HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${1%%/*} 80 2>&1 | tail -n 1"; }
field() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["id"], *[json.dumps(r.get(k)) for k in sys.argv[2:]])' "$@"; }
stdout_of() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["id"] == sys.argv[2]: print(r.get("stdout") or r.get("error") or "", end="")' "$@"; }
# What of this test's networks is left: leases naming its run root, veths of
# its sandboxes, nft objects naming them (the table itself may be another
# test's or user's).
net_left() {
  local f id
  for f in /run/sbx-net/*.json; do [ -e "$f" ] && grep -l -F "$SBX_RUN_ROOT" "$f" 2>/dev/null; done
  for id in $(cat "$T/ids" 2>/dev/null); do
    ip -o link show "sbv${id:0:12}" >/dev/null 2>&1 && echo "veth sbv${id:0:12}"
    nft list table inet sbxnet 2>/dev/null | grep -q "${id:0:12}" && echo "nft ${id:0:12}"
  done
}
# Records the ids of this test's sandboxes (from the leases) while FILE's batch runs.
watch_ids() {  # PID
  while kill -0 "$1" 2>/dev/null; do
    grep -h -F "$SBX_RUN_ROOT" /run/sbx-net/*.json 2>/dev/null | grep -o '"id": *"[0-9a-f]*"' | grep -o '[0-9a-f]\{64\}' >>"$T/ids"
    sleep 0.05
  done
}

# --- allow-list, per-task network, pooled networks made ahead -------------------
cat >"$T/eg.jsonl" <<J
{"id": "allowed", "script": "$(get 192.0.2.10/id)"}
{"id": "blocked", "script": "$(get 192.0.2.74/id)"}
{"id": "hostaddr", "script": "$(get 192.0.2.1/id)"}
{"id": "addr", "script": "ip -4 -o addr show eth0; ip route; ls /sys/class/net | tr '\\\\n' ' '"}
{"id": "none", "network": "none", "script": "ls /sys/class/net | tr '\\\\n' ' '; echo; $(get 192.0.2.10/id)"}
{"id": "slow1", "script": "sleep 1.5; $(get 192.0.2.10/id)"}
{"id": "slow2", "script": "sleep 1.5; $(get 192.0.2.10/id)"}
{"id": "slow3", "script": "sleep 1.5; $(get 192.0.2.10/id)"}
J
: >"$T/leases"
$SBX batch -q -P 2 --pool 2 --network private --allow-egress 192.0.2.10 --image $BB -o "$T/eg.out" "$T/eg.jsonl" &
bpid=$!
watch_ids $bpid &
wpid=$!
while kill -0 $bpid 2>/dev/null; do
  grep -l -F "$SBX_RUN_ROOT" /run/sbx-net/*.json 2>/dev/null | wc -l >>"$T/leases"
  sleep 0.05
done
wait $bpid
rc=$?
wait $wpid
field "$T/eg.out" exit_code end_reason pooled | sed 's/^/  /'
check "the batch ran (exit 0: every task exited 0; got $rc)" test "$rc" = 0
check "an allowed test host is reachable" test "$(stdout_of "$T/eg.out" allowed)" = A
check "a test host outside the allow-list is refused ($(stdout_of "$T/eg.out" blocked))" \
  grep -qi refused <<<"$(stdout_of "$T/eg.out" blocked)"
check "the host's own address is refused ($(stdout_of "$T/eg.out" hostaddr))" \
  grep -qi refused <<<"$(stdout_of "$T/eg.out" hostaddr)"
addr=$(stdout_of "$T/eg.out" addr)
check "a task's eth0 has an address of SBX_NETWORK_POOL, its default route the host ($(tr '\n' ' ' <<<"$addr"))" \
  bash -c "grep -Eq 'inet 192\.0\.2\.(1[3-9][0-9]|2[0-5][0-9])/30' <<<\"\$1\" && grep -q '^default via 192\.0\.2\.' <<<\"\$1\"" _ "$addr"
check "a task sees its own interfaces only (lo, eth0)" test "$(tail -1 <<<"$addr")" = "eth0 lo "
none=$(stdout_of "$T/eg.out" none)
check "a task line's \"network\": \"none\" wins: loopback only ($(head -1 <<<"$none"))" test "$(head -1 <<<"$none")" = "lo "
check "... and no test host is reachable from it" bash -c "! grep -qx A <<<\"\$1\"" _ "$none"
check "every task ran pooled (the \"none\" one from a pool of its own)" test "$(grep -c '"pooled":true' "$T/eg.out")" = 8
max=$(sort -n "$T/leases" | tail -1)
check "the pool made networks ahead of their tasks: up to $max leases at once (P=2, pool 2)" test "${max:-0}" -ge 3
check "nothing left of the batch's networks: $(net_left | tr '\n' ' ')" test -z "$(net_left)"

# --- tasks do not see each other's networks (open egress: the default rules) ----
# The client task learns the server task's address through web A (the test
# finds it from the host and puts it there): no packet to a guessed address.
cat >"$T/iso.jsonl" <<J
{"id": "srv", "script": "ip -4 -o addr show eth0 | sed 's/.*inet \\\\([0-9.]*\\\\)\\\\/.*/\\\\1/'; mkdir /www; echo S >/www/id; httpd -p 8000 -h /www; sleep 0.3; printf 'GET /id HTTP/1.0\\\\r\\\\n\\\\r\\\\n' | nc -w 2 127.0.0.1 8000 | tail -n 1; sleep 6"}
{"id": "cli", "script": "for i in \$(seq 100); do ip=\$($(get 192.0.2.10/srvip)); echo \$ip | grep -q '^192[.]0[.]2[.][0-9]*\$' && break; sleep 0.1; done; echo \$ip; printf 'GET /id HTTP/1.0\\\\r\\\\n\\\\r\\\\n' | nc -w 2 \$ip 8000 2>&1 | tail -n 1; $(get 192.0.2.74/id)"}
J
rm -f "$T/www-A/srvip"
$SBX batch -q -P 2 --network private --image $BB -o "$T/iso.out" "$T/iso.jsonl" &
bpid=$!
found=""
while kill -0 $bpid 2>/dev/null && [ -z "$found" ]; do
  for a in $(grep -h -F "$SBX_RUN_ROOT" /run/sbx-net/*.json 2>/dev/null | grep -o '"address": *"[0-9.]*"' | grep -o '[0-9.]*\.[0-9]*'); do
    [ "$(curl -s -m 1 "http://$a:8000/id")" = S ] && found=$a && echo "$a" >"$T/www-A/srvip.tmp" && mv "$T/www-A/srvip.tmp" "$T/www-A/srvip" && break
  done
  sleep 0.1
done
wait $bpid
rc=$?
srv=$(stdout_of "$T/iso.out" srv)
cli=$(stdout_of "$T/iso.out" cli)
echo "  srv: $(tr '\n' ' ' <<<"$srv")"
echo "  cli: $(tr '\n' ' ' <<<"$cli")"
check "two private tasks at once, open egress: exit 0 (got $rc)" test "$rc" = 0
check "the server task served itself" test "$(sed -n 2p <<<"$srv")" = S
check "the host reached the server task at its address (${found:-none})" test -n "$found" -a "$found" = "$(head -1 <<<"$srv")"
check "the other task learnt that address" test "$(head -1 <<<"$cli")" = "$found"
check "... and was refused there ($(sed -n 2p <<<"$cli"))" grep -qi refused <<<"$(sed -n 2p <<<"$cli")"
check "open egress: the test host B is reachable from it" test "$(tail -1 <<<"$cli")" = B

# --- a domain allow-list: each pooled sandbox's own DNS proxy -----------------------
# The test's DNS server lives in web A's namespace, on 192.0.2.53.
if command -v dnsmasq >/dev/null; then
  ip -n "$NSA" addr add 192.0.2.53/26 dev eth0
  ip netns exec "$NSA" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --bind-interfaces \
    --listen-address=192.0.2.53 --pid-file= --user=root --log-facility=/dev/null \
    --address=/web.example.test/192.0.2.10 --address=/other.test/192.0.2.74 &
  SRV_PIDS+=($!)
  sleep 0.3
  cat >"$T/dns.jsonl" <<J
{"id": "d1", "script": "$(get web.example.test/id)"}
{"id": "d2", "script": "$(get web.example.test/id)"}
{"id": "d3", "script": "nslookup other.test 2>&1 | grep -c 192.0.2.74; $(get 192.0.2.74/id)"}
J
  proxies_before=$(pgrep -f "dnsmasq.*nftset=.*inet#sbxnet#" | sort)
  expect_rc "a batch with a domain allow-list (exit 0)" 0 $SBX batch -q -P 2 --network private --dns 192.0.2.53 \
    --allow-egress web.example.test --image $BB -o "$T/dns.out" "$T/dns.jsonl"
  check "an allowed domain resolves and connects in pooled tasks ($(stdout_of "$T/dns.out" d1 | tr '\n' ' ')$(stdout_of "$T/dns.out" d2))" \
    test "$(stdout_of "$T/dns.out" d1)$(stdout_of "$T/dns.out" d2)" = AA
  d3=$(stdout_of "$T/dns.out" d3)
  check "a name not allowed does not resolve, its address is refused ($(tr '\n' ' ' <<<"$d3"))" \
    bash -c "test \"\$(head -1 <<<\"\$1\")\" = 0 && grep -qi refused <<<\"\$1\"" _ "$d3"
  # (Other users' sandboxes may have proxies of their own: only new ones count.)
  left=$(comm -13 <(echo "$proxies_before") <(pgrep -f "dnsmasq.*nftset=.*inet#sbxnet#" | sort) | tr '\n' ' ')
  check "no DNS proxy of the batch left ($left)" test -z "$(tr -d ' ' <<<"$left")"
else
  echo "skip: dnsmasq not installed (apt-get install dnsmasq-base): no domain allow-list check"
fi

# --- NET IO in sbx stats: a private sandbox's veth counters ---------------------------
head -c 200000 /dev/urandom >"$T/www-A/big"
id=$($SBX create --network private $BB sh -c "$(get 192.0.2.10/big) >/dev/null; sleep 30")
check "created a private sandbox" test -n "$id"
rx=0
for _ in $(seq 50); do
  rx=$($SBX stats --no-stream --json "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["net_rx_bytes"] or 0)')
  [ "$rx" -ge 200000 ] && break
  sleep 0.1
done
tx=$($SBX stats --no-stream --json "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["net_tx_bytes"])')
check "sbx stats --json: net_rx_bytes ≥ the 200000 fetched ($rx)" test "$rx" -ge 200000
check "... and < 400000: its own traffic only ($rx)" test "$rx" -lt 400000
check "net_tx_bytes counts its request ($tx)" test "$tx" -gt 0
check "sbx stats: NET IO column filled ($($SBX stats --no-stream "$id" | tail -1 | awk '{print $9, $10, $11}'))" \
  bash -c "! $SBX stats --no-stream '$id' | tail -1 | grep -q -- '-- / --'"
id2=$($SBX create $BB sleep 30)
check "a --network none sandbox: net_rx_bytes null (not counted)" \
  test "$($SBX stats --no-stream --json "$id2" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["net_rx_bytes"])')" = None
$SBX rm -f "$id" "$id2" >/dev/null

# --- bad input ---------------------------------------------------------------------
expect_rc "--allow-egress without --network private: 125" 125 $SBX batch -q --allow-egress 192.0.2.10 --image $BB "$T/eg.jsonl"
expect_rc "a bad CIDR: 125 before any task" 125 $SBX batch -q --network private --allow-egress 300.1.2.3/8 --image $BB "$T/eg.jsonl"
echo '{"id": "badnet", "network": "bridge0", "cmd": ["true"]}' >"$T/bad.jsonl"
expect_rc "a bad task network: the task is invalid (exit 1)" 1 $SBX batch -q --image $BB -o "$T/bad.out" "$T/bad.jsonl"
check "... its error names the key" grep -q '"end_reason":"invalid".*network.*must be none, private or host\|network.*must be none, private or host.*"end_reason":"invalid"' "$T/bad.out"

# --- SIGINT in the middle: every network of the batch removed ----------------------
for i in $(seq 1 8); do echo "{\"id\": \"s$i\", \"script\": \"sleep 30\"}"; done >"$T/sig.jsonl"
: >"$T/ids"
$SBX batch -q -P 3 --network private --allow-egress 192.0.2.10 --image $BB -o "$T/sig.out" "$T/sig.jsonl" &
bpid=$!
watch_ids $bpid &
wpid=$!
for _ in $(seq 150); do
  [ "$(grep -l -F "$SBX_RUN_ROOT" /run/sbx-net/*.json 2>/dev/null | wc -l)" -ge 4 ] && break
  sleep 0.1
done
check "networks of running and ready sandboxes before the interrupt" \
  test "$(grep -l -F "$SBX_RUN_ROOT" /run/sbx-net/*.json 2>/dev/null | wc -l)" -ge 4
sleep 0.3
kill -INT $bpid
wait $bpid
rc=$?
wait $wpid
check "SIGINT: batch exits 130 (got $rc)" test "$rc" = 130
check "SIGINT: interrupted tasks have no result" test ! -s "$T/sig.out"
for _ in $(seq 20); do [ -z "$(net_left)" ] && break; sleep 0.1; done
check "SIGINT: no lease, veth or nft rule of its $(sort -u "$T/ids" | wc -l) sandboxes left: $(net_left | tr '\n' ' ')" \
  test -z "$(net_left)"

# --- SIGKILL of the batch: its pool's guardian removes the networks ------------------
: >"$T/ids"
$SBX batch -q -P 2 --network private --image $BB -o "$T/kill.out" "$T/sig.jsonl" &
bpid=$!
watch_ids $bpid &
wpid=$!
for _ in $(seq 150); do
  [ "$(grep -l -F "$SBX_RUN_ROOT" /run/sbx-net/*.json 2>/dev/null | wc -l)" -ge 3 ] && break
  sleep 0.1
done
sleep 0.3
kill -KILL $bpid
wait $bpid 2>/dev/null
wait $wpid
# (The guardian removes the sandboxes after the owner's death, with retries:
# their state dirs and cgroups go within a few seconds.)
sbx_left() {
  local id
  ls "$SBX_RUN_ROOT" 2>/dev/null | grep -E '^[0-9a-f]{64}$'
  for id in $(sort -u "$T/ids"); do ls -d /sys/fs/cgroup/*/sbx/sbx-"${id:0:12}" /sys/fs/cgroup/*/sbx-"${id:0:12}" 2>/dev/null; done
}
# The pool's guardian (a fork of the batch: its command line names kill.out)
# exits when it has removed them all; sandboxes killed before their lease
# was written are known to it only.
for _ in $(seq 150); do [ -z "$(pgrep -f -- "$T/kill.out")$(net_left)$(sbx_left)" ] && break; sleep 0.1; done
check "SIGKILL of the batch: its pool's guardian has finished within 15 s" test -z "$(pgrep -f -- "$T/kill.out")"
check "SIGKILL of the batch: its sandboxes and cgroups are gone within 15 s: $(sbx_left | tr '\n' ' ')" test -z "$(sbx_left)"
check "SIGKILL of the batch: nothing of its $(sort -u "$T/ids" | wc -l) networks left within 15 s: $(net_left | tr '\n' ' ')" \
  test -z "$(net_left)"

cleanup_world
trap - EXIT
finish

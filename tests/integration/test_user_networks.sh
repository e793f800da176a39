#!/usr/bin/env bash
# User-defined networks (`sbx network …`, `sbx run|create --network NAME`):
# bad input (clear errors, nothing half-made), reachability inside a network
# and isolation between networks (TCP, UDP, ICMP), the host's services
# refused, DNS names and aliases, --internal, a domain allow-list on a
# network, several networks per sandbox, connect/disconnect, published ports,
# rm/prune, SIGKILL mid-create then gc, and nothing left.
#
# The outside world is built here, on documentation addresses only:
#   web C 198.51.100.210/28 in a netns of its own (host side 198.51.100.209),
#   with the test's DNS server on 198.51.100.211;
# the pool is 198.51.100.128/26 (SBX_NETWORK_POOL: networks of /28 from its
# top), --subnet cases use 198.51.100.224/28. Every packet goes to an address
# on this machine.
source "$(dirname "$0")/../sandbox_lib.sh"
if ! command -v nft >/dev/null || ! command -v ip >/dev/null || ! command -v python3 >/dev/null ||
  ! command -v dnsmasq >/dev/null; then
  echo "SKIP: needs nft, ip, python3 and dnsmasq"; leave_test_cgroup; rm -rf "$T"; exit 77
fi
[ "$BB" = busybox ] || { echo "SKIP: needs the image store (busybox image)"; leave_test_cgroup; rm -rf "$T"; exit 77; }
export SBX_NETWORK_POOL=198.51.100.128/26
NSC=sbxtest-c-$$ VC=tnc$$
SRV_PIDS=()
NETSTATE=${SBX_NETWORK_STATE:-/run/sbx-net}
cleanup_world() {
  local p
  for p in "${SRV_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  ip link del "$VC" 2>/dev/null
  ip netns del "$NSC" 2>/dev/null
}
rm_everything() {
  for id in $($SBX ps -aq --no-trunc 2>/dev/null); do $SBX rm -f "$id" >/dev/null 2>&1; done
  for n in $($SBX network ls -q 2>/dev/null); do $SBX network rm "$n" >/dev/null 2>&1; done
  rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null  # name links' dir (empty once every sandbox is gone)
}
trap 'rm_everything; cleanup_world' EXIT

ip netns add "$NSC" && ip link add "$VC" type veth peer name eth0 netns "$NSC" &&
  ip addr add 198.51.100.209/28 dev "$VC" && ip link set "$VC" up &&
  ip -n "$NSC" addr add 198.51.100.210/28 dev eth0 && ip -n "$NSC" addr add 198.51.100.211/28 dev eth0 &&
  ip -n "$NSC" link set eth0 up && ip -n "$NSC" link set lo up && ip -n "$NSC" route add default via 198.51.100.209 ||
  { echo "FAIL cannot build web C"; exit 1; }
mkdir -p "$T/www-C" && echo C >"$T/www-C/id"
ip netns exec "$NSC" python3 -m http.server 80 --bind 0.0.0.0 --directory "$T/www-C" >/dev/null 2>&1 &
SRV_PIDS+=($!)
: >"$T/dns.hosts"
ip netns exec "$NSC" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --bind-interfaces \
  --listen-address=198.51.100.211 --pid-file= --user=root --log-facility=/dev/null \
  --address=/ok.allowed.test/198.51.100.210 --address=/other.test/198.51.100.210 --addn-hosts="$T/dns.hosts" &
SRV_PIDS+=($!)
TEST_DNS=$!
# A service on every address of the host (the networks' gateways among them).
mkdir -p "$T/www-H" && echo H >"$T/www-H/id"
python3 -m http.server 18290 --bind 0.0.0.0 --directory "$T/www-H" >/dev/null 2>&1 &
SRV_PIDS+=($!)
for _ in $(seq 50); do curl -s -m 1 http://198.51.100.210/id >/dev/null && curl -s -m 1 http://127.0.0.1:18290/id >/dev/null && break; sleep 0.1; done
check "the test world answers from the host" test "$(curl -s -m 2 http://198.51.100.210/id)" = C

# get HOST[:PORT]/PATH → shell text that fetches it in a sandbox: the body's last line, or nc's error.
get() {
  local hp=${1%%/*} path=/${1#*/} host port
  host=${hp%%:*}; port=80; [ "$hp" != "$host" ] && port=${hp#*:}
  echo "printf 'GET $path HTTP/1.0\\r\\n\\r\\n' | nc -w 3 $host $port 2>&1 | tail -n 1"
}
net_json() { $SBX network inspect "$1" | python3 -c "import json,sys; d=json.load(sys.stdin)[0]; print($2)"; }
ns_json() { $SBX inspect "$1" | python3 -c "import json,sys; d=json.load(sys.stdin)[0]['NetworkSettings']; print($2)"; }
ours_left() {  # what of this test's networks is left in the kernel, nft and state
  local f
  for f in "$NETSTATE"/networks/*/network.json; do [ -e "$f" ] && grep -q -F "$SBX_RUN_ROOT" "$f" && echo "record $f"; done
  for f in "$NETSTATE"/sandboxes/*/*.json; do [ -e "$f" ] && grep -q -F "$SBX_RUN_ROOT" "$f" && echo "endpoint $f"; done
  for b in $(cat "$T/bridges" 2>/dev/null); do ip link show "$b" >/dev/null 2>&1 && echo "bridge $b"; done
  pgrep -af "[d]nsmasq .*$NETSTATE/networks/" | grep -F -f <(sed 's/^sbb//' "$T/bridges" 2>/dev/null) | sed 's/^/dns /'
  for b in $(cat "$T/bridges" 2>/dev/null); do nft list ruleset 2>/dev/null | grep -q "\"$b\"" && echo "nft $b"; done
}
remember_bridge() { net_json "$1" "d['Bridge']" >>"$T/bridges"; }

# --- bad input: clear errors, nothing half-made ---------------------------------
expect_rc "a bad name is refused" 125 $SBX network create 'bad/name'
expect_rc "a reserved name is refused" 125 $SBX network create host
out=$($SBX network create neta 2>&1)
check "create prints the id ($out)" grep -Eq '^[0-9a-f]{64}$' <<<"$out"
remember_bridge neta
out=$($SBX network create neta 2>&1); rc=$?
check "the same name again: refused clearly (rc $rc: $out)" test "$rc" = 125 -a -n "$(grep 'in use' <<<"$out")"
subnet_a=$(net_json neta "d['IPAM']['Config'][0]['Subnet']")
check "its subnet comes from the pool's top ($subnet_a)" test "$subnet_a" = 198.51.100.176/28
before=$(ls "$NETSTATE/networks" | wc -l)
out=$($SBX network create --subnet "$subnet_a" neta2 2>&1); rc=$?
check "an overlapping subnet: refused clearly (rc $rc: $out)" test "$rc" = 125 -a -n "$(grep overlaps <<<"$out")"
out=$($SBX network create --subnet 198.51.100.208/28 netw 2>&1); rc=$?
check "a subnet of a host interface: refused clearly ($out)" test "$rc" = 125 -a -n "$(grep "overlaps.*$VC" <<<"$out")"
expect_rc "a bad --subnet is refused" 125 $SBX network create --subnet 198.51.100.300/28 netx
expect_rc "a --gateway outside the subnet is refused" 125 $SBX network create --subnet 198.51.100.224/28 --gateway 198.51.100.1 netx
expect_rc "--internal with an allow-list is refused" 125 $SBX network create --internal --allow-egress 198.51.100.0/24 netx
check "nothing half-made after the refusals" test "$(ls "$NETSTATE/networks" | wc -l)" = "$before"
out=$($SBX run --network nosuch $BB true 2>&1); rc=$?
check "run on a network that does not exist: clear error (rc $rc: $out)" test "$rc" = 125 -a -n "$(grep 'no such network' <<<"$out")"
expect_rc "--ip outside the subnet is refused" 125 $SBX run --network neta --ip 198.51.100.1 $BB true
expect_rc "--allow-egress on a network sandbox is refused (it is the network's)" 125 $SBX run --network neta --allow-egress 198.51.100.0/24 $BB true
expect_rc "--network none,neta is refused" 125 $SBX run --network none,neta $BB true
check "no endpoint left by the refused runs" test -z "$(ours_left | grep endpoint)"

$SBX network create netb >/dev/null && remember_bridge netb
$SBX network create --subnet 198.51.100.224/28 --gateway 198.51.100.238 --label tier=test neti --internal >/dev/null
remember_bridge neti
check "--subnet and --gateway are used" test "$(net_json neti "d['IPAM']['Config'][0]['Gateway'] + ' ' + str(d['Internal'])")" = "198.51.100.238 True"
$SBX network create --dns 198.51.100.211 --allow-egress '*.allowed.test' netd >/dev/null && remember_bridge netd
out=$($SBX network ls)
check "ls lists the four ($(tr '\n' ' ' <<<"$out"))" test "$(grep -cE ' (neta|netb|neti|netd) ' <<<"$out")" = 4
check "ls --filter label=tier=test" test "$($SBX network ls -f label=tier=test --json | python3 -c 'import json,sys; print(" ".join(n["Name"] for n in json.load(sys.stdin)))')" = neti

# --- one network: every port; other networks and the host: nothing ----------------
a1=$($SBX create --name a1 --network neta --network-alias db $BB httpd -f -p 8080 -h /etc)
a2=$($SBX create --name a2 --network neta --ip 198.51.100.190 $BB sleep 600)
b1=$($SBX create --name b1 --network netb $BB httpd -f -p 8080 -h /etc)
ip_a1=$(ns_json a1 "d['IPAddress']")
ip_b1=$(ns_json b1 "d['IPAddress']")
gw_a=$(ns_json a1 "d['Gateway']")
gw_b=$(ns_json b1 "d['Gateway']")
check "--ip is used ($(ns_json a2 "d['IPAddress']"))" test "$(ns_json a2 "d['IPAddress']")" = 198.51.100.190
check "inspect: Networks.neta with address and MAC" test "$(ns_json a1 "d['Networks']['neta']['MacAddress'][:6]")" = "02:5b:"
out=$($SBX exec a2 sh -c "$(get a1:8080/hostname); $(get db:8080/hostname); $(get ${a1:0:12}:8080/hostname)")
check "a sandbox reaches another on its network by name, alias and short id ($(tr '\n' ' ' <<<"$out"))" \
  test "$(echo $out)" = "${a1:0:12} ${a1:0:12} ${a1:0:12}"
out=$($SBX exec a2 sh -c "$(get $ip_b1:8080/hostname)")
check "... not one on another network (TCP: $out)" grep -qi refused <<<"$out"
out=$($SBX exec a2 sh -c "nslookup b1 2>&1 | grep -A3 '^Name' | grep -c Address")
check "... nor its name ($out)" test "$out" = 0
out=$($SBX exec a2 sh -c "echo gw:\$($(get $gw_a:18290/id)); echo other-gw:\$($(get $gw_b:18290/id))")
check "the host's services on the gateways are refused ($(tr '\n' ' ' <<<"$out"))" \
  test "$(grep -ci refused <<<"$out")" = 2
out=$($SBX exec a2 sh -c "$(get 198.51.100.210/id)")
check "an open network reaches outside ($out)" test "$out" = C
out=$($SBX exec a2 sh -c "ping -c 1 -W 2 $ip_a1 >/dev/null 2>&1 && echo same-ok; ping -c 1 -W 2 $ip_b1 >/dev/null 2>&1 && echo other-ok; true")
if grep -q same-ok <<<"$out"; then
  check "ICMP: within the network yes, to another network no ($(tr '\n' ' ' <<<"$out"))" not_grep other-ok "$out"
else
  echo "skip: ping does not work inside the sandbox here ($out): no ICMP check"
fi
if [ -n "$PY" ]; then
  udp_srv='import socket,sys; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(("0.0.0.0",9999))
while True:
    d,a=s.recvfrom(100); s.sendto(b"pong",a)'
  udp_cli='import socket,sys; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(2)
for h in sys.argv[1:]:
    try:
        s.sendto(b"ping",(h,9999)); print(h, s.recvfrom(100)[0].decode())
    except Exception as e: print(h, "no answer:", e)'
  u1=$($SBX create --name u1 --network neta $PY python3 -c "$udp_srv")
  u2=$($SBX create --name u2 --network netb $PY python3 -c "$udp_srv")
  ip_u2=$(ns_json u2 "d['IPAddress']")
  sleep 1
  out=$($SBX run --network neta $PY python3 -c "$udp_cli" "$(ns_json u1 "d['IPAddress']")" "$ip_u2")
  check "UDP: within the network yes ($(head -1 <<<"$out"))" grep -q "pong" <<<"$(head -1 <<<"$out")"
  check "... to another network no ($(tail -1 <<<"$out"))" not_grep pong "$(tail -1 <<<"$out")"
  $SBX rm -f u1 u2 >/dev/null
fi

# --- internal, allow-list, several networks ----------------------------------------
i1=$($SBX create --name i1 --network neti $BB httpd -f -p 8080 -h /etc)
out=$($SBX run --network neti $BB sh -c "$(get i1:8080/hostname); $(get 198.51.100.210/id); nslookup ok.allowed.test 2>&1 | grep -c '^Address.*198.51.100.210'")
check "internal: its sandboxes by name yes ($(head -1 <<<"$out"))" test "$(head -1 <<<"$out")" = "${i1:0:12}"
# (Linux says "Network is unreachable", gVisor's stack "No route to host".)
check "... outside no (no route there), nor outside names ($(tail -n 2 <<<"$out" | tr '\n' ' '))" \
  bash -c "grep -Eqi 'refused|unreachable|no route' <<<\"\$(sed -n 2p <<<\"\$1\")\" && test \"\$(sed -n 3p <<<\"\$1\")\" = 0" _ "$out"
d1=$($SBX create --name d1 --network netd $BB sleep 600)
gw_d=$(ns_json d1 "d['Gateway']")
printf '%s gw.allowed.test\n%s peer.allowed.test\n169.254.169.254 meta.allowed.test\n' "$gw_d" "$ip_a1" >"$T/dns.hosts"
kill -HUP "$TEST_DNS"; sleep 0.2
out=$($SBX exec d1 sh -c "$(get ok.allowed.test/id); $(get 198.51.100.210/id)")
check "allow-list network: an allowed name connects ($(head -1 <<<"$out"))" test "$(head -1 <<<"$out")" = C
out=$($SBX exec d1 sh -c "nslookup other.test 2>&1 | grep -c '^Address.*198.51.100.210'; for n in gw peer meta; do nslookup \$n.allowed.test 2>&1 | grep -A3 '^Name' | grep -c '^Address'; done; $(get $gw_d:18290/id); $(get $ip_a1:8080/hostname)")
check "... others do not resolve, answers into refused ranges are dropped, host and other networks refused ($(tr '\n' ' ' <<<"$out"))" \
  bash -c "test \"\$(head -4 <<<\"\$1\" | tr '\n' ' ')\" = '0 0 0 0 ' && test \"\$(tail -2 <<<\"\$1\" | grep -ci refused)\" = 2" _ "$out"
check "... and the network's DNS log shows the drops" \
  test "$(grep -cE 'config (gw|peer|meta)\.allowed\.test is NXDOMAIN' "$(net_json netd "d['DnsLog']")")" -ge 3
out=$($SBX run --network neti,neta $BB sh -c "$(get i1:8080/hostname); $(get a1:8080/hostname); $(get 198.51.100.210/id); cat /etc/resolv.conf")
check "two networks: names of both, and out through the open one ($(head -3 <<<"$out" | tr '\n' ' '))" \
  test "$(head -3 <<<"$out" | tr '\n' ' ')" = "${i1:0:12} ${a1:0:12} C "
check "... the internal network's DNS server first" grep -q "^nameserver 198.51.100.238" <<<"$(sed -n 5p <<<"$out")"

# --- published ports ----------------------------------------------------------------
p1=$($SBX create --network neta -p 18291:8080 $BB httpd -f -p 8080 -h /etc)
for _ in $(seq 30); do curl -s -m 1 http://127.0.0.1:18291/hostname >/dev/null && break; sleep 0.1; done
check "-p on a network: from the host's 127.0.0.1" test "$(curl -s -m 2 http://127.0.0.1:18291/hostname)" = "${p1:0:12}"
check "... and from another machine" test "$(ip netns exec "$NSC" curl -s -m 2 http://198.51.100.209:18291/hostname)" = "${p1:0:12}"
out=$($SBX exec b1 sh -c "$(get 198.51.100.209:18291/hostname)")
# (Refused after the DNAT: the reset carries the sandbox's address, so the client sees a timeout.)
check "... but not from a sandbox of another network ($out)" test "$out" != "${p1:0:12}"
$SBX rm -f "$p1" >/dev/null
check "rm frees the port" bash -c "! nft list ruleset 2>/dev/null | grep -q '18291 : '"

# --- connect / disconnect, in-use checks --------------------------------------------
if [ "$RUNTIME" = native ]; then
  expect_rc "connect b1 to neta" 0 $SBX network connect --alias bee neta b1
  out=$($SBX network connect neta b1 2>&1); rc=$?
  check "connecting it twice: refused clearly (rc $rc: $out)" test "$rc" = 125 -a -n "$(grep 'already' <<<"$out")"
  out=$($SBX exec a2 sh -c "$(get bee:8080/hostname)")
  check "a1's network now reaches b1 by its alias there ($out)" test "$out" = "${b1:0:12}"
  if [ -n "${SBX_TEST_DEBUG:-}" ] && [ "$out" != "${b1:0:12}" ]; then
    nft list table bridge sbxnet; bridge link; $SBX exec a2 sh -c 'ip neigh; ip addr; nslookup bee'; $SBX exec b1 sh -c 'ip addr; ip neigh'
    $SBX exec a2 sh -c "$(get a1:8080/hostname)"; ls -la "$NETSTATE"/networks/*/addr/
  fi
  check "inspect shows both networks" test "$(ns_json b1 "' '.join(sorted(d['Networks']))")" = "neta netb"
  expect_rc "disconnect" 0 $SBX network disconnect neta b1
  out=$($SBX exec a2 sh -c "$(get bee:8080/hostname)")
  check "... and it is unreachable again ($out)" test "$out" != "${b1:0:12}"
  expect_rc "disconnecting it again: not connected" 125 $SBX network disconnect neta b1
else
  out=$($SBX network connect neta b1 2>&1); rc=$?
  check "gVisor: connect of a running sandbox is refused clearly (rc $rc: $out)" test "$rc" = 125 -a -n "$(grep -i 'gvisor' <<<"$out")"
fi
out=$($SBX network rm neta 2>&1); rc=$?
check "rm of a network in use: refused, naming its sandboxes (rc $rc: $out)" test "$rc" = 125 -a -n "$(grep 'in use.*a1' <<<"$out")"
check "... and it still works" test "$($SBX exec a2 sh -c "$(get a1:8080/hostname)")" = "${a1:0:12}"
out=$($SBX network rm none 2>&1)
check "rm of none: refused ($out)" grep -q "cannot be removed" <<<"$out"

# --- SIGKILL mid-create, then gc: nothing left ----------------------------------------
for d in 0.01 0.03 0.06 0.1 0.2; do
  $SBX network create "killed$d" >/dev/null 2>&1 &
  k=$!
  $SBX run --network netb $BB sleep 30 >/dev/null 2>&1 &
  r=$!
  sleep "$d"
  kill -9 $k $r 2>/dev/null; wait $k $r 2>/dev/null
done
for n in $($SBX network ls -q --no-trunc 2>/dev/null); do echo "sbb${n:0:12}" >>"$T/bridges"; done
sleep 11  # (gc leaves a state dir without state.json alone for 10 s)
$SBX gc >/dev/null
for n in $($SBX network ls 2>/dev/null | awk 'NR > 1 && $2 ~ /^killed/ {print $2}'); do $SBX network rm "$n" >/dev/null; done
check "SIGKILL of network create and of runs on a network, then gc: no half-made network" \
  test -z "$(for f in "$NETSTATE"/networks/*/network.json; do grep -l '"state": *"creating"' "$f" 2>/dev/null | xargs -r grep -l -F "$SBX_RUN_ROOT"; done)"
orphans() {  # sbb bridges with no network record (only sbx makes them)
  local b
  for b in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^sbb[0-9a-f]{12}$'); do
    ls -d "$NETSTATE/networks/${b#sbb}"* >/dev/null 2>&1 || echo "$b"
  done
}
check "... no bridge without its network ($(orphans | tr '\n' ' '))" test -z "$(orphans)"
check "... and no endpoint of a killed run ($(ours_left | grep endpoint | tr '\n' ' '))" \
  test "$(ours_left | grep -c endpoint)" = "$(ls "$NETSTATE"/sandboxes/{$a1,$a2,$b1,$i1,$d1}/*.json 2>/dev/null | wc -l)"

# --- prune, and nothing left --------------------------------------------------------
$SBX network create netp >/dev/null && remember_bridge netp
out=$($SBX network prune)
check "prune removes unused networks only ($(tr '\n' ' ' <<<"$out"))" bash -c "grep -qx netp <<<\"\$1\" && ! grep -qx neta <<<\"\$1\"" _ "$out"
rm_everything
for _ in $(seq 20); do [ -z "$(ours_left)" ] && break; sleep 0.1; done
check "nothing left: no record, endpoint, bridge, DNS server or rule ($(ours_left | tr '\n' ' '))" test -z "$(ours_left)"
check "no bridge port left" test -z "$(ip -o link show | awk -F': ' '$2 ~ /^sbp[0-9a-f]{12}(@|$)/' | grep -F -f <(sed 's/^sbb/master sbb/' "$T/bridges") )"

# --- a network's scope: gc removes it with its run root -----------------------------
rr2=$T/run2
$SBX --run-root "$rr2" network create scoped >/dev/null
echo "sbb$($SBX --run-root "$rr2" network ls -q | head -1)" >>"$T/bridges"
rm -rf "$rr2"
$SBX gc >/dev/null
check "gc removes a network whose run root is gone" test -z "$(grep -l -F "$rr2" "$NETSTATE"/networks/*/network.json 2>/dev/null)"

cleanup_world
trap - EXIT
finish

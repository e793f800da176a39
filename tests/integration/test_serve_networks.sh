#!/bin/bash
# sbx serve's Docker networks, driven by real clients: the docker CLI
# (network create with IPAM and labels, ls, inspect, rm, prune, connect,
# disconnect; run --network NAME --network-alias A --ip; a container reaching
# another by name and alias; inspect's NetworkSettings.Networks) and docker-py
# (networks.create with an IPAM pool, containers.run(network=…), reload,
# remove, prune); bad input answers Docker's statuses (400/404/409) and makes
# nothing; isolation between networks; nothing left afterwards (records,
# bridges, DNS servers, nft rules).
#
# Networks are made on documentation addresses only: the pool is
# 203.0.113.128/26 (SBX_NETWORK_POOL), explicit subnets 203.0.113.128/28 and
# 203.0.113.144/28. No packet leaves the sandboxes' own bridges.
. "$(dirname "$0")/../sandbox_lib.sh"
if ! command -v nft >/dev/null || ! command -v ip >/dev/null || ! command -v dnsmasq >/dev/null ||
  ! command -v docker >/dev/null || ! command -v curl >/dev/null; then
  echo "SKIP: needs nft, ip, dnsmasq, curl and the docker CLI"; leave_test_cgroup; rm -rf "$T"; exit 77
fi
[ "$BB" = busybox ] || { echo "SKIP: needs the image store (busybox image)"; leave_test_cgroup; rm -rf "$T"; exit 77; }
export SBX_NETWORK_POOL=203.0.113.128/26
. "$(dirname "$0")/../serve_lib.sh"  # $SOCK, DOCKER_HOST, start_server, stop_server
rm_everything() {
  for id in $("$SBX" ps -aq --no-trunc 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  for n in $("$SBX" network ls -q 2>/dev/null); do "$SBX" network rm "$n" >/dev/null 2>&1; done
  rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null
}
trap 'stop_server; rm_everything' EXIT
remember_bridge() { "$SBX" network inspect "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Bridge"])' >>"$T/bridges"; }
api() {  # METHOD PATH [BODY] → the status; the body in $T/api.out
  curl -s -o "$T/api.out" -w '%{http_code}' --unix-socket "$SOCK" -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "http://d/v1.44$2"
}
# fetch NAME_OR_IP: shell text for a sandbox that gets the page of the server on port 8080 (retrying while it
# starts; busybox's nc: this image's static wget crashes in its resolver).
fetch() {
  echo "for i in \$(seq 30); do r=\$(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 $1 8080 2>/dev/null | tail -n 1);" \
    "[ -n \"\$r\" ] && echo \"\$r\" && exit 0; sleep 0.2; done; exit 1"
}
RT_ARGS=()
[ "$RUNTIME" = gvisor ] && RT_ARGS=(--runtime runsc)
IMG=busybox

start_server || finish

# --- bad input: Docker's statuses, nothing made ------------------------------------
check "create without a Name: 400" [ "$(api POST /networks/create '{}')" = 400 ]
check "an overlay driver: 400" [ "$(api POST /networks/create '{"Name":"x1","Driver":"overlay"}')" = 400 ]
check "… naming the driver" grep -q overlay "$T/api.out"
check "IPv6: 400" [ "$(api POST /networks/create '{"Name":"x2","EnableIPv6":true}')" = 400 ]
check "two IPAM subnets: 400" [ "$(api POST /networks/create \
  '{"Name":"x3","IPAM":{"Config":[{"Subnet":"203.0.113.160/28"},{"Subnet":"203.0.113.176/28"}]}}')" = 400 ]
check "a reserved name: 400 or 403" grep -qx '40[03]' <<<"$(api POST /networks/create '{"Name":"host"}')"
check "inspect of a missing network: 404" [ "$(api GET /networks/nosuchnet)" = 404 ]
check "remove of a missing network: 404" [ "$(api DELETE /networks/nosuchnet)" = 404 ]
check "connect to a missing network: 404" [ "$(api POST /networks/nosuchnet/connect '{"Container":"x"}')" = 404 ]
check "… nothing made" [ -z "$("$SBX" network ls -q)" ]

# --- docker network create / ls / inspect ------------------------------------------
out=$(docker network create --subnet 203.0.113.128/28 --gateway 203.0.113.129 --label tier=front dnet 2>&1)
check "docker network create with IPAM and a label ($out)" grep -qE '^[0-9a-f]{64}$' <<<"$out"
remember_bridge dnet
check "docker network ls lists it" grep -qw dnet <<<"$(docker network ls --format '{{.Name}} {{.Driver}}')"
check "docker network ls --filter label=tier=front" [ "$(docker network ls -q --filter label=tier=front --no-trunc)" = "$out" ]
check "docker network ls --filter name=nomatch: none" [ -z "$(docker network ls -q --filter name=nomatch)" ]
ins=$(docker network inspect dnet --format '{{.Driver}} {{(index .IPAM.Config 0).Subnet}} {{(index .IPAM.Config 0).Gateway}} {{.Labels.tier}}')
check "docker network inspect: driver, subnet, gateway, label ($ins)" [ "$ins" = "bridge 203.0.113.128/28 203.0.113.129 front" ]
out=$(docker network create dnet 2>&1); rc=$?
check "a name in use is refused ($rc: $out)" [ $rc -ne 0 ]
check "… 409 on the API" [ "$(api POST /networks/create '{"Name":"dnet","CheckDuplicate":true}')" = 409 ]
check "an overlapping subnet is refused (409)" [ "$(api POST /networks/create \
  '{"Name":"x4","IPAM":{"Config":[{"Subnet":"203.0.113.128/29"}]}}')" = 409 ]

# --- run --network --network-alias: reaching a container by name and alias ----------
docker run -d "${RT_ARGS[@]}" --name srv --network dnet --network-alias web $IMG \
  sh -c 'mkdir -p /www && echo hello-srv >/www/index.html && exec httpd -f -p 8080 -h /www' >/dev/null
out=$(docker run --rm "${RT_ARGS[@]}" --network dnet $IMG sh -c "$(fetch srv)" 2>&1)
check "a container reaches another by its name ($out)" [ "$out" = hello-srv ]
out=$(docker run --rm "${RT_ARGS[@]}" --network dnet $IMG sh -c "$(fetch web)" 2>&1)
check "… and by its --network-alias ($out)" [ "$out" = hello-srv ]
ip_srv=$(docker inspect srv --format '{{.NetworkSettings.Networks.dnet.IPAddress}}')
check "inspect: NetworkSettings.Networks.dnet.IPAddress in the subnet ($ip_srv)" grep -q '^203\.0\.113\.1[34][0-9]$' <<<"$ip_srv"
al=$(docker inspect srv --format '{{json .NetworkSettings.Networks.dnet.Aliases}} {{.NetworkSettings.Networks.dnet.NetworkID}}')
check "… its Aliases and NetworkID ($al)" bash -c "grep -q '\"web\"' <<<'$al' && grep -q ' $(docker network inspect -f '{{.Id}}' dnet)\$' <<<'$al'"
out=$(docker network inspect dnet --format '{{range .Containers}}{{.Name}} {{.IPv4Address}}{{end}}')
check "docker network inspect lists the container ($out)" [ "$out" = "srv $ip_srv/28" ]
out=$(docker ps --filter name=srv --format '{{.Networks}}')
check "docker ps shows its network ($out)" [ "$out" = dnet ]
out=$(docker run --rm "${RT_ARGS[@]}" --network dnet --ip 203.0.113.140 $IMG ip -4 -o addr show 2>&1)
check "run --ip gives that address ($out)" grep -q 'inet 203.0.113.140/28' <<<"$out"
out=$(docker network rm dnet 2>&1); rc=$?
check "rm of a network in use is refused ($rc: $out)" [ $rc -ne 0 ]
check "… 409 on the API" [ "$(api DELETE /networks/dnet)" = 409 ]

# --- a second network: isolation, connect, disconnect --------------------------------
docker network create --subnet 203.0.113.144/28 dnet2 >/dev/null && remember_bridge dnet2
out=$(docker run --rm "${RT_ARGS[@]}" --network dnet2 $IMG sh -c "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 $ip_srv 8080 2>&1 | tail -n 1 || echo refused")
check "a container on another network cannot reach it ($out)" not_grep hello-srv "$out"
if [ "$RUNTIME" = native ]; then
  out=$(docker network connect --alias second dnet2 srv 2>&1)
  check "docker network connect of a running container ($out)" [ -z "$out" ]
  out=$(docker run --rm --network dnet2 $IMG sh -c "$(fetch second)" 2>&1)
  check "… reachable on the new network by its alias ($out)" [ "$out" = hello-srv ]
  check "… inspect shows both networks" [ "$(docker inspect srv --format '{{len .NetworkSettings.Networks}}')" = 2 ]
  out=$(docker network connect dnet2 srv 2>&1); rc=$?
  check "connecting it twice is refused ($rc)" [ $rc -ne 0 ]
  out=$(docker network disconnect dnet2 srv 2>&1)
  check "docker network disconnect ($out)" [ -z "$out" ]
  check "… one network left" [ "$(docker inspect srv --format '{{len .NetworkSettings.Networks}}')" = 1 ]
fi
# A created container: connect edits what its start joins.
docker create "${RT_ARGS[@]}" --name pend --network dnet $IMG sleep 1000 >/dev/null
out=$(docker network connect --alias pendalias dnet2 pend 2>&1)
check "connect of a created container ($out)" [ -z "$out" ]
n=$(docker inspect pend --format '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}')
check "… inspect before start names both networks ($n)" [ "$n" = "dnet dnet2 " ]
docker start pend >/dev/null
addrs=$(docker inspect pend --format '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}')
check "… started, it has an address on each ($addrs)" grep -qE '^203\.0\.113\.1[34][0-9] 203\.0\.113\.1[45][0-9] $' <<<"$addrs"
out=$(docker run --rm "${RT_ARGS[@]}" --network dnet2 $IMG sh -c 'nslookup pendalias 2>&1 | grep -c 203.0.113.1' 2>&1)
check "… its alias on the second network resolves ($out)" [ "${out:-0}" -ge 1 ]
# A stopped container: connect is recorded and joined at its next start (docker's).
docker stop -t 1 pend >/dev/null
out=$(docker network disconnect dnet2 pend 2>&1)
check "disconnect of a stopped container ($out)" [ -z "$out" ]
n=$(docker inspect pend --format '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}')
check "… inspect names one network ($n)" [ "$n" = "dnet " ]
out=$(docker network connect dnet2 pend 2>&1)
check "connect of a stopped container ($out)" [ -z "$out" ]
docker start pend >/dev/null
addrs=$(docker inspect pend --format '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}')
check "… started again, it has an address on each network ($addrs)" grep -qE '^203\.0\.113\.1[34][0-9] 203\.0\.113\.1[45][0-9] $' <<<"$addrs"
docker rm -f pend srv >/dev/null
# Network events, as docker emits them (Type network: create, connect, disconnect, destroy).
since=$(date +%s)
docker network create evnet >/dev/null
docker create "${RT_ARGS[@]}" --name evc $IMG true >/dev/null
docker network connect evnet evc
docker network disconnect evnet evc
docker rm evc >/dev/null
docker network rm evnet >/dev/null
ev=$(docker events --since "$since" --until "$(($(date +%s) + 1))" --filter type=network --format '{{.Type}} {{.Action}} {{.Actor.Attributes.name}}' 2>&1 | grep ' evnet$')
# (only evnet's: the connect above may fall in the same second as $since)
check "docker events --filter type=network: create, connect, disconnect, destroy ($(tr '\n' ',' <<<"$ev"))" \
  [ "$(tr '\n' ',' <<<"$ev")" = "network create evnet,network connect evnet,network disconnect evnet,network destroy evnet," ]

# --- docker-py ---------------------------------------------------------------------
if python3 -c 'import docker' 2>/dev/null; then
  cat >"$T/py.py" <<'EOF'
import sys, docker
c = docker.from_env()
rt = sys.argv[1]
pool = docker.types.IPAMPool(subnet="203.0.113.160/28")
net = c.networks.create("pynet", driver="bridge", ipam=docker.types.IPAMConfig(pool_configs=[pool]),
                        labels={"made.by": "docker-py"})
assert net.attrs["IPAM"]["Config"][0]["Subnet"] == "203.0.113.160/28", net.attrs
kw = {"runtime": rt} if rt else {}
a = c.containers.run("busybox", ["sh", "-c", "mkdir -p /w && echo reached >/w/index.html && exec httpd -f -p 8080 -h /w"],
                     name="pya", network="pynet", detach=True, **kw)
out = c.containers.run("busybox", ["sh", "-c", sys.argv[2]], network="pynet", remove=True, **kw)
print(out.decode().strip())
net.reload()
print(sorted(v["Name"] for v in net.attrs["Containers"].values()))
print([n.name for n in c.networks.list(filters={"label": "made.by=docker-py"})])
a.remove(force=True)
net.remove()
print([n.name for n in c.networks.list(names=["pynet"])])
EOF
  out=$(timeout 120 python3 "$T/py.py" "${RT_ARGS[1]:-}" "$(fetch pya)" 2>&1)
  check "docker-py: networks.create, containers.run(network=…), reload, list(filters), remove ($(tr '\n' ' ' <<<"$out"))" \
    [ "$out" = $'reached\n[\'pya\']\n[\'pynet\']\n[]' ]
else
  echo "skip docker-py: python3-docker is not installed"
fi

# --- prune --------------------------------------------------------------------------
docker network create --label gone=yes dnet3 >/dev/null && remember_bridge dnet3
out=$(docker network prune -f --filter label=gone=yes 2>&1)
check "docker network prune --filter label removes only that one ($out)" bash -c \
  "grep -qw dnet3 <<<'$out' && ! grep -qw dnet2 <<<'$out'"
out=$(docker network prune -f 2>&1)
check "docker network prune removes the unused ones ($out)" bash -c "grep -qw dnet <<<'$out' && grep -qw dnet2 <<<'$out'"
check "… none left" [ -z "$(docker network ls -q)" ]

stop_server
rm_everything
for _ in $(seq 20); do [ -z "$(networks_left)" ] && break; sleep 0.1; done
check "nothing left: no record, endpoint, bridge, DNS server or rule ($(networks_left | tr '\n' ' '))" test -z "$(networks_left)"
trap - EXIT
finish

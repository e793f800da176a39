#!/bin/bash
# docker-compose 1.29 (Debian's, docker-py inside) end to end against
# `sbx serve`: a project of a python HTTP server and a busybox client on a
# user network of the project's own (the client reaches the server by its
# service name and by an alias, after depends_on, with environment), and a
# third service on a second network that must not reach the server;
# a named volume two services share, kept by `down` and there again after
# `up`; `up -d`, `ps`, `logs`, `exec`, `run --rm`, `restart`, `stop`, then
# `down -v` leaves nothing: no container, network, volume, bridge, DNS server
# or nft rule.
#
# Networks come from the pool 203.0.113.192/26 (SBX_NETWORK_POOL, documentation
# addresses); no packet leaves the sandboxes' own bridges.
. "$(dirname "$0")/../sandbox_lib.sh"
if ! command -v docker-compose >/dev/null || ! command -v nft >/dev/null || ! command -v dnsmasq >/dev/null; then
  echo "SKIP: needs docker-compose (1.29), nft and dnsmasq"; leave_test_cgroup; rm -rf "$T"; exit 77
fi
[ "$BB" = busybox ] && [ "$PY" = python ] || { echo "SKIP: needs the busybox and python images"; leave_test_cgroup; rm -rf "$T"; exit 77; }
export SBX_NETWORK_POOL=203.0.113.192/26
. "$(dirname "$0")/../serve_lib.sh"  # $SOCK, DOCKER_HOST, start_server, stop_server
export COMPOSE_INTERACTIVE_NO_CLI=1
rm_everything() {
  for id in $("$SBX" ps -aq --no-trunc 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  for n in $("$SBX" network ls -q 2>/dev/null); do "$SBX" network rm "$n" >/dev/null 2>&1; done
  rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null
}
trap 'stop_server; rm_everything' EXIT
ours_left() {  # networks_left, and this test's sandboxes
  networks_left
  "$SBX" ps -aq 2>/dev/null | sed 's/^/sandbox /'
}

RT_LINE=""
[ "$RUNTIME" = gvisor ] && RT_LINE="    runtime: runsc"
mkdir -p "$T/proj"
cat >"$T/proj/docker-compose.yml" <<EOF
version: "2.4"
services:
  server:
    image: python:latest
    command: ["python3", "-c", "import http.server as h, os; os.chdir('/srv'); open('id', 'w').write(os.environ['GREETING'] + '\\\\n'); h.test(h.SimpleHTTPRequestHandler, port=8000, bind='0.0.0.0')"]
    working_dir: /
    environment:
      GREETING: hello-from-server
    tmpfs: /srv
    networks:
      default:
        aliases: [api]
$RT_LINE
  client:
    image: busybox:latest
    depends_on: [server]
    environment:
      TARGET: server
    command: ["sh", "-c", "for i in \$\$(seq 100); do r=\$\$(printf 'GET /id HTTP/1.0\\\\r\\\\n\\\\r\\\\n' | nc -w 2 \$\$TARGET 8000 2>/dev/null | tail -n 1); [ -n \"\$\$r\" ] && echo \"got \$\$r\" && break; sleep 0.2; done; exec sleep 1000"]
$RT_LINE
    volumes: ["shared:/data"]
  outsider:
    image: busybox:latest
    command: ["sh", "-c", "echo up >>/shared/log; echo from-compose >/hd/f; exec sleep 1000"]
    networks: [other]
    volumes: ["hostdata:/hd", "shared:/shared"]  # (sorted: compose sorts them when it merges an override, and a new order recreates the service)
$RT_LINE
networks:
  other: {}
volumes:
  shared: {}
  hostdata:
    driver_opts: {type: none, o: bind, device: "$T/hostdata"}
EOF
mkdir -p "$T/hostdata" && chown 1000:1000 "$T/hostdata" && chmod 777 "$T/hostdata"  # (gVisor writes as its owner)
cd "$T/proj" || finish
start_server || finish

out=$(timeout 300 docker-compose -p sbxct up -d 2>&1); rc=$?
check "docker-compose up -d ($rc: $(tail -n 3 <<<"$out" | tr '\n' ' '))" [ $rc -eq 0 ]
for n in sbxct_default sbxct_other; do "$SBX" network inspect "$n" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Bridge"])' >>"$T/bridges"; done
ps=$(docker-compose -p sbxct ps 2>&1)
check "docker-compose ps lists the three services up ($(tr '\n' ' ' <<<"$ps"))" \
  test "$(grep -cE '^sbxct_(server|client|outsider)_1 .* Up' <<<"$ps")" = 3
for _ in $(seq 100); do grep -q got <<<"$(docker-compose -p sbxct logs --no-color client 2>&1)" && break; sleep 0.2; done
logs=$(docker-compose -p sbxct logs --no-color client 2>&1)
check "the client reached the server by its service name (logs: $(tr '\n' ' ' <<<"$logs"))" grep -q "got hello-from-server" <<<"$logs"
out=$(timeout 60 docker-compose -p sbxct exec -T client sh -c "printf 'GET /id HTTP/1.0\r\n\r\n' | nc -w 3 api 8000 | tail -n 1" 2>&1)
check "docker-compose exec: the client reaches the server by its alias ($out)" [ "$out" = hello-from-server ]
out=$(timeout 60 docker-compose -p sbxct exec -T outsider sh -c "printf 'GET /id HTTP/1.0\r\n\r\n' | nc -w 3 server 8000 2>&1 | tail -n 1; nslookup server 2>&1 | grep -c 'Address: 203' " 2>&1)
check "a service on the other network neither resolves nor reaches the server ($(tr '\n' ' ' <<<"$out"))" \
  bash -c "! grep -q hello <<<'$out' && [ \"\$(tail -n 1 <<<'$out')\" = 0 ]"
out=$(timeout 60 docker-compose -p sbxct exec -T server printenv GREETING 2>&1)
check "docker-compose exec sees the environment ($out)" [ "$out" = hello-from-server ]
out=$(timeout 120 docker-compose -p sbxct run --rm -T client sh -c "printf 'GET /id HTTP/1.0\r\n\r\n' | nc -w 3 server 8000 | tail -n 1" 2>&1)
check "docker-compose run --rm: a one-off container on the project's network ($(tr '\n' ' ' <<<"$out"))" \
  [ "$(tail -n 1 <<<"$out")" = hello-from-server ]
check "… removed after" [ -z "$(docker ps -aq --filter label=com.docker.compose.oneoff=True)" ]
out=$(timeout 60 docker-compose -p sbxct exec -T client cat /data/log 2>&1)
check "a named volume: the client reads what the outsider wrote ($out)" [ "$out" = up ]
check "… docker volume ls lists it" grep -qx sbxct_shared <<<"$(docker volume ls -q)"
mounts=$(docker inspect sbxct_client_1 --format '{{range .Mounts}}{{.Type}} {{.Name}} {{.Destination}} {{.RW}}{{end}}')
check "… container inspect's Mounts has it ($mounts)" [ "$mounts" = "volume sbxct_shared /data true" ]
check "a volume of driver_opts type none, o bind: the outsider wrote into the host directory" \
  [ "$(cat "$T/hostdata/f" 2>&1)" = from-compose ]
out=$(timeout 300 docker-compose -p sbxct down 2>&1); rc=$?
check "docker-compose down (volumes kept) ($rc: $(tail -n 2 <<<"$out" | tr '\n' ' '))" [ $rc -eq 0 ]
check "… the volume outlives down" grep -qx sbxct_shared <<<"$(docker volume ls -q)"
out=$(timeout 300 docker-compose -p sbxct up -d 2>&1); rc=$?
check "docker-compose up -d again ($rc: $(tail -n 3 <<<"$out" | tr '\n' ' '))" [ $rc -eq 0 ]
for _ in $(seq 50); do [ "$(docker-compose -p sbxct exec -T client cat /data/log 2>&1 | wc -l)" = 2 ] && break; sleep 0.2; done
out=$(timeout 60 docker-compose -p sbxct exec -T client cat /data/log 2>&1)
check "… the data persisted across down and up ($(tr '\n' ' ' <<<"$out"))" [ "$(tr '\n' ' ' <<<"$out")" = "up up " ]
# A changed service is recreated: compose renames the old container, creates
# and starts the new one, then stops and removes the old.
old_client=$(docker inspect -f '{{.Id}}' sbxct_client_1)
printf 'version: "2.4"\nservices:\n  client:\n    environment:\n      RECREATED: "yes"\n' >"$T/proj/docker-compose.override.yml"
out=$(timeout 300 docker-compose -p sbxct up -d 2>&1); rc=$?
check "docker-compose up -d after a config change ($rc: $(tail -n 3 <<<"$out" | tr '\n' ' '))" [ $rc -eq 0 ]
check "… recreated the client ($(tr '\n' ' ' <<<"$out"))" grep -q "Recreating sbxct_client_1" <<<"$out"
out=$(timeout 60 docker-compose -p sbxct exec -T client sh -c 'echo "$RECREATED"' 2>&1)  # (busybox here has no printenv)
check "… the new client has the new config ($out)" [ "$out" = yes ]
check "… and another id" [ "$(docker inspect -f '{{.Id}}' sbxct_client_1)" != "$old_client" ]
check "… the old one is gone ($(docker ps -aq --filter label=com.docker.compose.service=client | tr '\n' ' '))" \
  [ "$(docker ps -aq --filter label=com.docker.compose.service=client | wc -l)" = 1 ]
out=$(timeout 60 docker-compose -p sbxct exec -T client cat /data/log 2>&1)
check "… it mounts the same named volume ($(tr '\n' ' ' <<<"$out"))" [ "$(tr '\n' ' ' <<<"$out")" = "up up " ]
out=$(timeout 120 docker-compose -p sbxct restart client 2>&1); rc=$?
check "docker-compose restart client ($rc)" [ $rc -eq 0 ]
out=$(timeout 120 docker-compose -p sbxct stop 2>&1); rc=$?
check "docker-compose stop ($rc: $(tail -n 2 <<<"$out" | tr '\n' ' '))" [ $rc -eq 0 ]
out=$(timeout 300 docker-compose -p sbxct down -v 2>&1); rc=$?
check "docker-compose down -v ($rc: $(tail -n 3 <<<"$out" | tr '\n' ' '))" [ $rc -eq 0 ]
check "… no container left ($(docker ps -aq | tr '\n' ' '))" [ -z "$(docker ps -aq)" ]
check "… no network left ($(docker network ls -q | tr '\n' ' '))" [ -z "$(docker network ls -q)" ]
check "… no volume left ($(docker volume ls -q | tr '\n' ' '))" [ -z "$(docker volume ls -q)" ]
check "… and the bind volume's host directory is as it was" [ "$(cat "$T/hostdata/f" 2>&1)" = from-compose ]
stop_server
for _ in $(seq 20); do [ -z "$(ours_left)" ] && break; sleep 0.1; done
check "nothing left: no sandbox, record, endpoint, bridge, DNS server or rule ($(ours_left | tr '\n' ' '))" test -z "$(ours_left)"
cd / || true
rm_everything
trap - EXIT
finish

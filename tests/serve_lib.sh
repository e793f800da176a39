# Shared by the tests that drive `sbx serve` with Docker clients (sourced after
# sandbox_lib.sh): the server on this test's own socket, DOCKER_HOST and the
# docker CLI's config pointed at it. Provides $SOCK, start_server, stop_server,
# and networks_left for the tests that make user networks.
SOCK=$T/docker.sock
export DOCKER_HOST=unix://$SOCK DOCKER_CONFIG=$T/docker-config
SERVER_PID=""
start_server() {  # starts it in the background; its stderr goes to $T/serve.log
  "$SBX" --log-level info serve --socket "$SOCK" 2>>"$T/serve.log" &
  SERVER_PID=$!
  for _ in $(seq 100); do [ -S "$SOCK" ] && return 0; sleep 0.05; done
  echo "FAIL server did not start:"; cat "$T/serve.log"; return 1
}
stop_server() {  # SIGTERM, then waits for it (its sandboxes keep running)
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null
  wait "$SERVER_PID" 2>/dev/null
  SERVER_PID=""
}
networks_left() {  # what is left of this test's networks: state records, endpoints, bridges (listed in $T/bridges), nft rules, DNS servers
  local f b netstate=${SBX_NETWORK_STATE:-/run/sbx-net}
  for f in "$netstate"/networks/*/network.json; do [ -e "$f" ] && grep -q -F "$SBX_RUN_ROOT" "$f" && echo "record $f"; done
  for f in "$netstate"/sandboxes/*/*.json; do [ -e "$f" ] && grep -q -F "$SBX_RUN_ROOT" "$f" && echo "endpoint $f"; done
  for b in $(cat "$T/bridges" 2>/dev/null); do
    ip link show "$b" >/dev/null 2>&1 && echo "bridge $b"
    nft list ruleset 2>/dev/null | grep -q "\"$b\"" && echo "nft $b"
    pgrep -af "[d]nsmasq .*$netstate/networks/${b#sbb}" | sed 's/^/dns /'
  done
}

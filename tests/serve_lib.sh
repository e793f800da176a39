# Shared by the tests that drive `sbx serve` with Docker clients (sourced after
# sandbox_lib.sh): the server on this test's own socket, DOCKER_HOST and the
# docker CLI's config pointed at it. Provides $SOCK, start_server, stop_server.
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

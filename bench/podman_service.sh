# Sourced by the bench scripts that compare with podman's Docker-compatible
# service (bench/serve.sh, bench/compose.sh). Needs P (the podman command
# line with its own --root/--runroot/--tmpdir under T), T and IMAGES.
# podman_service_start SOCKET_PATH: loads the busybox test image, starts
# `podman system service` on SOCKET_PATH with the ulimits podman needs on
# this host (bench/lifecycle.sh; --time=0: it never exits idle), waits for
# its socket, and sets PSERVER to its pid (stop it with kill).
podman_service_start() {
  mkdir -p "$T/ptmp"
  "${P[@]}" load -q -i "$IMAGES/busybox.docker.tar" >/dev/null
  "${P[@]}" tag "$("${P[@]}" images -q | head -1)" docker.io/library/busybox:latest
  printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n' >"$T/containers.conf"
  CONTAINERS_CONF=$T/containers.conf "${P[@]}" system service --time=0 "unix://$1" 2>"$T/podman.log" &
  PSERVER=$!
  for _ in $(seq 100); do [ -S "$1" ] && break; sleep 0.05; done
}

#!/bin/bash
# sbx serve: the Docker Engine API driven by real clients — the docker CLI
# (run --rm with exit codes, run -i with stdin, run -d + exec + exec -i + cp + logs + ps
# --filter + stop + rm -f, images) and docker-py (containers.run(detach),
# exec_run(demux) with exit codes, put_archive/get_archive, wait,
# logs(stream), remove(force)); 50 concurrent exec streams checked byte for
# byte; dockerode (create/start/exec/wait/remove) when it is installed;
# TCP only on loopback with a bearer token; a client killed mid-exec leaves no
# process; SIGTERM to the server
# leaves its running sandboxes running. Each part starts its own server on a
# temp socket and stops it; then the leak check of tests/sandbox_lib.sh.
# Clients that are absent are skipped with a printed reason.
. "$(dirname "$0")/../sandbox_lib.sh"

. "$(dirname "$0")/../serve_lib.sh"  # $SOCK, DOCKER_HOST, start_server, stop_server
not_same() { ! cmp -s "$1" "$2"; }
rm_all() {
  for id in $("$SBX" ps -aq --no-trunc 2>/dev/null); do "$SBX" rm -f "$id" >/dev/null 2>&1; done
  rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null  # name links' dir (empty once every sandbox is gone)
}
trap 'stop_server; rm_all' EXIT

[ -n "$BB" ] && [ "${BB#--rootfs}" = "$BB" ] || { echo "SKIP: needs the image store and the busybox test image"; exit 77; }
IMG=busybox
RT_ARGS=()
[ "$RUNTIME" = gvisor ] && RT_ARGS=(--runtime gvisor)

start_server || finish

# --- the raw API: version negotiation, errors -----------------------------------
ping_hdr=$(curl -s -i --unix-socket "$SOCK" http://d/_ping)
check "_ping answers OK with an API-Version header" grep -q "^Api-Version: 1.44" <<<"${ping_hdr//$'\r'/}"
check "/version has ApiVersion" grep -q '"ApiVersion":"1.44"' <<<"$(curl -s --unix-socket "$SOCK" http://d/v1.44/version)"
unk=$(curl -s -o "$T/unk" -w '%{http_code}' --unix-socket "$SOCK" -X POST http://d/v1.44/swarm/init)
check "an unknown endpoint answers 501 with a JSON message" [ "$unk" = 501 ]
check "… whose body is {\"message\": …}" grep -q '"message"' "$T/unk"
big=$(head -c 6000000 /dev/zero | tr '\0' a | curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
  -H 'Content-Type: application/json' --data-binary @- http://d/v1.44/containers/create)
check "a request body over the bound is refused (413)" [ "$big" = 413 ]

if command -v docker >/dev/null; then
  # --- docker CLI ---------------------------------------------------------------
  docker events --filter type=container --format '{{.Action}} {{.Actor.Attributes.name}}' >"$T/events" 2>&1 &
  EVENTS_PID=$!
  out=$(docker run --rm "${RT_ARGS[@]}" $IMG echo hi 2>&1)
  check "docker run --rm echo hi prints hi" [ "$out" = hi ]
  ver=$(docker version 2>&1)
  check "docker version: the server's OS/Arch" grep -q "OS/Arch: *linux/amd64" <<<"$(sed -n '/^Server/,$p' <<<"$ver")"
  check "docker version: the server's minimum API version" grep -q "minimum version 1.24" <<<"$ver"
  expect_rc "docker run --rm passes the exit code" 3 docker run --rm "${RT_ARGS[@]}" $IMG sh -c 'exit 3'
  expect_rc "docker run of a missing command exits 127" 127 docker run --rm $IMG /no/such/cmd
  check "docker run --rm leaves no container" [ -z "$(docker ps -aq)" ]
  out=$(docker run --rm -e FOO=bar -w /tmp --user 65534 $IMG sh -c 'echo $FOO $(pwd) $(id -u)')
  check "Env, WorkingDir and User reach the command ($out)" [ "$out" = "bar /tmp 65534" ]
  out=$(echo typed | docker run --rm -i "${RT_ARGS[@]}" $IMG echo ran); rc=$?
  check "docker run -i of a command that reads no stdin ends cleanly ($out, $rc)" [ "$out:$rc" = ran:0 ]
  # Both runtimes (gVisor: runsc passes its stdin, the pipe, to the first process).
  out=$(printf 'hi\nthere\n' | timeout -s KILL 30 docker run --rm -i "${RT_ARGS[@]}" $IMG cat); rc=$?
  check "docker run -i passes stdin to the container and its end ($out, $rc)" [ "$out:$rc" = $'hi\nthere:0' ]
  head -c 1000000 /dev/urandom >"$T/stdin.bin"
  want=$(md5sum <"$T/stdin.bin" | cut -d' ' -f1)
  out=$(timeout -s KILL 30 docker run --rm -i "${RT_ARGS[@]}" $IMG md5sum <"$T/stdin.bin" | cut -d' ' -f1)
  check "docker run -i: 1 MB of stdin (more than a pipe holds) arrives byte for byte" [ "$out" = "$want" ]
  # docker run -it from a real terminal (a pty made by python3's pty module):
  # the CLI puts it in raw mode, resizes, streams raw (Tty: no 8-byte frames).
  cat >"$T/tty_client.py" <<'EOF'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp("docker", ["docker", "run", "-it", "--rm"] + sys.argv[3:] + [sys.argv[1], "sh", "-c", sys.argv[2]])
os.write(fd, b"typed\n")
out, end = b"", time.time() + 30
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.5)
    if not r: continue
    try: d = os.read(fd, 4096)
    except OSError: break
    if not d: break
    out += d
_, st = os.waitpid(pid, 0)
print(repr(out.decode(errors="replace").replace("\r", "")), os.waitstatus_to_exitcode(st))
EOF
  out=$(timeout -s KILL 40 python3 "$T/tty_client.py" $IMG 'read x; echo got-$x; exit 3' "${RT_ARGS[@]}")
  check "docker run -it from a pty: input in, output back, exit code ($out)" grep -q "got-typed.* 3$" <<<"$out"
  out=$(docker run --rm --entrypoint /bin/echo $IMG a b)
  check "Entrypoint overrides the image's ($out)" [ "$out" = "a b" ]

  id=$(docker run -d --label sbxtest=serve --name servetest "${RT_ARGS[@]}" $IMG sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo started; exec tail -f /dev/null')
  check "docker run -d prints the id" grep -qE '^[0-9a-f]{64}$' <<<"$id"
  check "the sandbox has the container's id" grep -q "^$id" <<<"$("$SBX" ps -q --no-trunc)"
  check "docker ps --filter label= finds it" [ "$(docker ps -q --no-trunc --filter label=sbxtest=serve)" = "$id" ]
  check "docker ps --filter label= of another value does not" [ -z "$(docker ps -q --filter label=sbxtest=other)" ]
  check "docker ps --filter name= finds it" [ "$(docker ps -q --no-trunc --filter name=servetest)" = "$id" ]
  out=$(docker exec servetest sh -c 'echo out; echo err >&2; exit 5' 2>"$T/err"); rc=$?
  check "docker exec: stdout ($out)" [ "$out" = out ]
  check "docker exec: stderr apart" [ "$(cat "$T/err")" = err ]
  check "docker exec: exit code 5 ($rc)" [ "$rc" = 5 ]
  # The server's helpers run the small static program embedded in sbx
  # (tools/sbx-helper.cpp), sealed in a memfd: not a copy of sbx itself.
  helper_fd=""
  for f in /proc/"$SERVER_PID"/fd/*; do [ "$(readlink "$f")" = "/memfd:sbx-helper (deleted)" ] && helper_fd=$f; done
  check "the server's helper program is the embedded sbx-helper ($(ls -l /proc/"$SERVER_PID"/fd | grep -o '/memfd:[^ ]*' | tr '\n' ' '))" [ -n "$helper_fd" ]
  # F_GET_SEALS (1034) through a read-only open: SEAL|SHRINK|GROW|WRITE (15).
  seals=$(python3 -c 'import fcntl, os, sys; print(fcntl.fcntl(os.open(sys.argv[1], os.O_RDONLY), 1034) & 15)' "$helper_fd" 2>&1)
  check "… sealed against writes, growth, shrinking and new seals ($seals)" [ "$seals" = 15 ]
  out=$(printf 'line1\nline2\n' | docker exec -i servetest sh -c 'cat; echo done')
  check "docker exec -i passes stdin and its end" [ "$out" = $'line1\nline2\ndone' ]
  head -c 300000 /dev/urandom >"$T/blob"
  out=$(docker exec -i servetest sh -c 'cat >/tmp/blob; md5sum </tmp/blob' <"$T/blob")
  check "docker exec -i: 300 KB of stdin arrive intact" [ "${out%% *}" = "$(md5sum <"$T/blob" | cut -d' ' -f1)" ]
  mkdir -p "$T/cpdir/sub" && echo hello-cp >"$T/cpdir/sub/f.txt" && chmod 640 "$T/cpdir/sub/f.txt"
  expect_rc "docker cp host → container" 0 docker cp "$T/cpdir" servetest:/tmp/
  check "… the file arrived with its mode" [ "$(docker exec servetest stat -c '%a %s' /tmp/cpdir/sub/f.txt)" = "640 9" ]
  docker exec servetest sh -c 'echo from-ctr >/tmp/out.txt; ln -s /etc/passwd /tmp/link'
  expect_rc "docker cp container → host" 0 docker cp servetest:/tmp/out.txt "$T/out.txt"
  check "… the file came back" [ "$(cat "$T/out.txt")" = from-ctr ]
  expect_rc "docker cp of a directory container → host" 0 docker cp servetest:/tmp/cpdir "$T/back"
  check "… with its tree" [ "$(cat "$T/back/sub/f.txt")" = hello-cp ]
  docker cp servetest:/tmp/link "$T/link" 2>/dev/null
  check "docker cp of a symlink copies the link itself (as docker)" [ -L "$T/link" ]
  expect_rc "docker cp of a missing path fails" 1 docker cp servetest:/no/such "$T/nothing"
  # A HEAD answer is its head alone, errors included: a body would be read as
  # the next response on the kept-alive connection (curl: a broken second
  # answer; Go: "Unsolicited response received on idle HTTP channel").
  out=$(curl -s -o /dev/null -w '%{http_code}\n' --unix-socket "$SOCK" -I \
    "http://d/v1.44/containers/servetest/archive?path=/no/such" --next --unix-socket "$SOCK" http://d/_ping)
  check "HEAD of a missing archive path: 404, then the next request on the connection is answered ($out)" \
    [ "$out" = $'404\nOK' ]
  raw=$(python3 - "$SOCK" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(1.0)
s.sendall(b"HEAD /v1.44/containers/servetest/archive?path=/no/such HTTP/1.1\r\nHost: d\r\n\r\n"
          b"HEAD /v1.44/containers/no-such-ctr/json HTTP/1.1\r\nHost: d\r\n\r\n")
got = b""
try:
    while got.count(b"\r\n\r\n") < 2 or len(got) < 4096:
        b = s.recv(65536)
        if not b: break
        got += b
except socket.timeout:
    pass
heads = got.split(b"\r\n\r\n")
# two heads and nothing after the second blank line: no body bytes anywhere
print(len(heads), heads[0].split(b"\r\n")[0].decode(), heads[1].split(b"\r\n")[0].decode() if len(heads) > 1 else "",
      repr(heads[-1]))
PY
)
  check "raw HEADs (a handler's 404, the router's refusal) carry no body ($raw)" \
    [ "$raw" = "3 HTTP/1.1 404 Not Found HTTP/1.1 501 Not Implemented b''" ]
  # docker cp to a new name asks HEAD of a missing path first (404): 20 in a
  # row on the CLI's kept-alive connection, each answered (before, the 404's
  # body broke the next request: "use of closed network connection").
  echo cp-payload >"$T/cpfile"
  cp_fail=0
  for i in $(seq 20); do
    docker cp "$T/cpfile" "servetest:/tmp/cp$i" 2>>"$T/cp.err" || cp_fail=$((cp_fail + 1))
    docker cp "$T/cpfile" servetest:/tmp 2>>"$T/cp.err" || cp_fail=$((cp_fail + 1))
  done
  check "40 docker cp (20 to a new name after a HEAD 404) all succeed ($cp_fail failed: $(head -c 300 "$T/cp.err"))" [ "$cp_fail" = 0 ]
  check "… without 'Unsolicited response' in the CLI's output" not_grep Unsolicited "$(cat "$T/cp.err")"
  check "… and the files are there" [ "$(docker exec servetest cat /tmp/cp20 /tmp/cpfile)" = $'cp-payload\ncp-payload' ]
  check "docker logs shows the first process's output" [ "$(docker logs servetest)" = started ]
  # stdout and stderr apart in the log (stream 1 and 2 of the framing), with times.
  docker run -d --name logtest "${RT_ARGS[@]}" $IMG sh -c 'echo to-out; echo to-err >&2; printf partial; exec tail -f /dev/null' >/dev/null
  for _ in $(seq 50); do docker logs logtest 2>/dev/null | grep -q partial && break; sleep 0.1; done
  check "docker logs: stdout alone ($(docker logs logtest 2>/dev/null | tr '\n' ' '))" \
    [ "$(docker logs logtest 2>/dev/null)" = $'to-out\npartial' ]
  check "docker logs: stderr alone on stderr ($(docker logs logtest 2>&1 >/dev/null))" [ "$(docker logs logtest 2>&1 >/dev/null)" = to-err ]
  ts=$(docker logs -t logtest 2>/dev/null | head -1)
  check "docker logs -t: an RFC 3339 time before the line ($ts)" \
    python3 -c 'import sys, datetime; t, l = sys.argv[1].split(" ", 1); datetime.datetime.strptime(t[:26], "%Y-%m-%dT%H:%M:%S.%f"); assert t.endswith("Z") and len(t) == 30 and l == "to-out"' "$ts"
  check "docker logs --tail 1: the last line" [ "$(docker logs --tail 1 logtest 2>/dev/null)" = partial ]
  check "docker logs --since in the future: nothing" [ -z "$(docker logs --since 2099-01-01T00:00:00Z logtest 2>&1)" ]
  check "docker logs --until in the past: nothing" [ -z "$(docker logs --until 2001-01-01T00:00:00Z logtest 2>&1)" ]
  check "sbx logs shows both streams" \
    [ "$("$SBX" logs logtest 2>&1 | grep -o 'to-out\|to-err\|partial' | sort | tr '\n' ' ')" = "partial to-err to-out " ]
  docker rm -f logtest >/dev/null
  check "docker inspect: Running" [ "$(docker inspect -f '{{.State.Running}}' servetest)" = true ]
  check "docker inspect: State.Pid is a host pid" [ -d "/proc/$(docker inspect -f '{{.State.Pid}}' servetest)" ]
  top=$(docker top servetest)
  if native_only; then
    check "docker top lists the container's tail -f ($top)" grep -q 'tail -f /dev/null' <<<"$top"
  else  # (gVisor: runsc ps, the Sentry's processes by name)
    check "docker top lists the container's tail (runsc ps) ($top)" grep -qw 'tail' <<<"$top"
  fi
  for _ in $(seq 50); do [ "$(docker logs servetest)" = started ] && break; sleep 0.1; done
  # (the first process counted to 20000 before "started": CPU time to see)
  st=$(curl -s --max-time 10 --unix-socket "$SOCK" "http://d/v1.44/containers/servetest/stats?stream=false" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); c=d["cpu_stats"]; p=d["precpu_stats"]
print(d["memory_stats"]["usage"] > 0, d["memory_stats"]["limit"] > 0, d["pids_stats"]["current"] >= 1, c["cpu_usage"]["total_usage"] > 0,
      c["cpu_usage"]["total_usage"] >= p["cpu_usage"]["total_usage"], c["system_cpu_usage"] > p["system_cpu_usage"] > 0, c["online_cpus"] >= 1)')
  check "stats?stream=false: memory, limit, pids, cpu (ns, two samples, system, cpus) ($st)" \
    [ "$st" = "True True True True True True True" ]
  st=$(docker stats --no-stream --format '{{.Name}} {{.CPUPerc}} {{.MemUsage}} {{.PIDs}}' servetest)
  check "docker stats --no-stream: name, CPU %, memory, pids ($st)" grep -qE '^servetest [0-9.]+% [0-9.]+[KMG]i?B / [0-9.]+[KMG]i?B [0-9]+$' <<<"$st"
  docker exec servetest sh -c 'echo kept >/kept.txt'

  expect_rc "docker pause" 0 docker pause servetest
  check "paused: State.Status paused" [ "$(docker inspect -f '{{.State.Status}} {{.State.Paused}}' servetest)" = "paused true" ]
  out=$(docker exec servetest true 2>&1); rc=$?
  check "paused: docker exec is refused, as dockerd does ($rc: $out)" grep -q 'is paused' <<<"$out"
  expect_rc "docker unpause" 0 docker unpause servetest
  check "unpaused: docker exec runs" [ "$(docker exec servetest echo ok)" = ok ]
  check "unpaused: running again" [ "$(docker inspect -f '{{.State.Status}}' servetest)" = running ]
  pid1=$(docker inspect -f '{{.State.Pid}}' servetest)
  expect_rc "docker restart" 0 docker restart -t 1 servetest
  check "restarted: running, RestartCount 1" [ "$(docker inspect -f '{{.State.Status}} {{.RestartCount}}' servetest)" = "running 1" ]
  check "restarted: a new first process" [ "$(docker inspect -f '{{.State.Pid}}' servetest)" != "$pid1" ]
  for _ in $(seq 50); do [ "$(docker logs servetest)" = started ] && break; sleep 0.1; done
  check "restarted: its command ran again" [ "$(docker logs servetest)" = started ]
  if native_only; then  # (gVisor keeps a sandbox's writes in runsc's memory: a restart starts on the image)
    check "restarted: on the same writable layer (a file written before is there)" \
      [ "$(docker exec servetest cat /kept.txt 2>&1)" = kept ]
  fi
  expect_rc "docker stop" 0 docker stop -t 1 servetest
  check "stopped: exited" [ "$(docker inspect -f '{{.State.Status}}' servetest)" = exited ]
  expect_rc "docker start of the stopped container" 0 docker start servetest
  if native_only; then
    check "… runs on its writable layer again" [ "$(docker exec servetest cat /kept.txt 2>&1)" = kept ]
  fi
  expect_rc "docker stop" 0 docker stop -t 1 servetest
  check "docker ps -a --filter status=exited finds it" [ "$(docker ps -aq --no-trunc --filter status=exited)" = "$id" ]
  expect_rc "docker rm -f" 0 docker rm -f servetest
  check "removed: no sandbox left" [ -z "$("$SBX" ps -aq)" ]
  sleep 0.5
  kill $EVENTS_PID 2>/dev/null; wait $EVENTS_PID 2>/dev/null
  evs=$(grep ' servetest$' "$T/events" | cut -d' ' -f1 | tr '\n' ' ')
  check "docker events: the container's life in order ($evs)" \
    grep -q '^create start .*pause unpause .*die .*start restart .*die .*start .*die .*destroy' <<<"$evs"
  check "docker images lists busybox" grep -q '^busybox ' <<<"$(docker images)"
  check "docker image inspect finds docker.io/library/busybox:latest" \
    docker image inspect docker.io/library/busybox:latest -f '{{.Id}}'
  expect_rc "docker run of a missing image without a registry fails" 125 docker run --rm --pull never nosuchimage true

  # docker commit: the writable layer becomes an image (sbx's fs snapshot;
  # gVisor has no writable layer on the host: refused there with the reason).
  if native_only; then
    docker run -d --name committest "${RT_ARGS[@]}" $IMG sh -c 'echo committed-data >/data.txt; exec tail -f /dev/null' >/dev/null
    for _ in $(seq 50); do docker exec committest test -f /data.txt 2>/dev/null && break; sleep 0.1; done
    cid=$(docker commit committest sbxtest/committed:1); rc=$?
    check "docker commit prints the new image's id ($rc: $cid)" grep -qE '^sha256:[0-9a-f]{64}$' <<<"$cid"
    docker rm -f committest >/dev/null
    out=$(docker run --rm "${RT_ARGS[@]}" sbxtest/committed:1 cat /data.txt)
    check "a container of the committed image has the file ($out)" [ "$out" = committed-data ]
    expect_rc "docker rmi of the committed image" 0 docker rmi sbxtest/committed:1
  fi

  # docker save / load (docker-archive through GET /images/get, POST /images/load).
  docker tag $IMG sbxtest/saved:1
  expect_rc "docker save of an image" 0 docker save -o "$T/saved.tar" sbxtest/saved:1
  check "… a docker-archive (manifest.json naming it)" grep -q 'sbxtest/saved:1' <<<"$(tar -xOf "$T/saved.tar" manifest.json 2>&1)"
  docker rmi sbxtest/saved:1 >/dev/null
  out=$(docker load -i "$T/saved.tar" 2>&1)
  check "docker load gives the image back ($out)" grep -q 'Loaded image: .*sbxtest/saved:1' <<<"$out"
  check "… and it runs" [ "$(docker run --rm "${RT_ARGS[@]}" sbxtest/saved:1 echo loaded)" = loaded ]
  # Several names in one archive (GET /images/get?names=a&names=b).
  docker tag $IMG sbxtest/saved:2
  expect_rc "docker save of two names" 0 docker save -o "$T/saved2.tar" sbxtest/saved:1 sbxtest/saved:2
  docker rmi sbxtest/saved:1 sbxtest/saved:2 >/dev/null
  out=$(docker load -i "$T/saved2.tar" 2>&1)
  check "… one entry naming both, as docker writes it" \
    python3 -c 'import json,sys; m=json.load(sys.stdin); assert len(m) == 1 and len(m[0]["RepoTags"]) == 2, m' < <(tar -xOf "$T/saved2.tar" manifest.json)
  check "docker load gives both back ($out)" \
    [ "$(grep -c 'Loaded image: .*sbxtest/saved:[12]' <<<"$out")" = 2 ]
  check "… and both run" [ "$(docker run --rm "${RT_ARGS[@]}" sbxtest/saved:2 echo loaded2)" = loaded2 ]
  docker rmi sbxtest/saved:1 sbxtest/saved:2 >/dev/null
  out=$(head -c 1000 /dev/urandom | docker load 2>&1); rc=$?
  check "docker load of a non-archive fails with the reason ($rc)" [ "$rc" != 0 ]

  # Named volumes: the docker CLI's volume commands, docker run -v NAME:/PATH, docker-py.
  check "docker volume create prints the name" [ "$(docker volume create --label t=serve dvol)" = dvol ]
  check "docker volume ls lists it" grep -qx dvol <<<"$(docker volume ls -q)"
  check "docker volume ls --filter label=t=serve" [ "$(docker volume ls -q --filter label=t=serve)" = dvol ]
  check "docker volume inspect: driver local" [ "$(docker volume inspect -f '{{.Driver}} {{.Name}}' dvol)" = "local dvol" ]
  docker run --rm "${RT_ARGS[@]}" -v dvol:/data $IMG sh -c 'echo kept >/data/f' >/dev/null
  check "docker run -v dvol:/data: the data outlives the container" [ "$(docker run --rm "${RT_ARGS[@]}" -v dvol:/data $IMG cat /data/f)" = kept ]
  docker run -d --name voltest "${RT_ARGS[@]}" --mount type=volume,source=dvol,target=/m,readonly $IMG sleep 600 >/dev/null
  check "container inspect's Mounts lists the volume" \
    [ "$(docker inspect -f '{{range .Mounts}}{{.Type}} {{.Name}} {{.Destination}} {{.RW}}{{end}}' voltest)" = "volume dvol /m false" ]
  out=$(docker volume rm dvol 2>&1); rc=$?
  check "docker volume rm of a volume in use fails ($rc: $out)" bash -c "[ $rc != 0 ] && grep -q 'in use' <<<\"\$1\"" _ "$out"
  check "docker ps --format {{.Mounts}} names the volume" \
    [ "$(docker ps --filter name=voltest --format '{{.Mounts}}')" = dvol ]
  mkdir -p "$T/bdir"
  docker run -d --name bindtest "${RT_ARGS[@]}" -v "$T/bdir:/b:ro" $IMG sleep 600 >/dev/null
  out=$(python3 - "$T/bdir" <<'PY' 2>&1
import docker, os, sys
c = docker.DockerClient(base_url=os.environ["DOCKER_HOST"], version="auto")
ms = {x.name: x.attrs["Mounts"] for x in c.containers.list()}  # GET /containers/json
v, b = ms["voltest"], ms["bindtest"]
assert [(m["Type"], m["Name"], m["Destination"], m["RW"]) for m in v] == [("volume", "dvol", "/m", False)], v
assert v[0]["Source"].endswith("/volumes/dvol/_data"), v
assert [(m["Type"], m["Source"], m["Destination"], m["RW"]) for m in b] == [("bind", sys.argv[1], "/b", False)], b
assert b[0]["Propagation"] == "rprivate", b
assert c.containers.get("bindtest").attrs["Mounts"] == b, "inspect and list differ"
print("ok")
PY
)
  check "docker-py containers.list: Mounts of a volume and a bind ($out)" [ "$out" = ok ]
  docker rm -f voltest bindtest >/dev/null
  check "docker volume rm after the container is gone" [ "$(docker volume rm dvol)" = dvol ]
  # A container created and never started holds its volumes too (as docker).
  docker create --name heldtest "${RT_ARGS[@]}" -v dheld:/h $IMG true >/dev/null
  check "docker create made the volume" grep -qx dheld <<<"$(docker volume ls -q)"
  out=$(docker volume rm dheld 2>&1); rc=$?
  check "docker volume rm of a created container's volume fails ($rc: $out)" \
    bash -c "[ $rc != 0 ] && grep -q 'in use' <<<\"\$1\"" _ "$out"
  check "docker ps -a --format {{.Mounts}} of the created container" \
    [ "$(docker ps -a --filter name=heldtest --format '{{.Mounts}}')" = dheld ]
  docker rm heldtest >/dev/null
  check "docker volume rm once the created container is removed" [ "$(docker volume rm dheld)" = dheld ]
  # Anonymous volumes for an image's VOLUME paths: kept by docker rm, removed by rm -v / DELETE ?v=1.
  mkdir -p "$T/anonctx"
  printf 'FROM %s\nVOLUME /vd\n' $IMG >"$T/anonctx/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q -t sbxanon:1 "$T/anonctx" >/dev/null 2>&1
  docker run -d --name anontest "${RT_ARGS[@]}" sbxanon:1 sh -c 'echo x >/vd/x; sleep 600' >/dev/null
  anon=$(docker inspect -f '{{range .Mounts}}{{if eq .Destination "/vd"}}{{.Name}}{{end}}{{end}}' anontest)
  check "docker run of an image with VOLUME /vd: an anonymous volume there ($anon)" grep -qE '^[0-9a-f]{64}$' <<<"$anon"
  check "docker ps --format {{.Mounts}} shows it" [ "$(docker ps --filter name=anontest --format '{{.Mounts}}' --no-trunc)" = "$anon" ]
  docker rm -f anontest >/dev/null
  check "docker rm without -v keeps it" grep -qx "$anon" <<<"$(docker volume ls -q --filter dangling=true)"
  docker volume rm "$anon" >/dev/null
  out=$(python3 <<'PY' 2>&1
import docker, os
c = docker.DockerClient(base_url=os.environ["DOCKER_HOST"], version="auto")
ctr = c.containers.run("sbxanon:1", ["sleep", "600"], detach=True, **({"runtime": "gvisor"} if os.environ.get("SBX_TEST_RUNTIME") == "gvisor" else {}))
name = [m["Name"] for m in c.api.inspect_container(ctr.id)["Mounts"] if m["Destination"] == "/vd"][0]
assert name in [v.name for v in c.volumes.list()], name
ctr.remove(force=True, v=True)
assert name not in [v.name for v in c.volumes.list()], "rm v=True left " + name
print("ok")
PY
)
  check "docker-py containers.remove(v=True) removes the anonymous volume ($out)" [ "$out" = ok ]
  # docker makes a container's anonymous volumes at create, not at its first start.
  cid=$(docker create "${RT_ARGS[@]}" sbxanon:1 sh -c 'echo s >>/vd/starts; cat /vd/starts')
  anon=$(docker inspect -f '{{range .Mounts}}{{if eq .Destination "/vd"}}{{.Name}}{{end}}{{end}}' "$cid")
  check "docker create: inspect names an anonymous volume at /vd ($anon)" grep -qE '^[0-9a-f]{64}$' <<<"$anon"
  check "... which docker volume ls lists before any start" grep -qx "$anon" <<<"$(docker volume ls -q)"
  for _ in 1 2; do docker start "$cid" >/dev/null; docker wait "$cid" >/dev/null; done
  check "a second start mounts the same volume" \
    [ "$(docker run --rm "${RT_ARGS[@]}" -v "$anon:/v" $IMG cat /v/starts | tr '\n' ' ')" = "s s " ]
  docker rm -v "$cid" >/dev/null
  check "docker rm -v removes it" not_grep "$anon" "$(docker volume ls -q)"
  cid=$(docker create "${RT_ARGS[@]}" sbxanon:1 true)
  anon=$(docker inspect -f '{{range .Mounts}}{{.Name}}{{end}}' "$cid")
  docker rm -v "$cid" >/dev/null
  check "docker rm -v of a never-started container removes its anonymous volume" not_grep "$anon" "$(docker volume ls -q)"
  # --mount type=volume without a source: an anonymous volume, as docker's.
  cid=$(docker run -d "${RT_ARGS[@]}" --mount type=volume,target=/anon $IMG sh -c 'echo a >/anon/a; sleep 600')
  anon=$(docker inspect -f '{{range .Mounts}}{{if eq .Destination "/anon"}}{{.Name}}{{end}}{{end}}' "$cid")
  check "docker run --mount type=volume,target=/anon: an anonymous volume ($anon)" grep -qE '^[0-9a-f]{64}$' <<<"$anon"
  check "... that the container writes" [ "$(docker exec "$cid" cat /anon/a)" = a ]
  docker rm -f -v "$cid" >/dev/null
  check "... removed by docker rm -f -v" not_grep "$anon" "$(docker volume ls -q)"
  # A size-limited volume through the local driver's options (a tmpfs).
  check "docker volume create --opt type=tmpfs --opt o=size=1m" docker volume create --opt type=tmpfs --opt o=size=1m dsmall
  out=$(docker run --rm "${RT_ARGS[@]}" -v dsmall:/s $IMG sh -c 'dd if=/dev/zero of=/s/f bs=1024 count=2048 2>&1')
  check "a container writing more than 1 MiB gets ENOSPC ($out)" grep -q "No space left on device" <<<"$out"
  check "docker volume inspect shows the options" \
    [ "$(docker volume inspect -f '{{.Options.type}} {{.Options.o}}' dsmall)" = "tmpfs size=1m" ]
  docker volume rm dsmall >/dev/null
  out=$(docker volume create --opt type=nfs --opt device=:/x dnfs 2>&1); rc=$?
  check "docker volume create --opt type=nfs is refused ($rc: $out)" bash -c "[ $rc != 0 ] && grep -q 'not supported' <<<\"\$1\"" _ "$out"
  docker rmi sbxanon:1 >/dev/null 2>&1

  # docker rename: a running container keeps running under its new name, a created one starts under it.
  docker run -d --name rn1 "${RT_ARGS[@]}" $IMG sleep 600 >/dev/null
  docker create --name rn2 "${RT_ARGS[@]}" $IMG sleep 600 >/dev/null
  check "docker rename rn1 rn3" docker rename rn1 rn3
  check "docker exec by the new name" [ "$(docker exec rn3 echo hi)" = hi ]
  check "docker ps lists rn3, not rn1" [ "$(docker ps --filter name=rn --format '{{.Names}}')" = rn3 ]
  out=$(docker rename rn3 rn2 2>&1); rc=$?
  check "docker rename to a created container's name fails ($rc: $out)" bash -c "[ $rc != 0 ] && grep -q 'already in use' <<<\"\$1\"" _ "$out"
  check "docker rename of an unknown container fails" bash -c '! docker rename nosuch-ctr x1 2>/dev/null'
  check "docker rename of a created container" docker rename rn2 rn4
  docker start rn4 >/dev/null
  check "... which starts under its new name" [ "$(docker exec rn4 echo started)" = started ]
  out=$(python3 <<'PY' 2>&1
import docker, os
c = docker.DockerClient(base_url=os.environ["DOCKER_HOST"], version="auto")
ctr = c.containers.get("rn3")
ctr.rename("rn5")
ctr.reload()
assert ctr.name == "rn5", ctr.name
try:
    ctr.rename("rn4")
    raise SystemExit("rename to a name in use succeeded")
except docker.errors.APIError as e:
    assert e.status_code == 409, e
try:
    c.api.rename("nosuch-ctr", "x2")
    raise SystemExit("rename of an unknown container succeeded")
except docker.errors.NotFound:
    pass
print("ok")
PY
)
  check "docker-py Container.rename; 409 for a name in use, 404 for an unknown one ($out)" [ "$out" = ok ]
  docker rm -f rn5 rn4 >/dev/null
  out=$(python3 -c '
import docker, os
# num_pools: docker-py keeps one connection pool per URL in an LRU of 25
# (DEFAULT_NUM_POOLS); with more URLs in flight at once (every exec and
# container has its own) it closes a pool a thread is still reading from
# and that request fails in urllib3 (`None.qsize()`): a client-side race.
c = docker.DockerClient(base_url=os.environ["DOCKER_HOST"], version="auto", num_pools=512)
v = c.volumes.create("pyvol", labels={"k": "v"})
assert v.name == "pyvol" and v.attrs["Labels"] == {"k": "v"}, v.attrs
assert "pyvol" in [x.name for x in c.volumes.list(filters={"label": "k=v"})]
c.volumes.get("pyvol").remove()
assert "pyvol" not in [x.name for x in c.volumes.list()]
print("ok")' 2>&1)
  check "docker-py volumes.create/list/get/remove ($out)" [ "$out" = ok ]

  # HostConfig fields mapped onto sbx: CapDrop/CapAdd, GPUs (none here), PortBindings.
  out=$(docker run --rm --cap-drop ALL "${RT_ARGS[@]}" $IMG grep CapEff /proc/self/status)
  check "--cap-drop ALL: no effective capability ($out)" grep -q '0000000000000000' <<<"$out"
  out=$(docker run --rm --cap-drop ALL --cap-add CHOWN "${RT_ARGS[@]}" $IMG grep CapEff /proc/self/status)
  check "--cap-add CHOWN after --cap-drop ALL: just it ($out)" grep -q '0000000000000001' <<<"$out"
  expect_rc "--cap-add of an unknown capability is refused" 125 docker run --rm --cap-add NOSUCH $IMG true 2>/dev/null
  out=$(docker run --rm --gpus all "${RT_ARGS[@]}" $IMG true 2>&1); rc=$?
  if [ -e /dev/nvidia0 ]; then
    check "--gpus all on a GPU host runs ($rc: $out)" [ "$rc" = 0 ]
  else
    check "--gpus all without a GPU: refused at create with sbx's reason ($rc: $out)" [ "$rc" = 125 ]
  fi
  expect_rc "-p with --network none is refused" 125 docker run --rm --network none -p 8080:80 $IMG true 2>/dev/null
  # Security fields sbx cannot honour are refused naming the field (a 400),
  # never silently dropped; the defaults the CLI always sends still work.
  for ask in "--privileged:Privileged" "--security-opt seccomp=unconfined:SecurityOpt" \
             "--security-opt apparmor=unconfined:SecurityOpt" "--security-opt no-new-privileges=false:SecurityOpt" \
             "--sysctl net.ipv4.ip_forward=1:Sysctls" "--pid host:PidMode" "--ipc host:IpcMode" "--uts host:UTSMode" \
             "--cgroup-parent sbxtest:CgroupParent"; do
    flags=${ask%:*} field=${ask##*:}
    out=$(docker run --rm $flags "${RT_ARGS[@]}" $IMG true 2>&1); rc=$?
    check "docker run $flags is refused naming HostConfig.$field ($rc: $out)" \
      [ "$rc" = 125 ] && grep -q "HostConfig.$field" <<<"$out"
  done
  code=$(curl -s -o "$T/priv" -w '%{http_code}' --unix-socket "$SOCK" -H 'Content-Type: application/json' \
    -d "{\"Image\":\"$IMG\",\"Cmd\":[\"true\"],\"HostConfig\":{\"Privileged\":true}}" http://d/v1.44/containers/create)
  check "Privileged: true answers 400 ($code: $(cat "$T/priv"))" [ "$code" = 400 ]
  out=$(docker run --rm --security-opt no-new-privileges "${RT_ARGS[@]}" $IMG echo nnp-ok 2>&1)
  check "--security-opt no-new-privileges (always on) runs ($out)" [ "$out" = nnp-ok ]
  if native_only && command -v nft >/dev/null; then
    PP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    docker run -d --name porttest -p 127.0.0.1:$PP:8080 $IMG sh -c 'echo port-ok >/tmp/index.html; exec httpd -f -p 8080 -h /tmp' >/dev/null
    out=""
    for _ in $(seq 50); do out=$(curl -s --max-time 2 "http://127.0.0.1:$PP/index.html") && [ -n "$out" ] && break; sleep 0.1; done
    check "PortBindings: -p 127.0.0.1:$PP:8080 reaches the container's server ($out)" [ "$out" = port-ok ]
    check "… docker port shows it" grep -q "127.0.0.1:$PP" <<<"$(docker port porttest 2>&1)"
    docker rm -f porttest >/dev/null
  fi

  # docker pull from a loopback registry (Debian's docker-registry, filled with skopeo).
  if command -v docker-registry >/dev/null && command -v skopeo >/dev/null; then
    RP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$T/reg"
    printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
      "$T/reg/storage" "$RP" >"$T/reg/config.yml"
    env -u REGISTRY_AUTH_FILE docker-registry serve "$T/reg/config.yml" >"$T/reg/log" 2>&1 &
    REG_PID=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$RP/v2/" && break; sleep 0.1; done
    skopeo copy -q --dest-tls-verify=false "oci:$SBX_IMAGES/busybox-oci:latest" "docker://127.0.0.1:$RP/pulltest:v1" >/dev/null
    out=$(docker pull "127.0.0.1:$RP/pulltest:v1" 2>&1); rc=$?
    check "docker pull from a loopback registry ($rc: ${out##*$'\n'})" [ "$rc" = 0 ]
    check "… the pulled image is listed" grep -q "^127.0.0.1:$RP/pulltest \+v1 " <<<"$(docker images)"
    out=$(docker run --rm "${RT_ARGS[@]}" "127.0.0.1:$RP/pulltest:v1" echo pulled-ok)
    check "… and runs ($out)" [ "$out" = pulled-ok ]
    out=$(docker pull "127.0.0.1:$RP/nosuch:v1" 2>&1); rc=$?
    check "docker pull of a missing image fails with the registry's word ($rc)" [ "$rc" != 0 ]
    docker rmi "127.0.0.1:$RP/pulltest:v1" >/dev/null
    kill $REG_PID; wait $REG_PID 2>/dev/null
  else
    echo "skip: docker pull test needs docker-registry and skopeo (apt-get install docker-registry skopeo)"
  fi
else
  echo "skip: no docker CLI on PATH"
fi

# --- docker-py ----------------------------------------------------------------
if python3 -c 'import docker' 2>/dev/null; then
  cat >"$T/py.py" <<'EOF'
import io, os, sys, tarfile, threading, time, docker
# num_pools: docker-py keeps one connection pool per URL in an LRU of 25
# (DEFAULT_NUM_POOLS); with more URLs in flight at once (every exec and
# container has its own) it closes a pool a thread is still reading from
# and that request fails in urllib3 (`None.qsize()`): a client-side race.
c = docker.DockerClient(base_url=os.environ["DOCKER_HOST"], version="auto", num_pools=512)
fails = 0
def check(desc, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + desc)
    fails += 0 if ok else 1
img = sys.argv[1]
ctr = c.containers.run(img, ["sh", "-c", "echo hello; sleep 0.3; echo world; exec tail -f /dev/null"], detach=True, labels={"t": "py"})
check("containers.run(detach=True) gives a running container", ctr.status in ("running", "created"))
code, (out, err) = ctr.exec_run(["sh", "-c", "printf out; printf err >&2; exit 7"], demux=True)
check("exec_run(demux=True): exit code 7 (%r)" % code, code == 7)
check("exec_run(demux=True): stdout %r" % out, out == b"out")
check("exec_run(demux=True): stderr %r" % err, err == b"err")
code, out = ctr.exec_run("true")
check("exec_run: exit 0, no output", code == 0 and not out)
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    data = b"payload\n" * 1000
    ti = tarfile.TarInfo("dir/file.txt"); ti.size = len(data); ti.mode = 0o640
    t.addfile(ti, io.BytesIO(data))
check("put_archive", ctr.put_archive("/tmp", buf.getvalue()))
code, out = ctr.exec_run(["sh", "-c", "wc -c </tmp/dir/file.txt; stat -c %a /tmp/dir/file.txt"])
check("put_archive: the file is there with its mode (%r)" % out, out.split() == [b"8000", b"640"])
stream, stat = ctr.get_archive("/tmp/dir/file.txt")
raw = b"".join(stream)
with tarfile.open(fileobj=io.BytesIO(raw)) as t:
    m = t.getmember("file.txt")
    check("get_archive: the file comes back (stat %r)" % stat, t.extractfile(m).read() == data and stat["size"] == 8000)
evil = io.BytesIO()
with tarfile.open(fileobj=evil, mode="w") as t:
    ti = tarfile.TarInfo("../../../../../tmp/sbx-serve-escape"); ti.size = 1
    t.addfile(ti, io.BytesIO(b"x"))
try:
    ctr.put_archive("/tmp", evil.getvalue())
except docker.errors.APIError:
    pass
check("put_archive: a ../ path does not escape to the host", not os.path.exists("/tmp/sbx-serve-escape"))
logs = b""
for chunk in ctr.logs(stream=True, follow=True):
    logs += chunk
    if b"world" in logs:
        break
check("logs(stream=True) %r" % logs, logs == b"hello\nworld\n")
e = c.containers.run(img, ["sh", "-c", "echo o1; echo e1 >&2; echo o2; exec tail -f /dev/null"], detach=True, labels={"t": "py"})
for _ in range(50):
    if b"o2" in e.logs(): break
    time.sleep(0.1)
check("logs(stdout=False, stderr=True): stderr only %r" % e.logs(stdout=False, stderr=True), e.logs(stdout=False, stderr=True) == b"e1\n")
check("logs(stdout=True, stderr=False): stdout only %r" % e.logs(stdout=True, stderr=False), e.logs(stdout=True, stderr=False) == b"o1\no2\n")
s = e.attach(stdout=True, stderr=True, stream=False, logs=True, demux=True)
check("attach(logs=True, demux=True): streams apart %r" % (s,), s == (b"o1\no2\n", b"e1\n"))
e.remove(force=True)
if sys.argv[2] != "gvisor":  # (a real pty for Tty containers: native)
    t = c.api.create_container(img, ["sh", "-c", "read x; echo got-$x; stty size; [ -t 1 ] && echo is-tty"], tty=True, stdin_open=True)
    sk = c.api.attach_socket(t["Id"], params={"stdin": 1, "stream": 1, "stdout": 1, "stderr": 1})
    c.api.start(t["Id"])
    c.api.resize(t["Id"], 33, 101)
    sk._sock.sendall(b"typed\r")  # Enter as a terminal sends it: the pty makes it a newline
    out, end = b"", time.time() + 20
    sk._sock.settimeout(1)
    while b"is-tty" not in out and time.time() < end:
        try: d = sk._sock.recv(4096)
        except OSError: continue
        if not d: break
        out += d
    check("Tty: a typed \\r ends the line (ICRNL), output gets \\r\\n (ONLCR) %r" % out, b"got-typed\r\n" in out)
    check("Tty: /resize set the size the process sees %r" % out, b"33 101" in out)
    check("Tty: stdout is a terminal %r" % out, b"is-tty" in out)
    sk.close()
    c.api.remove_container(t["Id"], force=True)
# exec inspect's Pid is the host pid of the running exec (native: the command
# itself; gVisor: its `runsc exec`, which forwards signals into the sandbox):
# a client on the host kills it through it (SWE-bench's time-out path sends
# it SIGTERM), and exactly that process dies.
import json, signal
gvisor = sys.argv[2] == "gvisor"
def start_sleep(secs):
    eid = c.api.exec_create(ctr.id, ["sleep", secs])["Id"]
    c.api.exec_start(eid, detach=True)
    pid, end = 0, time.time() + 20
    while not pid and time.time() < end:
        pid = c.api.exec_inspect(eid)["Pid"]
        time.sleep(0.05)
    return eid, pid
def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f: return f.read()
    except OSError: return b""
def runs(pid, secs):
    """Whether host pid PID is that exec: the command, or on gVisor the
    `runsc exec` running it (its command is in the --process file)."""
    line = cmdline(pid)
    if not gvisor: return line == b"sleep\x00" + secs.encode() + b"\x00"
    argv = line.split(b"\x00")
    if b"exec" not in argv or b"--process" not in argv: return False
    try:
        with open(argv[argv.index(b"--process") + 1], "rb") as f: return json.load(f)["args"] == ["sleep", secs]
    except (OSError, ValueError, KeyError, IndexError): return False
victim, vpid = start_sleep("1001")
other, opid = start_sleep("1002")
check("exec_inspect Pid: the host pid of the exec's command (%d: %r)" % (vpid, cmdline(vpid)),
      vpid > 0 and runs(vpid, "1001"))
check("exec_inspect Pid: another exec, another pid (%d: %r)" % (opid, cmdline(opid)),
      opid > 0 and opid != vpid and runs(opid, "1002"))
os.kill(vpid, signal.SIGTERM)
ins, end = c.api.exec_inspect(victim), time.time() + 20
while ins["Running"] and time.time() < end:
    time.sleep(0.05); ins = c.api.exec_inspect(victim)
check("kill -TERM Pid from the host ends that exec: ExitCode 143 %r" % ((ins["Running"], ins["ExitCode"], ins["Pid"]),),
      not ins["Running"] and ins["ExitCode"] == 143)
check("… whose Pid reads 0 once it ended (a reaped pid may be another's)", ins["Pid"] == 0)
oi = c.api.exec_inspect(other)
check("… and only it: the other exec runs on (%r)" % cmdline(opid), oi["Running"] and oi["Pid"] == opid and runs(opid, "1002"))
os.kill(opid, signal.SIGKILL)
code, out = ctr.exec_run(["sh", "-c", "ps -o args 2>/dev/null || ps"])
check("… the container's other processes live (%r)" % out[-200:], b"tail -f /dev/null" in out and b"sleep 1001" not in out)
# Many exec streams at once, each output checked byte for byte.
results = {}
def one(i):
    payload = ("%d-" % i) * 2000
    code, (o, e) = ctr.exec_run(["sh", "-c", "printf %s " + payload + "; printf E%d >&2; exit %d" % (i, i % 7)], demux=True)
    results[i] = (code == i % 7 and o == payload.encode() and e == ("E%d" % i).encode())
N = int(os.environ.get("SBX_TEST_EXEC_STREAMS", "50"))
t0 = time.time()
ts = [threading.Thread(target=one, args=(i,)) for i in range(N)]
[t.start() for t in ts]; [t.join() for t in ts]
check("%d concurrent exec_run streams, byte for byte (%d ok, %.1f s)" % (N, sum(results.values()), time.time() - t0),
      all(results.values()) and len(results) == N)
ctr.remove(force=True)
check("remove(force=True)", not c.containers.list(all=True, filters={"label": "t=py"}))
r = c.containers.run(img, ["sh", "-c", "exit 4"], detach=True)
check("wait() gives StatusCode 4", r.wait()["StatusCode"] == 4)
r.remove()
out = c.containers.run(img, ["echo", "run-output"], remove=True)
check("containers.run (attached, remove=True) returns the output %r" % out, out == b"run-output\n")
# Many starts at once from the server's threads (a raw clone's child once hung
# in glibc's setresuid waiting for those threads; two concurrent creates
# once deadlocked on copies of each other's setup channel; a concurrent
# create's gc once removed a sandbox whose creator had just finished).
import concurrent.futures as cf
M = int(os.environ.get("SBX_TEST_PARALLEL_RUNS", "60"))
quick = docker.DockerClient(base_url=os.environ["DOCKER_HOST"], version="auto", timeout=30, num_pools=512)
def run_one(i):
    try:
        return "ok" if quick.containers.run(img, ["echo", "r%d" % i], remove=True) == ("r%d\n" % i).encode() else "bad"
    except Exception as e:
        print("  run %d: %s" % (i, e)); return "bad"
t0 = time.time()
with cf.ThreadPoolExecutor(8) as ex:
    res = list(ex.map(run_one, range(M)))
check("%d containers.run(remove=True) at parallelism 8: each returns its own output, none hung (%d ok, %.1f s)"
      % (M, res.count("ok"), time.time() - t0), res.count("ok") == M)
# Security fields sbx cannot honour: an APIError 400 naming the field; the defaults work.
for kw, field in ((dict(privileged=True), "Privileged"), (dict(security_opt=["seccomp=unconfined"]), "SecurityOpt"),
                  (dict(sysctls={"net.core.somaxconn": "1024"}), "Sysctls"), (dict(pid_mode="host"), "PidMode"),
                  (dict(cgroup_parent="sbxtest"), "CgroupParent")):
    try:
        c.containers.create(img, "true", **kw).remove(force=True)
        check("docker-py %r is refused" % kw, False)
    except docker.errors.APIError as e:
        check("docker-py %r: 400 naming HostConfig.%s (%s)" % (kw, field, e.explanation),
              e.status_code == 400 and ("HostConfig." + field) in str(e.explanation))
out = c.containers.run(img, "echo defaults-ok", remove=True, privileged=False, pid_mode="")
check("docker-py privileged=False, pid_mode='' run %r" % out, out == b"defaults-ok\n")
sys.exit(1 if fails else 0)
EOF
  python3 "$T/py.py" $IMG "$RUNTIME"; rc=$?
  check "docker-py checks" [ "$rc" = 0 ]
else
  echo "skip: no docker-py (python3-docker)"
fi

# --- dockerode (npm; not a Debian package): SBX_TEST_NODE_MODULES=DIR/node_modules
# with dockerode in it, or one node finds, or else npm installs it once into
# the build tree (test-node/, kept as a cache for the next runs) ---------------
if [ -z "${SBX_TEST_NODE_MODULES:-}" ] && command -v node >/dev/null && ! node -e "require('dockerode')" 2>/dev/null; then
  NODE_CACHE=$(dirname "$SBX")/test-node
  if [ -d "$NODE_CACHE/node_modules/dockerode" ]; then
    SBX_TEST_NODE_MODULES=$NODE_CACHE/node_modules
  elif command -v npm >/dev/null; then
    mkdir -p "$NODE_CACHE"
    if timeout 180 npm install --silent --no-audit --no-fund --prefix "$NODE_CACHE" dockerode >"$T/npm.log" 2>&1; then
      SBX_TEST_NODE_MODULES=$NODE_CACHE/node_modules
    else
      echo "note: npm install dockerode failed: $(tail -3 "$T/npm.log")"
    fi
  fi
fi
if command -v node >/dev/null && NODE_PATH=${SBX_TEST_NODE_MODULES:-} node -e "require('dockerode')" 2>/dev/null; then
  NODE_PATH=${SBX_TEST_NODE_MODULES:-} timeout 60 node "$SBX_TEST_SRC/tests/integration/serve_dockerode.js" "$SOCK" $IMG; rc=$?
  check "dockerode checks" [ "$rc" = 0 ]
else
  echo "skip: dockerode not found (npm install --prefix DIR dockerode; SBX_TEST_NODE_MODULES=DIR/node_modules)"
fi

# --- TCP: loopback only, bearer token required --------------------------------
PORT=$((20000 + RANDOM % 30000))
printf 'sbx-test-token-%s\n' "$RANDOM$RANDOM" >"$T/token"; chmod 600 "$T/token"
TOKEN=$(cat "$T/token")
expect_rc "--tcp on a non-loopback address is refused" 125 "$SBX" serve --socket "$T/t.sock" --tcp 0.0.0.0:$PORT --token-file "$T/token"
expect_rc "--tcp without --token-file is refused" 125 "$SBX" serve --socket "$T/t.sock" --tcp 127.0.0.1:$PORT
chmod 644 "$T/token"
expect_rc "a token file others can read is refused" 125 "$SBX" serve --socket "$T/t.sock" --tcp 127.0.0.1:$PORT --token-file "$T/token"
chmod 600 "$T/token"
"$SBX" serve --socket "$T/t.sock" --tcp 127.0.0.1:$PORT --token-file "$T/token" 2>>"$T/serve.log" &
TCP_PID=$!
for _ in $(seq 100); do [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/_ping)" != 000 ] && break; sleep 0.05; done
check "TCP without a token: 401" [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/_ping)" = 401 ]
check "TCP with a wrong token: 401" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong-token-xxxxxxxx' http://127.0.0.1:$PORT/_ping)" = 401 ]
check "TCP with the token: 200" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" http://127.0.0.1:$PORT/_ping)" = 200 ]
check "the socket is mode 0600 (no group sbx) or 0660" grep -qE '^(600|660)$' <<<"$(stat -c %a "$T/t.sock")"
kill -TERM $TCP_PID; wait $TCP_PID 2>/dev/null

# --- sparse files and stats: a file read is bounded, HEAD stages nothing ------
# A sandbox plants a 1 TiB sparse file (0 blocks) and a FIFO. A /sbx/v1 file
# read sends holes as zeros, so it refuses the file (413 TooLarge) before a
# byte is sent instead of streaming 1 TiB; the Docker archive's HEAD answers
# the stat of the path in the sandbox, nothing copied (native: lstat in the
# sandbox; gVisor: the first header of the image's tar of it), so a FIFO,
# which a copy skips, has a stat too, as Docker gives.
id=$(curl -s --unix-socket "$SOCK" -H 'Content-Type: application/json' \
  -d "{\"Image\":\"$IMG\",\"Cmd\":[\"tail\",\"-f\",\"/dev/null\"]}" http://d/v1.44/containers/create | sed 's/.*"Id":"\([0-9a-f]*\)".*/\1/')
curl -s --unix-socket "$SOCK" -X POST http://d/v1.44/containers/$id/start
"$SBX" exec "$id" sh -c 'printf head >/big1t && truncate -s 1099511627776 /big1t && mkfifo /fifo && ln -s /big1t /link'
code=$(curl -s -o "$T/big" -w '%{http_code}' --max-time 60 --unix-socket "$SOCK" \
  "http://d/sbx/v1/sandboxes/$id/files?path=/big1t")
check "a /sbx/v1 read of a 1 TiB sparse file is refused: 413 ($code)" [ "$code" = 413 ]
check "… with kind TooLarge and the bound named" grep -q '"kind":"TooLarge".*at most 4294967296 bytes' "$T/big"
stat_of() {  # the X-Docker-Container-Path-Stat of a HEAD, decoded
  curl -s -I --max-time 60 --unix-socket "$SOCK" "http://d/v1.44/containers/$id/archive?path=$1" |
    tr -d '\r' | sed -n 's/^X-Docker-Container-Path-Stat: //Ip' | base64 -d
}
st=$(stat_of /big1t)
check "HEAD of the 1 TiB sparse file: its size ($st)" grep -q '"size":1099511627776' <<<"$st"
st=$(stat_of /fifo)
mode=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["mode"])' "$st" 2>/dev/null)
is_pipe() { [ -n "$mode" ] && [ $((mode & (1 << 25))) != 0 ]; }
check "HEAD of a FIFO: the stat in the sandbox, Go's ModeNamedPipe ($st)" is_pipe
st=$(stat_of /link)
check "HEAD of a symlink: the link itself, its target named ($st)" grep -q '"linkTarget":"/big1t"' <<<"$st"
check "… and the HEADs left no temp dir under the server's root" [ -z "$(ls -A "$SBX_ROOT/.serve-tmp" 2>/dev/null)" ]
curl -s -o /dev/null --unix-socket "$SOCK" -X DELETE "http://d/v1.44/containers/$id?force=1"

# --- a client killed mid-exec ---------------------------------------------------
id=$(curl -s --unix-socket "$SOCK" -H 'Content-Type: application/json' \
  -d "{\"Image\":\"$IMG\",\"Cmd\":[\"tail\",\"-f\",\"/dev/null\"]}" http://d/v1.44/containers/create | sed 's/.*"Id":"\([0-9a-f]*\)".*/\1/')
curl -s --unix-socket "$SOCK" -X POST http://d/v1.44/containers/$id/start
ex=$(curl -s --unix-socket "$SOCK" -H 'Content-Type: application/json' \
  -d '{"AttachStdout":true,"AttachStderr":true,"Cmd":["sleep","1000"]}' http://d/v1.44/containers/$id/exec | sed 's/.*"Id":"\([0-9a-f]*\)".*/\1/')
curl -s -N --unix-socket "$SOCK" -H 'Content-Type: application/json' -d '{}' http://d/v1.44/exec/$ex/start >/dev/null &
cpid=$!
# (busybox has no pgrep: the comm of every process in the sandbox.)
has_sleep() { "$SBX" exec "$id" sh -c 'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = sleep ] && exit 0; done; exit 1'; }
no_sleep() { ! has_sleep; }
for _ in $(seq 50); do has_sleep && break; sleep 0.1; done
check "the exec's process runs" has_sleep
kill -9 $cpid; wait $cpid 2>/dev/null
for _ in $(seq 50); do has_sleep || break; sleep 0.1; done
check "a client killed mid-exec leaves no process behind" no_sleep
check "… and the exec reads as ended" grep -q '"Running":false' <<<"$(curl -s --unix-socket "$SOCK" http://d/v1.44/exec/$ex/json)"

# --- SIGTERM to the server: sandboxes keep running -----------------------------
stop_server
check "after SIGTERM the socket is gone" [ ! -e "$SOCK" ]
check "after SIGTERM the container's sandbox still runs" [ "$("$SBX" inspect "$id" | grep -c '"running"')" -ge 1 ]
start_server
check "a new server sees it as running" \
  [ "$(curl -s --unix-socket "$SOCK" http://d/v1.44/containers/$id/json | python3 -c 'import json,sys; print(json.load(sys.stdin)["State"]["Status"])')" = running ]
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" -X DELETE "http://d/v1.44/containers/$id?force=1")
check "DELETE ?force=1 removes it (204)" [ "$code" = 204 ]
stop_server
trap - EXIT
rm_all
finish

#!/usr/bin/env bash
# sbx build on the real test images (busybox, Debian python):
#  - a Dockerfile with every instruction sbx supports: global and stage ARGs
#    with --build-arg, ENV/LABEL/WORKDIR/USER/EXPOSE/VOLUME/STOPSIGNAL/
#    HEALTHCHECK/SHELL/ENTRYPOINT/CMD, RUN shell/exec/heredoc forms, COPY of
#    files, directories and globs with --chown/--chmod, COPY <<EOF, ADD of a
#    local tar (extracted) and of a URL (a loopback HTTP server), .dockerignore;
#    the built image's files (through `sbx run`) and config (its exported
#    config blob) checked; whiteouts, set-id bits and owners of RUN layers;
#  - multi-stage with COPY --from (stage and image), --target, stages the
#    target does not need never run; one step numbering over the whole build;
#  - the cache: an unchanged rebuild reuses every step (same image id), a
#    change in one copied file rebuilds from that step on, --no-cache reruns;
#  - RUN --mount=type=cache shared between builds, type=secret never in a layer;
#    --network none/private as RUN sees it;
#  - contexts from stdin (a tar, a Dockerfile alone), -f outside the context;
#  - sbx history, sbx system df, sbx image prune, and sbx push of a built
#    image to a loopback registry read back with skopeo inspect;
#  - bad input: a syntax error, unknown stage, missing source, ../ and a
#    symlink out of the context (125, naming file and line), a failing RUN
#    (its output and exit code; exit 1), Ctrl-C during a RUN: each leaves no
#    image, layer, sandbox, mount, cgroup or temp file behind.
set -euo pipefail
SBX=${SBX:-build/sbx}
IMAGES=${SBX_IMAGES:-$(dirname "$0")/../images/out}
if [ ! -d "$IMAGES/busybox-oci" ] || [ ! -d "$IMAGES/python-oci" ]; then
  echo "SKIP: test images not built (tests/images/build.sh)"; exit 0
fi
SBX=$(realpath "$SBX")
T=$(mktemp -d /tmp/sbx-build-test.XXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  for d in "$T"/run/*/; do
    [ -f "$d/state.json" ] && "$SBX" --root "$T/root" --run-root "$T/run" rm -f "$(basename "$d")" >/dev/null 2>&1
  done
  rm -rf "$T"
}
trap cleanup EXIT
sbx() { "$SBX" --root "$T/root" --run-root "$T/run" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok - $*"; }
expect_code() {  # expect_code CODE PATTERN CMD...
  local want=$1 pat=$2; shift 2
  set +e; out=$("$@" 2>&1); code=$?; set -e
  [ "$code" = "$want" ] || fail "'$*' exited $code, want $want: $out"
  echo "$out" | grep -q -- "$pat" || fail "'$*' said '$out', want '$pat'"
}
# The config blob of an image, as JSON (from its exported oci-archive).
config_of() {
  sbx export "$1" -o "$T/cfg.tar" >/dev/null
  python3 - "$T/cfg.tar" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
blob = lambda d: t.extractfile("blobs/sha256/" + d.split(":")[1]).read()
idx = json.loads(t.extractfile("index.json").read())
man = json.loads(blob(idx["manifests"][0]["digest"]))
print(blob(man["config"]["digest"]).decode())
PY
  rm -f "$T/cfg.tar"
}
# Nothing of a build left: no sandbox state (RUN_ROOT/userns is the id-range
# pool, RUN_ROOT/.names the name links: both may stay, empty), no user
# namespace range held, no temp dir, no mount.
nothing_left() {
  local what=$1
  [ -z "$(ls -A "$T/run" 2>/dev/null | grep -vx 'userns\|\.names\|\.init' || true)" ] || fail "$what: state left in the run root: $(ls -A "$T/run")"
  [ -z "$(ls "$T/run/userns" 2>/dev/null)" ] || fail "$what: user namespace ranges still held: $(ls "$T/run/userns")"
  [ -z "$(ls -A "$T/root/tmp" 2>/dev/null)" ] || fail "$what: temp files left: $(ls -A "$T/root/tmp")"
  ! grep -q "$T" /proc/self/mountinfo || fail "$what: a mount under $T is left"
}
images_count() { sbx images -q | wc -l; }

sbx import -q "$IMAGES/busybox-oci" busybox >/dev/null
sbx import -q "$IMAGES/python-oci" python >/dev/null

# ---------------------------------------------------------------- every instruction
C=$T/ctx
mkdir -p "$C/app/sub" "$C/ignored" "$C/docs"
echo "hello from app" >"$C/app/main.txt"
echo "nested" >"$C/app/sub/deep.txt"
echo "one" >"$C/a.conf"; echo "two" >"$C/b.conf"
echo "secret stuff" >"$C/ignored/x"; echo "readme" >"$C/docs/README.md"; echo "keep" >"$C/docs/KEEP.md"
echo "tmp" >"$C/scratch.tmp"
mkdir -p "$T/tarsrc/pkg"; echo "from the tar" >"$T/tarsrc/pkg/file"
tar -C "$T/tarsrc" -czf "$C/pkg.tar.gz" pkg
mkdir -p "$T/www"; echo "downloaded body" >"$T/www/remote.txt"
cat >"$C/.dockerignore" <<'EOF'
# comments and blank lines are skipped

ignored
*.tmp
docs/*.md
!docs/KEEP.md
EOF
cat >"$C/Dockerfile" <<'DOCKERFILE'
# syntax=docker/dockerfile:1
ARG BASE=busybox
FROM ${BASE} AS final
ARG GREETING=hi
ARG UNSET
ENV APP_HOME=/srv/app \
    MODE="two words"
LABEL org.example.name="built by sbx" version=${GREETING}
WORKDIR $APP_HOME
COPY app/ ./
COPY --chmod=0751 --chown=65534:65534 *.conf /etc/conf.d/
COPY <<EOT /etc/motd
greeting=${GREETING} home=$APP_HOME
EOT
ADD pkg.tar.gz /opt/
ADD http://127.0.0.1:HTTPPORT/remote.txt /opt/remote.txt
COPY docs /docs
RUN echo "$GREETING ${UNSET:-unset} $MODE" > /greeting && \
    rm /etc/sbx-test/kept && \
    cp /bin/busybox /bin/suid-busybox && chmod 4755 /bin/suid-busybox && \
    touch /owned && chown 1234:4321 /owned
RUN ["sh", "-c", "echo exec-form > /exec.txt"]
RUN <<EOF
echo heredoc one > /heredoc.txt
echo heredoc two >> /heredoc.txt
EOF
SHELL ["/bin/sh", "-ec"]
RUN test "$(pwd)" = /srv/app && echo shell-ok > /shell.txt
EXPOSE 8080 53/udp
VOLUME ["/data"]
STOPSIGNAL SIGINT
HEALTHCHECK --interval=30s --timeout=5s --retries=2 CMD ["cat", "/greeting"]
USER nobody
RUN id -u > /tmp/uid
ENTRYPOINT ["/bin/sh", "-c"]
CMD ["cat /greeting"]
DOCKERFILE
python3 -m http.server --bind 127.0.0.1 0 --directory "$T/www" >"$T/http.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do grep -q "Serving HTTP" "$T/http.log" && break; sleep 0.1; done
HTTPPORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$T/http.log" | head -1)
[ -n "$HTTPPORT" ] || fail "the loopback HTTP server did not start: $(cat "$T/http.log")"
sed -i "s/HTTPPORT/$HTTPPORT/" "$C/Dockerfile"

sbx build -t built:v1 --build-arg GREETING=hello --label extra=label "$C" >"$T/id" 2>"$T/log" ||
  { cat "$T/log"; fail "build of the full Dockerfile"; }
id=$(cat "$T/id")
[ "${#id}" = 64 ] || fail "sbx build printed '$id', want an image id"
grep -q '\[2/' "$T/log" || fail "no step progress in: $(cat "$T/log")"
sbx images | grep -q '^built ' || fail "built:v1 not in sbx images"
r() { sbx run -u 0 --entrypoint "" built:v1 "$@"; }
[ "$(r cat /greeting)" = "hello unset two words" ] || fail "ARG/ENV in RUN: $(r cat /greeting)"
[ "$(sbx run built:v1)" = "hello unset two words" ] || fail "ENTRYPOINT+CMD of the built image"
[ "$(r cat /srv/app/main.txt)" = "hello from app" ] || fail "COPY dir/ ./ into WORKDIR"
[ "$(r cat /srv/app/sub/deep.txt)" = "nested" ] || fail "COPY of a nested directory"
[ "$(r stat -c '%a %u:%g' /etc/conf.d/a.conf)" = "751 65534:65534" ] || fail "COPY --chmod --chown: $(r stat -c '%a %u:%g' /etc/conf.d/a.conf)"
[ "$(r cat /etc/conf.d/b.conf)" = "two" ] || fail "COPY glob"
[ "$(r cat /etc/motd)" = "greeting=hello home=/srv/app" ] || fail "COPY <<EOT with expansion: $(r cat /etc/motd)"
[ "$(r cat /opt/pkg/file)" = "from the tar" ] || fail "ADD of a local tar.gz did not extract"
[ "$(r cat /opt/remote.txt)" = "downloaded body" ] || fail "ADD of a URL"
[ "$(r stat -c %a /opt/remote.txt)" = "600" ] || fail "ADD URL file mode"
[ "$(r ls /docs)" = "KEEP.md" ] || fail ".dockerignore with an exception: /docs has $(r ls /docs)"
r sh -c '! test -e /srv/app/ignored && ! test -e /scratch.tmp' || fail ".dockerignore"
r sh -c '! test -e /etc/sbx-test/kept' || fail "a file RUN deleted is still there (whiteout)"
r test -e /etc/sbx-test/removed && fail "the base image's own whiteout was lost"
[ "$(r stat -c %a /bin/suid-busybox)" = "4755" ] || fail "set-id bit of a RUN layer: $(r stat -c %a /bin/suid-busybox)"
[ "$(r stat -c %u:%g /owned)" = "1234:4321" ] || fail "owner set by RUN chown: $(r stat -c %u:%g /owned)"
[ "$(r cat /exec.txt)" = "exec-form" ] || fail "RUN exec form"
[ "$(r cat /heredoc.txt | tr '\n' ' ')" = "heredoc one heredoc two " ] || fail "RUN <<EOF"
[ "$(r cat /shell.txt)" = "shell-ok" ] || fail "SHELL + WORKDIR as RUN's cwd"
[ "$(r cat /tmp/uid)" = "65534" ] || fail "USER nobody in RUN: $(r cat /tmp/uid)"
r sh -c '! test -e /etc/hostname && ! test -s /etc/resolv.conf' || fail "the step sandbox's /etc files ended in a layer"
config_of built:v1 >"$T/config.json"
python3 - "$T/config.json" <<'PY' || fail "image config: $(cat "$T/config.json")"
import json, sys
c = json.load(open(sys.argv[1]))
cfg = c["config"]
assert "APP_HOME=/srv/app" in cfg["Env"] and "MODE=two words" in cfg["Env"], cfg["Env"]
assert cfg["Labels"]["org.example.name"] == "built by sbx", cfg["Labels"]
assert cfg["Labels"]["version"] == "hello" and cfg["Labels"]["extra"] == "label", cfg["Labels"]
assert cfg["Labels"]["org.opencontainers.image.title"] == "sbx-test-busybox"  # inherited
assert cfg["WorkingDir"] == "/srv/app" and cfg["User"] == "nobody", cfg
assert set(cfg["ExposedPorts"]) == {"8080/tcp", "53/udp"}, cfg["ExposedPorts"]
assert set(cfg["Volumes"]) == {"/data"} and cfg["StopSignal"] == "SIGINT", cfg
hc = cfg["Healthcheck"]
assert hc["Test"] == ["CMD", "cat", "/greeting"] and hc["Interval"] == 30 * 10**9 and hc["Timeout"] == 5 * 10**9 and hc["Retries"] == 2, hc
assert cfg["Entrypoint"] == ["/bin/sh", "-c"] and cfg["Cmd"] == ["cat /greeting"], cfg
assert cfg["Shell"] == ["/bin/sh", "-ec"], cfg
h = c["history"]
assert any(e["created_by"].startswith("RUN ") for e in h) and any(e.get("empty_layer") for e in h), h
assert len(c["rootfs"]["diff_ids"]) == len([e for e in h if not e.get("empty_layer")]), (c["rootfs"], h)
PY
pass "every instruction: files, owners, modes, whiteouts and the config of the built image"

sbx history built:v1 >"$T/hist"
grep -q "RUN |1 GREETING=hello /bin/sh -c echo" "$T/hist" || fail "sbx history: $(cat "$T/hist")"
grep -q "^${id:0:12} " "$T/hist" || fail "sbx history does not start with the image id: $(cat "$T/hist")"
sbx history --json built:v1 | python3 -c 'import json,sys; h=json.load(sys.stdin); assert len(h) > 10 and h[0]["Id"] != "<missing>", h'
pass "sbx history"

# ---------------------------------------------------------------- the cache
sbx build --json -t built:v1 --build-arg GREETING=hello --label extra=label "$C" >"$T/events" 2>"$T/log" ||
  { cat "$T/log"; fail "rebuild"; }
python3 - "$T/events" "$id" <<'PY' || fail "unchanged rebuild: $(cat "$T/events" | tail -5)"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
steps = [e for e in ev if e["event"] == "step" and not e["instruction"].upper().startswith("FROM")]
cached = [e for e in ev if e["event"] == "cached"]
res = ev[-1]
assert res["event"] == "result" and res["id"] == sys.argv[2], res
assert len(steps) == len(cached) == res["cached"] == res["steps"] > 15, (len(steps), len(cached), res)
assert not any(e["event"] == "output" for e in ev)
PY
pass "an unchanged rebuild reuses every step (same image id)"
echo "hello from app, changed" >"$C/app/main.txt"
sbx build --json --build-arg GREETING=hello --label extra=label "$C" >"$T/events" 2>"$T/log" || { cat "$T/log"; fail "rebuild after a change"; }
python3 - "$T/events" "$id" <<'PY' || fail "rebuild after one change: $(cat "$T/events")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
order = []
for e in ev:
    if e["event"] == "step": order.append([e["instruction"].split()[0].upper(), False])
    if e["event"] == "cached": order[-1][1] = True
kinds = [k for k, _ in order]
first_copy = kinds.index("COPY")
assert all(c for _, c in order[1:first_copy]), order  # before the changed COPY: cached
assert not any(c for _, c in order[first_copy:]), order  # from it on: run again
assert ev[-1]["id"] != sys.argv[2]
PY
[ "$(sbx run --entrypoint "" "$(tail -1 "$T/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')" cat /srv/app/main.txt)" = "hello from app, changed" ] ||
  fail "the rebuilt image does not have the changed file"
pass "a change in one copied file rebuilds from that step on"
sbx build --no-cache --json --build-arg GREETING=hello "$C" >"$T/events" 2>"$T/log" || { cat "$T/log"; fail "--no-cache"; }
grep -q '"event":"cached"' "$T/events" && fail "--no-cache reused a step"
pass "--no-cache runs every step"

# ---------------------------------------------------------------- multi-stage
M=$T/multi
mkdir -p "$M"
cat >"$M/Dockerfile" <<'EOF'
FROM python AS builder
WORKDIR /build
RUN python3 -c "open('/build/out.txt','w').write('made by python\n')"

FROM busybox AS never
RUN echo "this stage is not needed" && exit 7

FROM builder AS second
RUN echo second > /build/second.txt

FROM busybox
COPY --from=builder /build/out.txt /out.txt
COPY --from=busybox /etc/sbx-test/kept /kept
COPY --from=python /usr/bin/python3 /python3-binary
COPY --from=second /build/second.txt /second.txt
COPY --from=0 /build/out.txt /out0.txt
CMD ["cat", "/out.txt"]
EOF
sbx build -t multi "$M" >/dev/null 2>"$T/log" || { cat "$T/log"; fail "multi-stage build"; }
grep -q "this stage is not needed" "$T/log" && fail "a stage the target does not need ran"
# One step numbering over the whole build (as docker's "Step 3/7"): every FROM
# and instruction but ARG of the stages built, the unneeded one not counted.
python3 - "$T/log" <<'PY' || fail "multi-stage step numbers: $(grep -E '^\[' "$T/log")"
import re, sys
tags = re.findall(r"^\[(\S+) (\d+)/(\d+)\] (FROM|WORKDIR|RUN|COPY|CMD)", open(sys.argv[1]).read(), re.M)
got = [(st, int(n), int(t)) for st, n, t, _ in tags]
want = [("builder", i, 12) for i in (1, 2, 3)] + [("second", i, 12) for i in (4, 5)] + [("3", i, 12) for i in range(6, 13)]
assert got == want, got
PY
[ "$(sbx run multi)" = "made by python" ] || fail "COPY --from=stage"
[ "$(sbx run multi cat /second.txt)" = "second" ] || fail "a stage based on another stage"
[ "$(sbx run multi cat /out0.txt)" = "made by python" ] || fail "COPY --from=0 (a stage by index)"
sbx run multi test -x /python3-binary || fail "COPY --from=image"
[ "$(sbx run multi cat /kept)" = "this file stays" ] || fail "COPY --from=busybox"
sbx build -q -t multi-builder --target builder "$M" >"$T/id" 2>"$T/log" || { cat "$T/log"; fail "--target"; }
[ "$(sbx run multi-builder cat /build/out.txt)" = "made by python" ] || fail "--target builder"
sbx build --target builder "$M" >/dev/null 2>"$T/log" || { cat "$T/log"; fail "--target builder, again"; }
grep -qx '\[builder 3/3\] CACHED' "$T/log" || fail "--target builder: the steps of that stage alone are counted: $(cat "$T/log")"
expect_code 125 "no stage of that name" sbx build --target nosuch "$M"
pass "multi-stage: COPY --from stage/index/image, unneeded stages skipped, --target"

# ---------------------------------------------------------------- mounts and network
N=$T/mounts
mkdir -p "$N"
echo "s3cr3t-value" >"$T/secret.txt"
cat >"$N/Dockerfile" <<'EOF'
FROM busybox
RUN --mount=type=cache,target=/var/cache/app,id=shared echo first-build > /var/cache/app/seen
RUN --mount=type=secret,id=token cat /run/secrets/token > /dev/null && \
    test "$(cat /run/secrets/token)" = s3cr3t-value && echo secret-read > /secret-ok
RUN ip -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ' > /links
EOF
sbx build -q -t mounts --secret id=token,src="$T/secret.txt" "$N" >/dev/null 2>"$T/log" || { cat "$T/log"; fail "mounts build"; }
[ "$(sbx run mounts cat /secret-ok)" = "secret-read" ] || fail "RUN --mount=type=secret"
sbx run mounts sh -c '! test -e /run/secrets/token && ! grep -rq s3cr3t-value /etc /run /root 2>/dev/null' || fail "the secret ended in the image"
sbx run mounts sh -c '! test -e /var/cache/app/seen' || fail "the cache mount's content ended in the image"
grep -q "eth0" <<<"$(sbx run mounts cat /links)" || fail "default network (private) has no eth0: $(sbx run mounts cat /links)"
mkdir -p "$T/mounts2"
cat >"$T/mounts2/Dockerfile" <<'EOF'
FROM busybox
RUN --mount=type=cache,target=/c,id=shared cat /c/seen > /from-cache
RUN ip -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ' > /links
EOF
sbx build -q -t mounts2 --network none "$T/mounts2" >/dev/null 2>"$T/log" || { cat "$T/log"; fail "mounts2"; }
[ "$(sbx run mounts2 cat /from-cache)" = "first-build" ] || fail "the cache mount is not shared between builds"
[ "$(sbx run mounts2 cat /links)" = "lo " ] || fail "--network none: RUN sees $(sbx run mounts2 cat /links)"
expect_code 1 "returned a non-zero code" sbx build --no-cache "$N"
printf 'FROM busybox\nRUN --mount=type=secret,id=token,required=true true\n' >"$T/mounts2/Dockerfile.req"
expect_code 125 "secret 'token' is required" sbx build -f "$T/mounts2/Dockerfile.req" "$T/mounts2"
pass "RUN --mount cache (shared) and secret (never in a layer); --network none/private"

# ---------------------------------------------------------------- stdin and -f
printf 'FROM busybox\nRUN echo from-stdin > /x\n' | sbx build -q -t stdin-df - >/dev/null 2>"$T/log" || { cat "$T/log"; fail "Dockerfile on stdin"; }
[ "$(sbx run stdin-df cat /x)" = "from-stdin" ] || fail "a Dockerfile alone on stdin"
tar -C "$C" -c . | sbx build -q -t stdin-tar --build-arg GREETING=tar - >/dev/null 2>"$T/log" || { cat "$T/log"; fail "tar on stdin"; }
[ "$(sbx run --entrypoint "" stdin-tar cat /etc/motd)" = "greeting=tar home=/srv/app" ] || fail "context tar on stdin"
printf 'FROM busybox\nCOPY a.conf /\n' >"$T/outside.Dockerfile"
sbx build -q -t dash-f -f "$T/outside.Dockerfile" "$C" >/dev/null 2>"$T/log" || { cat "$T/log"; fail "-f outside the context"; }
[ "$(sbx run dash-f cat /a.conf)" = "one" ] || fail "-f outside the context"
pass "contexts from stdin (tar, Dockerfile alone) and -f"

# ---------------------------------------------------------------- bad input, nothing left behind
E=$T/err
mkdir -p "$E"
echo data >"$E/file"
ln -s /etc/passwd "$E/out-link"
before=$(images_count)
bad() {  # bad CODE PATTERN DOCKERFILE-TEXT
  printf '%b' "$3" >"$E/Dockerfile"
  expect_code "$1" "$2" sbx build -t bad:x "$E"
  nothing_left "$2"
  [ "$(images_count)" = "$before" ] || fail "'$2' left an image"
}
bad 125 "Dockerfile:2: unknown instruction: FROB" 'FROM busybox\nFROB x\n'
bad 125 "Dockerfile:2: COPY failed: 'nope' not found in the build context" 'FROM busybox\nCOPY nope /\n'
bad 125 "Dockerfile:2: COPY failed: '../etc' is outside the build context" 'FROM busybox\nCOPY ../etc /x\n'
bad 125 "points outside the build context" 'FROM busybox\nCOPY out-link /x\n'
bad 125 "Dockerfile:2: --from=nosuch: not a stage" 'FROM busybox\nCOPY --from=nosuch /a /b\n'
bad 125 "ONBUILD is not supported" 'FROM busybox\nONBUILD RUN true\n'
bad 125 "sbx builds for this host" 'FROM --platform=linux/s390x busybox\n'
bad 125 "# syntax=example.com/frontend" '# syntax=example.com/frontend\nFROM busybox\n'
bad 125 "FROM nosuchimage" 'FROM nosuchimage\nRUN true\n'
bad 1 "RUN echo failing-output; exit 3 returned a non-zero code: 3" 'FROM busybox\nRUN echo failing-output; exit 3\n'
grep -q "failing-output" <<<"$out" || fail "a failing RUN's output was not printed: $out"
bad 1 "returned a non-zero code: 127" 'FROM busybox\nRUN ["/no/such/command"]\n'
# Hostile context tars: an entry climbing out, a write through a symlink out.
for evil in dotdot symlink; do
  python3 - "$T/$evil.tar" "$evil" <<'PY'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "w")
def add(name, data=b"", **kw):
    i = tarfile.TarInfo(name); i.size = len(data)
    for k, v in kw.items(): setattr(i, k, v)
    t.addfile(i, io.BytesIO(data))
add("Dockerfile", b"FROM busybox\nCOPY . /x\n")
if sys.argv[2] == "dotdot":
    add("../escaped-file", b"bad")
else:
    add("out", type=tarfile.SYMTYPE, linkname="/tmp")
    add("out/escaped-file", b"bad")
t.close()
PY
  expect_code 125 "build context tar cannot be unpacked" sbx build -t bad:x - <"$T/$evil.tar"
  [ -z "$(find "$T" /tmp -maxdepth 3 -name escaped-file 2>/dev/null)" ] || fail "a hostile context tar ($evil) wrote outside"
  nothing_left "hostile tar $evil"
done
[ "$(images_count)" = "$before" ] || fail "a hostile context tar left an image"
pass "bad input: clear errors naming file and line, exit 125 (a failing RUN: 1), hostile context tars, nothing left"

# Ctrl-C during a RUN: the build stops, nothing stays.
printf 'FROM busybox\nRUN echo started; sleep 60\n' >"$E/Dockerfile"
# (a background job of a script ignores SIGINT: the build gets the default back, as at a terminal)
python3 -c 'import os,signal,sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
  "$SBX" --root "$T/root" --run-root "$T/run" build --no-cache "$E" >"$T/sigint.out" 2>&1 &
bpid=$!
for _ in $(seq 100); do grep -q started "$T/sigint.out" && break; sleep 0.1; done
grep -q started "$T/sigint.out" || fail "the RUN of the Ctrl-C test did not start: $(cat "$T/sigint.out")"
kill -INT "$bpid"
set +e; wait "$bpid"; code=$?; set -e
[ "$code" = 130 ] || fail "the interrupted build exited $code, want 130: $(cat "$T/sigint.out")"
grep -q "interrupted" "$T/sigint.out" || fail "no word of the interruption: $(cat "$T/sigint.out")"
nothing_left "Ctrl-C"
[ "$(images_count)" = "$before" ] || fail "the interrupted build left an image"
pass "Ctrl-C stops a build cleanly (exit $code)"

# ---------------------------------------------------------------- push, df, prune
if command -v docker-registry >/dev/null && command -v skopeo >/dev/null; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$T/reg"
  printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' "$T/reg/data" "$port" >"$T/reg/config.yml"
  env -u REGISTRY_AUTH_FILE docker-registry serve "$T/reg/config.yml" >"$T/reg/log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/v2/" && break; sleep 0.1; done
  sbx push -q multi "127.0.0.1:$port/built/multi:1" >/dev/null || fail "sbx push of a built image"
  skopeo inspect --tls-verify=false "docker://127.0.0.1:$port/built/multi:1" >"$T/skopeo.json" || fail "skopeo inspect"
  want=$(sbx inspect multi | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["Layers"]))')
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["Layers"]) == int(sys.argv[2]), d["Layers"]' "$T/skopeo.json" "$want" ||
    fail "skopeo sees $(cat "$T/skopeo.json")"
  skopeo inspect --config --tls-verify=false "docker://127.0.0.1:$port/built/multi:1" |
    python3 -c 'import json,sys; c=json.load(sys.stdin); assert c["config"]["Cmd"] == ["cat", "/out.txt"], c' || fail "skopeo --config"
  pass "sbx push of a built image; skopeo inspect reads it"
else
  echo "skip: docker-registry or skopeo missing: no push test"
fi
sbx system df --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["BuildCache"] > 0 and d["BuildCacheSize"] > 0, d' ||
  fail "sbx system df does not count the build cache"
sbx image prune --json >"$T/prune.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["BuildCache"] > 0 and d["SpaceReclaimed"] > 0, d' "$T/prune.json" ||
  fail "sbx image prune: $(cat "$T/prune.json")"
sbx system df --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["BuildCache"] == 0, d' || fail "build cache left after prune"
[ "$(sbx run multi)" = "made by python" ] || fail "a tagged built image does not survive prune"
sbx build --json -t multi "$M" 2>/dev/null | tail -1 | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["cached"] < r["steps"], r' ||
  fail "after prune, a rebuild still found cache entries"
pass "sbx system df and sbx image prune account for the build cache"
nothing_left "the end"
echo "all build tests passed"

#!/bin/bash
# Image builds through `sbx serve`'s Docker API (POST /build, the classic
# builder's endpoint, and GET /images/{name}/history), driven by real
# clients: the docker CLI (`DOCKER_BUILDKIT=0 docker build`, plain `docker
# build` falling back to the classic API without a buildx plugin, -q,
# --iidfile, --build-arg, --target, a failing RUN, docker history, docker run
# of the result) and docker-py (images.build(fileobj=…, custom_context=True),
# api.build(path=…, decode=True) with its streamed log, gzip contexts,
# BuildError of a failing RUN); hostile contexts (a tar entry climbing out,
# a Dockerfile path outside the context). Every failure leaves no image, no
# sandbox; then the leak check of tests/sandbox_lib.sh (mounts, cgroups,
# veths, run root). Clients that are absent are skipped with a printed reason.
. "$(dirname "$0")/../sandbox_lib.sh"
. "$(dirname "$0")/../serve_lib.sh"  # $SOCK, DOCKER_HOST, start_server, stop_server

trap 'stop_server' EXIT
[ -n "$BB" ] && [ "${BB#--rootfs}" = "$BB" ] || { echo "SKIP: needs the image store and the busybox test image"; exit 77; }
[ "$RUNTIME" = native ] || { echo "SKIP: builds run their steps on the native backend only"; exit 77; }
start_server || finish

# Images in the store, the build cache included (a failed build adds none).
n_images() { "$SBX" images -a -q 2>/dev/null | wc -l; }

CTX=$T/ctx
mkdir -p "$CTX/sub"
echo hello-from-context >"$CTX/hello.txt"
echo nested >"$CTX/sub/n.txt"
echo 'ignored.txt' >"$CTX/.dockerignore"
echo secret >"$CTX/ignored.txt"
cat >"$CTX/Dockerfile" <<'DF'
FROM busybox AS base
ARG GREETING=hi
ENV G=$GREETING
WORKDIR /app
COPY hello.txt sub ./
RUN echo built-$G >/app/built.txt && cat /app/hello.txt && ls /app
LABEL stage=base
CMD ["cat", "/app/built.txt"]

FROM base AS extra
RUN echo extra-stage-ran >/app/extra.txt
DF

# --- raw API: parameters checked before anything is built -----------------------
tar cf "$T/ctx.tar" -C "$CTX" .
code=$(curl -s -o "$T/out" -w '%{http_code}' --unix-socket "$SOCK" -X POST -H 'Content-Type: application/x-tar' \
  --data-binary @"$T/ctx.tar" 'http://d/v1.44/build?dockerfile=../../etc/passwd')
check "dockerfile= outside the context: 400 ($code $(cat "$T/out"))" [ "$code" = 400 ]
code=$(curl -s -o "$T/out" -w '%{http_code}' --unix-socket "$SOCK" -X POST --data-binary @"$T/ctx.tar" \
  'http://d/v1.44/build?buildargs=notjson')
check "buildargs that are not JSON: 400 ($code)" [ "$code" = 400 ]
code=$(curl -s -o "$T/out" -w '%{http_code}' --unix-socket "$SOCK" -X POST --data-binary @"$T/ctx.tar" \
  'http://d/v1.44/build?version=2')
check "BuildKit (version=2) is refused clearly: 400 ($code)" [ "$code" = 400 ] && grep -q "classic builder" "$T/out"
code=$(curl -s -o "$T/out" -w '%{http_code}' --unix-socket "$SOCK" -X POST 'http://d/v1.44/build')
check "no context: 400 ($code)" [ "$code" = 400 ]
# A hostile context: an entry that climbs out of it.
python3 - "$T/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name, data in (("Dockerfile", b"FROM busybox\nCOPY . /\n"), ("../../../../tmp/sbx-build-escaped", b"x")):
        i = tarfile.TarInfo(name); i.size = len(data); t.addfile(i, io.BytesIO(data))
PY
rm -f /tmp/sbx-build-escaped
before=$(n_images)
code=$(curl -s -o "$T/out" -w '%{http_code}' --unix-socket "$SOCK" -X POST --data-binary @"$T/evil.tar" \
  'http://d/v1.44/build?t=evil')
check "a context tar with ../ is refused: 400 ($code: $(head -c 300 "$T/out"))" grep -q "cannot be unpacked" "$T/out"
check "… with 400" [ "$code" = 400 ]
check "… and wrote nothing outside it" [ ! -e /tmp/sbx-build-escaped ]
check "… and made no image" [ "$(n_images)" = "$before" ]
# The stream's form, as the raw JSON lines (a Dockerfile alone as the body).
printf 'FROM busybox\nRUN echo raw-out\n' >"$T/Dockerfile.raw"
curl -s --unix-socket "$SOCK" -X POST --data-binary @"$T/Dockerfile.raw" 'http://d/v1.44/build?t=raw&networkmode=none' >"$T/raw.json"
check "raw stream: Step lines" grep -q '^{"stream":"Step 1/2 : FROM busybox\\n"}' "$T/raw.json"
check "raw stream: the step's output" grep -q '{"stream":"raw-out\\n"}' "$T/raw.json"
check "raw stream: aux ID" grep -qE '^\{"aux":\{"ID":"sha256:[0-9a-f]{64}"\}\}' "$T/raw.json"
check "raw stream: Successfully built / tagged" grep -q 'Successfully tagged raw:latest' "$T/raw.json"
check "raw stream: every line is JSON" python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$T/raw.json"

if command -v docker >/dev/null; then
  # --- docker CLI ---------------------------------------------------------------
  DOCKER_BUILDKIT=0 docker build -t cli-built --build-arg GREETING=yo --target base "$CTX" >"$T/b1.out" 2>&1
  rc=$?
  check "DOCKER_BUILDKIT=0 docker build --target base exits 0 ($rc)" [ "$rc" = 0 ]
  [ "$rc" = 0 ] || cat "$T/b1.out"
  check "… prints docker's Step lines ($(grep -m1 Step "$T/b1.out"))" grep -q "^Step 1/[0-9]* : FROM busybox AS base" "$T/b1.out"
  check "… a Step line for the RUN" grep -q "^Step [0-9]*/[0-9]* : RUN echo built-" "$T/b1.out"
  check "… and the RUN's output" grep -q "hello-from-context" "$T/b1.out"
  check "… Successfully built / tagged cli-built:latest" grep -q "^Successfully tagged cli-built:latest" "$T/b1.out"
  check "… the stage the target does not need never ran" not_grep "extra" "$(cat "$T/b1.out")"
  out=$(docker run --rm cli-built)
  check "docker run of the built image: its CMD and the build arg ($out)" [ "$out" = built-yo ]
  out=$(docker run --rm cli-built ls /app)
  check ".dockerignore kept ignored.txt out; COPY of a dir copied its content ($(echo $out))" \
    [ "$(echo $out)" = "built.txt hello.txt n.txt" ]
  check "docker inspect: the Dockerfile's label" \
    [ "$(docker image inspect -f '{{index .Config.Labels "stage"}}' cli-built)" = base ]
  # An unchanged rebuild: every step from the cache, the same image.
  id1=$(docker image inspect -f '{{.Id}}' cli-built)
  DOCKER_BUILDKIT=0 docker build --iidfile "$T/iid" -t cli-built --build-arg GREETING=yo --target base "$CTX" >"$T/b2.out" 2>&1
  check "a rebuild reuses the cache (Using cache)" grep -q "Using cache" "$T/b2.out"
  check "… --iidfile has the same image id" [ "$(cat "$T/iid")" = "$id1" ]
  # Plain docker build: without a buildx plugin the CLI falls back to /build.
  docker build -t cli-plain "$CTX" >"$T/b3.out" 2>&1
  rc=$?
  check "plain docker build (no buildx plugin: the classic API) exits 0 ($rc)" [ "$rc" = 0 ]
  [ "$rc" = 0 ] || cat "$T/b3.out"
  check "… built the last stage" [ "$(docker run --rm cli-plain cat /app/extra.txt)" = extra-stage-ran ]
  out=$(docker build -q -t cli-quiet "$CTX" 2>/dev/null)
  check "docker build -q prints the image id alone ($out)" grep -qE '^sha256:[0-9a-f]{64}$' <<<"$out"
  check "… the id of the image it tagged" [ "$out" = "$(docker image inspect -f '{{.Id}}' cli-quiet)" ]
  # docker history (GET /images/{name}/history).
  hist=$(docker history --no-trunc --format '{{.ID}}|{{.CreatedBy}}|{{.Size}}' cli-built)
  check "docker history: the newest entry is the image ($(head -1 <<<"$hist"))" \
    grep -q "^$id1|LABEL\|^$id1|CMD" <<<"$(head -1 <<<"$hist")"
  check "docker history: the RUN step with its instruction" grep -q "|RUN .*echo built-\$G" <<<"$hist"
  check "docker history: the COPY step" grep -q "COPY hello.txt sub ./" <<<"$hist"
  check "docker history: older entries are <missing>" grep -q "^<missing>|" <<<"$hist"
  expect_rc "docker history of a missing image fails" 1 docker history no-such-image
  # A failing RUN: its output and the error, and nothing left behind.
  mkdir -p "$T/failctx"
  printf 'FROM busybox\nRUN echo before-fail\nRUN echo failing-out; exit 3\n' >"$T/failctx/Dockerfile"
  before=$(n_images)
  DOCKER_BUILDKIT=0 docker build -t must-not-exist "$T/failctx" >"$T/f.out" 2>&1
  rc=$?
  check "a failing RUN: docker build fails ($rc)" [ "$rc" != 0 ]
  check "… showing the step's output" grep -q "failing-out" "$T/f.out"
  check "… and the error with the exit code" grep -q "returned a non-zero code: 3" "$T/f.out"
  check "… no image named" not_grep must-not-exist "$(docker images --format '{{.Repository}}')"
  check "… no image beyond the steps that succeeded (+1: RUN echo before-fail)" [ "$(n_images)" -le $((before + 1)) ]
  check "… no sandbox left" [ -z "$("$SBX" ps -aq)" ]
  # sbx's docker-buildx plugin: `docker buildx build --load` through /build.
  installed=$(bash "$SBX_TEST_SRC/contrib/docker-buildx" --install)
  check "docker-buildx --install puts it in \$DOCKER_CONFIG/cli-plugins, executable ($installed)" \
    test "$installed" = "$DOCKER_CONFIG/cli-plugins/docker-buildx" -a -x "$DOCKER_CONFIG/cli-plugins/docker-buildx"
  docker buildx build --load -t bx-built -f "$CTX/Dockerfile" --build-arg GREETING=bx --target=base \
    --progress plain "$CTX" >"$T/bx.out" 2>&1
  rc=$?
  check "docker buildx build --load (sbx's plugin) exits 0 ($rc)" [ "$rc" = 0 ]
  [ "$rc" = 0 ] || cat "$T/bx.out"
  check "… and the image runs ($(docker run --rm bx-built 2>&1))" [ "$(docker run --rm bx-built 2>&1)" = built-bx ]
  out=$(docker buildx build --push -t bx-push "$CTX" 2>&1); rc=$?
  check "docker buildx build --push is refused clearly ($rc)" [ "$rc" = 1 ] && grep -q -- "--push is not supported" <<<"$out"
  out=$(docker buildx ls 2>&1); rc=$?
  check "docker buildx ls is refused clearly ($rc)" [ "$rc" = 1 ] && grep -q "'docker buildx ls' is not supported" <<<"$out"
  check "plain docker build with the plugin installed still works" \
    sh -c "docker build -q -t after-plugin '$CTX' | grep -qE '^sha256:'"
  rm -rf "$DOCKER_CONFIG/cli-plugins"
else
  echo "skip: no docker CLI"
fi

# --- docker-py ----------------------------------------------------------------
if python3 -c 'import docker' 2>/dev/null; then
  python3 - "$CTX" <<'PY'
import io, sys, tarfile
import docker
ctx = sys.argv[1]
fails = 0
def check(desc, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + desc)
    fails += 0 if ok else 1
c = docker.DockerClient(base_url=__import__("os").environ["DOCKER_HOST"], version="1.44")
# images.build with a custom context (a tar in memory).
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    t.add(ctx, arcname=".")
buf.seek(0)
img, logs = c.images.build(fileobj=buf, custom_context=True, tag="py-built", buildargs={"GREETING": "py"},
                           target="base", network_mode="none")
logs = list(logs)
check("images.build(fileobj, custom_context): an Image tagged py-built (%s)" % img.tags, "py-built:latest" in img.tags)
check("… its log has the Step lines", any("Step 1/" in l.get("stream", "") for l in logs))
check("… and the aux ID of that image", any(l.get("aux", {}).get("ID") == img.id for l in logs))
out = c.containers.run("py-built", remove=True)
check("containers.run of it: %r" % out, out == b"built-py\n")
# api.build(path=…, decode=True): the streamed log, a gzip context.
stream = list(c.api.build(path=ctx, tag="py-api", decode=True, gzip=True, rm=True, forcerm=True,
                          labels={"from": "docker-py"}, nocache=True))
check("api.build(path, decode=True, gzip=True): dicts, Step first (%s)" % stream[0], stream[0].get("stream", "").startswith("Step 1/"))
check("… ends with Successfully tagged py-api:latest", stream[-1].get("stream") == "Successfully tagged py-api:latest\n")
check("… nocache: no step from the cache", not any("Using cache" in l.get("stream", "") for l in stream))
check("… labels= on the image", c.images.get("py-api").labels.get("from") == "docker-py")
# A failing RUN: BuildError carrying the build log.
before = len(c.images.list(all=True))
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    df = b"FROM busybox\nRUN echo py-failing; exit 7\n"
    i = tarfile.TarInfo("Dockerfile"); i.size = len(df); t.addfile(i, io.BytesIO(df))
buf.seek(0)
try:
    c.images.build(fileobj=buf, custom_context=True, tag="py-fail", network_mode="none")
    check("a failing RUN raises BuildError", False)
except docker.errors.BuildError as e:
    check("a failing RUN raises BuildError (%s)" % e.msg, "non-zero code: 7" in e.msg)
    check("… with the step's output in its log", any("py-failing" in l.get("stream", "") for l in e.build_log))
check("… and leaves no image", len(c.images.list(all=True)) == before)
# History through docker-py.
h = c.images.get("py-built").history()
check("images.get().history(): newest first with the image's id and tags",
      h[0]["Id"] == c.images.get("py-built").id and "py-built:latest" in (h[0]["Tags"] or []))
check("… each entry with Created, CreatedBy, Size, Comment", all({"Created", "CreatedBy", "Size", "Comment"} <= set(e) for e in h))
sys.exit(1 if fails else 0)
PY
  check "docker-py build checks" [ $? = 0 ]
else
  echo "skip: no docker-py (python3-docker)"
fi

check "no sandbox left by the builds" [ -z "$("$SBX" ps -aq)" ]
stop_server
finish

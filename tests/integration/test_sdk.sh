#!/bin/bash
# The Python SDK (python/) against a real `sbx serve` on a temp
# socket, through pytest (Debian's python3-pytest): the package is first
# installed offline with pip (`pip install ./python` into a target dir), then
# python/tests/ run against it: every method, bytes with NULs and invalid
# UTF-8, a 100 MB round trip, 200 sandboxes through asyncio.gather at
# concurrency 8, HumanEval 164/164 (native), a killed client, a server
# restart, the Modal-style harness example. Under gVisor
# (SBX_TEST_RUNTIME=gvisor) a smaller set (-k, below). Then: no sandbox left,
# and the leak check of tests/sandbox_lib.sh.
. "$(dirname "$0")/../sandbox_lib.sh"

PYTHON=${SBX_TEST_PYTHON:-/usr/bin/python3}
[ -n "$PY" ] && [ "${PY#--rootfs}" = "$PY" ] || { echo "SKIP: needs the image store and the python test image"; exit 77; }
"$PYTHON" -c 'import pytest' 2>/dev/null || { echo "SKIP: no pytest for $PYTHON (apt-get install python3-pytest)"; exit 77; }

# Installable offline: pip with Debian's setuptools, no index, no build isolation.
SITE=$T/site
if "$PYTHON" -m pip --version >/dev/null 2>&1; then
  # From a copy: setuptools writes build/ and *.egg-info next to the sources.
  cp -r "$SBX_TEST_SRC/python" "$T/python-src"
  rm -rf "$T/python-src/build" "$T/python-src/"*.egg-info
  "$PYTHON" -m pip install -q --no-index --no-build-isolation --break-system-packages --target "$SITE" \
    "$T/python-src" >"$T/pip.log" 2>&1
  check "pip install ./python (offline)" test -f "$SITE/sbx/__init__.py" -a -f "$SITE/sbx/py.typed"
  [ -f "$SITE/sbx/__init__.py" ] || cat "$T/pip.log"
else
  echo "note: no pip for $PYTHON: the tests import python/ from the source tree"
  SITE=$SBX_TEST_SRC/python
fi

# An image without Cmd or Entrypoint (as a `podman import`ed rootfs): busybox's
# docker-archive with the two removed from its config.
NOCMD=$T/nocmd
mkdir -p "$NOCMD" && tar xf "$SBX_IMAGES/busybox.docker.tar" -C "$NOCMD"
"$PYTHON" - "$NOCMD" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
cfg = json.load(open(os.path.join(d, m[0]["Config"])))
cfg["config"].pop("Cmd", None)
cfg["config"].pop("Entrypoint", None)
body = json.dumps(cfg).encode()
os.remove(os.path.join(d, m[0]["Config"]))
m[0]["Config"] = hashlib.sha256(body).hexdigest() + ".json"
m[0]["RepoTags"] = ["localhost/nocmd:latest"]
open(os.path.join(d, m[0]["Config"]), "wb").write(body)
json.dump(m, open(os.path.join(d, "manifest.json"), "w"))
PY
tar cf "$T/nocmd.tar" -C "$NOCMD" . && rm -rf "$NOCMD"
check "import an image without Cmd or Entrypoint" "$SBX" import -q "$T/nocmd.tar" nocmd:latest
export SBX_TEST_NOCMD_IMAGE=nocmd:latest

K=()
# gVisor: the smaller set (each sandbox start costs more); HumanEval is native's.
[ "$RUNTIME" = gvisor ] && K=(-k "exec or bytes or files or lifecycle or errors or checkpoint or asyncio or restart or without_cmd")
PYTHONDONTWRITEBYTECODE=1 SBX_TEST_TMP=$T PYTHONPATH=$SITE:$SBX_TEST_SRC/python/tests "$PYTHON" -m pytest -q -p no:cacheprovider \
  "$SBX_TEST_SRC/python/tests" "${K[@]}" 2>&1 | tee "$T/pytest.log" | tail -40
rc=${PIPESTATUS[0]}
check "pytest python/tests ($RUNTIME)" test "$rc" = 0
[ "$rc" = 0 ] || tail -30 "$T/sdk-serve.log"

left=$("$SBX" ps -aq --no-trunc 2>/dev/null)
check "no sandbox left by the SDK tests" test -z "$left"
for id in $left; do "$SBX" rm -f "$id" >/dev/null 2>&1; done
rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null
finish

#!/bin/bash
# The Python SDK (python/, issue 18) against a real `sbx serve` on a temp
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

K=()
# gVisor: the smaller set (each sandbox start costs more); HumanEval is native's.
[ "$RUNTIME" = gvisor ] && K=(-k "exec or bytes or files or lifecycle or errors or checkpoint or asyncio or restart")
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

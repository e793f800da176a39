#!/usr/bin/env bash
# The documentation's examples, run as a reader would type them: every shell
# and Python block of README.md, python/README.md and docs/*.md, in order,
# one shell per file (tests/docs_examples.py extracts them; its header says
# which blocks run and the markers for the few that cannot run here — an
# online-only one has an offline twin that runs instead). An example that
# stops working fails this test, named by FILE:LINE.
#
# The reader's machine is made here: `sbx`, `sbx-runc` on PATH, the SDK on
# PYTHONPATH, E2B's JS SDK on NODE_PATH, the test images as `python` and
# `busybox` and at tests/images/out in the working directory; the store, run
# root (so the server's default socket), registries' auth file, docker CLI
# config and network pool are this test's own, the pool on a documentation
# subnet. ONLY_DOCS="README.md docs/e2b.md" runs just those files.
source "$(dirname "$0")/../sandbox_lib.sh"
SRC=$SBX_TEST_SRC
EXAMPLES=$SRC/tests/docs_examples.py
BUILD=$(dirname "$SBX")

check "the examples runner's self-test" python3 "$EXAMPLES" --self-test

mkdir -p "$T/bin" "$T/xdg" "$T/docker"
echo '{}' >"$T/docker/config.json"  # podman reads it for registry credentials
ln -s "$SBX" "$T/bin/sbx"
[ -x "$BUILD/sbx-runc" ] && ln -s "$BUILD/sbx-runc" "$T/bin/sbx-runc"
export PATH=$T/bin:$PATH PYTHONPATH=$SRC/python XDG_RUNTIME_DIR=$T/xdg DOCKER_CONFIG=$T/docker
export SBX_NETWORK_POOL=198.51.100.64/26
if mods=$(bash "$SRC/tests/e2b_npm.sh" "$BUILD"); then
  export NODE_PATH=$mods
else
  echo "note: E2B's JS SDK is not installable here (npm); the E2B example will fail"
fi

# Every file whose examples are promised to run (docs/design.md and
# docs/architecture.md hold diagrams only: their blocks are not commands).
# (Paths relative to the source tree: ctest runs this from the build dir.)
if [ -n "${ONLY_DOCS:-}" ]; then
  read -ra DOCS <<<"$ONLY_DOCS"
else
  DOCS=(README.md python/README.md $(cd "$SRC" && ls docs/*.md))
fi
n=0
for doc in "${DOCS[@]}"; do
  n=$((n + 1))
  work=$T/work-$n
  mkdir -p "$work/tests/images"
  ln -s "$SBX_IMAGES" "$work/tests/images/out"
  [ -z "${NODE_PATH:-}" ] || ln -s "$NODE_PATH" "$work/node_modules"  # ES modules resolve from the working dir
  script=$T/example-$n.sh
  if ! (cd "$SRC" && python3 "$EXAMPLES" "$doc") >"$script"; then
    fails=$((fails + 1)); echo "FAIL $doc: its example markers are wrong (above)"; continue
  fi
  if (cd "$work" && timeout 900 bash "$script" >"$T/example-$n.log" 2>&1); then
    passes=$((passes + 1)); echo "ok   every example of $doc ($(grep -c '^ok   example' "$T/example-$n.log") blocks)"
  else
    fails=$((fails + 1)); echo "FAIL an example of $doc:"; tail -n 40 "$T/example-$n.log"
  fi
  # what the examples left running (a failed one stops midway) goes with them
  "$SBX" rm -af >/dev/null 2>&1
  "$SBX" network prune -f >/dev/null 2>&1
  grep -F " $work/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount "$m"; done  # podman's
  for d in /sys/fs/cgroup/*/sbxdocs-*; do  # the podman examples' --cgroup-parent
    [ ! -d "$d" ] || find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
done

rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null  # name links' dir (empty once every sandbox is gone)
finish

#!/usr/bin/env bash
# Installs the `e2b` npm package (E2B's JS SDK, for tests/integration/test_e2b.sh)
# once into BUILD_DIR/e2b-npm and prints its node_modules path; a second run
# reuses it. Version: $SBX_E2B_VERSION (default: the one the test was written
# against). Exit 77 when node or npm is absent, 1 when npm install fails.
# Usage: tests/e2b_npm.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tests/e2b_npm.sh BUILD_DIR}
version=${SBX_E2B_VERSION:-2.51.0}
command -v node >/dev/null || { echo "node is not installed" >&2; exit 77; }
prefix=$(mkdir -p "$build" && cd "$build" && pwd)/e2b-npm
mods=$prefix/node_modules
if ! NODE_PATH=$mods node -e "if (require('e2b/package.json').version !== process.argv[1]) process.exit(1)" "$version" 2>/dev/null; then
  command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 77; }
  echo "installing e2b@$version with npm into $prefix" >&2
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "e2b@$version" >&2 || exit 1
fi
echo "$mods"

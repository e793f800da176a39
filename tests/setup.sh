#!/usr/bin/env bash
# One-step set-up on a fresh Debian 12 machine (run as root): installs the
# build and test dependencies (.ci/packages), builds sbx into build/ and
# installs it (/usr/local), builds
# the real test images (tests/images/build.sh, tests/images/langs.sh), imports the python image and
# runs the main job in a sandbox.
# Options: --no-criu skips building CRIU 4.1.1 (memory snapshots of native
# sandboxes; .ci/criu-build.sh, cached under /usr/local/lib/sbx/criu), which
# the tests and CI want and a user who needs no native memory snapshots does not.
set -euo pipefail
cd "$(dirname "$0")/.."
criu=1
for a in "$@"; do
  case "$a" in
    --no-criu) criu=0 ;;
    --criu) criu=1 ;;
    *) echo "tests/setup.sh: unknown option $a (known: --criu, --no-criu)" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then echo "tests/setup.sh: run as root (sbx needs namespaces, mounts and cgroups)" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
missing=$(dpkg-query -W -f='${Package} ${Status}\n' $(cat .ci/packages) 2>/dev/null | awk '$NF!="installed"{print $1}'; \
          for p in $(cat .ci/packages); do dpkg-query -W "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $(cat .ci/packages) >/dev/null
fi
# runsc (gVisor) from bookworm-backports, pinned so nothing else comes from it.
bash .ci/runsc-backports.sh
# CRIU 4.1.1 from Debian 13's source package, built here (Debian 12's 3.17
# fails on this kernel): native memory snapshots. Cached: a second run is instant.
# Not fatal: without it, native checkpoints are refused with the reason.
if [ "$criu" = 1 ]; then
  bash .ci/criu-build.sh || echo "setup.sh: CRIU was not built: native memory snapshots stay refused ('sbx info' says why)" >&2
fi
# Debian 12's own runsc too, for the tests that cover sbx on both (cached; optional).
tests/old_runsc.sh >/dev/null || echo "setup.sh: tests on the old runsc will be skipped" >&2
# ccache (in .ci/packages) lets the later builds of CI (build-static/ has the
# same compile lines for all but two files) reuse these objects; the build
# directory's name is not hashed, so build/ and build-static/ share entries.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_NOHASHDIR=true CCACHE_BASEDIR=$PWD
fi
# The dynamic build, not -DSBX_STATIC=ON: it has every feature (registry
# access, libnftables) and starts within ~3 ms of the static one, since
# libcurl and libnftables are dlopen'd on first use (README, "Set-up").
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build build -j"$(nproc)"
# Install what a user types (prefix /usr/local; `cmake --build build --target
# uninstall` removes it again): sbx and sbx-runc, sbx-pause, the man pages,
# bash/zsh/fish completions and the Python SDK (`import sbx`).
cmake --install build >build/install.log
echo "setup.sh: installed sbx, sbx-runc, man pages, completions and the Python SDK under $(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' build/CMakeCache.txt) (list: build/install_manifest.txt)"
# Real OCI test images (busybox, python), built with umoci/skopeo/debootstrap;
# cached, so a second run is instant.
tests/images/build.sh
# The languages image of the sandbox-fusion test (g++, nodejs, python3 with
# numpy/scipy/pandas/sympy/pytest; tests/images/langs.sh), same cache.
# Not fatal: without it that test skips its real-image cases and says so.
tests/images/langs.sh || echo "setup.sh: the langs test image was not built; test_sandbox_fusion skips its real-compiler cases" >&2
# The main job: import the python image into the default store and run python
# in a sandbox (isolated: no network, a timeout and a memory limit).
sbx import tests/images/out/python-oci python
sbx run --network none --timeout 10s --memory 256m python -- \
  python3 -c 'import platform, sys; print("hello from a sandbox: python", sys.version.split()[0], "on", platform.node())'

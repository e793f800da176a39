#!/usr/bin/env bash
# Builds CRIU 4.1.1 from Debian 13 (trixie)'s source package on Debian 12 and
# installs it under sbx's own prefix (/usr/local/lib/sbx/criu/sbin/criu), where
# sbx looks first (runtime/native/criu.h). Debian 12's own CRIU (3.17) cannot
# parse the vDSO of newer kernels and fails `criu check`; 4.1 works.
#  - The source comes through apt (`apt-get source`, so apt checks it against
#    trixie's signed Sources index) from a deb-src-only sources file of its
#    own, with apt lists and cache of its own under $cache: the machine's apt
#    configuration is not touched and no binary package comes from trixie.
#  - The build dependencies are Debian 12's own packages (below).
#  - Cached: when the installed criu already is $version, nothing is done.
# Run as root. SBX_DEBIAN_MIRROR overrides the mirror; SBX_CRIU_PREFIX the prefix.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then echo "criu-build.sh: run as root" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
version=4.1.1
prefix=${SBX_CRIU_PREFIX:-/usr/local/lib/sbx/criu}
cache=${SBX_CRIU_CACHE:-/var/cache/sbx/criu}
start=$(date +%s)

if [ -x "$prefix/sbin/criu" ] && "$prefix/sbin/criu" --version 2>/dev/null | grep -q "Version: $version\$"; then
  echo "criu-build.sh: CRIU $version already in $prefix (cached)" >&2
  exit 0
fi

# Debian 12's packages that CRIU's build needs (trixie's Build-Depends, less
# what only its documentation, Python bindings and plugins need).
deps="build-essential pkg-config libbsd-dev libcap-dev libgnutls28-dev libnet1-dev libnftables-dev libnl-3-dev
      libprotobuf-c-dev libprotobuf-dev protobuf-c-compiler protobuf-compiler uuid-dev xz-utils dpkg-dev"
missing=$(for p in $deps; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done)
if [ -n "$missing" ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $deps >/dev/null
fi

source "$(dirname "$0")/debian-mirror.sh"
mirror=${SBX_DEBIAN_MIRROR:-$(find_mirror 2>/dev/null | head -n1 || true)}
if [ -z "$mirror" ]; then
  echo "criu-build.sh: no Debian 'bookworm' source found in /etc/apt/sources.list{,.d/} to take the mirror from; set SBX_DEBIAN_MIRROR=http://<your mirror>/debian" >&2
  exit 1
fi

mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" "$cache/src"
cat >"$cache/sbx-trixie-src.sources" <<EOF
# Written by sbx .ci/criu-build.sh: trixie's sources only (deb-src), for CRIU's source package.
Types: deb-src
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(-o "Dir::Etc::SourceList=$cache/sbx-trixie-src.sources" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt/cache")
apt-get "${apt_opts[@]}" update -qq
cd "$cache/src"
rm -rf "criu-$version"
# The .dsc and Debian's patches when the mirror has them; some mirrors and
# caches serve only the upstream tarball, which apt has verified all the same.
apt-get "${apt_opts[@]}" source -qq --download-only "criu=$version-1" >/dev/null 2>&1 ||
  apt-get "${apt_opts[@]}" source -qq --download-only "criu" >/dev/null 2>&1 || true
if ls criu_"$version"-*.dsc >/dev/null 2>&1; then
  dpkg-source -x --no-check "$(ls criu_"$version"-*.dsc | tail -n1)" "criu-$version" >/dev/null
elif [ -f "criu_$version.orig.tar.xz" ]; then
  echo "criu-build.sh: the mirror has no criu_$version .dsc; building the upstream tarball apt fetched (criu_$version.orig.tar.xz)" >&2
  tar xf "criu_$version.orig.tar.xz"
else
  echo "criu-build.sh: apt-get source criu found no criu $version in trixie's sources on $mirror" >&2
  exit 1
fi
cd "criu-$version"
# Only the criu binary (no docs, plugins or Python bindings).
make -j"$(nproc)" criu V=0 >build.log 2>&1 || { tail -n 30 build.log >&2; exit 1; }
install -D -m 0755 criu/criu "$prefix/sbin/criu"
cd .. && rm -rf "criu-$version"   # the tarball stays (apt's cache of it)
"$prefix/sbin/criu" --version >&2
echo "criu-build.sh: CRIU $version built and installed in $prefix/sbin/criu in $(( $(date +%s) - start )) s" >&2

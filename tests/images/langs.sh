#!/usr/bin/env bash
# Builds the OCI test images of sbx serve --sandbox-fusion's languages from
# Debian packages with standard tools (debootstrap, umoci), never with sbx
# itself, so /run_code's compile and run steps are tested on real compilers
# and interpreters (the python, pytest, cpp and nodejs entries of --languages
# point at "langs"; docs/sandbox-fusion.md):
#
#   langs        bookworm minbase + g++, nodejs, python3 and the libraries
#                SandboxFusion's python runtime has that Debian packages
#                (numpy, scipy, pandas, sympy, networkx, pytest, …).
#   langs-extra  bookworm minbase + the languages asked for with --with
#                (go: golang-go, java: default-jdk-headless, rust: rustc);
#                big, so not built unless asked (CI does not build it).
#
# Written as OUT/NAME-oci (OCI layout, tag latest; import it with
# `sbx import OUT/NAME-oci NAME`); OUT is $SBX_IMAGES, else tests/images/out.
# Cached like build.sh: an image whose stamp matches this script (and, for
# langs-extra, the --with list) is not rebuilt; the .debs are kept under
# $SBX_IMAGES_CACHE (default tests/images/cache), so a rebuild downloads nothing.
# Usage: langs.sh [--with go,java,rust]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${SBX_IMAGES:-$here/out}
cache=${SBX_IMAGES_CACHE:-$here/cache}
suite=bookworm
with=""
while [ $# -gt 0 ]; do
  case "$1" in
    --with) [ $# -ge 2 ] || { echo "langs.sh: --with needs a list (go,java,rust)" >&2; exit 2; }; with=$2; shift 2 ;;
    --with=*) with=${1#--with=}; shift ;;
    *) echo "langs.sh: unknown argument $1 (usage: langs.sh [--with go,java,rust])" >&2; exit 2 ;;
  esac
done
extra=""
for l in ${with//,/ }; do
  case "$l" in
    go) extra="$extra,golang-go" ;;
    java) extra="$extra,default-jdk-headless" ;;
    rust) extra="$extra,rustc" ;;
    *) echo "langs.sh: --with: unknown language '$l' (known: go, java, rust)" >&2; exit 2 ;;
  esac
done
# The mirror build.sh uses (its apt_mirror: this machine's apt sources).
eval "$(sed -n '/^apt_mirror() {/,/^}/p' "$here/build.sh")"
mirror=${SBX_DEBIAN_MIRROR:-$(apt_mirror "${SBX_APT_ETC:-/etc/apt}" "$suite" || true)}
[ -n "$mirror" ] || { echo "langs.sh: no Debian mirror found; set SBX_DEBIAN_MIRROR" >&2; exit 1; }
for t in debootstrap umoci; do
  command -v $t >/dev/null || { echo "langs.sh: $t is missing (apt-get install $t)" >&2; exit 1; }
done
mkdir -p "$out" "$cache/debootstrap"
script_hash=$(sha256sum "$0" | cut -d' ' -f1)

build() {  # NAME PACKAGES CMD [apt]
  # With "apt", PACKAGES are installed by apt-get in the debootstrapped root
  # rather than by debootstrap --include, whose configure order cannot do
  # default-jdk-headless (ca-certificates-java's postinst before the JRE).
  local n=$1 packages=$2 cmd=$3 how=${4:-include} hash work r start include
  hash=$(printf '%s %s\n' "$script_hash" "$packages" | sha256sum | cut -d' ' -f1)
  if [ -d "$out/$n-oci" ] && [ "$(cat "$out/.stamp-$n" 2>/dev/null)" = "$hash" ]; then
    echo "langs.sh: $n up to date in $out" >&2; return 0
  fi
  exec 9>"$out/.lock-$n"
  flock 9
  start=$(date +%s)
  work=$(mktemp -d "$out/.work-$n.XXXXXX")
  # shellcheck disable=SC2064  # expand $work now: the trap outlives this function's locals
  trap "{ findmnt -rn -o TARGET | grep -F '$work/' | sort -r | while read -r m; do umount -l \"\$m\" || true; done; } || true; rm -rf '$work'" EXIT
  r=$work/rootfs
  echo "langs.sh: $n: debootstrap $suite minbase + $packages from $mirror (minutes)" >&2
  include=$packages; [ "$how" = apt ] && include=ca-certificates
  debootstrap --variant=minbase --include="$include" --cache-dir="$cache/debootstrap" "$suite" "$r" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -30 "$r/debootstrap/debootstrap.log" "$work/debootstrap.log" >&2 || true; echo "langs.sh: $n: debootstrap failed" >&2; exit 1; }
  if [ "$how" = apt ]; then
    # apt's downloads go to the same cache (bind-mounted; unmounted by the trap on failure).
    mkdir -p "$cache/apt/partial"
    mount --bind "$cache/apt" "$r/var/cache/apt/archives"
    mount -t proc proc "$r/proc"
    { chroot "$r" apt-get update -q && DEBIAN_FRONTEND=noninteractive chroot "$r" apt-get install -y -q --no-install-recommends ${packages//,/ }; } \
      >"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log" >&2; echo "langs.sh: $n: apt-get install failed" >&2; exit 1; }
    umount "$r/proc" "$r/var/cache/apt/archives"
  fi
  rm -rf "$r"/var/cache/apt/* "$r"/var/lib/apt/lists/* "$r"/usr/share/doc/* "$r"/usr/share/man/* \
    "$r"/usr/share/info/* "$r"/usr/share/locale/* "$r"/var/log/* "$r"/dev/* "$r"/proc/* "$r"/sys/* \
    "$r"/run/* "$r"/tmp/* "$r"/var/tmp/*
  # __pycache__ stays: each request is a fresh sandbox, so without the .pyc
  # files every request would compile numpy/pandas/sympy's sources again
  # (seconds: past a 10 s run_timeout on a loaded host).
  umoci init --layout "$work/layout"
  umoci new --image "$work/layout:latest"
  umoci insert --image "$work/layout:latest" --history.created_by "debootstrap --variant=minbase --include=$packages $suite" "$r" /
  umoci config --image "$work/layout:latest" --no-history \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --config.env LANG=C.UTF-8 \
    --config.cmd "$cmd" --config.workingdir / --config.label "org.opencontainers.image.title=sbx-test-$n"
  umoci gc --layout "$work/layout"
  rm -rf "$out/$n-oci" "$out/.stamp-$n"
  mv "$work/layout" "$out/$n-oci"
  echo "$hash" >"$out/.stamp-$n"
  rm -rf "$work"; trap - EXIT
  exec 9>&-
  echo "langs.sh: $n done in $(($(date +%s) - start)) s ($(du -sh "$out/$n-oci" | cut -f1) in $out/$n-oci)" >&2
}

build langs g++,nodejs,python3,python3-numpy,python3-scipy,python3-pandas,python3-sympy,python3-networkx,python3-pytest,python3-dateutil,python3-regex /usr/bin/python3
[ -z "$extra" ] || build langs-extra "${extra#,}" /bin/bash apt

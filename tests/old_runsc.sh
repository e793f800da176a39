#!/usr/bin/env bash
# Fetches Debian 12's own runsc (0.0~20221219, the release without --nvproxy
# and with the exec -t bug) next to the current one, so that tests cover sbx
# on both: `apt-get download` of the bookworm package, unpacked into
# /var/cache/sbx-test/runsc-20221219/ (cached: a second run only prints the
# path). Prints the binary's path on stdout; exit 1 with the reason on stderr
# when it cannot be had (no bookworm source, no network). Run as root.
# Tests read it from $SBX_OLD_RUNSC or this path and skip, saying why, without it.
set -euo pipefail
want=0.0~20221219.0
dir=${SBX_OLD_RUNSC_DIR:-/var/cache/sbx-test/runsc-20221219}
bin=$dir/runsc
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "$want"; then echo "$bin"; exit 0; fi
ver=$(apt-cache madison runsc 2>/dev/null | awk -v w="$want" '$3 ~ "^" w {print $3; exit}')
if [ -z "$ver" ]; then echo "old_runsc.sh: apt knows no runsc $want (is bookworm in the apt sources? run apt-get update)" >&2; exit 1; fi
tmp=$(mktemp -d /tmp/sbx-old-runsc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"   # apt-get download drops to _apt, which must write here
( cd "$tmp" && apt-get download -qq "runsc=$ver" >/dev/null 2>&1 ) ||
  { echo "old_runsc.sh: apt-get download runsc=$ver failed (no network?)" >&2; exit 1; }
dpkg-deb -x "$tmp"/runsc_*.deb "$tmp/x"
mkdir -p "$dir"
install -m 755 "$tmp/x/usr/bin/runsc" "$bin.new" && mv -f "$bin.new" "$bin"
echo "$bin"

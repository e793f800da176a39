#!/usr/bin/env bash
# Installs runsc (gVisor) from Debian's bookworm-backports suite, and nothing
# else from it: bookworm's runsc (0.0~20221219) has no --nvproxy (GPUs under
# gVisor) and no --overlay2 size option; backports ships 0.0~20240729.
#  - The suite goes in a sources file of its own (sbx-backports.sources) on the
#    same mirror as the machine's own bookworm sources (no host hard-coded).
#  - A pin (preferences.d/sbx-runsc) gives backports priority 100 for every
#    package except runsc (990), so apt never upgrades anything else from it.
# Idempotent: a second run rewrites the same two files and installs nothing.
# Run as root. SBX_DEBIAN_MIRROR overrides the mirror.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then echo "runsc-backports.sh: run as root" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive

source "$(dirname "$0")/debian-mirror.sh"
mirror=${SBX_DEBIAN_MIRROR:-$(find_mirror 2>/dev/null | head -n1 || true)}
if [ -z "$mirror" ]; then
  echo "runsc-backports.sh: no Debian 'bookworm' source found in /etc/apt/sources.list{,.d/} to take the mirror from; set SBX_DEBIAN_MIRROR=http://<your mirror>/debian" >&2
  exit 1
fi

src=/etc/apt/sources.list.d/sbx-backports.sources
pin=/etc/apt/preferences.d/sbx-runsc
want_src="# Written by sbx .ci/runsc-backports.sh: bookworm-backports for runsc only (see $pin).
Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
want_pin="# Written by sbx .ci/runsc-backports.sh: only runsc comes from bookworm-backports.
Package: *
Pin: release n=bookworm-backports
Pin-Priority: 100

Package: runsc
Pin: release n=bookworm-backports
Pin-Priority: 990"
changed=0
if [ "$(cat "$src" 2>/dev/null)" != "$want_src" ]; then printf '%s\n' "$want_src" >"$src"; changed=1; fi
if [ "$(cat "$pin" 2>/dev/null)" != "$want_pin" ]; then printf '%s\n' "$want_pin" >"$pin"; changed=1; fi

have=$(dpkg-query -W -f='${Version}' runsc 2>/dev/null || true)
need=0   # none, or older than backports' build (bookworm's 20221219): install
if [ -z "$have" ] || dpkg --compare-versions "$have" lt 0.0~20240729; then need=1; fi
policy=$(apt-cache policy runsc 2>/dev/null || true)
if [ "$changed" = 1 ] || { [ "$need" = 1 ] && [[ "$policy" != *bookworm-backports* ]]; }; then
  apt-get update -qq
fi
if [ "$need" = 1 ]; then
  apt-get install -y -qq --no-install-recommends -t bookworm-backports runsc >/dev/null
fi
echo "runsc-backports.sh: $(runsc --version | head -n1) (from $mirror bookworm-backports)" >&2

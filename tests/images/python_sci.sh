#!/usr/bin/env bash
# Builds the "python-sci" OCI test image from Debian packages with standard
# tools (debootstrap, umoci, skopeo), never with sbx itself: Debian bookworm
# minbase + python3 and the libraries SandboxFusion's python runtime has that
# Debian packages (numpy, scipy, pandas, sympy, networkx, pytest, …), so
# rewards that import them run under `sbx serve --sandbox-fusion` (the
# python entry of --languages points at it; docs/sandbox-fusion.md).
#
# Written as OUT/python-sci-oci (layout, tag latest), OUT/python-sci.oci.tar
# and OUT/python-sci.docker.tar; OUT is $SBX_IMAGES, else tests/images/out.
# A separate script from build.sh (whose hash stamps the base images), cached
# the same way: outputs with a stamp matching this script are not rebuilt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${SBX_IMAGES:-$here/out}
cache=${SBX_IMAGES_CACHE:-$here/cache}
suite=bookworm
packages=python3,python3-numpy,python3-scipy,python3-pandas,python3-sympy,python3-networkx,python3-pytest,python3-dateutil,python3-regex
# The mirror build.sh uses (its apt_mirror: this machine's apt sources).
eval "$(sed -n '/^apt_mirror() {/,/^}/p' "$here/build.sh")"
mirror=${SBX_DEBIAN_MIRROR:-$(apt_mirror "${SBX_APT_ETC:-/etc/apt}" "$suite" || true)}
[ -n "$mirror" ] || { echo "python_sci.sh: no Debian mirror found; set SBX_DEBIAN_MIRROR" >&2; exit 1; }
for t in debootstrap umoci skopeo; do
  command -v $t >/dev/null || { echo "python_sci.sh: $t is missing (apt-get install $t)" >&2; exit 1; }
done
mkdir -p "$out" "$cache/debootstrap"
hash=$(sha256sum "$0" | cut -d' ' -f1)
n=python-sci
if [ -d "$out/$n-oci" ] && [ "$(cat "$out/.stamp-$n" 2>/dev/null)" = "$hash" ]; then
  echo "python_sci.sh: up to date in $out" >&2; exit 0
fi
exec 9>"$out/.lock-$n"
flock 9
work=$(mktemp -d "$out/.work-$n.XXXXXX")
cleanup() {
  { findmnt -rn -o TARGET | grep -F "$work/" | sort -r | while read -r m; do umount -l "$m" || true; done; } || true
  rm -rf "$work"
}
trap cleanup EXIT
r=$work/rootfs
echo "python_sci.sh: debootstrap $suite minbase + $packages from $mirror (a few minutes)" >&2
debootstrap --variant=minbase --include="$packages" --cache-dir="$cache/debootstrap" "$suite" "$r" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || { tail -30 "$work/debootstrap.log" >&2; echo "python_sci.sh: debootstrap failed" >&2; exit 1; }
rm -rf "$r"/var/cache/apt/* "$r"/var/lib/apt/lists/* "$r"/usr/share/doc/* "$r"/usr/share/man/* \
  "$r"/usr/share/info/* "$r"/usr/share/locale/* "$r"/var/log/* "$r"/dev/* "$r"/proc/* "$r"/sys/* \
  "$r"/run/* "$r"/tmp/* "$r"/var/tmp/*
find "$r" -name __pycache__ -prune -exec rm -rf {} +
umoci init --layout "$work/layout"
umoci new --image "$work/layout:latest"
umoci insert --image "$work/layout:latest" --history.created_by "debootstrap --variant=minbase --include=$packages $suite" "$r" /
umoci config --image "$work/layout:latest" --no-history \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --config.env LANG=C.UTF-8 \
  --config.cmd /usr/bin/python3 --config.workingdir / --config.label org.opencontainers.image.title=sbx-test-python-sci
skopeo --insecure-policy copy -q "oci:$work/layout:latest" "oci-archive:$work/$n.oci.tar:latest"
skopeo --insecure-policy copy -q "oci:$work/layout:latest" "docker-archive:$work/$n.docker.tar:$n:latest"
umoci gc --layout "$work/layout"
rm -rf "$out/$n-oci" "$out/$n.oci.tar" "$out/$n.docker.tar" "$out/.stamp-$n"
mv "$work/layout" "$out/$n-oci"
mv "$work/$n.oci.tar" "$out/$n.oci.tar"
mv "$work/$n.docker.tar" "$out/$n.docker.tar"
echo "$hash" >"$out/.stamp-$n"
echo "python_sci.sh: done ($(du -sh "$out/$n-oci" | cut -f1) in $out/$n-oci)" >&2

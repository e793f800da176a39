#!/usr/bin/env bash
# Builds the real OCI test images from Debian packages with standard tools
# (umoci, skopeo, debootstrap), never with sbx itself:
#
#   busybox  busybox-static, 3 layers: (1) the rootfs, (2) a whiteout that
#            deletes /etc/sbx-test/removed of layer 1, (3) an opaque dir
#            /opt/opaque that hides layer 1's old1/old2 and shows only "new".
#            Layer 1 also holds a hard link (/bin/busybox-hardlink).
#   python   Debian bookworm minbase (debootstrap) + python3, apt caches/docs removed.
#
# Each is written three ways, so every import path is tested on real data:
#   OUT/NAME-oci/          OCI image layout directory, tag "latest"
#   OUT/NAME.oci.tar       oci-archive
#   OUT/NAME.docker.tar    docker-archive ("docker save" format)
#
# OUT is $SBX_IMAGES, else tests/images/out. Cached: an image whose outputs
# exist and whose stamp matches this script's sha256 is not rebuilt, so a second
# run is instant. Usage: build.sh [busybox] [python]   (default: both)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${SBX_IMAGES:-$here/out}
cache=${SBX_IMAGES_CACHE:-$here/cache}
suite=bookworm
# The Debian mirror debootstrap fetches from: SBX_DEBIAN_MIRROR, else the one
# this machine's own apt uses for $suite (so a host behind a local mirror or a
# proxy builds with no extra setup). Reads the one-line format
# (sources.list, sources.list.d/*.list: "deb [opts] URI SUITE COMPONENTS")
# and the deb822 format (sources.list.d/*.sources: Types/URIs/Suites
# paragraphs, sources.list(5)); prints the first URI that serves $suite.
apt_mirror() {  # ETC_APT SUITE
  local etc=$1 suite=$2 f
  for f in "$etc/sources.list" "$etc"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" |
      awk -v s="$suite" '$1 == "deb" && $3 == s {print $2; exit}'
  done
  for f in "$etc"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # Paragraphs are separated by blank lines; field names are case-insensitive.
    awk -v s="$suite" '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " s " ") && tolower(enabled) != "no" && uris != "") {
          split(uris, u, " "); print u[1]; found = 1
        }
        types = uris = suites = enabled = ""
      }
      /^[ \t]*#/ {next}
      /^[ \t]*$/ {flush(); if (found) exit; next}
      {
        key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
        if (key == "types") types = $0; else if (key == "uris") uris = $0
        else if (key == "suites") suites = $0; else if (key == "enabled") enabled = $0
      }
      END {if (!found) flush()}' "$f"
  done | head -n 1
}
mirror=${SBX_DEBIAN_MIRROR:-$(apt_mirror "${SBX_APT_ETC:-/etc/apt}" "$suite" || true)}
mkdir -p "$out" "$cache"
script_hash=$(sha256sum "$0" | cut -d' ' -f1)

for tool in umoci skopeo; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool is missing; install it (apt-get install $tool) or run tests/setup.sh" >&2; exit 1; }
done

# One builder at a time per output dir (several worktrees/engineers may run this).
exec 9>"$out/.lock"
flock 9

up_to_date() {  # NAME
  local n=$1
  [ -d "$out/$n-oci" ] && [ -f "$out/$n.oci.tar" ] && [ -f "$out/$n.docker.tar" ] &&
    [ "$(cat "$out/.stamp-$n" 2>/dev/null)" = "$script_hash" ]
}

work=""
cleanup() {
  if [ -n "$work" ] && [ -d "$work" ]; then
    # debootstrap mounts proc/sys inside its target; never leave one behind.
    findmnt -rn -o TARGET | grep -F "$work/" | sort -r | while read -r m; do umount -l "$m" || true; done
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# Writes the layout dir plus its two archives from "$work/layout" atomically.
publish() {  # NAME
  local n=$1
  echo "build.sh: $n: writing oci-archive and docker-archive" >&2
  skopeo --insecure-policy copy -q "oci:$work/layout:latest" "oci-archive:$work/$n.oci.tar:latest"
  skopeo --insecure-policy copy -q "oci:$work/layout:latest" "docker-archive:$work/$n.docker.tar:$n:latest"
  umoci gc --layout "$work/layout"
  rm -rf "$out/$n-oci" "$out/$n.oci.tar" "$out/$n.docker.tar" "$out/.stamp-$n"
  mv "$work/layout" "$out/$n-oci"
  mv "$work/$n.oci.tar" "$out/$n.oci.tar"
  mv "$work/$n.docker.tar" "$out/$n.docker.tar"
  echo "$script_hash" >"$out/.stamp-$n"
  echo "build.sh: $n: done ($(du -sh "$out/$n-oci" | cut -f1) in $out/$n-oci)" >&2
}

build_busybox() {
  local bb
  bb=$(dpkg -L busybox-static 2>/dev/null | grep -m1 '/bin/busybox$' || command -v busybox)
  # ldd fails on a static binary ("not a dynamic executable"); `file` may not be installed.
  if ldd "$bb" >/dev/null 2>&1; then echo "build.sh: $bb is not static; install busybox-static" >&2; exit 1; fi
  work=$(mktemp -d "$out/.work-busybox.XXXXXX")
  local r=$work/rootfs
  mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc/sbx-test,tmp,root,home,dev,proc,sys,opt/opaque,var/tmp}
  chmod 1777 "$r/tmp" "$r/var/tmp"
  chmod 0700 "$r/root"
  install -m 0755 "$bb" "$r/bin/busybox"
  ln "$r/bin/busybox" "$r/bin/busybox-hardlink"
  for a in $("$bb" --list); do
    [ -e "$r/bin/$a" ] || ln -s busybox "$r/bin/$a"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
  echo "this file is deleted by a whiteout in layer 2" >"$r/etc/sbx-test/removed"
  echo "this file stays" >"$r/etc/sbx-test/kept"
  echo old1 >"$r/opt/opaque/old1"
  echo old2 >"$r/opt/opaque/old2"
  # The opaque layer is a plain tar made with GNU tar and added verbatim:
  # umoci 0.4.7's "insert --opaque" writes a truncated tar (no padding, no end blocks).
  mkdir -p "$work/opq/opt/opaque"
  : >"$work/opq/opt/opaque/.wh..wh..opq"
  echo new >"$work/opq/opt/opaque/new"
  tar --numeric-owner --owner=0 --group=0 -C "$work/opq" -cf "$work/opaque.tar" opt/opaque

  umoci init --layout "$work/layout"
  umoci new --image "$work/layout:latest"
  umoci insert --image "$work/layout:latest" --history.created_by "busybox-static rootfs" "$r" /
  umoci insert --image "$work/layout:latest" --history.created_by "whiteout /etc/sbx-test/removed" \
    --whiteout /etc/sbx-test/removed
  umoci raw add-layer --image "$work/layout:latest" --history.created_by "opaque /opt/opaque" "$work/opaque.tar"
  umoci config --image "$work/layout:latest" --no-history \
    --config.env PATH=/usr/sbin:/usr/bin:/sbin:/bin --config.cmd /bin/sh --config.workingdir / \
    --config.label org.opencontainers.image.title=sbx-test-busybox
  publish busybox
  rm -rf "$work"; work=""
}

build_python() {
  command -v debootstrap >/dev/null || { echo "build.sh: debootstrap is missing; apt-get install debootstrap" >&2; exit 1; }
  work=$(mktemp -d "$out/.work-python.XXXXXX")
  local r=$work/rootfs
  mkdir -p "$cache/debootstrap"
  [ -n "$mirror" ] || { echo "build.sh: no apt source for Debian $suite in ${SBX_APT_ETC:-/etc/apt}/sources.list{,.d/*.list,.d/*.sources}; set SBX_DEBIAN_MIRROR=URL of a Debian mirror" >&2; exit 1; }
  echo "build.sh: python: debootstrap $suite minbase + python3 from $mirror (about a minute)" >&2
  debootstrap --variant=minbase --include=python3 --cache-dir="$cache/debootstrap" \
    "$suite" "$r" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -30 "$work/debootstrap.log" >&2; echo "build.sh: debootstrap failed" >&2; exit 1; }
  # Keep it small and image-like: no caches, docs, device nodes or logs.
  rm -rf "$r"/var/cache/apt/* "$r"/var/lib/apt/lists/* "$r"/usr/share/doc/* "$r"/usr/share/man/* \
    "$r"/usr/share/info/* "$r"/usr/share/locale/* "$r"/var/log/* "$r"/dev/* "$r"/proc/* "$r"/sys/* \
    "$r"/run/* "$r"/tmp/* "$r"/var/tmp/*
  find "$r" -name __pycache__ -prune -exec rm -rf {} +

  umoci init --layout "$work/layout"
  umoci new --image "$work/layout:latest"
  echo "build.sh: python: packing the layer" >&2
  umoci insert --image "$work/layout:latest" --history.created_by "debootstrap --variant=minbase --include=python3 bookworm" "$r" /
  umoci config --image "$work/layout:latest" --no-history \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --config.env LANG=C.UTF-8 \
    --config.cmd /usr/bin/python3 --config.workingdir / \
    --config.label org.opencontainers.image.title=sbx-test-python
  publish python
  rm -rf "$work"; work=""
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(busybox python)
for t in "${targets[@]}"; do
  case $t in
    busybox|python)
      if up_to_date "$t"; then echo "build.sh: $t: up to date in $out" >&2; else "build_$t"; fi ;;
    *) echo "build.sh: unknown image '$t' (known: busybox python)" >&2; exit 2 ;;
  esac
done

#!/bin/bash
# sbx build beside podman build (Debian's podman 4.3 with buildah inside) and
# `buildah bud` (Debian's buildah 1.28, --layers, --isolation chroot; when
# installed) on the same Dockerfiles and contexts, interleaved (each round
# runs every measurement of every tool back to back, rotating which goes
# first), so that load on a shared host hits them alike:
#
#   python   a small Python project on the python test image: WORKDIR, COPY
#            of requirements and 40 modules, RUN python3 -m compileall, ENV, CMD
#   gcc      a multi-stage C program: gcc -O2 -static in a gcc image, the
#            binary copied onto busybox (the gcc step is the same work for both)
#   steps20  20 steps that do almost nothing (RUN true, ENV, LABEL, WORKDIR, small
#            COPY): the per-step overhead
#
# Each is measured cold (--no-cache), fully cached (the same build again) and
# after a one-file change (a copied file edited, then rebuilt with the cache).
# Every tool's image is run once first and its output checked.
#
#   bench/build.sh [ROUNDS]          (default 5)
# Environment: SBX (build/sbx), SBX_IMAGES (tests/images/out; busybox and
# python), BENCH_WORK (bench/work: where the gcc image is made once with
# debootstrap + umoci, as tests/images/build.sh makes the others). Needs root,
# podman, runc, umoci, skopeo, debootstrap; buildah is optional. Every store
# is the run's own; base images come from the test images' oci-archives (no
# registry). Prints the table of medians and sbx ÷ podman (and ÷ buildah)
# ratios (below 1: sbx faster) and writes it to bench/results/<date>-build.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
ROUNDS=${1:-5}
SBX=$(realpath "${SBX:-$SRC/build/sbx}")
IMAGES=${SBX_IMAGES:-$SRC/tests/images/out}
WORK=${BENCH_WORK:-$HERE/work}
export CONTAINERS_REGISTRIES_CONF=$SRC/tests/data/registries-offline.conf
for t in podman runc umoci skopeo; do
  command -v $t >/dev/null || { echo "bench/build.sh: $t is missing" >&2; exit 1; }
done
[ -d "$IMAGES/busybox-oci" ] && [ -d "$IMAGES/python-oci" ] || { echo "bench/build.sh: run tests/images/build.sh first" >&2; exit 1; }

# --- the gcc image (once): Debian minbase + gcc + libc6-dev.
GCC_TAR=$WORK/images/gcc.oci.tar
if [ ! -f "$GCC_TAR" ]; then
  command -v debootstrap >/dev/null || { echo "bench/build.sh: debootstrap is missing" >&2; exit 1; }
  mirror=${SBX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  g=$(mktemp -d /tmp/sbx-bench-gcc.XXXXXX)
  trap 'rm -rf "$g"' EXIT
  echo "bench/build.sh: making the gcc image (debootstrap bookworm + gcc libc6-dev from $mirror)" >&2
  debootstrap --variant=minbase --include=gcc,libc6-dev bookworm "$g/rootfs" "$mirror" >"$g/log" 2>&1 ||
    { tail -20 "$g/log" >&2; exit 1; }
  rm -rf "$g"/rootfs/var/cache/apt/* "$g"/rootfs/var/lib/apt/lists/* "$g"/rootfs/usr/share/doc/* \
    "$g"/rootfs/usr/share/man/* "$g"/rootfs/usr/share/locale/* "$g"/rootfs/dev/* "$g"/rootfs/proc/* "$g"/rootfs/sys/*
  umoci init --layout "$g/layout"
  umoci new --image "$g/layout:latest"
  umoci insert --image "$g/layout:latest" "$g/rootfs" /
  umoci config --image "$g/layout:latest" --no-history --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.cmd /bin/bash --config.workingdir /
  mkdir -p "$WORK/images"
  skopeo --insecure-policy copy -q "oci:$g/layout:latest" "oci-archive:$GCC_TAR.new:latest"
  mv "$GCC_TAR.new" "$GCC_TAR"
  rm -rf "$g"; trap - EXIT
fi

T=$(mktemp -d /tmp/sbx-bench-build.XXXXXX)
PODMAN=(podman --root "$T/podman/root" --runroot "$T/podman/run" --storage-driver overlay --runtime runc
  --cgroup-manager=cgroupfs)
PODMAN_BUILD=(build --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
# buildah alone: its own store (a cache shared with podman's would let one
# tool's build warm the other's); chroot isolation needs no runtime or cgroups.
TOOLS=(sbx podman)
HAVE_BUILDAH=0
if command -v buildah >/dev/null; then HAVE_BUILDAH=1; TOOLS+=(buildah); else echo "bench/build.sh: buildah is missing: sbx and podman only" >&2; fi
BUILDAH=(buildah --root "$T/buildah/root" --runroot "$T/buildah/run" --storage-driver overlay)
BUILDAH_BUD=(bud --layers --isolation chroot --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
cleanup() {
  local rc=$?
  "${PODMAN[@]}" system reset -f >/dev/null 2>&1 || true
  if [ "$HAVE_BUILDAH" = 1 ]; then
    "${BUILDAH[@]}" rm -a >/dev/null 2>&1 || true
    "${BUILDAH[@]}" rmi -a -f >/dev/null 2>&1 || true
  fi
  { grep -o " $T/[^ ]*" /proc/self/mountinfo || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # (podman's storage may still be letting go of a mount: try again)
  rm -rf "$T" 2>/dev/null || { sleep 2; rm -rf "$T"; } || true
  exit "$rc"
}
trap cleanup EXIT
S=("$SBX" --root "$T/sbx/root" --run-root "$T/sbx/run")

# Base images in both stores, as localhost/NAME (which both resolve without a registry).
for n in busybox python gcc; do
  tar=$IMAGES/$n.oci.tar
  [ $n = gcc ] && tar=$GCC_TAR
  "${S[@]}" import -q "$tar" "$n" >/dev/null
  id=$("${PODMAN[@]}" pull -q "oci-archive:$tar")
  "${PODMAN[@]}" tag "$id" "localhost/$n:latest"
  if [ "$HAVE_BUILDAH" = 1 ]; then
    id=$("${BUILDAH[@]}" pull -q "oci-archive:$tar")
    "${BUILDAH[@]}" tag "$id" "localhost/$n:latest"
  fi
done

# --- the projects.
P=$T/proj
mkdir -p "$P/python/src" "$P/gcc" "$P/steps20"
printf 'requests-not-installed==0\n' >"$P/python/requirements.txt"
for i in $(seq 1 40); do
  printf 'def f%d(x):\n    return [x * k for k in range(%d)]\n' "$i" "$i" >"$P/python/src/mod_$i.py"
done
printf 'import src.mod_7 as m\nprint(sum(m.f7(3)))\n' >"$P/python/src/main.py"
: >"$P/python/src/__init__.py"
cat >"$P/python/Dockerfile" <<'EOF'
FROM localhost/python
WORKDIR /app
COPY requirements.txt .
RUN python3 -c "import sys; print(sys.version_info[:2])" > /app/version.txt
COPY src/ ./src/
RUN python3 -m compileall -q src
ENV APP_ENV=production
CMD ["python3", "-m", "src.main"]
EOF
for i in $(seq 1 6); do
  cat >"$P/gcc/part$i.c" <<EOF
#include "app.h"
long part$i(long n) { long s = 0; for (long k = 0; k < n; ++k) s += (k * $i) % 7; return s; }
EOF
done
{ echo '#pragma once'; for i in $(seq 1 6); do echo "long part$i(long n);"; done; } >"$P/gcc/app.h"
{ echo '#include <stdio.h>'; echo '#include "app.h"'; echo 'int main(void) { long s = 0;'
  for i in $(seq 1 6); do echo "  s += part$i(1000);"; done
  echo '  printf("%ld\n", s); return 0; }'; } >"$P/gcc/main.c"
cat >"$P/gcc/Dockerfile" <<'EOF'
FROM localhost/gcc AS build
WORKDIR /src
COPY app.h *.c ./
RUN gcc -O2 -static -o app *.c
FROM localhost/busybox
COPY --from=build /src/app /usr/local/bin/app
CMD ["/usr/local/bin/app"]
EOF
{
  echo 'FROM localhost/busybox'
  for i in $(seq 1 4); do
    echo "ENV STEP$i=$i"
    echo 'RUN true'
    echo "COPY f$i.txt /data/"
    echo "LABEL step$i=yes"
    echo "WORKDIR /w$i"
  done
} >"$P/steps20/Dockerfile"
sed -i '$d' "$P/steps20/Dockerfile"  # the last WORKDIR gives way to CMD: 20 steps after FROM
echo 'CMD ["cat", "/data/f1.txt"]' >>"$P/steps20/Dockerfile"
for i in $(seq 1 4); do echo "file $i" >"$P/steps20/f$i.txt"; done
declare -A CHANGE=([python]=src/mod_7.py [gcc]=part3.c [steps20]=f3.txt)

sbx_build() { "${S[@]}" build -q "$@" >/dev/null; }
podman_build() { "${PODMAN[@]}" "${PODMAN_BUILD[@]}" -q "$@" >/dev/null; }
buildah_build() { "${BUILDAH[@]}" "${BUILDAH_BUD[@]}" -q "$@" >/dev/null; }
# What buildah's image prints: its Cmd run in a working container (chroot).
buildah_output() {
  local c cmd
  c=$("${BUILDAH[@]}" from -q --pull-never "localhost/$1")
  mapfile -t cmd < <("${BUILDAH[@]}" inspect --type image "localhost/$1" |
    python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["OCIv1"]["config"]["Cmd"]))')
  "${BUILDAH[@]}" run --isolation chroot "$c" -- "${cmd[@]}" 2>&1 || true
  "${BUILDAH[@]}" rm "$c" >/dev/null
}
now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

# --- check: both tools build each project and their images print the same.
for p in python gcc steps20; do
  sbx_build -t "bench-$p" "$P/$p"
  podman_build -t "bench-$p" "$P/$p"
  a=$("${S[@]}" run "bench-$p" 2>&1 || true)
  b=$("${PODMAN[@]}" run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "localhost/bench-$p" 2>&1 || true)
  [ -n "$a" ] && [ "$a" = "$b" ] || { echo "bench/build.sh: $p: sbx's image prints '$a', podman's '$b'" >&2; exit 1; }
  if [ "$HAVE_BUILDAH" = 1 ]; then
    buildah_build -t "bench-$p" "$P/$p"
    c=$(buildah_output "bench-$p")
    [ "$a" = "$c" ] || { echo "bench/build.sh: $p: sbx's image prints '$a', buildah's '$c'" >&2; exit 1; }
  fi
done
echo "outputs checked: python '$("${S[@]}" run bench-python)', gcc '$("${S[@]}" run bench-gcc)', steps20 '$("${S[@]}" run bench-steps20)'" >&2

# --- rounds.
R=$T/times
: >"$R"
for r in $(seq "$ROUNDS"); do
  # rotate who goes first: sbx podman buildah, podman buildah sbx, …
  k=$(( (r - 1) % ${#TOOLS[@]} ))
  order=("${TOOLS[@]:k}" "${TOOLS[@]:0:k}")
  for p in python gcc steps20; do
    for phase in cold cached change; do
      if [ $phase = change ]; then
        c="# round $r"; [ $p = gcc ] && c="// round $r"
        echo "$c" >>"$P/$p/${CHANGE[$p]}"
      fi
      for tool in "${order[@]}"; do
        args=(-t "bench-$p")
        [ $phase = cold ] && args+=(--no-cache)
        t0=$(now)
        case $tool in
          sbx) sbx_build "${args[@]}" "$P/$p" ;;
          podman) podman_build "${args[@]}" "$P/$p" ;;
          buildah) buildah_build "${args[@]}" "$P/$p" ;;
        esac
        t1=$(now)
        echo "$r $p $phase $tool $(ms "$t0" "$t1")" >>"$R"
      done
    done
  done
  echo "round $r: $(awk -v r="$r" '$1 == r {printf "%s/%s/%s %s ms  ", $2, $3, $4, $5}' "$R")" >&2
done

mkdir -p "$HERE/results"
OUT=$HERE/results/$(date -u +%Y-%m-%dT%H%MZ)-build.md
python3 - "$R" "$ROUNDS" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY' | tee "$OUT"
import collections, statistics, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, p, phase, tool, ms = line.split()
    times[(p, phase, tool)].append(int(ms))
med = {k: statistics.median(v) for k, v in times.items()}
bud = ("python", "cold", "buildah") in med
print(f"sbx build vs podman build{' and buildah bud' if bud else ''}, medians of {sys.argv[2]} interleaved rounds, ms; "
      f"{sys.argv[3]} cores, load {sys.argv[4]}\n")
if bud:
    print("| project | phase | sbx | podman | buildah | sbx ÷ podman | sbx ÷ buildah |")
    print("|---|---|--:|--:|--:|--:|--:|")
else:
    print("| project | phase | sbx | podman | sbx ÷ podman |")
    print("|---|---|--:|--:|--:|")
for p in ("python", "gcc", "steps20"):
    for phase in ("cold", "cached", "change"):
        s, q = med[(p, phase, "sbx")], med[(p, phase, "podman")]
        if bud:
            b = med[(p, phase, "buildah")]
            print(f"| {p} | {phase} | {s:.0f} | {q:.0f} | {b:.0f} | {s / q:.2f} | {s / b:.2f} |")
        else:
            print(f"| {p} | {phase} | {s:.0f} | {q:.0f} | {s / q:.2f} |")
s, q = med[("steps20", "cold", "sbx")] / 20, med[("steps20", "cold", "podman")] / 20
print(f"\nper-step overhead (steps20 cold ÷ 20): sbx {s:.0f} ms, podman {q:.0f} ms, ratio {s / q:.2f} (target ≤ 0.5)")
if bud:
    b = med[("steps20", "cold", "buildah")] / 20
    print(f"per-step overhead beside buildah bud: buildah {b:.0f} ms, sbx ÷ buildah {s / b:.2f}")
cold = statistics.median([med[(p, "cold", "sbx")] / med[(p, "cold", "podman")] for p in ("python", "gcc", "steps20")])
cached = statistics.median([med[(p, "cached", "sbx")] / med[(p, "cached", "podman")] for p in ("python", "gcc", "steps20")])
print(f"cold: median ratio {cold:.2f} (target ≤ 0.8); fully cached: median ratio {cached:.2f} (target ≤ 0.2)")
PY
echo "written: $OUT" >&2

#!/usr/bin/env bash
# Verifies `sbx run --gpus` on a host with a real NVIDIA GPU and driver (the
# unit tests cover the same code on a fake device tree; this is the check that
# needs real hardware). Run as root from the repository root:
#
#   SBX=build-static/sbx IMAGE=tests/images/out/python-oci tests/gpu/verify_on_gpu_host.sh
#
# SBX    the sbx binary (default: build-static/sbx, else build/sbx, else sbx on PATH)
# IMAGE  a glibc image to import: OCI layout dir, oci-archive or docker-archive
#        (default: tests/images/out/python-oci, the Debian bookworm + python3
#        image tests/images/build.sh makes; it needs glibc for nvidia-smi, and
#        python3 for the nvcc-free CUDA check)
# RUNS   runs per timing sample (default 20)
# RUNSC  runsc for the gVisor pass (default: runsc on PATH); with nvproxy
#        (bookworm-backports' 0.0~20240729 or later) checks 2-5 and 7 run a
#        second time under --runtime gvisor; without one they are skipped,
#        and a runsc without nvproxy must be refused with exit 125
# RUNTIMES  which passes to run (default "native gvisor")
# OUT    if set, a copy of the report is written to $OUT/gpu-report.txt
#
# Checks (each prints PASS/FAIL/SKIP; the exit code is the number of FAILs):
#   1. `sbx info` lists the host's GPUs
#   2. `sbx run --gpus all IMAGE -- nvidia-smi -L` lists exactly the host's GPUs
#   3. `--gpus 0` (and `--gpus 1`, `--gpus <UUID>` when there are 2+ GPUs)
#      lists exactly the selected GPU; CUDA_VISIBLE_DEVICES is its UUID
#   4. without --gpus: no /dev/nvidia*, no nvidia-smi, CUDA finds no device
#   5. a CUDA program runs and its result is checked: tests/gpu/vector_add.cu
#      built with nvcc on this host when nvcc exists; always also the driver-API
#      check tests/gpu/cuda_driver_check.py (PTX JIT through libcuda, no nvcc)
#   6. `--device nvidia.com/gpu=all` (CDI), when a spec exists or nvidia-ctk can
#      generate one into a temporary /var/run/cdi file (removed afterwards)
#   7. timing: `sbx run IMAGE -- true` vs `sbx run --gpus all IMAGE -- true`
#      (hyperfine when installed, else a loop), reported in ms
#   8. --memory and --pids-limit still apply with --gpus (a bounded
#      allocation is OOM-killed: 137; a bounded fork loop hits the limit)
#   9. nothing left behind: no mounts, no state dirs, no sbx cgroups with
#      device rules
#  gVisor (--runtime gvisor, runsc --nvproxy): checks 2-5, 7 and 8 again, plus
#      the checkpoint of a GPU sandbox is refused with nothing written.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

if [ "$(id -u)" -ne 0 ]; then echo "verify_on_gpu_host.sh: run as root" >&2; exit 2; fi
SBX=${SBX:-}
if [ -z "$SBX" ]; then
  for c in build-static/sbx build/sbx "$(command -v sbx || true)"; do [ -n "$c" ] && [ -x "$c" ] && { SBX=$c; break; }; done
fi
[ -n "$SBX" ] && [ -x "$SBX" ] || { echo "verify_on_gpu_host.sh: no sbx binary; set SBX=" >&2; exit 2; }
SBX=$(readlink -f "$SBX")
IMAGE=${IMAGE:-tests/images/out/python-oci}
[ -e "$IMAGE" ] || { echo "verify_on_gpu_host.sh: image $IMAGE not found; set IMAGE= (build it with tests/images/build.sh python)" >&2; exit 2; }
RUNS=${RUNS:-20}
export PATH=$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin

work=$(mktemp -d /tmp/sbx-gpu-verify.XXXXXX)
root=$work/root
runroot=$work/run
cdi_created=""
report=$work/report.txt
cleanup() {
  [ -n "$cdi_created" ] && rm -f "$cdi_created"
  # Nothing of ours may stay mounted.
  findmnt -rn -o TARGET | grep -F "$work/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  [ -n "${OUT:-}" ] && [ -f "$report" ] && cp "$report" "$OUT/gpu-report.txt"
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root" "$runroot"
sbx() { "$SBX" --root "$root" --run-root "$runroot" "$@"; }

fails=0
log() { echo "$*" | tee -a "$report"; }
pass() { log "PASS: $*"; }
fail() { log "FAIL: $*"; fails=$((fails + 1)); }
skip() { log "SKIP: $*"; }

log "sbx: $SBX ($("$SBX" --version 2>&1))"
log "host: $(uname -r), $(grep -m1 'NVRM version' /proc/driver/nvidia/version 2>/dev/null || echo 'no /proc/driver/nvidia/version')"
if ! command -v nvidia-smi >/dev/null; then fail "nvidia-smi is not on this host (PATH=$PATH)"; exit 1; fi
host_list=$(nvidia-smi -L)
ngpu=$(printf '%s\n' "$host_list" | grep -c '^GPU ')
mapfile -t uuids < <(nvidia-smi --query-gpu=uuid --format=csv,noheader)
log "host GPUs ($ngpu):"; log "$host_list"

# The image: `sbx import` into the temporary store; if this sbx build cannot
# import (or run images) yet, unpack the OCI layout's layers with tar and use
# `sbx run --rootfs` (fine for single-layer images such as python-oci).
if sbx import "$IMAGE" gpu-test:latest >"$work/import.log" 2>&1 && sbx run gpu-test:latest -- true >>"$work/import.log" 2>&1; then
  img=(gpu-test:latest)
elif [ -f "$IMAGE/index.json" ]; then
  log "sbx import/run IMAGE unavailable ($(tail -1 "$work/import.log")); unpacking $IMAGE for --rootfs"
  mkdir -p "$work/rootfs"
  python3 - "$IMAGE" "$work/rootfs" <<'PY' || { fail "cannot unpack $IMAGE"; exit 1; }
import json, subprocess, sys
lay, dst = sys.argv[1], sys.argv[2]
blob = lambda d: "%s/blobs/%s" % (lay, d.replace(":", "/"))
m = json.load(open(blob(json.load(open(lay + "/index.json"))["manifests"][0]["digest"])))
for l in m["layers"]:
    subprocess.run(["tar", "-xzf" if l["mediaType"].endswith("gzip") else "-xf", blob(l["digest"]), "-C", dst,
                    "--exclude=.wh.*", "--numeric-owner"], check=True, stderr=subprocess.DEVNULL)
PY
  img=(--rootfs "$work/rootfs")
else
  fail "import $IMAGE: $(cat "$work/import.log")"; exit 1
fi
log "image: ${img[*]}"

# 1. sbx info
info=$(sbx info 2>&1)
if printf '%s\n' "$info" | grep -q "${uuids[0]}"; then pass "sbx info lists GPU 0 (${uuids[0]})"; else fail "sbx info does not list ${uuids[0]}:"$'\n'"$info"; fi
log "$(printf '%s\n' "$info" | sed -n '/^gpus:/,$p')"

# Checks 2-8 for one runtime: R holds its sbx run flags, rt its name.
gpu_checks() {
# 2. --gpus all
out=$(sbx run "${R[@]}" --gpus all "${img[@]}" -- nvidia-smi -L 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | grep '^GPU ' | sed 's/^GPU [0-9]*: //')" = "$(printf '%s\n' "$host_list" | sed 's/^GPU [0-9]*: //')" ]; then
  pass "--gpus all: nvidia-smi -L in the sandbox lists the host's $ngpu GPU(s)"
else
  fail "--gpus all: rc=$rc, output:"$'\n'"$out"
fi
log "$out"

# 3. one GPU at a time
sel_check() {  # SELECTOR EXPECTED_UUID
  local out rc n
  out=$(sbx run "${R[@]}" --gpus "$1" "${img[@]}" -- sh -c 'nvidia-smi -L; echo "CVD=$CUDA_VISIBLE_DEVICES"; ls /dev/nvidia[0-9]*' 2>&1); rc=$?
  n=$(printf '%s\n' "$out" | grep -c '^GPU ')
  if [ $rc -eq 0 ] && [ "$n" -eq 1 ] && printf '%s\n' "$out" | grep -q "^GPU 0: .*$2" &&
     printf '%s\n' "$out" | grep -qx "CVD=$2" && [ "$(printf '%s\n' "$out" | grep -c '^/dev/nvidia[0-9]')" -eq 1 ]; then
    pass "--gpus $1: exactly GPU $2 is visible (one /dev/nvidiaN, CUDA_VISIBLE_DEVICES=$2)"
  else
    fail "--gpus $1: expected only $2; rc=$rc, output:"$'\n'"$out"
  fi
}
sel_check 0 "${uuids[0]}"
if [ "$ngpu" -ge 2 ]; then
  sel_check 1 "${uuids[1]}"
  sel_check "${uuids[1]}" "${uuids[1]}"
else
  skip "--gpus 1: this host has one GPU"
fi
out=$(sbx run "${R[@]}" --gpus "$ngpu" "${img[@]}" -- true 2>&1); rc=$?
if [ $rc -eq 125 ] && printf '%s\n' "$out" | grep -q "out of range"; then pass "--gpus $ngpu: clear error: $out"; else fail "--gpus $ngpu: expected exit 125 'out of range', got rc=$rc: $out"; fi

# 4. no --gpus: nothing visible
out=$(sbx run "${R[@]}" "${img[@]}" -- sh -c 'ls /dev/nvidia* 2>/dev/null; command -v nvidia-smi; python3 -c "import ctypes; ctypes.CDLL(\"libcuda.so.1\")" 2>&1 | tail -1' 2>&1); rc=$?
if ! printf '%s\n' "$out" | grep -q '/dev/nvidia' && ! printf '%s\n' "$out" | grep -q 'bin/nvidia-smi' && printf '%s\n' "$out" | grep -q 'OSError'; then
  pass "without --gpus: no /dev/nvidia*, no nvidia-smi, libcuda.so.1 not loadable"
else
  fail "without --gpus something GPU-related is visible: rc=$rc:"$'\n'"$out"
fi

# 4b. a long-lived sandbox: the GPU reaches an exec (native: the sandbox's pid 1
# is the exec'd static sbx-init, its /dev a fresh tmpfs with the GPU nodes bound in)
if id=$(sbx create "${R[@]}" --gpus 0 "${img[@]}" -- sleep 120 2>"$work/create.err"); then
  out=$(sbx exec "$id" -- sh -c 'nvidia-smi -L; ls /dev/nvidia[0-9]*' 2>&1); rc=$?
  if [ $rc -eq 0 ] && printf '%s
' "$out" | grep -q "^GPU 0: .*${uuids[0]}" && [ "$(printf '%s
' "$out" | grep -c '^/dev/nvidia[0-9]')" -eq 1 ]; then
    pass "create --gpus 0, then exec: nvidia-smi -L lists GPU ${uuids[0]} (one /dev/nvidiaN)"
  else
    fail "create --gpus 0 + exec: rc=$rc, output:"$'\n'"$out"
  fi
  sbx rm -f "$id" >/dev/null 2>&1
elif [ "$rt" = native ]; then
  fail "sbx create --gpus 0 (native): $(tail -3 "$work/create.err")"
else
  skip "$rt: sbx create --gpus not available: $(tail -1 "$work/create.err")"
fi

# 5. CUDA programs
mkdir -p "$work/bin"
cp tests/gpu/cuda_driver_check.py "$work/bin/"
out=$(sbx run "${R[@]}" --gpus 0 -v "$work/bin:/gpu:ro" "${img[@]}" -- python3 /gpu/cuda_driver_check.py 2>&1); rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q '^cuda_driver_check: OK devices=1 '; then pass "CUDA driver API + PTX JIT kernel on GPU 0: $out"; else fail "cuda_driver_check: rc=$rc:"$'\n'"$out"; fi
if command -v nvcc >/dev/null; then
  # libstdc++/libgcc static: the binary must run on the image's older glibc userland.
  if nvcc -O2 -o "$work/bin/vector_add" tests/gpu/vector_add.cu -Xcompiler -static-libstdc++ -Xcompiler -static-libgcc >"$work/nvcc.log" 2>&1; then
    host_out=$("$work/bin/vector_add" 2>&1)
    log "on the host: $host_out"
    out=$(sbx run "${R[@]}" --gpus all -v "$work/bin:/gpu:ro" "${img[@]}" -- /gpu/vector_add 2>&1); rc=$?
    how="the image's libc"
    if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q "version .GLIBC_[0-9.]*' not found"; then
      # Linked against this host's glibc, newer than the image's (python-oci is
      # bookworm's 2.36): run it through the host's loader and libc, copied in
      # beside it; libcuda.so.1 still comes from what --gpus mounted.
      mkdir -p "$work/bin/hostlib"
      libc=$(ldd "$work/bin/vector_add" | awk '$1 == "libc.so.6" {print $3}')
      loader=$(ldd "$work/bin/vector_add" | awk '$1 ~ /ld-linux/ {print ($3 != "" ? $3 : $1)}' | head -1)
      for l in $(ldd "$work/bin/vector_add" | awk '$3 ~ /^\// {print $3}') "$loader" \
               "$(dirname "$libc")"/{libm.so.6,libdl.so.2,libpthread.so.0,librt.so.1}; do
        [ -e "$l" ] && cp -L "$l" "$work/bin/hostlib/"
      done
      out=$(sbx run "${R[@]}" --gpus all -v "$work/bin:/gpu:ro" "${img[@]}" -- \
              "/gpu/hostlib/$(basename "$loader")" --library-path /gpu/hostlib:/usr/local/nvidia/lib64:/usr/lib/x86_64-linux-gnu \
              /gpu/vector_add 2>&1); rc=$?
      how="the host's loader and libc (the image's glibc is older than the one nvcc linked against)"
    fi
    if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q '^vector_add: OK n=16777216 '; then pass "nvcc-built vector_add (CUDA runtime) in the sandbox, through $how: $out"; else fail "vector_add in the sandbox: rc=$rc:"$'\n'"$out"; fi
  else
    fail "nvcc failed: $(tail -5 "$work/nvcc.log")"
  fi
else
  skip "nvcc not found: vector_add.cu not built (the driver-API check above still ran a kernel)"
fi

# 6. CDI (native only: under gVisor, devices pass through nvproxy alone)
if [ "$rt" = native ]; then
if ls /etc/cdi/*.{json,yaml} /var/run/cdi/*.{json,yaml} 2>/dev/null | grep -q .; then :; elif command -v nvidia-ctk >/dev/null; then
  mkdir -p /var/run/cdi && cdi_created=/var/run/cdi/sbx-verify-nvidia.yaml
  nvidia-ctk cdi generate --output="$cdi_created" >"$work/ctk.log" 2>&1 || { cdi_created=""; log "nvidia-ctk cdi generate failed: $(tail -3 "$work/ctk.log")"; }
fi
if sbx info 2>/dev/null | grep -q 'nvidia.com/gpu=all'; then
  out=$(sbx run "${R[@]}" --device nvidia.com/gpu=all "${img[@]}" -- nvidia-smi -L 2>&1); rc=$?
  if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -c '^GPU ')" -eq "$ngpu" ]; then pass "--device nvidia.com/gpu=all (CDI): $ngpu GPU(s)"; else fail "--device nvidia.com/gpu=all: rc=$rc:"$'\n'"$out"; fi
else
  skip "CDI: no nvidia.com/gpu spec in /etc/cdi or /var/run/cdi and no nvidia-ctk to generate one"
fi
fi

# 7. timing
sbx run "${R[@]}" "${img[@]}" -- true >/dev/null 2>&1; sbx run "${R[@]}" --gpus all "${img[@]}" -- true >/dev/null 2>&1  # warm caches
if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$work/hf-$rt.json" \
    "$SBX --root $root --run-root $runroot run ${R[*]} ${img[*]} -- true" \
    "$SBX --root $root --run-root $runroot run ${R[*]} --gpus all ${img[*]} -- true" >"$work/hf-$rt.txt" 2>&1
  read -r base gpus < <(python3 -c "import json;r=json.load(open('$work/hf-$rt.json'))['results'];print(*[round(x['mean']*1000,1) for x in r])")
else
  t() { local s e; s=$(date +%s%N); for _ in $(seq "$RUNS"); do sbx run "${R[@]}" "$@" -- true >/dev/null 2>&1; done; e=$(date +%s%N); echo $(( (e - s) / RUNS / 1000 )); }
  base=$(awk "BEGIN{print $(t "${img[@]}")/1000}"); gpus=$(awk "BEGIN{print $(t --gpus all "${img[@]}")/1000}")
fi
log "[$rt] timing ($RUNS runs): sbx run: ${base} ms; sbx run --gpus all: ${gpus} ms; added by --gpus all: $(awk "BEGIN{print $gpus-$base}") ms"

# 8. --memory and --pids-limit still apply next to --gpus
out=$(sbx run "${R[@]}" --gpus 0 --memory 64m "${img[@]}" -- python3 -c 'b = bytearray(512 << 20); print("allocated")' 2>&1); rc=$?
if [ $rc -eq 137 ] && ! printf '%s\n' "$out" | grep -q '^allocated'; then pass "--gpus 0 --memory 64m: a 512 MiB allocation is OOM-killed (137)"; else fail "--memory with --gpus: rc=$rc:"$'\n'"$out"; fi
out=$(sbx run "${R[@]}" --gpus 0 --pids-limit 16 --timeout 20s "${img[@]}" -- sh -c 'n=0; while [ $n -lt 64 ]; do sleep 5 & n=$((n+1)); done 2>/dev/null; echo "started $(jobs -p | wc -l)"' 2>&1); rc=$?
started=$(printf '%s\n' "$out" | sed -n 's/^started //p' | tail -1)
# dash itself exits when a fork fails ("Cannot fork"), so either the loop
# reports fewer than 64, or the shell died and sbx reports the cgroup's
# pids.events count (the kernel's word that the limit refused a fork).
if [ -n "$started" ] && [ "$started" -lt 64 ]; then pass "--gpus 0 --pids-limit 16: the fork loop stopped at $started of 64"
elif [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q 'fork(s) failed at the pids limit (16)'; then pass "--gpus 0 --pids-limit 16: forks refused at the limit: $(printf '%s\n' "$out" | grep 'pids limit')"
else fail "--pids-limit with --gpus: rc=$rc:"$'\n'"$out"; fi
}

for rt in ${RUNTIMES:-native gvisor}; do
  case $rt in
    native) R=(--runtime native) ;;
    gvisor)
      runsc=${RUNSC:-$(command -v runsc || true)}
      if [ -z "$runsc" ]; then skip "gvisor: no runsc (set RUNSC=)"; continue; fi
      R=(--runtime gvisor --runsc "$runsc")
      feat=$(sbx info --runsc "$runsc" 2>&1 | grep -m1 'gvisor:')
      log "gvisor: $feat"
      if ! printf '%s\n' "$feat" | grep -q 'nvproxy yes'; then
        out=$(sbx run "${R[@]}" --gpus 0 "${img[@]}" -- true 2>&1); rc=$?
        if [ $rc -eq 125 ] && printf '%s\n' "$out" | grep -q 'needs runsc with nvproxy support'; then pass "gvisor: $runsc without nvproxy is refused: $out"; else fail "gvisor without nvproxy: rc=$rc: $out"; fi
        skip "gvisor: $runsc has no nvproxy; install runsc from bookworm-backports (.ci/runsc-backports.sh) for the gVisor GPU checks"
        continue
      fi
      # runsc's nvproxy passes through only the drivers it knows: sbx refuses
      # --gpus up front (exit 125) on a host whose driver it does not list.
      drv=$(sed -n 's/.*NVRM version: .*  \([0-9][0-9.]*\)  .*/\1/p' /proc/driver/nvidia/version | head -1)
      out=$(sbx run "${R[@]}" --gpus 0 "${img[@]}" -- true 2>&1); rc=$?
      if printf '%s\n' "$out" | grep -q "does not support this host's NVIDIA driver"; then
        if [ $rc -eq 125 ]; then pass "gvisor: $runsc's nvproxy does not know driver $drv; refused up front: $out"; else fail "gvisor unsupported driver: rc=$rc: $out"; fi
        skip "gvisor: the GPU checks need a runsc whose 'nvproxy list-supported-drivers' names $drv"
        continue
      fi ;;
    *) fail "RUNTIMES: unknown runtime $rt"; continue ;;
  esac
  log "=== runtime $rt"
  gpu_checks
  if [ "$rt" = gvisor ]; then
    # A long-lived gVisor sandbox with a GPU cannot be checkpointed (runsc has no
    # GPU save/restore): refused with nothing written. (Reached only with a
    # runsc whose nvproxy knows the host's driver; see above.)
    if id=$(sbx create "${R[@]}" --gpus 0 "${img[@]}" -- sleep 60 2>/dev/null); then
      out=$(sbx checkpoint "$id" 2>&1); rc=$?
      if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q 'cannot save GPU state' && [ -z "$(sbx snapshots 2>/dev/null | tail -n +2)" ]; then
        pass "gvisor: checkpoint of a GPU sandbox refused, no snapshot written"; else fail "gvisor GPU checkpoint: rc=$rc: $out"; fi
      sbx rm -f "$id" >/dev/null 2>&1
    else
      skip "gvisor: sbx create --gpus not available (checkpoint refusal covered by tests/unit/test_snapshot_checkpoint.cpp)"
    fi
  fi
done

# Nothing left behind by sbx: no mounts under our dirs, no sandbox state dirs.
left=$(findmnt -rn -o TARGET | grep -F "$work/")
if [ -z "$left" ]; then pass "no mounts left behind"; else fail "mounts left behind:"$'\n'"$left"; fi
left=$(find "$runroot" -mindepth 1 -maxdepth 1 -regextype egrep -regex '.*/[0-9a-f]{64}' -printf '%f ')
if [ -z "$left" ]; then pass "no sandbox state dirs left in the run root"; else fail "state dirs left: $left"; fi
# The sandboxes' cgroups (and with them their device rules) are gone.
cg=$(find /sys/fs/cgroup -maxdepth 3 -type d -name 'sbx-*' 2>/dev/null | head -5)
if [ -z "$cg" ]; then pass "no sandbox cgroups (device rules) left"; else fail "cgroups left: $cg"; fi

log "result: $fails failure(s)"
exit "$fails"

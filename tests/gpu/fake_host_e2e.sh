#!/usr/bin/env bash
# End-to-end `sbx run --gpus` on a FAKE NVIDIA host (this machine has no GPU):
# a directory standing in for "/" (SBX_GPU_HOST_ROOT) with real char device
# nodes at unused majors (195 = NVIDIA's, 235, 237: no driver behind them, so
# opening one gives ENXIO when the device cgroup allows it and EPERM when it
# does not), ELF libraries built with cc (libcuda.so.<ver> whose cuInit returns
# 42), an ld.so.cache written by the real ldconfig, and a stand-in nvidia-smi.
# It checks what the real runtime makes of the SandboxSpec: nodes, cgroup
# rules, read-only mounts, ldconfig in the sandbox, env, errors; and, for
# --runtime gvisor, what sbx hands runsc (--nvproxy) or why it refuses.
#
#   SBX=build/sbx ROOTFS=<unpacked glibc rootfs with python3> tests/gpu/fake_host_e2e.sh
# Without ROOTFS it unpacks $SBX_IMAGES/python-oci (default tests/images/out)
# with umoci. It reads the same env as the ctest integration tests (SBX,
# SBX_IMAGES), so it can become tests/integration/test_gpu_fake_host.sh.
# Exit code: number of failed checks.
set -uo pipefail
cd "$(dirname "$0")/../.."
SBX=$(readlink -f "${SBX:-build/sbx}")
work=$(mktemp -d /tmp/sbx-gpu-fake.XXXXXX)
# Traversable by the sandbox's unprivileged host ids: under its user namespace
# sbx binds the fake host's nodes from there, as from a real host's /dev.
chmod 755 "$work"
cleanup() {
  findmnt -rn -o TARGET | grep -F "$work/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

if [ -z "${ROOTFS:-}" ]; then
  umoci raw unpack --image "${IMAGE:-${SBX_IMAGES:-tests/images/out}/python-oci}:latest" "$work/rootfs" >/dev/null 2>&1 ||
    { echo "cannot unpack the image; set ROOTFS=" >&2; exit 2; }
  ROOTFS=$work/rootfs
fi

# --- the fake host -----------------------------------------------------------
h=$work/host
ver=550.54.15
mkdir -p $h/proc/driver/nvidia/gpus/0000:3b:00.0 $h/proc/driver/nvidia/gpus/0000:86:00.0 $h/dev/nvidia-caps \
         $h/usr/lib/x86_64-linux-gnu $h/usr/bin $h/etc
echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  $ver  Sat Aug 19 01:15:15 UTC 2023" > $h/proc/driver/nvidia/version
printf 'Model: \t\t Fake H100\nGPU UUID: \t GPU-aaaa\nBus Location: \t 0000:3b:00.0\nDevice Minor: \t 1\n' > $h/proc/driver/nvidia/gpus/0000:3b:00.0/information
printf 'Model: \t\t Fake H100\nGPU UUID: \t GPU-bbbb\nBus Location: \t 0000:86:00.0\nDevice Minor: \t 0\n' > $h/proc/driver/nvidia/gpus/0000:86:00.0/information
mknod -m 666 $h/dev/nvidia0 c 195 0
mknod -m 666 $h/dev/nvidia1 c 195 1
mknod -m 666 $h/dev/nvidiactl c 195 255
mknod -m 666 $h/dev/nvidia-uvm c 235 0
mknod -m 666 $h/dev/nvidia-uvm-tools c 235 1
mknod -m 400 $h/dev/nvidia-caps/nvidia-cap1 c 237 1
echo 'int cuInit(unsigned f) { (void)f; return 42; }' > $work/cuda.c
cc -shared -fPIC -o $h/usr/lib/x86_64-linux-gnu/libcuda.so.$ver -Wl,-soname,libcuda.so.1 $work/cuda.c
cc -shared -fPIC -o $h/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.$ver -Wl,-soname,libnvidia-ml.so.1 -x c /dev/null
echo /usr/lib/x86_64-linux-gnu > $h/etc/ld.so.conf
ldconfig -r $h
printf '#!/bin/sh\nfor d in /dev/nvidia[0-9]*; do echo "GPU $d"; done\n' > $h/usr/bin/nvidia-smi
chmod 755 $h/usr/bin/nvidia-smi
export SBX_GPU_HOST_ROOT=$h

sbx() { "$SBX" --root "$work/store" --run-root "$work/run" "$@"; }
inside='ls /dev/nvidia* | tr "\n" " "; echo;
  for d in /dev/nvidia1 /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm; do [ -e $d ] && { head -c0 $d 2>&1 | sed "s|^|$d: |" || true; echo "$d opened"; }; done;
  echo CVD=$CUDA_VISIBLE_DEVICES NVD=$NVIDIA_VISIBLE_DEVICES CAPS=$NVIDIA_DRIVER_CAPABILITIES;
  nvidia-smi; ls -l /usr/lib/x86_64-linux-gnu/libcuda.so.1;
  python3 -c "import ctypes; print(\"cuInit\", ctypes.CDLL(\"libcuda.so.1\").cuInit(0))";
  touch /usr/lib/x86_64-linux-gnu/libcuda.so.'$ver' 2>&1 | sed "s/^/write: /"'

out=$(sbx run --rootfs "$ROOTFS" --gpus 0 -- sh -c "$inside" 2>&1); rc=$?
echo "--- sbx run --gpus 0 (rc=$rc):"; echo "$out"; echo "---"
[ $rc -eq 0 ] && pass "sbx run --gpus 0 exits 0" || fail "sbx run --gpus 0 exits $rc"
grep -q '^/dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia1 /dev/nvidiactl $' <<<"$out" && pass "exactly GPU 0's node (/dev/nvidia1, bus 3b) and the control nodes exist" || fail "device nodes"
grep -q 'GPU /dev/nvidia1' <<<"$out" && ! grep -q 'GPU /dev/nvidia0' <<<"$out" && pass "nvidia-smi (bound at /usr/bin) sees only /dev/nvidia1" || fail "nvidia-smi"
grep -q '/dev/nvidia1: .*No such device or address' <<<"$out" && pass "cgroup allows /dev/nvidia1 (open reaches the absent driver: ENXIO)" || fail "open /dev/nvidia1"
grep -q 'CVD=GPU-aaaa NVD=GPU-aaaa CAPS=compute,utility' <<<"$out" && pass "CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES = GPU-aaaa" || fail "env"
grep -q "libcuda.so.1 -> libcuda.so.$ver" <<<"$out" && pass "ldconfig in the sandbox made libcuda.so.1 -> libcuda.so.$ver" || fail "ldconfig_dirs not honoured (no libcuda.so.1 link)"
grep -q '^cuInit 42$' <<<"$out" && pass "a program loads libcuda.so.1 by soname and calls it" || fail "libcuda.so.1 not loadable by soname"
grep -q 'write: .*Read-only file system' <<<"$out" && pass "driver library is mounted read-only" || fail "driver library is writable"

# A long-lived sandbox (sbx create --gpus): its execs get the same GPU.
if id=$(sbx create --rootfs "$ROOTFS" --gpus 0 -- sleep 120 2>"$work/create.err"); then
  out=$(sbx exec "$id" -- sh -c "$inside" 2>&1); rc=$?
  if grep -q '^/dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia1 /dev/nvidiactl $' <<<"$out" &&
     grep -q 'CVD=GPU-aaaa' <<<"$out" && grep -q '^cuInit 42$' <<<"$out"; then
    pass "create --gpus 0, then exec: only GPU 0's node, its CUDA_VISIBLE_DEVICES, libcuda.so.1 loads"
  else
    fail "create --gpus 0 + exec (rc=$rc): $out"
  fi
  sbx rm -f "$id" >/dev/null
else
  fail "sbx create --gpus 0: $(cat "$work/create.err")"
fi

# The sandbox can mknod an unselected GPU (CAP_MKNOD) but the cgroup must refuse opening it.
out=$(sbx run --rootfs "$ROOTFS" --gpus 0 -- sh -c 'mknod /dev/nvidia0 c 195 0 && head -c0 /dev/nvidia0' 2>&1)
grep -q 'Operation not permitted' <<<"$out" && pass "an unselected GPU node made with mknod cannot be opened (device cgroup)" || fail "unselected GPU openable: $out"

out=$(sbx run --rootfs "$ROOTFS" -- sh -c 'ls /dev/nvidia* 2>&1; command -v nvidia-smi; echo CVD=${CUDA_VISIBLE_DEVICES-unset}' 2>&1)
grep -q 'No such file' <<<"$out" && ! grep -q nvidia-smi$ <<<"$out" && grep -q CVD=unset <<<"$out" && pass "without --gpus nothing GPU-related is visible" || fail "without --gpus: $out"

out=$(sbx run --rootfs "$ROOTFS" --gpus 2 -- true 2>&1); rc=$?
[ $rc -eq 125 ] && grep -q 'GPU index 2 is out of range: this host has 2 GPUs (0-1)' <<<"$out" && pass "--gpus 2: exit 125, $out" || fail "--gpus 2: rc=$rc $out"

mkdir -p $h/etc/cdi
cat > $h/etc/cdi/fake.yaml <<YAML
cdiVersion: "0.6.0"
kind: example.com/fake
devices:
- name: one
  containerEdits:
    env: [FAKE_DEVICE=one]
    deviceNodes: [{path: /dev/fake-one, hostPath: /dev/nvidia-uvm-tools}]
YAML
out=$(sbx run --rootfs "$ROOTFS" --device example.com/fake=one -- sh -c 'ls -l /dev/fake-one; echo $FAKE_DEVICE' 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q '235, *1' <<<"$out" && grep -q '^one$' <<<"$out" && pass "CDI --device example.com/fake=one: node 235:1 and env" || fail "CDI: rc=$rc $out"

# --- gVisor: --gpus through runsc --nvproxy ------------------------------------
# The fake tree fools sbx's discovery but not runsc: nvproxy opens the host's
# real /dev/nvidiactl, and this machine has no GPU. So what is checked here is
# sbx's side: a runsc without nvproxy is refused before anything starts, and
# with one sbx hands runsc --nvproxy and the selected devices (runsc then fails
# in its nvproxy setup, finding no driver) and leaves nothing behind. The
# real run is tests/gpu/verify_on_gpu_host.sh's gVisor pass.
old_runsc=${SBX_OLD_RUNSC:-/var/cache/sbx-test/runsc-20221219/runsc}
if [ -x "$old_runsc" ]; then
  out=$(sbx run --runtime gvisor --runsc "$old_runsc" --rootfs "$ROOTFS" --gpus 0 -- true 2>&1); rc=$?
  [ $rc -eq 125 ] && grep -q 'needs runsc with nvproxy support' <<<"$out" && grep -q '20221219' <<<"$out" &&
    pass "gvisor --gpus on runsc 20221219 (no nvproxy): exit 125, $out" || fail "gvisor --gpus on the old runsc: rc=$rc $out"
else
  echo "SKIP: no old runsc at $old_runsc (tests/old_runsc.sh fetches it)"
fi
new_runsc=$(command -v runsc || true)
if [ -n "$new_runsc" ] && "$SBX" info --runsc "$new_runsc" 2>/dev/null | grep -q 'nvproxy yes'; then
  out=$(sbx --log-level debug run --runtime gvisor --runsc "$new_runsc" --rootfs "$ROOTFS" --gpus 0 -- true 2>&1); rc=$?
  echo "--- sbx run --runtime gvisor --gpus 0 on the fake host (rc=$rc):"; echo "$out" | tail -5; echo "---"
  [ $rc -eq 125 ] && grep -qi 'nvproxy\|nvidia' <<<"$out" &&
    pass "gvisor --gpus 0 with nvproxy: runsc got --nvproxy and failed in its GPU setup (no real driver here): exit 125" ||
    fail "gvisor --gpus 0 with nvproxy: rc=$rc $out"
  # A driver newer than nvproxy knows (the H200 host this first ran on had
  # 580.159.04, which runsc 20240729 does not list): refused before runsc
  # starts, with the way out named.
  if ! "$new_runsc" nvproxy list-supported-drivers 2>/dev/null | grep -qx 580.159.04; then
    h2=$work/host580
    cp -a "$h" "$h2"
    for f in "$h2"/usr/lib/x86_64-linux-gnu/lib*.so.$ver; do mv "$f" "${f%.$ver}.580.159.04"; done
    sed -i "s/$ver/580.159.04/" "$h2/proc/driver/nvidia/version"
    ldconfig -r "$h2"
    out=$(SBX_GPU_HOST_ROOT=$h2 sbx run --runtime gvisor --runsc "$new_runsc" --rootfs "$ROOTFS" --gpus 0 -- true 2>&1); rc=$?
    [ $rc -eq 125 ] && grep -q "does not support this host's NVIDIA driver 580.159.04" <<<"$out" && grep -q 'list-supported-drivers' <<<"$out" &&
      ! grep -q 'runsc failed' <<<"$out" &&
      pass "gvisor --gpus on a driver nvproxy does not know: refused before runsc starts, exit 125" ||
      fail "gvisor --gpus, driver unknown to nvproxy: rc=$rc $out"
  fi
  out=$(sbx run --runtime gvisor --runsc "$new_runsc" --rootfs "$ROOTFS" --device example.com/fake=one -- true 2>&1); rc=$?
  [ $rc -eq 125 ] && grep -q 'NVIDIA GPUs only' <<<"$out" && pass "gvisor --device (CDI): refused, $out" || fail "gvisor --device: rc=$rc $out"
  [ -z "$(find "$work/run" -mindepth 1 -maxdepth 1 -regextype egrep -regex '.*/[0-9a-f]{64}')" ] &&
    pass "gvisor: no sandbox state left in the run root" || fail "gvisor: state left: $(ls "$work/run")"
else
  echo "SKIP: no runsc with nvproxy on PATH (.ci/runsc-backports.sh installs one)"
fi

left=$(findmnt -rn -o TARGET | grep -F "$work/")
[ -z "$left" ] && pass "no mounts left behind" || fail "mounts left: $left"
echo "result: $fails failure(s)"
exit "$fails"

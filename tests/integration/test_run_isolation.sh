#!/usr/bin/env bash
# sbx run: what the sandbox can not see or do (pid/mount/net namespaces, masked
# paths, capabilities, seccomp, device cgroup), on the real images.
source "$(dirname "$0")/../sandbox_lib.sh"
run() { $SBX run "$@"; }

# --- pid namespace ------------------------------------------------------------
out=$(run $BB sh -c 'echo $$')
native_only && check "the command is pid 2 (pid 1 is sbx's init)" test "$out" = 2
out=$(run $BB sh -c 'ls /proc | grep -c "^[0-9]"')
check "only the sandbox's processes are visible" test "$out" -le 5
native_only && expect_rc "the init's memory/exe are not readable (not dumpable)" 1 run $BB sh -c 'readlink /proc/1/exe >/dev/null 2>&1'
out=$(run $BB cat /proc/self/cgroup)
check "cgroup namespace: the sandbox's cgroup is its root" bash -c "! grep -v ':/\$' <<<'$out' | grep -q ."

# --- file system --------------------------------------------------------------
marker=/sbx-host-write-test-$$
run $BB sh -c "touch $marker; echo x > /etc/hostname-written" 2>/dev/null
check "writing / of the sandbox does not reach the host's /" test ! -e "$marker"
host_shadow=$(sha256sum /etc/shadow | cut -c1-64)
out=$(run $BB sh -c 'cat /etc/shadow 2>/dev/null | sha256sum' | cut -c1-64)
check "the host's /etc/shadow is not visible" test "$out" != "$host_shadow"
echo secret >"$T/host-only"
expect_rc "host paths are not visible" 1 run $BB test -e "$T/host-only"
out=$(run $BB sh -c 'cat /proc/1/mountinfo | wc -l; grep -c " / / " /proc/1/mountinfo')
check "the sandbox sees only its own mounts" test "$(head -1 <<<"$out")" -lt 40
for p in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug /proc/interrupts; do
  [ -e "$p" ] || continue
  out=$(run $BB sh -c "wc -c <$p 2>/dev/null || echo unreadable")
  check "masked: $p reads empty inside" bash -c "[ '$out' = 0 ] || [ '$out' = unreadable ]"
done
out=$(run $BB sh -c 'ls /sys/firmware | wc -l')
check "masked: /sys/firmware is empty" test "$out" = 0
# Every masked dir is the same empty read-only tmpfs (one superblock, not one
# per mask: each superblock costs the host kernel memory in every memory cgroup).
masked_dirs=""
for p in /proc/acpi /proc/asound /proc/scsi /sys/firmware /sys/devices/virtual/powercap; do [ -d "$p" ] && masked_dirs+=" $p"; done
if [ "$(wc -w <<<"$masked_dirs")" -ge 2 ]; then
  out=$(run $BB sh -c "for d in $masked_dirs; do stat -c %d \$d; touch \$d/x 2>/dev/null && echo writable; ls -A \$d; done | sort -u")
  check "masked dirs ($masked_dirs) share one empty read-only tmpfs ($out)" test "$(wc -l <<<"$out")" = 1
fi
expect_rc "read-only: /proc/sys" 1 run $BB sh -c 'echo 1 >/proc/sys/kernel/domainname 2>/dev/null'
expect_rc "read-only: /sys" 1 run $BB sh -c 'echo 1 >/sys/kernel/profiling 2>/dev/null || mkdir /sys/x 2>/dev/null'
expect_rc "no mknod'ed disk can be read (device cgroup)" 1 \
  run $BB sh -c 'mknod /tmp/sda b 8 0 && head -c 1 /tmp/sda >/dev/null 2>&1'
expect_rc "/dev/null, zero, urandom work" 0 run $BB sh -c 'head -c 8 /dev/urandom >/dev/null && head -c 8 /dev/zero >/dev/null && echo >/dev/null'

# --- network ------------------------------------------------------------------
port=$((20000 + $$ % 20000))
python3 - "$port" <<'PY' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); s.settimeout(30)
try:
    while True:
        c, _ = s.accept(); c.sendall(b"host-listener\n"); c.close()
except Exception:
    pass
PY
listener=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
out=$(run --network host $BB sh -c "nc 127.0.0.1 $port </dev/null" 2>&1)
check "--network host reaches the host's 127.0.0.1 (control)" grep -q host-listener <<<"$out"
out=$(run $BB sh -c "nc 127.0.0.1 $port </dev/null" 2>&1)
check "--network none: the host's 127.0.0.1 is unreachable" not_grep host-listener "$out"
kill $listener 2>/dev/null; wait $listener 2>/dev/null
# (gVisor 20240729's sysfs has no class/net; /proc/net/dev lists the same interfaces.)
out=$(run $BB sh -c 'ls /sys/class/net 2>/dev/null || tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "')
check "--network none: only lo" test "$out" = lo
out=$(run $BB sh -c 'cat /sys/class/net/lo/operstate; cat /sys/class/net/lo/flags')
native_only && check "lo is up" grep -q '0x9' <<<"$out"

# --- privileges -----------------------------------------------------------------
out=$(run $BB sh -c 'grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t " " "')
native_only && check "capabilities: docker's default set" grep -q 'CapEff: 00000000a80425fb' <<<"$out"
native_only && check "capabilities: bounding set reduced" grep -q 'CapBnd: 00000000a80425fb' <<<"$out"
native_only && check "no_new_privs set" grep -q 'NoNewPrivs: 1' <<<"$out"
native_only && check "seccomp filter active" grep -q 'Seccomp: 2' <<<"$out"
out=$(run $BB unshare -n true 2>&1)
check "seccomp/caps: unshare of a namespace is refused" grep -qi 'operation not permitted' <<<"$out"
out=$(run $BB mount -t tmpfs none /mnt 2>&1)
check "mount is refused" grep -qi 'permission denied\|not permitted' <<<"$out"
expect_rc "sethostname is refused (no CAP_SYS_ADMIN)" 1 run $BB sh -c 'hostname evil 2>/dev/null'
if [ -n "$PY" ]; then
  out=$(run $PY python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
res = {}
for name, nr, args in [("keyctl", 250, (0, 0)), ("bpf", 321, (0, 0, 0)), ("ptrace", 101, (16, 1, 0, 0)),
                       ("perf_event_open", 298, (0, 0, 0, 0, 0)), ("userfaultfd", 323, (0,)),
                       ("init_module", 175, (0, 0, 0)), ("reboot", 169, (0, 0, 0, 0)), ("setns", 308, (0, 0))]:
    r = libc.syscall(nr, *args)
    res[name] = os.strerror(ctypes.get_errno()) if r == -1 else "allowed"
print(res)
r = libc.syscall(272, 0x10000000)  # unshare(CLONE_NEWUSER)
print("unshare-user", os.strerror(ctypes.get_errno()) if r == -1 else "allowed")
r = libc.syscall(56, 0x20000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWNET | SIGCHLD)
print("clone-newnet", os.strerror(ctypes.get_errno()) if r == -1 else "allowed")
if r == 0: os._exit(0)
')
  for s in keyctl bpf ptrace perf_event_open userfaultfd init_module reboot setns; do
    native_only && check "seccomp: $s fails with EPERM" grep -q "'$s': 'Operation not permitted'" <<<"$out"
  done
  native_only && check "seccomp: unshare(CLONE_NEWUSER) fails" grep -q 'unshare-user Operation not permitted' <<<"$out"
  native_only && check "seccomp: clone(CLONE_NEWNET) fails" grep -q 'clone-newnet Operation not permitted' <<<"$out"
else
  echo "note: no python image/rootfs; the per-syscall seccomp checks are skipped"
fi

finish

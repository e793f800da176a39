#!/usr/bin/env bash
# sbx adversarial suite: each case runs a small attack inside a sandbox (the
# static C probe of probe.c, busybox sh, or a hostile rootfs), then checks the
# HOST. A case passes only when the attack failed AND the host is intact.
# The serve_* cases attack `sbx serve` from outside instead: clients without
# a token, floods, slow clients and descriptor exhaustion (serve_attack.py),
# and a sandbox's 1 GiB and 1 TiB sparse files fetched through every copy
# path (serve_sparse.py; SERVE_SPARSE_ARGS="--sizes 1g" for the small one).
#
#   tests/adversarial/run.sh [--runtime native|gvisor] [--userns host] [--loop N] [CASE...]
#
# Environment: SBX (the sbx binary; default build/sbx), SBX_IMAGES (the test
# images, tests/images/build.sh), SBX_ADV_KEEP=1 keeps the temp dir.
# Output: one line per case, "PASS name", "FAIL name: why", "UNSUPPORTED name:
# why" (the feature the attack needs a defence from does not exist yet: never
# counted as a pass), "N/A name: why" (does not apply to this runtime), and the
# probe's own lines indented. Exit status 1 when any case failed or anything
# leaked; 0 otherwise. UNSUPPORTED cases fail the run with SBX_ADV_STRICT=1.
#
# Safety: this runs on a shared machine. Bombs are bounded in the probe itself
# (fork/thread/memory caps) and only run after a check that the limit they
# test exists; the probe never writes to /sys, sysrq-trigger or core_pattern;
# signals go only to processes carrying this run's marker.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
SBX=${SBX:-$src/build/sbx}
SBX=$(readlink -f "$SBX")
IMAGES=${SBX_IMAGES:-$src/tests/images/out}
runtime=native
userns_host=0
loops=1000
cases=()
while [ $# -gt 0 ]; do
  case $1 in
    --runtime) runtime=$2; shift 2 ;;
    --loop) loops=$2; shift 2 ;;
    --userns) [ "$2" = host ] && userns_host=1; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) cases+=("$1"); shift ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (sbx creates namespaces, mounts and cgroups)"; exit 1; }
[ -x "$SBX" ] || { echo "run.sh: no sbx binary at $SBX (set SBX=)"; exit 1; }

T=$(mktemp -d /tmp/sbx-adv.XXXXXX)
chmod 755 "$T"
R=$T/root
RR=$T/run
marker=sbxadv$$x$RANDOM
npass=0 nfail=0 nunsup=0 nna=0
failed=()
unsupported=()
log() { echo "$@"; }
pass() { log "PASS $1${2:+: $2}"; npass=$((npass + 1)); }
fail() { log "FAIL $1: $2"; nfail=$((nfail + 1)); failed+=("$1"); }
unsupported() { log "UNSUPPORTED $1: $2"; nunsup=$((nunsup + 1)); unsupported+=("$1"); }
na() { log "N/A $1: $2"; nna=$((nna + 1)); }
indent() { sed 's/^/    | /'; }

# ---------------------------------------------------------------- set-up ---
help_run=$("$SBX" run --help 2>&1 || true)
has_flag() { grep -q -- "$1" <<<"$help_run"; }
rtflag=()
if [ "$runtime" != native ]; then
  if ! has_flag --runtime; then
    echo "N/A all: this sbx has no 'run --runtime' flag; $runtime cases cannot run"
    rm -rf "$T"
    exit 0
  fi
  rtflag=(--runtime "$runtime")
fi
if [ $userns_host = 1 ]; then
  has_flag --userns || { echo "N/A all: this sbx has no --userns flag"; rm -rf "$T"; exit 0; }
  rtflag+=(--userns host)
fi

mkdir -p "$T/bin" "$T/vol" "$T/rovol" "$T/out"
gcc -static -O2 -o "$T/bin/probe" "$here/probe.c" -lpthread || { echo "run.sh: cannot build probe.c (gcc -static)"; exit 1; }
gcc -shared -fPIC -O2 -o "$T/exe_preload.so" "$here/exe_preload.c" || { echo "run.sh: cannot build exe_preload.c"; exit 1; }
chmod 755 "$T/bin" "$T/bin/probe"
# A plain copy of the busybox rootfs (for hostile --rootfs variants), made with
# umoci, never with sbx.
mkbusybox() {  # DIR
  umoci raw unpack --image "$IMAGES/busybox-oci:latest" "$1" >/dev/null 2>&1
}
# The sandboxes run the imported busybox image; where this sbx cannot run an
# image yet, the same busybox as a --rootfs directory.
"$SBX" --root "$R" --run-root "$RR" import "$IMAGES/busybox-oci" busybox >/dev/null 2>&1
IMG=(busybox)
if ! "$SBX" --root "$R" --run-root "$RR" run "${rtflag[@]}" busybox -- /bin/true >/dev/null 2>&1; then
  mkbusybox "$T/bb" || { echo "run.sh: cannot unpack $IMAGES/busybox-oci (tests/images/build.sh, umoci)"; exit 1; }
  IMG=(--rootfs "$T/bb")
  echo "note: 'sbx run busybox' does not work in this build; using --rootfs (umoci-unpacked busybox)"
fi

# Run the test's sandboxes in a cgroup of its own (in every hierarchy sbx
# uses), so that the leak check sees exactly this run's sandbox cgroups.
cg_dirs=()
orig_cg=()
cg_enter() {
  local line ctrls path dir lines
  # Read it whole first: it changes as we move between cgroups.
  mapfile -t lines </proc/self/cgroup
  for line in "${lines[@]}"; do
    IFS=: read -r _ ctrls path <<<"$line"
    if [ -z "$ctrls" ]; then dir=/sys/fs/cgroup/unified; [ -d "$dir" ] || dir=/sys/fs/cgroup
    else dir=/sys/fs/cgroup/$ctrls; [ -d "$dir" ] || dir=/sys/fs/cgroup/${ctrls#name=}; fi
    case $ctrls in cpuset|*cpuset*|rdma|misc|net_cls*|net_prio*|perf_event|hugetlb) continue ;; esac
    [ -d "$dir$path" ] || continue
    local mine="${dir}${path%/}/sbx-adv-$$"
    [[ " ${cg_dirs[*]} " == *" $mine "* ]] && continue
    mkdir -p "$mine" 2>/dev/null || continue
    if echo $$ >"$mine/cgroup.procs" 2>/dev/null; then
      cg_dirs+=("$mine"); orig_cg+=("$dir$path")
    else
      rmdir "$mine" 2>/dev/null
    fi
  done
}
cg_leave() {
  local i
  for i in "${!cg_dirs[@]}"; do
    echo $$ >"${orig_cg[$i]}/cgroup.procs" 2>/dev/null
    rmdir "${cg_dirs[$i]}" 2>/dev/null || log "leak: cgroup ${cg_dirs[$i]} not removable: $(ls "${cg_dirs[$i]}" | grep -c sbx) children"
  done
}
cg_children() {  # prints leftover child cgroups of ours
  local d
  for d in "${cg_dirs[@]}"; do find "$d" -mindepth 1 -type d 2>/dev/null; done
}

victim=""
listener=""
serve_pid=""
SERVE_PID=""
cleanup() {
  [ -n "$serve_pid" ] && serve_stop
  [ -n "$victim" ] && kill "$victim" 2>/dev/null
  [ -n "$listener" ] && kill "$listener" 2>/dev/null
  declare -F advdns_down >/dev/null && advdns_down
  [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
  # Anything still mounted under our temp dir (only after a failure).
  findmnt -rn -o TARGET | grep -F "$T" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  cg_leave
  if [ "${SBX_ADV_KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
cg_enter

# Host state that no case may change.
sha_sbx=$(sha256sum "$SBX" | cut -d' ' -f1)
host_hostname=$(hostname)
snap_sysctl() {
  # Every readable sysctl, minus counters and values the kernel changes by itself.
  find /proc/sys -type f -readable 2>/dev/null | grep -Ev \
    '/random/|dentry-state|file-nr|inode-nr|inode-state|ns_last_pid|/pty/nr|/fs/quota/|stat_interval|/net/|perf_event_max_sample_rate|tainted|/kernel/sched_domain/|overflowuid|/fs/binfmt_misc/|/fscache/|/kernel/keys/' |
    sort | while read -r f; do printf '%s=%s\n' "$f" "$(head -c 200 "$f" 2>/dev/null | tr '\n' ' ')"; done
}
snap_sysctl >"$T/sysctl.before"
mounts_before=$(grep -c . /proc/self/mountinfo)
nsfs_before=$(grep -c ' nsfs ' /proc/self/mountinfo)

sb() {  # [run flags...] -- uses busybox unless --rootfs is given; output in $T/out/last
  "$SBX" --root "$R" --run-root "$RR" run "${rtflag[@]}" "$@" >"$T/out/last" 2>&1
  local rc=$?
  echo "$rc" >"$T/out/rc"
  return $rc
}
# Cases that probe the kernel interface itself. Under gVisor that kernel is
# the Sentry, not the host's: what the probe reaches there is logged, and the
# case holds when the host checks hold (host-intact compares every sysctl,
# core_pattern, the hostname and sbx's binary before and after).
sentry_case() { [ "$runtime" = gvisor ] && case $1 in syscalls|devices|proc-sys-write|sys-write|masked-paths|dev-symlinks*) return 0 ;; esac; return 1; }
probe_ok() {  # CASE: the last output finished and reported no escape
  indent <"$T/out/last"
  if grep -q '^ESCAPE' "$T/out/last" && sentry_case "$1"; then
    log "    note: inside gVisor's Sentry (not the host kernel): $(grep -c '^ESCAPE' "$T/out/last") probe(s) succeeded"
  elif grep -q '^ESCAPE' "$T/out/last"; then fail "$1" "$(grep '^ESCAPE' "$T/out/last" | head -3 | tr '\n' ';')"; return 1; fi
  if ! grep -q '^done' "$T/out/last"; then fail "$1" "probe did not finish (rc=$(cat "$T/out/rc"))"; return 1; fi
  return 0
}
# The probe's mount point exists in the image: gVisor's read-only rootfs
# cannot create a new one.
P=(-v "$T/bin:/home:ro")

want() {  # CASE: whether CASE was asked for
  [ ${#cases[@]} -eq 0 ] && return 0
  local c
  for c in "${cases[@]}"; do [ "$c" = "$1" ] && return 0; done
  return 1
}

# ------------------------------------------------------------------ cases ---
case_info() {
  sb "${P[@]}" "${IMG[@]}" -- /home/probe info
  indent <"$T/out/last"
  if [ "$runtime" = gvisor ]; then na rootless "gVisor: the sandbox's root is the sentry's, not the host kernel's"; return; fi
  if [ $userns_host = 1 ]; then na rootless "--userns host asked for"; return; fi
  local map
  map=$(grep 'uid_map' "$T/out/last" | head -1 | awk '{print $3, $4, $5}')
  if [ -z "$map" ]; then fail rootless "no uid_map line from the probe"; return; fi
  if [ "$(awk '{print $2}' <<<"$map")" = 0 ]; then
    if has_flag --userns; then fail rootless "uid 0 inside is uid 0 on the host ($map) although sbx has --userns"
    else unsupported rootless "no user namespace yet: uid 0 inside is host root ($map)"; fi
  else
    pass rootless "uid_map $map"
  fi
}

case_syscalls() { sb "${P[@]}" "${IMG[@]}" -- /home/probe syscalls; probe_ok syscalls && pass syscalls; }

case_devices() {
  local vda
  local maj min
  read -r maj min < <(stat -c '%t %T' /dev/vda 2>/dev/null) && vda=$(printf 'b:%d:%d' "0x$maj" "0x$min")
  sb "${P[@]}" "${IMG[@]}" -- /home/probe devices ${vda:-b:254:0} c:1:1 c:1:2 b:7:0
  probe_ok devices && pass devices
}

case_procsys() {
  sb "${P[@]}" "${IMG[@]}" -- /home/probe scan /proc/sys
  probe_ok proc-sys-write && pass proc-sys-write
  sb "${P[@]}" "${IMG[@]}" -- /home/probe scan /sys
  probe_ok sys-write && pass sys-write
}

case_masked() {
  local cp
  cp=$(cat /proc/sys/kernel/core_pattern)
  sb "${P[@]}" "${IMG[@]}" -- /home/probe masked
  probe_ok masked-paths || return
  [ "$(cat /proc/sys/kernel/core_pattern)" = "$cp" ] || { fail masked-paths "host core_pattern changed"; return; }
  pass masked-paths
}

case_fds() {  # CVE-2024-21626
  sb "${P[@]}" "${IMG[@]}" -- /home/probe fds
  probe_ok leaked-fds-cwd || return
  # The runc exploit: a working directory of /proc/self/fd/N, N an fd leaked
  # from the runtime. Either sbx refuses, or the cwd is inside the sandbox.
  if ! has_flag --workdir; then pass leaked-fds-cwd "(no -w flag: workdir variant skipped)"; return; fi
  local n
  for n in 3 4 5 6 7 8 9 10; do
    sb -w "/proc/self/fd/$n" "${P[@]}" "${IMG[@]}" -- /home/probe fds
    local rc=$?
    if grep -q '^done' "$T/out/last"; then
      if grep -q '^ESCAPE' "$T/out/last"; then indent <"$T/out/last"; fail leaked-fds-cwd "-w /proc/self/fd/$n: $(grep -m1 ESCAPE "$T/out/last")"; return; fi
    elif [ $rc -lt 125 ] || [ $rc -gt 127 ]; then
      indent <"$T/out/last"; fail leaked-fds-cwd "-w /proc/self/fd/$n: neither ran nor failed cleanly (rc=$rc)"; return
    fi
  done
  pass leaked-fds-cwd "also -w /proc/self/fd/3..10"
}

case_hostread() {
  local secret=secret-$marker
  echo "$secret" >"$T/secret"
  chmod 644 "$T/secret"
  SBX_ADV_SECRET=$secret sb "${P[@]}" "${IMG[@]}" -- /home/probe hostread "$T/secret" "$secret"
  probe_ok host-files-via-proc && pass host-files-via-proc
  # Symlinks planted in a volume must resolve inside the sandbox.
  rm -rf "$T/vol"/*
  ln -s /etc/shadow "$T/vol/shadow"
  ln -s "$T/secret" "$T/vol/secret"
  ln -s "../../../../../../../..$T/secret" "$T/vol/up"
  # Owned by an unprivileged host user, so that the sandbox's root may write
  # there (a host-root-owned volume is read-only to it).
  chown 4242:4242 "$T/vol"
  # Mount points that exist in the image (gVisor cannot create them).
  sb -v "$T/vol:/var" "${P[@]}" "${IMG[@]}" -- /bin/sh -c \
    "/home/probe hostread /var/secret $secret; /home/probe hostread /var/up $secret; cat /var/shadow 2>&1 | head -c 64; echo; ln -s / /var/root-link-from-inside; echo planted"
  indent <"$T/out/last"
  if grep -q '^ESCAPE' "$T/out/last"; then fail volume-symlinks "$(grep -m1 ESCAPE "$T/out/last")"; return; fi
  grep -q '^planted' "$T/out/last" || { fail volume-symlinks "the sandbox did not run (rc=$(cat "$T/out/rc"))"; return; }
  if grep -qF "$(head -1 /etc/shadow | cut -d: -f1-2)" "$T/out/last" && [ -n "$(head -1 /etc/shadow | cut -d: -f2)" ]; then
    fail volume-symlinks "host /etc/shadow readable through /vol/shadow"; return
  fi
  [ "$(grep -c '^done' "$T/out/last")" = 2 ] || { fail volume-symlinks "probe did not finish"; return; }
  pass volume-symlinks
}

case_robind() {
  echo keep >"$T/rovol/file"
  sb -v "$T/rovol:/root:ro" "${P[@]}" "${IMG[@]}" -- /home/probe robind /root
  probe_ok ro-bind-escape || return
  [ "$(ls "$T/rovol")" = file ] || { fail ro-bind-escape "host dir changed: $(ls "$T/rovol" | tr '\n' ' ')"; return; }
  pass ro-bind-escape
  sb --read-only "${P[@]}" "${IMG[@]}" -- /home/probe robind /
  probe_ok read-only-rootfs && pass read-only-rootfs
}

case_network() {
  local hostip port=$((20000 + RANDOM % 20000))
  hostip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for(i=1;i<=NF;i++) if($i=="src") print $(i+1)}')
  python3 - "$port" "$hostip" "$marker" "$T/listener.log" <<'PY' &
import socket, sys, select, os
port, ip, marker, logf = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
socks = []
for addr in ["127.0.0.1", ip] if ip else ["127.0.0.1"]:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((addr, port)); s.listen(8); socks.append(s)
u = socket.socket(socket.AF_UNIX); u.bind("\0sbx-adv-" + marker); u.listen(8); socks.append(u)
open(logf, "w").close()
print("ready", flush=True)
while True:
    r, _, _ = select.select(socks, [], [])
    for s in r:
        c, a = s.accept(); open(logf, "a").write("connection on %r from %r\n" % (s.getsockname(), a)); c.close()
PY
  listener=$!
  for _ in $(seq 50); do [ -f "$T/listener.log" ] && break; sleep 0.1; done
  local targets=("tcp:127.0.0.1:$port" "unix:@sbx-adv-$marker")
  [ -n "$hostip" ] && targets+=("tcp:$hostip:$port")
  # The listener really accepts (so the case can fail).
  python3 -c "import socket;s=socket.create_connection(('127.0.0.1',$port));s.close()" && sleep 0.2
  grep -q connection "$T/listener.log" || { fail network-none "the host listener does not work; cannot test"; kill $listener; listener=""; return; }
  : >"$T/listener.log"
  sb --network none "${P[@]}" "${IMG[@]}" -- /home/probe connect "${targets[@]}"
  sleep 0.3
  kill $listener 2>/dev/null; wait $listener 2>/dev/null; listener=""
  probe_ok network-none || return
  [ -s "$T/listener.log" ] && { fail network-none "host listener got: $(cat "$T/listener.log")"; return; }
  pass network-none
}

# User-defined networks (sbx network): the suite's own networks on
# documentation addresses (a pool of 203.0.113.192/26 for them), removed after.
net_ok() {  # whether this sbx has networks and the host can make them
  "$SBX" network --help >/dev/null 2>&1 && command -v nft >/dev/null && command -v dnsmasq >/dev/null
}
netsbx() { SBX_NETWORK_POOL=203.0.113.192/26 "$SBX" --root "$R" --run-root "$RR" "$@"; }
net_field() {  # SANDBOX PYEXPR over inspect's NetworkSettings
  netsbx inspect "$1" | python3 -c "import json,sys; d=json.load(sys.stdin)[0]['NetworkSettings']; print($2)"
}
net_cleanup() {  # SANDBOX... then the suite's networks
  local x
  for x in "$@"; do netsbx rm -f "$x" >/dev/null 2>&1; done
  for x in $(netsbx network ls -q 2>/dev/null); do netsbx network rm "$x" >/dev/null 2>&1; done
}

case_netisolate() {  # sandboxes on different networks: no TCP, UDP or ICMP; no host service on a gateway
  net_ok || { unsupported net-isolate "this sbx has no 'sbx network' (or no nft/dnsmasq here)"; return; }
  netsbx network create "adva$$" >/dev/null && netsbx network create "advb$$" >/dev/null ||
    { fail net-isolate "cannot create two networks"; net_cleanup; return; }
  local port=$((20000 + RANDOM % 20000)) a b ip_a ip_b gw_a gw_b hl
  python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(8)
open(sys.argv[2], "w").close()
while True:
    c, a = s.accept(); open(sys.argv[2], "a").write("connection from %r\n" % (a,)); c.close()' "$port" "$T/hostnet.log" &
  hl=$!
  a=$(netsbx create "${rtflag[@]}" --network "adva$$" "${P[@]}" "${IMG[@]}" -- /bin/sh -c "httpd -f -p 8080 -h /etc & /home/probe udplisten 9999 60")
  b=$(netsbx create "${rtflag[@]}" --network "advb$$" "${P[@]}" "${IMG[@]}" -- /bin/sh -c "httpd -f -p 8080 -h /etc & /home/probe udplisten 9999 60")
  ip_a=$(net_field "$a" "d['IPAddress']"); ip_b=$(net_field "$b" "d['IPAddress']")
  gw_a=$(net_field "$a" "d['Gateway']"); gw_b=$(net_field "$b" "d['Gateway']")
  # The positive controls: a sandbox on network A reaches A's sandbox (TCP, UDP, ICMP).
  sb --network "adva$$" "${P[@]}" "${IMG[@]}" -- /bin/sh -c "
    printf 'GET /hostname HTTP/1.0\r\n\r\n' | nc -w 3 $ip_a 8080 | tail -n 1 | sed 's/^/same-tcp /'
    ping -c 1 -W 2 $ip_a >/dev/null 2>&1 && echo same-icmp; ping -c 1 -W 2 $ip_b >/dev/null 2>&1 && echo ESCAPE icmp to the other network
    /home/probe udpsend $ip_a 9999 same-udp; /home/probe udpsend $ip_b 9999 other-udp
    /home/probe connect tcp:$ip_b:8080 tcp:$gw_a:$port tcp:$gw_b:$port"
  sleep 1
  kill $hl 2>/dev/null; wait $hl 2>/dev/null
  indent <"$T/out/last"
  local got_a got_b
  got_a=$(netsbx logs "$a" 2>&1); got_b=$(netsbx logs "$b" 2>&1)
  if ! grep -q "^same-tcp ${a:0:12}" "$T/out/last" || ! grep -q "same-udp" <<<"$got_a"; then
    fail net-isolate "the positive control failed (no TCP or UDP within one network): cannot test"
  elif grep -q '^ESCAPE' "$T/out/last"; then
    fail net-isolate "$(grep '^ESCAPE' "$T/out/last" | head -3 | tr '\n' ';')"
  elif grep -q "other-udp" <<<"$got_b"; then
    fail net-isolate "UDP reached the other network's sandbox"
  elif [ -s "$T/hostnet.log" ]; then
    fail net-isolate "the host service got: $(cat "$T/hostnet.log")"
  else
    pass net-isolate "TCP, UDP$(grep -q same-icmp "$T/out/last" && echo ', ICMP') to another network and the host's service on both gateways refused"
  fi
  net_cleanup "$a" "$b"
}

case_netspoof() {  # ARP and IP spoofing of a neighbour's address on one network fails
  net_ok || { unsupported net-spoof "this sbx has no 'sbx network' (or no nft/dnsmasq here)"; return; }
  netsbx network create "advs$$" >/dev/null || { fail net-spoof "cannot create a network"; return; }
  local v t ip_v mac_v ip_t mac_t
  v=$(netsbx create "${rtflag[@]}" --network "advs$$" "${IMG[@]}" -- sleep 120)
  t=$(netsbx create "${rtflag[@]}" --network "advs$$" "${P[@]}" "${IMG[@]}" -- /home/probe udplisten 9999 60)
  ip_v=$(net_field "$v" "d['IPAddress']"); mac_v=$(net_field "$v" "d['MacAddress']")
  ip_t=$(net_field "$t" "d['IPAddress']"); mac_t=$(net_field "$t" "d['MacAddress']")
  # The target learns the victim's real MAC first (so a forged ARP reply would have to overwrite it).
  netsbx exec "$t" ping -c 1 -W 2 "$ip_v" >/dev/null 2>&1
  sb --network "advs$$" "${P[@]}" "${IMG[@]}" -- /home/probe spoof eth0 "$ip_v" "$mac_v" "$ip_t" "$mac_t" 9999
  sleep 1
  indent <"$T/out/last"
  local got arp
  got=$(netsbx logs "$t" 2>&1)
  arp=$(netsbx exec "$t" cat /proc/net/arp 2>/dev/null | awk -v ip="$ip_v" '$1 == ip {print $4}')
  log "    target received: $(grep 'udp from' <<<"$got" | tr '\n' ';') arp $ip_v -> ${arp:-none}"
  if ! grep -q "spoof:.*sent" "$T/out/last"; then
    if [ "$runtime" = gvisor ]; then pass net-spoof "gVisor: no raw packet socket for the attack ($(grep -m1 'spoof' "$T/out/last"))"
    else fail net-spoof "the probe could not send raw frames: cannot test"; fi
  elif ! grep -q ": legit" <<<"$got"; then
    fail net-spoof "the control datagram did not arrive: cannot test"
  elif grep -q "udp from $ip_v" <<<"$got"; then
    fail net-spoof "a datagram with the neighbour's source address arrived"
  elif [ -n "$arp" ] && [ "$arp" != "$mac_v" ]; then
    fail net-spoof "the target's ARP entry for $ip_v is $arp, not $mac_v"
  else
    pass net-spoof "forged ARP replies and IP/MAC sources dropped at the bridge port"
  fi
  net_cleanup "$v" "$t"
}

# ---- egress allow-lists against sbx's own (private networks) ----------------
# A world of the case's own: a DNS server the attacker controls (dnsmasq in a
# network namespace the case makes, 203.0.113.34 behind the host's 203.0.113.33)
# and the sandboxes' pool 203.0.113.64/27: every packet goes to a documentation
# address on this machine; 169.254.169.254 is only ever a DNS answer. (Not
# 192.0.2.0/24: a machine may sit on that network itself, as this one's eth0.)
prv_ok() { command -v nft >/dev/null && command -v dnsmasq >/dev/null && command -v ip >/dev/null; }
prvsbx() { SBX_NETWORK_POOL=203.0.113.64/27 "$SBX" --root "$R" --run-root "$RR" "$@"; }
advdns_ns=advdns$$ advdns_veth=advd$$ advdns_pid=""
advdns_up() {  # the attacker's DNS server and an HTTP server (the allowed target) on 203.0.113.34
  : >"$T/rebind.hosts"
  ip netns add "$advdns_ns" && ip link add "$advdns_veth" type veth peer name eth0 netns "$advdns_ns" &&
    ip addr add 203.0.113.33/30 dev "$advdns_veth" && ip link set "$advdns_veth" up &&
    ip -n "$advdns_ns" addr add 203.0.113.34/30 dev eth0 && ip -n "$advdns_ns" link set eth0 up &&
    ip -n "$advdns_ns" link set lo up && ip -n "$advdns_ns" route add default via 203.0.113.33 || return 1
  ip netns exec "$advdns_ns" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
    --bind-interfaces --listen-address=203.0.113.34 --pid-file= --user=root --log-facility=/dev/null \
    --address=/ok.evil.test/203.0.113.34 --addn-hosts="$T/rebind.hosts" &
  advdns_pid=$!
  mkdir -p "$T/www-ok" && echo allowed-target >"$T/www-ok/id"
  ip netns exec "$advdns_ns" python3 -c 'import functools, http.server, socketserver, sys
socketserver.TCPServer.allow_reuse_address = True
socketserver.TCPServer(("203.0.113.34", 8080),
  functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])).serve_forever()' "$T/www-ok" >/dev/null 2>&1 &
  advdns_http=$!
  local i
  for i in $(seq 50); do curl -s -m 1 http://203.0.113.34:8080/id >/dev/null && return 0; sleep 0.1; done
  return 1
}
advdns_down() {
  [ -n "$advdns_pid" ] && { kill "$advdns_pid" "$advdns_http" 2>/dev/null; wait "$advdns_pid" "$advdns_http" 2>/dev/null; }
  advdns_pid=""
  ip link del "$advdns_veth" 2>/dev/null
  ip netns del "$advdns_ns" 2>/dev/null
}
host_listener() {  # PORT LOG: a service on all of the host's addresses (the gateways among them); its pid in $hl
  python3 -c 'import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(8)
open(sys.argv[2], "w").close()
while True:
    c, a = s.accept(); open(sys.argv[2], "a").write("connection from %r\n" % (a,)); c.close()' "$1" "$2" &
  hl=$!
  local i
  for i in $(seq 50); do [ -f "$2" ] && break; sleep 0.1; done
}

case_netrebind() {  # DNS answers under an allowed domain pointing at the host, another sandbox, metadata
  prv_ok || { unsupported net-rebind "needs nft, dnsmasq and ip"; return; }
  advdns_up || { fail net-rebind "cannot build the attacker's DNS server: cannot test"; advdns_down; return; }
  local port=$((20000 + RANDOM % 20000)) peer evil gw peer_ip out set_elems dnslog hl
  host_listener "$port" "$T/rebind-host.log"
  # (No "--" before the command: `create IMAGE -- CMD -h` shows create's help.)
  peer=$(prvsbx create "${rtflag[@]}" --network private "${IMG[@]}" httpd -f -p 8000 -h /etc)
  evil=$(prvsbx create "${rtflag[@]}" --network private --dns 203.0.113.34 --allow-egress '*.evil.test' "${P[@]}" "${IMG[@]}" sleep 300)
  peer_ip=$(prvsbx inspect "$peer" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['NetworkSettings']['IPAddress'])" 2>/dev/null)
  gw=$(prvsbx inspect "$evil" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['NetworkSettings']['Gateway'])" 2>/dev/null)
  if [ -z "$peer_ip" ] || [ -z "$gw" ]; then
    fail net-rebind "cannot start the peer or the attacker's sandbox: cannot test"
    prvsbx rm -f $peer $evil >/dev/null 2>&1; kill $hl 2>/dev/null; wait $hl 2>/dev/null; advdns_down; return
  fi
  # The attacker's DNS server answers only once the sandbox exists (as a
  # rebinding server would): its gateway, the peer, metadata, the host's own address.
  printf '%s gw.evil.test\n%s peer.evil.test\n169.254.169.254 meta.evil.test\n203.0.113.33 host.evil.test\n' "$gw" "$peer_ip" >"$T/rebind.hosts"
  kill -HUP "$advdns_pid"
  sleep 0.3
  # The attack: resolve each name through the sandbox's resolver, connect to
  # whatever resolved (never to 169.254.*), then straight to the addresses.
  prvsbx exec "$evil" /bin/sh -c "
    printf 'GET /id HTTP/1.0\r\n\r\n' | nc -w 3 ok.evil.test 8080 | tail -n 1 | sed 's/^/control /'
    for n in gw peer meta host; do
      for a in \$(nslookup \$n.evil.test 2>/dev/null | sed -n '/^Name/,\$ s/^Address[^:]*: *\\([0-9.]*\\).*/\\1/p'); do
        echo \"ESCAPE \$n.evil.test resolved to \$a\"
        case \$a in 169.254.*) ;; *) /home/probe connect tcp:\$a:$port tcp:\$a:8000 | grep '^ESCAPE' ;; esac
      done
    done
    /home/probe connect tcp:$gw:$port tcp:$peer_ip:8000 tcp:203.0.113.33:$port" >"$T/out/rebind" 2>&1
  set_elems=$(nft list set inet sbxnet "a-${evil:0:12}" 2>&1 | tr -s ' \n\t' ' ' | grep -o 'elements.*')
  dnslog=$(prvsbx inspect "$evil" | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['NetworkSettings'].get('DnsLog',''))")
  # The same through a CIDR allow-list that covers sbx's own pool and the host's address.
  SBX_NETWORK_POOL=203.0.113.64/27 sb --network private --allow-egress 203.0.113.0/24 "${P[@]}" "${IMG[@]}" -- /bin/sh -c "
    gw=\$(ip route | sed -n 's/^default via \\([0-9.]*\\).*/\\1/p')
    printf 'GET /id HTTP/1.0\r\n\r\n' | nc -w 3 203.0.113.34 8080 | tail -n 1 | sed 's/^/cidr-control /'
    /home/probe connect tcp:\$gw:$port tcp:$peer_ip:8000 tcp:203.0.113.33:$port" 2>&1
  cat "$T/out/last" >>"$T/out/rebind"
  sleep 0.3
  kill $hl 2>/dev/null; wait $hl 2>/dev/null
  indent <"$T/out/rebind"
  log "    allow set of the attacker: ${set_elems:-empty}"
  if ! grep -q '^control allowed-target' "$T/out/rebind" || ! grep -q '^cidr-control allowed-target' "$T/out/rebind"; then
    fail net-rebind "the positive control failed (the allowed target did not answer): cannot test"
  elif grep -q '^ESCAPE' "$T/out/rebind"; then
    fail net-rebind "$(grep '^ESCAPE' "$T/out/rebind" | head -4 | tr '\n' ';')"
  elif [ -s "$T/rebind-host.log" ]; then
    fail net-rebind "the host's service got: $(head -3 "$T/rebind-host.log" | tr '\n' ';')"
  elif grep -Eq "169\.254|$gw[^0-9]|$peer_ip[^0-9]|203\.0\.113\.33[^0-9]" <<<"$set_elems "; then
    fail net-rebind "a refused address entered the allow set: $set_elems"
  elif [ -n "$dnslog" ] && [ "$(grep -cE 'config (gw|peer|meta|host)\.evil\.test is NXDOMAIN' "$dnslog" 2>/dev/null)" -lt 4 ]; then
    fail net-rebind "the DNS proxy did not log the four drops ($dnslog)"
  else
    pass net-rebind "answers into the gateway, a peer, metadata and the host dropped and logged; a CIDR allow-list over the pool reaches none"
  fi
  prvsbx rm -f "$peer" "$evil" >/dev/null 2>&1
  advdns_down
}

case_netleftover() {  # a sandbox's network state goes with it: kill -9 of sbx run, docker rm -f with sbx serve alive
  prv_ok || { unsupported net-leftover "needs nft, dnsmasq and ip"; return; }
  advdns_up || { fail net-leftover "cannot build the DNS server: cannot test"; advdns_down; return; }
  local port vid victim proxies="" ok=1 why="" p i st cid
  port=$(free_port)
  # (sbx itself in the background, not a function's subshell: the kill must hit sbx.)
  SBX_NETWORK_POOL=203.0.113.64/27 "$SBX" --root "$R" --run-root "$RR" run "${rtflag[@]}" --network private -p "$port:80" \
    --dns 203.0.113.34 --allow-egress ok.evil.test "${IMG[@]}" sleep 60 >/dev/null 2>&1 &
  victim=$!
  for i in $(seq 150); do
    vid=$(grep -l -F "$RR" "${SBX_NETWORK_STATE:-/run/sbx-net}"/*.json 2>/dev/null | xargs -r grep -h -o '"id": *"[0-9a-f]*"' | grep -o '[0-9a-f]\{64\}' | head -1)
    [ -n "$vid" ] && proxies=$(pgrep -f "^dnsmasq .*/sandboxes/$vid/" | tr '\n' ' ')
    [ -n "$proxies" ] && nft list ruleset 2>/dev/null | grep -q "$port : " && break
    sleep 0.1
  done
  [ -n "$proxies" ] || { ok=0; why="the victim's DNS proxy never appeared: cannot test"; }
  kill -9 "$victim"; wait "$victim" 2>/dev/null
  for p in $proxies; do
    for i in $(seq 40); do st=$(ps -o stat= -p "$p" 2>/dev/null); { [ -z "$st" ] || [ "${st:0:1}" = Z ]; } && break; sleep 0.05; done
    st=$(ps -o stat= -p "$p" 2>/dev/null)
    [ -n "$st" ] && [ "${st:0:1}" != Z ] && { ok=0; why="$why; the killed run's dnsmasq $p lives on"; }
  done
  # No `sbx gc`: the very next start must get the same host port.
  if ! prvsbx run "${rtflag[@]}" --network private -p "$port:80" "${IMG[@]}" -- true >"$T/out/last" 2>&1; then
    ok=0; why="$why; the next start could not publish port $port: $(tail -1 "$T/out/last")"
  fi
  for i in $(seq 20); do
    [ -z "$(grep -l -F "$RR" "${SBX_NETWORK_STATE:-/run/sbx-net}"/*.json 2>/dev/null)" ] && ! nft list ruleset 2>/dev/null | grep -q "$port : " && break
    sleep 0.1
  done
  [ -n "$(grep -l -F "$RR" "${SBX_NETWORK_STATE:-/run/sbx-net}"/*.json 2>/dev/null)" ] && { ok=0; why="$why; the killed run's lease is still there"; }
  nft list ruleset 2>/dev/null | grep -q "$port : " && { ok=0; why="$why; a DNAT for port $port is still there"; }
  [ -n "$vid" ] && nft list ruleset 2>/dev/null | grep -q "${vid:0:12}" && { ok=0; why="$why; nft objects of ${vid:0:12} are still there"; }
  advdns_down
  # docker rm -f while the server that made the container lives on.
  if serve_start; then
    port=$(free_port)
    cid=$(docker run -d -p "$port:8000" busybox httpd -f -p 8000 -h /etc 2>&1)
    if [ "${#cid}" != 64 ]; then ok=0; why="$why; docker run -d -p failed: $(tail -1 <<<"$cid")"
    else
      docker rm -f "$cid" >/dev/null 2>&1
      nft list ruleset 2>/dev/null | grep -q "$port : " && { ok=0; why="$why; docker rm -f left the DNAT of port $port"; }
      grep -l -F "${cid:0:12}" "${SBX_NETWORK_STATE:-/run/sbx-net}"/*.json >/dev/null 2>&1 && { ok=0; why="$why; docker rm -f left its lease"; }
      cid=$(docker run -d -p "$port:8000" busybox httpd -f -p 8000 -h /etc 2>&1)
      [ "${#cid}" = 64 ] || { ok=0; why="$why; port $port could not be published again: $(tail -1 <<<"$cid")"; }
      docker rm -f "$cid" >/dev/null 2>&1
    fi
  else
    log "    note: no docker rm -f part: $serve_why"
  fi
  if [ $ok = 1 ]; then pass net-leftover "kill -9 of sbx run: its DNS proxy ended, the next start got its port, nothing left; docker rm -f freed its port at once"
  else fail net-leftover "${why#; }"; fi
}

case_hostname() {
  sb "${IMG[@]}" -- /bin/sh -c "hostname evil-$marker; echo 'evil-$marker' > /proc/sys/kernel/hostname 2>/dev/null; echo ran-$marker"
  indent <"$T/out/last"
  grep -q "^ran-$marker" "$T/out/last" || { fail hostname "the sandbox did not run the attack (rc=$(cat "$T/out/rc"))"; return; }
  [ "$(hostname)" = "$host_hostname" ] && [ "$(cat /proc/sys/kernel/hostname)" = "$host_hostname" ] ||
    { fail hostname "host hostname is now $(hostname)"; hostname "$host_hostname"; return; }
  pass hostname
}

case_kill() {
  bash -c "exec -a sbx-adv-victim-$marker sleep 1000" &
  victim=$!
  sleep 0.2
  sb "${P[@]}" "${IMG[@]}" -- /home/probe kill "$victim" "$marker"
  probe_ok signal-host-process || { kill $victim 2>/dev/null; victim=""; return; }
  if ! kill -0 "$victim" 2>/dev/null; then fail signal-host-process "the host process $victim died"; victim=""; return; fi
  kill "$victim"; wait "$victim" 2>/dev/null; victim=""
  pass signal-host-process
}

case_forkbomb() {
  sb --pids-limit 64 --timeout 60s "${P[@]}" "${IMG[@]}" -- /home/probe forkbomb 2000
  indent <"$T/out/last"
  local n
  n=$(awk '/^result  forkbomb/{print $3}' "$T/out/last")
  [ -n "$n" ] || { fail fork-bomb "no result (rc=$(cat "$T/out/rc"))"; return; }
  [ "$n" -le 64 ] || { fail fork-bomb "$n processes with --pids-limit 64"; return; }
  # Contained: now the real thing, a shell fork bomb, bounded by the timeout.
  local t0=$SECONDS
  sb --pids-limit 64 --timeout 5s "${IMG[@]}" -- /bin/sh -c 'b(){ b | b & }; b; sleep 100'
  local rc=$? took=$((SECONDS - t0))
  [ $took -le 30 ] || { fail fork-bomb "shell fork bomb ran ${took}s with --timeout 5s"; return; }
  sleep 0.5
  pgrep -f "$RR" >/dev/null && { fail fork-bomb "processes left: $(pgrep -af "$RR" | head -3)"; return; }
  pass fork-bomb "probe stopped at $n children; shell bomb ended rc=$rc after ${took}s"
}

case_threads() {
  sb --pids-limit 256 --timeout 60s "${P[@]}" "${IMG[@]}" -- /home/probe threads 10000
  indent <"$T/out/last"
  local n
  n=$(awk '/^result  threads/{print $3}' "$T/out/last")
  [ -n "$n" ] || { fail threads "no result (rc=$(cat "$T/out/rc"))"; return; }
  [ "$n" -le 256 ] || { fail threads "$n threads with --pids-limit 256"; return; }
  pass threads "stopped at $n threads"
}

case_membomb() {
  sb --memory 64m --timeout 60s "${P[@]}" "${IMG[@]}" -- /home/probe mem 1024
  local rc=$(cat "$T/out/rc")
  tail -3 "$T/out/last" | indent
  local mb
  mb=$(awk '/^result  mem/{m=$3} END{print m+0}' "$T/out/last")
  [ "$mb" -le 72 ] || { fail memory-bomb "touched $mb MiB with --memory 64m"; return; }
  [ "$rc" = 137 ] || grep -q 'mmap failed' "$T/out/last" || { fail memory-bomb "rc=$rc, expected 137 (OOM kill)"; return; }
  pass memory-bomb "stopped at $mb MiB, rc=$rc"
}

case_disk() {
  if ! has_flag --disk; then
    unsupported disk-filler "sbx run has no --disk limit on the writable layer yet (a disk filler fills the host's file system holding the run root)"
    return
  fi
  sb --disk 32m --timeout 60s "${P[@]}" "${IMG[@]}" -- /home/probe disk /fill 1024
  indent <"$T/out/last"
  grep -q '^result  disk [0-9]* ENOSPC' "$T/out/last" || { fail disk-filler "no ENOSPC"; return; }
  local mb
  mb=$(awk '/^result  disk/{print $3}' "$T/out/last")
  [ "$mb" -le 40 ] || { fail disk-filler "wrote $mb MiB with --disk 32m"; return; }
  pass disk-filler "ENOSPC after $mb MiB"
}

case_spin() {
  local t0=$SECONDS
  sb --timeout 2s "${P[@]}" "${IMG[@]}" -- /home/probe spin
  local rc=$? took=$((SECONDS - t0))
  [ $rc = 124 ] || { indent <"$T/out/last"; fail infinite-loop "rc=$rc, expected 124"; return; }
  [ $took -le 10 ] || { fail infinite-loop "took ${took}s with --timeout 2s"; return; }
  pass infinite-loop "killed after ~${took}s, rc=124"
}

case_argv() {
  # ~1.5 MiB of argv: near ARG_MAX (a quarter of the 8 MiB stack limit).
  local args
  mapfile -t args < <(seq -f "argument-%022g" 1 50000)
  sb "${IMG[@]}" -- /bin/sh -c 'echo argc=$#' sh "${args[@]}"
  local rc=$?
  tail -2 "$T/out/last" | indent
  if [ $rc = 0 ]; then
    grep -q 'argc=50000' "$T/out/last" || { fail huge-argv "rc 0 but argc wrong: $(tail -1 "$T/out/last")"; return; }
  elif [ $rc -lt 125 ] || [ $rc -gt 127 ] || ! grep -q 'sbx: error' "$T/out/last"; then
    fail huge-argv "rc=$rc without a clear sbx error"; return
  fi
  # A huge environment: 20000 variables and one value over MAX_ARG_STRLEN.
  if has_flag --env-file; then
    { seq -f "SBXADV%g=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" 1 20000; printf 'SBXBIG=%0200000d\n' 0; } >"$T/env"
    sb --env-file "$T/env" "${IMG[@]}" -- /bin/sh -c 'echo ok'
    rc=$?
    tail -2 "$T/out/last" | cut -c1-200 | indent
    if [ $rc != 0 ] && { [ $rc -lt 125 ] || [ $rc -gt 127 ] || ! grep -q 'sbx: error' "$T/out/last"; }; then
      fail huge-argv "huge env: rc=$rc without a clear sbx error"; return
    fi
  fi
  pass huge-argv "argv rc=0 argc=50000; env rc=$rc"
}

# Hostile root file systems (--rootfs): busybox plus one trap each.
case_hostile_rootfs() {  # CVE-2025-31133, CVE-2025-52565, CVE-2025-52881
  if ! has_flag --rootfs; then unsupported dev-symlinks "no --rootfs flag"; return; fi
  local cp mp base=$T/bb
  cp=$(cat /proc/sys/kernel/core_pattern)
  mp=$(cat /proc/sys/kernel/modprobe 2>/dev/null)
  [ -d "$base" ] || mkbusybox "$base" || { fail dev-symlinks "cannot unpack busybox with umoci"; return; }
  mkdir -p "$T/evil-target"
  local variant ok=1
  for variant in devnodes devdir procdir procsys; do
    local rf=$T/rootfs-$variant
    rm -rf "$rf"; cp -a "$base" "$rf"; mkdir -p "$rf/adv"
    case $variant in
      devnodes)  # /dev/null etc. are symlinks to host-sensitive files (runc masks with /dev/null)
        rm -rf "$rf/dev"; mkdir -p "$rf/dev"
        ln -s /proc/sys/kernel/core_pattern "$rf/dev/null"
        ln -s /proc/sysrq-trigger "$rf/dev/console"
        ln -s /proc/sys/kernel/modprobe "$rf/dev/full"
        ln -s /proc/sys/kernel/core_pattern "$rf/dev/ptmx"
        ln -s "$T/evil-target" "$rf/dev/pts" ;;
      devdir) rm -rf "$rf/dev"; ln -s /proc/sys/kernel "$rf/dev" ;;
      procdir) rm -rf "$rf/proc"; ln -s "$T/evil-target" "$rf/proc" ;;
      procsys) rm -rf "$rf/proc"; ln -s "../../../../../../../../proc/sys/kernel" "$rf/proc" ;;
    esac
    sb --rootfs "$rf" "${P[@]}" -- /home/probe masked
    local rc=$?
    log "    variant $variant: rc=$rc"
    if grep -q '^ESCAPE' "$T/out/last" && ! sentry_case dev-symlinks; then indent <"$T/out/last"; fail "dev-symlinks/$variant" "$(grep -m1 ESCAPE "$T/out/last")"; ok=0; continue; fi
    if ! grep -q '^done' "$T/out/last"; then
      # Refusing the hostile rootfs is a correct answer, if it is a clean error.
      if [ $rc -lt 125 ] || [ $rc -gt 127 ]; then indent <"$T/out/last"; fail "dev-symlinks/$variant" "rc=$rc"; ok=0; continue; fi
      log "    refused: $(grep -m1 'sbx: error' "$T/out/last")"
    fi
    if [ "$(cat /proc/sys/kernel/core_pattern)" != "$cp" ] || [ "$(cat /proc/sys/kernel/modprobe 2>/dev/null)" != "$mp" ]; then
      fail "dev-symlinks/$variant" "host core_pattern/modprobe changed"; ok=0; continue
    fi
    if findmnt -rn -o TARGET | grep -qF "$T/evil-target"; then fail "dev-symlinks/$variant" "a mount appeared on the host at $T/evil-target"; ok=0; continue; fi
    if [ -n "$(ls -A "$T/evil-target")" ]; then fail "dev-symlinks/$variant" "files appeared in host dir $T/evil-target"; ok=0; continue; fi
  done
  [ $ok = 1 ] && pass dev-symlinks "/dev/{null,console,full,ptmx,pts}, /dev and /proc as symlinks"
}

case_exe() {  # CVE-2019-5736
  if ! has_flag --rootfs; then unsupported overwrite-sbx-binary "no --rootfs flag"; return; fi
  local base=$T/bb rf=$T/rootfs-exe copy=$T/sbx-copy
  [ -d "$base" ] || mkbusybox "$base" || { fail overwrite-sbx-binary "cannot unpack busybox"; return; }
  rm -rf "$rf"; cp -a "$base" "$rf"; mkdir -p "$rf/adv"
  # The attack targets the running sbx binary: run a copy, so a broken sandbox
  # cannot damage the build.
  cp "$SBX" "$copy"
  local sha
  sha=$(sha256sum "$copy" | cut -d' ' -f1)
  local static=0
  readelf -lW "$copy" | grep -q INTERP || static=1
  # Everything sbx's dynamic loader needs, so that it runs inside the sandbox
  # with the hostile /etc/ld.so.preload.
  if [ $static = 0 ]; then
    local lib
    for lib in $(ldd "$copy" | grep -o '/[^ ]*'); do mkdir -p "$rf$(dirname "$lib")"; cp -L "$lib" "$rf$lib"; done
    cp "$T/exe_preload.so" "$rf/evil.so"
    echo /evil.so >"$rf/etc/ld.so.preload"
  fi
  local cmd ok=1
  : >"$T/out/exe-all"
  for cmd in /proc/self/exe /proc/1/exe; do
    "$copy" --root "$R" --run-root "$RR" run "${rtflag[@]}" --rootfs "$rf" -- "$cmd" --version >"$T/out/last" 2>&1
    local rc=$?
    sleep 3.5  # the attacker's child retries for 1.5 s after the exec
    log "    $cmd: rc=$rc"
    indent <"$T/out/last"
    cat "$T/out/last" >>"$T/out/exe-all"
    grep -q '^ESCAPE' "$T/out/last" && { fail overwrite-sbx-binary "$cmd: $(grep -m1 ESCAPE "$T/out/last")"; ok=0; }
  done
  [ "$(sha256sum "$copy" | cut -d' ' -f1)" = "$sha" ] || { fail overwrite-sbx-binary "the sbx binary on the host changed"; ok=0; }
  if [ $ok = 1 ]; then
    if [ $static = 1 ]; then pass overwrite-sbx-binary "static sbx: no loader to hijack; binary unchanged"
    else pass overwrite-sbx-binary "binary unchanged$(grep -q 'exe-preload: loaded' "$T/out/exe-all" && echo '; the hijacked loader ran inside and got ETXTBSY/EACCES' || echo '; the preload never ran')"; fi
  fi
}

case_sbx_killed() {  # sbx itself SIGKILLed mid-run: the sandbox dies with it; gc removes the rest
  "$SBX" --root "$R" --run-root "$RR" run "${rtflag[@]}" "${IMG[@]}" -- /bin/sh -c "sleep 100; : killed-$marker" >/dev/null 2>&1 &
  local sbx_pid=$! i
  for i in $(seq 100); do pgrep -f "killed-$marker" | grep -qv "^$sbx_pid\$" && break; sleep 0.05; done
  kill -9 "$sbx_pid"; wait "$sbx_pid" 2>/dev/null
  sleep 1
  local left
  left=$(pgrep -af "killed-$marker" || true)
  if [ -n "$left" ]; then
    fail sbx-killed "the sandbox outlived its SIGKILLed sbx: $(head -2 <<<"$left" | tr '\n' ';')"
    pkill -9 -f "killed-$marker"
    return
  fi
  sleep 10  # gc leaves state younger than 10 s alone (a start in progress)
  "$SBX" --root "$R" --run-root "$RR" gc >/dev/null 2>&1
  pass sbx-killed "no process left; gc ran"
}

case_created() {  # long-lived sandboxes: the same probes through `sbx exec`, and the disk-backed writable layer
  if [ "$runtime" != native ]; then na created "sbx create runs on the native runtime only"; return; fi
  if ! "$SBX" --help 2>&1 | grep -q '^  create '; then na created "this sbx has no create"; return; fi
  local uflag=() id c
  [ $userns_host = 1 ] && uflag=(--userns host)
  if [ "${IMG[0]}" != busybox ]; then na created "needs the busybox image"; return; fi
  id=$("$SBX" --root "$R" --run-root "$RR" create "${uflag[@]}" "${P[@]}" busybox 2>"$T/out/last") || { indent <"$T/out/last"; fail created "create failed"; return; }
  ex() { "$SBX" --root "$R" --run-root "$RR" exec "$id" "$@" >"$T/out/last" 2>&1; echo $? >"$T/out/rc"; }
  for c in syscalls masked fds; do
    ex /home/probe "$c"
    probe_ok "created-exec-$c" || { "$SBX" --root "$R" --run-root "$RR" rm -f "$id" >/dev/null 2>&1; return; }
  done
  # A set-uid root binary planted in the writable layer, which lives on the
  # host's disk (RUN_ROOT/<id>/fs/upper): it must be no use to a host user.
  ex sh -c 'cp /bin/busybox /suid && chmod 4755 /suid && stat -c "%u %a" /suid'
  indent <"$T/out/last"
  local f=$RR/$id/fs/upper/suid owner
  owner=$(stat -c %u "$f" 2>/dev/null)
  if [ -z "$owner" ]; then fail created "no /suid in the writable layer at $f"
  elif [ $userns_host = 0 ] && [ "$owner" = 0 ]; then fail created "a set-uid file planted inside is owned by host root on disk ($f)"
  elif [ "$(stat -c %a "$RR/$id")" != 700 ] || [ "$(stat -c %a "$RR/$id/fs")" != 700 ]; then
    fail created "the state dir or its fs/ is open to host users: $(stat -c '%a %n' "$RR/$id" "$RR/$id/fs" | tr '\n' ' ')"
  else
    pass created "exec probes held; planted set-uid file is host uid $owner, in 0700 dirs"
  fi
  "$SBX" --root "$R" --run-root "$RR" rm -f "$id" >/dev/null 2>&1 || fail created "rm -f"
}

case_volume_setid() {  # host root through a read-write volume
  # Root inside copies a binary into the volume and makes it set-uid, set-gid,
  # file-capable (v2, and v3 keyed to uid 0 and 65534 inside), chowns one to
  # root after the chmod, tries a hard link, and attacks a host-root file that
  # is already there. The HOST then checks owner, mode and security.capability
  # (stat, getxattr); nothing set-id is ever run on the host.
  local owner ok=1 detail=""
  for owner in 0 4242; do
    local V=$T/setid-$owner
    rm -rf "$V"; mkdir -p "$V"; chown "$owner:$owner" "$V"; chmod 755 "$V"
    echo hostfile >"$V/hostroot"; chmod 644 "$V/hostroot"
    sb -v "$V:/var" "${P[@]}" "${IMG[@]}" -- /bin/sh -c '
      cp /bin/busybox /var/suid && chmod 4755 /var/suid
      cp /bin/busybox /var/sgid && chmod 2755 /var/sgid
      cp /bin/busybox /var/cap2 && /home/probe setcap /var/cap2
      cp /bin/busybox /var/cap3 && /home/probe setcap /var/cap3 0
      cp /bin/busybox /var/cap3n && /home/probe setcap /var/cap3n 65534
      ln /bin/busybox /var/hardlink 2>&1 && chmod 4755 /var/hardlink
      cp /bin/busybox /var/chowned && chmod 4755 /var/chowned && chown 0:0 /var/chowned; chmod 6755 /var/chowned
      chmod 4755 /var/hostroot 2>&1; chown 0:0 /var/hostroot 2>&1
      echo planted'
    indent <"$T/out/last"
    grep -q '^planted' "$T/out/last" || { fail volume-setid "owner $owner: the sandbox did not run (rc=$(cat "$T/out/rc"))"; ok=0; continue; }
    local bad
    bad=$(python3 - "$V" <<'PY'
import os, stat, struct, sys
for n in sorted(os.listdir(sys.argv[1])):
    p = os.path.join(sys.argv[1], n); st = os.lstat(p)
    if st.st_uid == 0 and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        print("%s: host-root-owned, mode %o" % (n, st.st_mode & 0o7777))
    if st.st_gid == 0 and st.st_mode & stat.S_ISGID and st.st_mode & stat.S_IXGRP:
        print("%s: set-gid to host gid 0, mode %o" % (n, st.st_mode & 0o7777))
    try:
        v = os.getxattr(p, "security.capability", follow_symlinks=False)
    except OSError:
        continue
    magic = struct.unpack("<I", v[:4])[0] >> 24
    rootid = struct.unpack("<I", v[20:24])[0] if len(v) >= 24 else 0
    if magic == 2 or rootid == 0:
        print("%s: file capabilities that work on the host (v%d, rootid %d)" % (n, magic, rootid))
PY
)
    if [ "$(stat -c '%u %a' "$V/hostroot")" != "0 644" ]; then
      # --userns host: the sandbox's root holds CAP_CHOWN over the host's file
      # systems, and the kernel lets it chown a file whose owner the idmap does
      # not map (chown_ok); it then owns it as an unprivileged id, never as root.
      if [ $userns_host = 1 ] && [ "$(stat -c %u "$V/hostroot")" != 0 ]; then log "    note: --userns host took host root's file as $(stat -c '%u %a' "$V/hostroot")"
      else bad+=" hostroot: now $(stat -c '%u %a' "$V/hostroot")"; fi
    fi
    if [ -n "$bad" ]; then
      fail volume-setid "owner $owner: $(tr '\n' ';' <<<"$bad")"; ok=0; continue
    fi
    if [ "$owner" != 0 ]; then
      # keep-id: what the sandbox's root made is the directory owner's.
      [ "$(stat -c %u "$V/suid" 2>/dev/null)" = "$owner" ] || { fail volume-setid "owner $owner: /var/suid is $(stat -c %u "$V/suid" 2>&1), not the directory's owner"; ok=0; continue; }
    fi
    detail+="owner $owner: $(ls "$V" | wc -l) files, none host-root set-id or file-capable; "
  done
  if [ $ok = 1 ]; then
    # The opt-in keeps the old identity mapping (documented as unsafe).
    local V=$T/setid-host
    rm -rf "$V"; mkdir -p "$V"
    sb -v "$V:/var:idmap=host" "${P[@]}" "${IMG[@]}" -- /bin/sh -c 'echo x >/var/f'
    [ "$(stat -c %u "$V/f" 2>/dev/null)" = 0 ] || { fail volume-setid ":idmap=host did not write as host root (rc=$(cat "$T/out/rc"))"; ok=0; }
  fi
  [ $ok = 1 ] && pass volume-setid "$detail"
}

case_cp_out() {  # `sbx cp` out of a hostile sandbox
  local S=("$SBX" --root "$R" --run-root "$RR") id out ok=1 detail=""
  [ "${IMG[0]}" = busybox ] || { na cp-out "needs the busybox image"; return; }
  # The creating user's environment holds a secret: the sandbox must not get it through sbx cp.
  # (rtflag carries --runtime and --userns host.)
  id=$(SBX_ADV_CP_SECRET=cpsecret-$marker "${S[@]}" create "${rtflag[@]}" busybox -- sleep 600 2>"$T/out/last") ||
    { indent <"$T/out/last"; fail cp-out "create failed"; return; }
  local hostpid=$$
  "${S[@]}" exec "$id" sh -c "mkdir -p /work /evil && ln -s /proc/1 /work/pdir && ln -s /proc/self/root /work/selfroot &&
    ln -s /proc/$hostpid /work/hostpid && ln -s /proc/1/root /work/initroot &&
    cp /bin/busybox /work/suid && chmod 4755 /work/suid && cp /bin/busybox /work/sgid && chmod 2755 /work/sgid &&
    chown 0:0 /work/suid /work/sgid && chmod u+s /work/suid && echo planted" >"$T/out/last" 2>&1
  grep -q planted "$T/out/last" || { indent <"$T/out/last"; fail cp-out "could not plant the links"; "${S[@]}" rm -f "$id" >/dev/null 2>&1; return; }
  out=$T/cpout; rm -rf "$out"; mkdir -p "$out"
  local p n=0
  for p in /work/pdir/environ /work/selfroot/etc/passwd /work/hostpid/environ /work/initroot/etc/passwd /work/pdir/root/etc/passwd /work/pdir; do
    n=$((n + 1))
    "${S[@]}" cp "$id:$p" "$out/c$n" >"$T/out/last" 2>&1
    local rc=$?
    log "    cp $p: rc=$rc $(head -c 200 "$T/out/last" | tr '\n' ' ')"
  done
  if grep -rqs "cpsecret-$marker" "$out"; then fail cp-out "the creating user's environment reached the host: $(grep -rls "cpsecret-$marker" "$out" | head -2 | tr '\n' ' ')"; ok=0; fi
  if grep -rqsF "$(head -1 /etc/shadow | cut -d: -f1-2)" "$out" 2>/dev/null && [ -n "$(find "$out" -name shadow)" ]; then fail cp-out "host files reached through a magic link"; ok=0; fi
  # Set-id files arrive without their bits.
  "${S[@]}" cp "$id:/work/suid" "$out/suid" >/dev/null 2>&1 && "${S[@]}" cp "$id:/work/sgid" "$out/sgid" >/dev/null 2>&1 ||
    { fail cp-out "copying a plain file out failed"; ok=0; }
  local f
  for f in "$out/suid" "$out/sgid"; do
    [ -e "$f" ] || continue
    if [ $(( 0$(stat -c %a "$f") & 06000 )) != 0 ]; then fail cp-out "$(basename "$f") arrived with mode $(stat -c %a "$f")"; ok=0; fi
  done
  [ $ok = 1 ] && detail="magic links (/proc/1, /proc/self/root, /proc/<host pid>, /proc/1/root) gave nothing; set-id bits stripped"
  if [ "$runtime" = gvisor ] && [ $ok = 1 ]; then
    # The sandbox's own sh and tar make the stream there: a hostile sh sends
    # zeros forever, stalls, lies about a size (short, or endless data).
    python3 - "$T/lie-short.tar" "$T/lie-header.tar" <<'PY'
import sys, tarfile
ti = tarfile.TarInfo("./f"); ti.size = 1 << 30; ti.mode = 0o644
h = ti.tobuf(tarfile.USTAR_FORMAT)
open(sys.argv[1], "wb").write(h + b"x" * 10)
open(sys.argv[2], "wb").write(h)
PY
    "${S[@]}" cp "$T/lie-short.tar" "$id:/lie-short.tar" >/dev/null 2>&1
    "${S[@]}" cp "$T/lie-header.tar" "$id:/lie-header.tar" >/dev/null 2>&1
    "${S[@]}" exec "$id" sh -c 'cd /evil && for m in zeros stall short huge; do mkdir -p $m; echo x >$m/f; done
      rm /bin/sh && cat >/bin/sh <<"X"
#!/bin/busybox sh
case "$4" in
 */zeros/*) exec busybox cat /dev/zero ;;
 */stall/*) exec busybox sleep 1000 ;;
 */short/*) exec busybox cat /lie-short.tar ;;
 */huge/*) busybox cat /lie-header.tar; exec busybox cat /dev/zero ;;
esac
exec /bin/busybox sh "$@"
X
      busybox chmod 755 /bin/sh' >/dev/null 2>&1
    local m want t0 took rc
    for m in zeros stall short huge; do
      rm -rf "$out/$m"
      t0=$SECONDS
      SBX_CP_STALL_TIMEOUT=3 SBX_CP_MAX_BYTES=$((64 << 20)) timeout 120 "${S[@]}" cp "$id:/evil/$m/f" "$out/$m" >"$T/out/last" 2>&1
      rc=$? took=$((SECONDS - t0))
      log "    hostile tar '$m': rc=$rc after ${took}s: $(head -c 200 "$T/out/last" | tr '\n' ' ')"
      want=125; [ $m = stall ] && want=124
      [ $rc = $want ] || { fail cp-out "hostile tar '$m': rc=$rc, expected $want"; ok=0; }
      grep -q 'sbx: error: sbx cp:' "$T/out/last" || { fail cp-out "hostile tar '$m': no clear error"; ok=0; }
      [ ! -e "$out/$m" ] || { fail cp-out "hostile tar '$m': left $(du -sh "$out/$m" | cut -f1) at the destination"; ok=0; }
      [ -z "$(find "$RR" -name '.cp-*' 2>/dev/null)" ] || { fail cp-out "hostile tar '$m': something staged in the run root"; ok=0; }
    done
    "${S[@]}" exec "$id" busybox ps >"$T/out/last" 2>&1
    if grep -qE 'sleep 1000|cat /dev/zero' "$T/out/last"; then fail cp-out "the hostile sandbox-side tar still runs: $(grep -E 'sleep 1000|cat' "$T/out/last" | tr '\n' ';')"; ok=0; fi
    [ $ok = 1 ] && detail+="; hostile tar (zeros, stall, short, endless) stopped with 125/124/125/125, nothing left"
  fi
  "${S[@]}" rm -f "$id" >/dev/null 2>&1 || { fail cp-out "rm -f"; ok=0; }
  [ $ok = 1 ] && pass cp-out "$detail"
}

# ------------------------------------------ socket families, user ids, names ---
case_vsock() {  # AF_VSOCK reaches a VM's hypervisor beside --network none: refused (docker's profile)
  sb "${P[@]}" "${IMG[@]}" -- /home/probe vsock
  probe_ok vsock && pass vsock "$(grep -o 'vsock: .*' "$T/out/last" | head -1)"
}

case_ids() {  # -u / image User "4294967295" is (uid_t)-1, "unchanged" to setresuid: it ran as root
  local u ok=1
  for u in 4294967295 4294967296 0:4294967295 99999999999999999999 -1; do
    sb -u "$u" "${IMG[@]}" -- id
    local rc=$(cat "$T/out/rc")
    if [ "$rc" != 125 ] || ! grep -qE 'invalid|unable to find user' "$T/out/last"; then
      fail bad-ids "-u $u: rc=$rc: $(head -2 "$T/out/last" | tr '\n' ' ')"; ok=0
    fi
  done
  # An image whose /etc/passwd gives a user that id.
  mkbusybox "$T/bbid" || { fail bad-ids "cannot unpack busybox"; return; }
  echo 'evil:x:4294967295:0::/:/bin/sh' >>"$T/bbid/etc/passwd"
  sb -u evil --rootfs "$T/bbid" -- id
  if [ "$(cat "$T/out/rc")" != 125 ]; then fail bad-ids "passwd uid 4294967295: rc=$(cat "$T/out/rc"): $(head -2 "$T/out/last" | tr '\n' ' ')"; ok=0; fi
  if [ "$runtime" = native ] && [ "${IMG[0]}" = busybox ]; then
    local uflag=() id
    [ $userns_host = 1 ] && uflag=(--userns host)
    id=$("$SBX" --root "$R" --run-root "$RR" create "${uflag[@]}" busybox 2>/dev/null)
    "$SBX" --root "$R" --run-root "$RR" exec -u 4294967295 "$id" id >"$T/out/last" 2>&1
    local rc=$?
    [ $rc = 125 ] || { fail bad-ids "exec -u 4294967295: rc=$rc: $(head -1 "$T/out/last")"; ok=0; }
    "$SBX" --root "$R" --run-root "$RR" rm -f "$id" >/dev/null 2>&1
  fi
  rm -rf "$T/bbid"
  [ $ok = 1 ] && pass bad-ids "4294967295, 2^32, gid 4294967295, overflow, -1 and a passwd entry refused (exit 125)"
}

case_names() {  # run --name is validated as create --name: no path, no newline, unique among live sandboxes
  local ok=1 n
  for n in '../../x' $'a\nb' '/abs' '.hidden' 'a/b'; do
    sb --name "$n" "${IMG[@]}" -- true
    [ "$(cat "$T/out/rc")" = 125 ] || { fail names "run --name $(printf %q "$n"): rc=$(cat "$T/out/rc")"; ok=0; }
  done
  [ -e "$RR/../x" ] && { fail names "a name made $RR/../x"; ok=0; }
  "$SBX" --root "$R" --run-root "$RR" run "${rtflag[@]}" --name "dup$marker" "${IMG[@]}" -- sleep 20 >/dev/null 2>&1 &
  local bg=$! i
  for i in $(seq 100); do [ -e "$RR/.names/dup$marker" ] && break; sleep 0.05; done
  sb --name "dup$marker" "${IMG[@]}" -- true
  if [ "$(cat "$T/out/rc")" != 125 ] || ! grep -q 'already used' "$T/out/last"; then
    fail names "a second live run took the name: rc=$(cat "$T/out/rc"): $(head -1 "$T/out/last")"; ok=0
  fi
  kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null
  sb --name "dup$marker" "${IMG[@]}" -- true
  [ "$(cat "$T/out/rc")" = 0 ] || { fail names "the name was not free after its run ended: $(head -1 "$T/out/last")"; ok=0; }
  [ $ok = 1 ] && pass names "'../../x', newline, '/', '.x', 'a/b' refused; a live run's name refused to a second run, free after it"
}

case_mount_errors() {  # the real error of a failed mount reaches the user (it was ECONNRESET)
  local ok=1 a i
  for a in "--tmpfs /bin/sh" "--tmpfs /etc/passwd" "-v $T/vol:/proc/sys/x" "--tmpfs /sys/x" "-v /etc/hostname:/bin"; do
    for i in 1 2 3 4; do
      # shellcheck disable=SC2086
      sb $a "${IMG[@]}" -- true
      local rc=$(cat "$T/out/rc")
      [ "$rc" = 0 ] && continue  # (gVisor may accept it)
      if grep -q ECONNRESET "$T/out/last" || ! grep -q 'sbx: error: ' "$T/out/last"; then
        fail mount-errors "$a: rc=$rc: $(head -1 "$T/out/last")"; ok=0; break
      fi
    done
  done
  [ $ok = 1 ] && pass mount-errors "each failed mount reported its own error ($(head -1 "$T/out/last" | cut -c1-80))"
}

case_snapshot_symlink() {  # a symlink's target is data: /bad -> ../x does not fail a snapshot
  if [ "$runtime" != native ] || [ "${IMG[0]}" != busybox ]; then na snapshot-symlink "needs sbx create on the native runtime and the busybox image"; return; fi
  local uflag=() id
  [ $userns_host = 1 ] && uflag=(--userns host)
  id=$("$SBX" --root "$R" --run-root "$RR" create "${uflag[@]}" busybox 2>"$T/out/last") || { fail snapshot-symlink "create: $(head -1 "$T/out/last")"; return; }
  "$SBX" --root "$R" --run-root "$RR" exec "$id" sh -c 'ln -s ../x /bad && ln -s ../../../../etc/shadow /tmp/deep' >/dev/null 2>&1
  if ! "$SBX" --root "$R" --run-root "$RR" snapshot --name "snap$marker" "$id" >"$T/out/last" 2>&1; then
    fail snapshot-symlink "snapshot refused: $(head -2 "$T/out/last" | tr '\n' ' ')"
  else
    sb "snap$marker" -- sh -c 'readlink /bad; readlink /tmp/deep' 
    if [ "$(tr '\n' ' ' <"$T/out/last")" = "../x ../../../../etc/shadow " ]; then pass snapshot-symlink "kept as data: $(tr '\n' ' ' <"$T/out/last")"
    else fail snapshot-symlink "in the snapshot: $(head -2 "$T/out/last" | tr '\n' ' ')"; fi
    "$SBX" --root "$R" --run-root "$RR" rmi "snap$marker" >/dev/null 2>&1
  fi
  "$SBX" --root "$R" --run-root "$RR" rm -f "$id" >/dev/null 2>&1
}

case_end_reason() {  # the workload can fake sbx's timeout message and exit code, not the end record
  if ! has_flag --end-record; then unsupported end-reason "sbx run has no --end-record"; return; fi
  local ok=1 reason
  sb --end-record "$T/out/end1" "${IMG[@]}" -- sh -c 'echo "sbx: sandbox killed: timeout after 1s" >&2; exit 124'
  reason=$(grep -o '"Reason": "[a-z]*"' "$T/out/end1" 2>/dev/null)
  [ "$(cat "$T/out/rc")" = 124 ] && [ "$reason" = '"Reason": "exit"' ] || { fail end-reason "faked timeout: rc=$(cat "$T/out/rc"), record: $reason"; ok=0; }
  sb --end-record "$T/out/end2" --timeout 1s "${IMG[@]}" -- sleep 30
  reason=$(grep -o '"Reason": "[a-z]*"' "$T/out/end2" 2>/dev/null)
  [ "$reason" = '"Reason": "timeout"' ] || { fail end-reason "real timeout: record: $reason"; ok=0; }
  sb --end-record "$T/out/end3" "${IMG[@]}" -- /no/such/command
  reason=$(grep -o '"Reason": "[a-z]*"' "$T/out/end3" 2>/dev/null)
  [ "$reason" = '"Reason": "failed"' ] || { fail end-reason "failed start: record: $reason"; ok=0; }
  [ $ok = 1 ] && pass end-reason "a faked timeout (exit 124 + message) is recorded as exit; a real one as timeout; a failed start as failed"
}

# ---- sbx serve: the Docker API's sandboxes ----------------------------------
# A server of this run's own (its --root and --run-root), on a unix socket
# and loopback TCP with a bearer token; its environment carries a second
# planted secret. Clients: the docker CLI and docker-py (python3-docker).
serve_token=""
serve_secret=""
serve_why=""
serve_start() {  # starts the server once; 1 when it cannot (the reason in $serve_why)
  [ -n "$serve_pid" ] && return 0
  command -v docker >/dev/null || { serve_why="no docker CLI"; return 1; }
  serve_token=adv-token-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  serve_secret=adv-secret-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  printf '%s\n' "$serve_token" >"$T/token"
  chmod 600 "$T/token"
  serve_port=$((20000 + RANDOM % 30000))
  env SBX_ADV_SERVER_SECRET="$serve_secret" "$SBX" --root "$R" --run-root "$RR" serve --runtime "$runtime" \
    --socket "$T/docker.sock" --tcp "127.0.0.1:$serve_port" --token-file "$T/token" 2>"$T/serve.log" &
  serve_pid=$!
  local i
  for i in $(seq 200); do [ -S "$T/docker.sock" ] && break; sleep 0.05; done
  [ -S "$T/docker.sock" ] || { serve_why="sbx serve did not start: $(tail -3 "$T/serve.log")"; serve_stop; return 1; }
  export DOCKER_HOST=unix://$T/docker.sock DOCKER_CONFIG=$T/docker-config
  return 0
}
serve_stop() {
  [ -n "$serve_pid" ] || return 0
  local c
  for c in $(docker ps -aq 2>/dev/null); do docker rm -f "$c" >/dev/null 2>&1; done
  kill -TERM "$serve_pid" 2>/dev/null
  wait "$serve_pid" 2>/dev/null
  serve_pid=""
  unset DOCKER_HOST
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
map_of() { tr -s ' \t' ' ' <<<"$1" | sed 's/^ //; s/ $//' | head -1; }

case_serve_userns() {  # a container with published ports was host root (no user namespace)
  if [ "$runtime" != native ]; then na serve-userns "gVisor: runsc runs the sandbox as its own user"; return; fi
  serve_start || { unsupported serve-userns "$serve_why"; return; }
  command -v nft >/dev/null || { unsupported serve-userns "published ports need nft"; return; }
  local ok=1 map pp pid child uid cuid out code
  pp=$(free_port)
  map=$(map_of "$(docker run --rm -p "127.0.0.1:$pp:8080" busybox cat /proc/self/uid_map 2>&1)")
  log "    docker run -p: uid_map '$map'"
  case $map in
    "0 0 4294967295") fail serve-userns "docker run -p: no user namespace, uid 0 inside is host root ($map)"; ok=0 ;;
    0\ [1-9]*) ;;
    *) fail serve-userns "docker run -p: unexpected uid_map '$map'"; ok=0 ;;
  esac
  pp=$(free_port)
  docker run -d --name adv-userns -p "127.0.0.1:$pp:8080" busybox sleep 1000 >/dev/null 2>"$T/out/last" ||
    { indent <"$T/out/last"; fail serve-userns "docker run -d -p failed"; return; }
  pid=$(docker inspect -f '{{.State.Pid}}' adv-userns)
  uid=$(awk '/^Uid:/{print $2}' "/proc/$pid/status" 2>/dev/null)
  child=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null | awk '{print $1}')
  cuid=$(awk '/^Uid:/{print $2}' "/proc/$child/status" 2>/dev/null)
  log "    docker run -d -p: host uid of the init (pid $pid) $uid, of sleep (pid $child) $cuid"
  if [ -z "$uid" ] || [ "$uid" = 0 ] || [ -z "$cuid" ] || [ "$cuid" = 0 ]; then
    fail serve-userns "docker run -d -p: the host sees uid '$uid' (init) and '$cuid' (its command)"; ok=0
  fi
  docker rm -f adv-userns >/dev/null 2>&1
  if python3 -c 'import docker' 2>/dev/null; then
    pp=$(free_port)
    out=$(python3 -c '
import os, sys, docker
c = docker.DockerClient(base_url=os.environ["DOCKER_HOST"], version="auto")
print(c.containers.run("busybox", ["cat", "/proc/self/uid_map"], ports={"8080/tcp": ("127.0.0.1", int(sys.argv[1]))}, remove=True).decode())
' "$pp" 2>&1)
    map=$(map_of "$out")
    log "    docker-py containers.run(ports=…): uid_map '$map'"
    case $map in
      0\ [1-9]*) ;;
      *) fail serve-userns "docker-py containers.run(ports=…): uid_map '$map'"; ok=0 ;;
    esac
  else
    log "    note: no docker-py (python3-docker): its check skipped"
  fi
  pp=$(free_port)
  map=$(map_of "$(docker run --rm --userns host -p "127.0.0.1:$pp:8080" busybox cat /proc/self/uid_map 2>&1)")
  log "    docker run --userns host -p: uid_map '$map'"
  [ "$map" = "0 0 4294967295" ] || { fail serve-userns "UsernsMode host: expected the host's ids, got '$map'"; ok=0; }
  code=$(curl -s -o "$T/out/last" -w '%{http_code}' --unix-socket "$T/docker.sock" -H 'Content-Type: application/json' \
    -d '{"Image": "busybox", "Cmd": ["true"], "HostConfig": {"UsernsMode": "private"}}' http://d/v1.44/containers/create)
  log "    UsernsMode \"private\": HTTP $code $(head -c 300 "$T/out/last")"
  { [ "$code" = 400 ] && grep -q UsernsMode "$T/out/last"; } || { fail serve-userns "UsernsMode private: HTTP $code, not a 400 naming it"; ok=0; }
  [ $ok = 1 ] && pass serve-userns "published ports get a user namespace (CLI and docker-py), host ids only with UsernsMode host, others refused (400)"
}

case_serve_racer() {  # a process in the sandbox read sbx serve's memory through `docker exec`
  serve_start || { unsupported serve-exec-racer "$serve_why"; return; }
  local variants=(plain) v ok=1 i flags
  # What the racer searches for (from the read-only /home; never in a
  # sandbox's environment, where every exec would show it legitimately).
  printf '%s\n%s\n' "$serve_token" "$serve_secret" >"$T/bin/needles"
  [ "$runtime" = native ] && command -v nft >/dev/null && variants+=(ports)
  for v in "${variants[@]}"; do
    local D=$T/race-$v name=adv-racer-$v
    rm -rf "$D"; mkdir -p "$D"; chmod 777 "$D"
    flags=(-v "$T/bin:/home:ro" -v "$D:/race")
    # The strongest attacker a sandbox of its own can be: CAP_SYS_PTRACE in
    # its user namespace. (Host root with CAP_SYS_PTRACE, --userns host, can
    # trace anything of the host's: not a boundary to test.)
    if [ $userns_host = 1 ]; then flags+=(--userns host); else flags+=(--cap-add SYS_PTRACE); fi
    [ "$v" = ports ] && flags+=(-p "127.0.0.1:$(free_port):8080")
    docker run -d --name "$name" "${flags[@]}" busybox /home/probe racer /race /race/stop /home/needles >/dev/null 2>"$T/out/last" ||
      { indent <"$T/out/last"; fail "serve-exec-racer-$v" "docker run -d failed"; ok=0; continue; }
    for i in $(seq 100); do docker logs "$name" 2>&1 | grep -q 'info    racer' && break; sleep 0.1; done
    # Rounds of 80 execs until the race has been run: the racer caught a
    # process before its exec (native) or stopped one (gVisor: no "before"),
    # as its "progress" lines say.
    # How many it catches depends on the host's load (a quiet 2-core machine:
    # about 1 in 20), so a fixed count could miss them all. At most 800.
    local bad=0 execs=0 round progress=early
    [ "$runtime" = native ] || progress=caught
    for round in $(seq 10); do
      for i in $(seq 40); do
        timeout 60 docker exec "$name" true >/dev/null 2>&1 || bad=$((bad + 1))
        timeout 60 docker exec "$name" sh -c 'echo x' >/dev/null 2>&1 || bad=$((bad + 1))
      done
      execs=$((execs + 80))
      docker logs "$name" 2>&1 | grep -q "^progress $progress " && break
    done
    touch "$D/stop"
    timeout 60 docker wait "$name" >/dev/null 2>&1
    docker logs "$name" >"$T/out/last" 2>&1
    echo 0 >"$T/out/rc"
    docker rm -f "$name" >/dev/null 2>&1
    log "    racer ($v): $execs docker execs, $bad failed"
    probe_ok "serve-exec-racer-$v" || { ok=0; continue; }
    local hits
    hits=$(grep -l -a -F -e "$serve_token" -e "$serve_secret" "$D"/* 2>/dev/null | head -3)
    if [ -n "$hits" ]; then fail "serve-exec-racer-$v" "the server's secrets are in what the racer read: $(tr '\n' ' ' <<<"$hits")"; ok=0; continue; fi
    local stopped
    stopped=$(grep -o '[0-9]* stopped' "$T/out/last" | awk '{print $1}')
    if [ -z "$stopped" ] || [ "$stopped" -lt 1 ]; then fail "serve-exec-racer-$v" "the racer stopped none of the execs' processes"; ok=0; continue; fi
    # Native: it must have caught some before their exec (read or denied),
    # or the race was never run. (gVisor's Sentry makes a process with its
    # program loaded: there is no "before".)
    local early
    early=$(sed -n 's/.*read before their exec: \([0-9]*\).*denied: \([0-9]*\).*/\1 \2/p' "$T/out/last" | awk '{print $1 + $2}')
    if [ "$runtime" = native ] && { [ -z "$early" ] || [ "$early" -lt 1 ]; }; then
      fail "serve-exec-racer-$v" "the racer caught no process before its exec: the race was not run"; ok=0; continue
    fi
    [ $bad = 0 ] || { fail "serve-exec-racer-$v" "$bad docker execs failed while the racer ran"; ok=0; continue; }
  done
  rm -f "$T/bin/needles"
  [ $ok = 1 ] && pass serve-exec-racer "${variants[*]}: the execs' processes stopped as they appeared; none readable before its exec; no secret of the server's in what was read"
}

# Host safety: the default bounds (runtime/default_bounds.h) hold. Nothing
# here depends on how fast the machine fills memory or disk: the defaults are
# read from the host, where they are enforced (the cgroups of a default
# sandbox, its RLIMIT_NOFILE, its writable layer), and the fills run against
# smaller explicit limits of the same kind, which they reach after a few MiB;
# only the fd bomb runs at the default (1024 opens). --timeout 120s is a
# safety net: running into it fails the case.
cg_of() {  # PID CONTROLLER V2FILE: the cgroup dir of PID for CONTROLLER ("-" if none)
  local line ctrls path d
  while IFS= read -r line; do
    IFS=: read -r _ ctrls path <<<"$line"
    if [[ ",$ctrls," == *",$2,"* ]]; then echo "/sys/fs/cgroup/$2$path"; return; fi
    if [ -z "$ctrls" ]; then
      for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
        [ -e "$d$path/$3" ] && { echo "$d$path"; return; }
      done
    fi
  done < <(cat "/proc/$1/cgroup" 2>/dev/null)
  echo -
}
cg_limit() {  # DIR V1FILE V2FILE: a cgroup's limit ("max" when unlimited)
  if [ -r "$1/$2" ]; then cat "$1/$2"; elif [ -r "$1/$3" ]; then cat "$1/$3"; else echo "unreadable"; fi
}
bounds_defaults() {  # a default sandbox (no limit flag): its bounds, read from the host
  local out=$T/out/bounds-default job ok=1 GiB=$((1 << 30))
  local total=$(( $(awk '/^MemTotal:/{print $2}' /proc/meminfo) * 1024 ))
  # runtime/default_bounds.cpp: the parent gets total - max(total / 5, 2 GiB)
  # (never below total / 2); a sandbox min(4 GiB, that).
  local head=$(( total / 5 > 2 * GiB ? total / 5 : 2 * GiB ))
  local parent_want=$(( total - head > total / 2 ? total - head : total / 2 ))
  local mem_want=$(( 4 * GiB < parent_want ? 4 * GiB : parent_want ))
  mem_want=$(( mem_want / 4096 * 4096 ))   # the kernel keeps whole pages
  local hard_want=$(( $(ulimit -Hn) < 65536 ? $(ulimit -Hn) : 65536 ))
  local soft_want=$(( hard_want < 1024 ? hard_want : 1024 ))
  "$SBX" --root "$R" --run-root "$RR" run "${rtflag[@]}" --timeout 120s "${P[@]}" "${IMG[@]}" -- sh -c \
    "/home/probe fdbomb 100000; cat /proc/self/limits; df -k /; echo ready; sleep 100; : bounds-cfg-$marker" >"$out" 2>&1 &
  job=$!
  while kill -0 "$job" 2>/dev/null && ! grep -q '^ready' "$out"; do sleep 0.1; done
  if ! grep -q '^ready' "$out"; then
    indent <"$out"; fail host-safety "the default sandbox ended before it was ready"; wait "$job"; return 1
  fi
  # Its cgroups: those of its shell (native) or of runsc (gVisor; its pid in
  # state.json: the shell is a task of the Sentry, not a host process).
  local pid="" p
  if [ "$runtime" = gvisor ]; then
    pid=$(python3 - "$RR" "bounds-cfg-$marker" <<'PY'
import glob, json, sys
for p in glob.glob(sys.argv[1] + "/*/state.json"):
    s = json.load(open(p))
    if any(sys.argv[2] in a for a in s.get("command", [])):
        print(s.get("pid", 0))
PY
)
  else
    for p in $(pgrep -f "bounds-cfg-$marker"); do
      [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sh ] && pid=$p
    done
  fi
  local memcg pidscg
  memcg=$(cg_of "${pid:-0}" memory memory.max)
  pidscg=$(cg_of "${pid:-0}" pids pids.max)
  local mem="" parent="" pmax="" nofile="" layer=""
  if [ "${memcg:--}" = - ]; then fail host-safety "default sandbox: its process ${pid:-(not found)} is in no memory cgroup"; ok=0
  else
    mem=$(cg_limit "$memcg" memory.limit_in_bytes memory.max)
    [ "$mem" = "$mem_want" ] || { fail host-safety "default sandbox: memory limit $mem in $memcg, want $mem_want (min(4 GiB, parent))"; ok=0; }
    parent=$(cg_limit "$(dirname "$memcg")" memory.limit_in_bytes memory.max)
    # The parent is shared with every sbx on the host and never lowered once
    # made: it must leave the host its last fifth, whoever made it.
    { [ "$parent" != max ] && [ "$parent" != unreadable ] && [ "$parent" -le $(( total - total / 5 )) ]; } ||
      { fail host-safety "default sandbox: its parent $(dirname "$memcg") has limit $parent, more than 80% of MemTotal ($total)"; ok=0; }
  fi
  # gVisor: the sandbox's tasks are bounded by RLIMIT_NPROC in the Sentry; the
  # host cgroup holds a backstop for runsc's own threads (3 x limit + 256).
  local pids_want=1024
  [ "$runtime" = gvisor ] && pids_want=$((1024 * 3 + 256))
  if [ "${pidscg:--}" = - ]; then fail host-safety "default sandbox: its process ${pid:-(not found)} is in no pids cgroup"; ok=0
  else
    pmax=$(cg_limit "$pidscg" pids.max pids.max)
    [ "$pmax" = "$pids_want" ] || { fail host-safety "default sandbox: pids.max $pmax in $pidscg, want $pids_want"; ok=0; }
  fi
  if [ "$runtime" = gvisor ]; then
    # The Sentry enforces these, not the host kernel: read inside.
    local nproc
    nproc=$(awk '/^Max processes/{print $3, $4}' "$out")
    [ "$nproc" = "1024 1024" ] || { fail host-safety "default sandbox: RLIMIT_NPROC '$nproc' in the Sentry, want '1024 1024'"; ok=0; }
    nofile=$(awk '/^Max open files/{print $4, $5}' "$out")
    # The writable layer is the Sentry's memory overlay: its bytes and inodes
    # are the Sentry's memory, in the sandbox's memory cgroup (a size of its
    # own it has not: runsc 20240729 takes no size for --overlay2).
    local p sentry=""
    for p in $(cat "$memcg/cgroup.procs" 2>/dev/null); do
      tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- ' --overlay2=root:memory .*\bboot\b' && sentry=$p
    done
    [ -n "$sentry" ] || { fail host-safety "default sandbox: no Sentry started with --overlay2=root:memory in its memory cgroup $memcg"; ok=0; }
    layer="Sentry memory overlay (pid $sentry in the memory cgroup)"
  else
    local shpid=$pid
    if [ -z "$shpid" ] || ! grep -qx "$shpid" "$pidscg/cgroup.procs" 2>/dev/null; then
      fail host-safety "default sandbox: its shell (pid ${shpid:-none}) is not in its pids cgroup $pidscg"; ok=0
    else
      nofile=$(awk '/^Max open files/{print $4, $5}' "/proc/$shpid/limits")
      # statfs of the sandbox's root (the overlay reports its upper tmpfs).
      local blocks bsize files
      read -r blocks bsize files < <(stat -f -c '%b %S %c' "/proc/$shpid/root/")
      layer="$((blocks * bsize)) bytes, $files inodes"
      [ "$((blocks * bsize))" = $((2 * GiB)) ] && [ "$files" = $((2 * GiB / 4096)) ] ||
        { fail host-safety "default sandbox: the writable layer has $layer, want $((2 * GiB)) bytes, $((2 * GiB / 4096)) inodes"; ok=0; }
    fi
  fi
  [ "$nofile" = "$soft_want $hard_want" ] || { fail host-safety "default sandbox: RLIMIT_NOFILE '$nofile', want '$soft_want $hard_want'"; ok=0; }
  local fds
  fds=$(awk '/^result  fds/{print $3, $4}' "$out")
  [ "${fds#* }" = EMFILE ] && [ "${fds% *}" -le "$soft_want" ] ||
    { fail host-safety "default sandbox: the fd bomb ended '$fds', want EMFILE within $soft_want"; ok=0; }
  kill -TERM "$job" 2>/dev/null
  wait "$job"
  [ $ok = 1 ] && bounds_seen="defaults: memory $mem (parent $parent), pids.max $pmax, nofile $nofile (fd bomb: $fds), writable layer $layer"
  return $((1 - ok))
}
bounds_fill() {  # NAME WANT FLAGS... -- CMD: one sandbox with small explicit limits; WANT: oom or ok
  local name=$1 want=$2 rc reason ooms; shift 2
  sb --end-record "$T/out/bounds-$name.end" --timeout 120s "$@"
  rc=$(cat "$T/out/rc")
  cp "$T/out/last" "$T/out/bounds-$name"
  reason=$(grep -o '"Reason": "[a-z]*"' "$T/out/bounds-$name.end" 2>/dev/null | cut -d'"' -f4)
  ooms=$(grep -o '"OomKills": [0-9]*' "$T/out/bounds-$name.end" 2>/dev/null | awk '{print $2}')
  if [ "$reason" = timeout ]; then
    indent <"$T/out/last" | tail -5; fail host-safety "$name: ran into its 120 s safety-net timeout before its bound (rc=$rc)"; return 1
  fi
  if [ "$want" = oom ] && [ "${ooms:-0}" = 0 ]; then
    indent <"$T/out/last" | tail -5; fail host-safety "$name: no OOM kill recorded (end reason '$reason', rc=$rc)"; return 1
  fi
  if [ "$want" = ok ] && [ "${ooms:-0}" != 0 ]; then
    indent <"$T/out/last" | tail -5; fail host-safety "$name: $ooms OOM kill(s) (rc=$rc), expected to end at its own bounds"; return 1
  fi
  return 0
}
bounds_fills() {  # the same kinds of bound, set small, reached after a few MiB
  local ok=1 f n mb
  if [ "$runtime" = gvisor ]; then
    # The writable layer is the Sentry's memory: a disk fill ends in an OOM
    # kill at the memory limit (the whole sandbox), not in ENOSPC.
    bounds_fill layer-in-memory oom --memory 128m "${P[@]}" "${IMG[@]}" -- sh -c "/home/probe disk /fill 1024; : bounds-$marker" || ok=0
    f=$T/out/bounds-layer-in-memory
    grep -q '^result  disk' "$f" && { fail host-safety "--memory 128m: the writable layer took $(awk '/^result  disk/{print $3 " MiB (then " $4 ")"}' "$f") without an OOM kill"; ok=0; }
    bounds_fill files-in-memory oom --memory 128m "${P[@]}" "${IMG[@]}" -- sh -c "/home/probe inodes /many 1000000; : bounds-$marker" || ok=0
    f=$T/out/bounds-files-in-memory
    grep -q '^result  inodes' "$f" && { fail host-safety "--memory 128m: the writable layer took $(awk '/^result  inodes/{print $3 " files (then " $4 ")"}' "$f") without an OOM kill"; ok=0; }
  else
    # Inodes (one per 4 KiB: 8192) and bytes of the writable layer.
    bounds_fill layer ok --disk 32m --memory 128m "${P[@]}" "${IMG[@]}" -- sh -c "/home/probe inodes /many 1000000; rm -rf /many; /home/probe disk /fill 1024; : bounds-$marker" || ok=0
    f=$T/out/bounds-layer
    n=$(awk '/^result  inodes/{print $3}' "$f")
    grep -q '^result  inodes [0-9]* ENOSPC' "$f" && [ "$n" -le 8192 ] ||
      { fail host-safety "--disk 32m: files did not end in ENOSPC within 8192 ($(grep '^result  inodes' "$f"))"; ok=0; }
    mb=$(awk '/^result  disk/{print $3}' "$f")
    grep -q '^result  disk [0-9]* ENOSPC' "$f" && [ "$mb" -le 32 ] ||
      { fail host-safety "--disk 32m: the writable layer did not end in ENOSPC within 32 MiB ($(grep '^result  disk' "$f"))"; ok=0; }
  fi
  bounds_fill memory oom --memory 128m "${P[@]}" "${IMG[@]}" -- sh -c "/home/probe mem 1024; : bounds-$marker" || ok=0
  mb=$(awk '/^result  mem/{m=$3} END{print m+0}' "$T/out/bounds-memory")
  [ "$mb" -le 136 ] || { fail host-safety "--memory 128m: the memory bomb touched $mb MiB"; ok=0; }
  return $((1 - ok))
}
case_bounds() {  # host safety: the defaults, read from the host, and fills at small limits of the same kind
  local ok=1 bounds_seen=""
  bounds_defaults || ok=0
  bounds_fills || ok=0
  [ -n "$(pgrep -f "bounds-(cfg-)?$marker")" ] && { fail host-safety "processes left: $(pgrep -af "bounds-(cfg-)?$marker" | head -3 | tr '\n' ';')"; ok=0; }
  [ $ok = 1 ] && pass host-safety "$bounds_seen; fills at --memory 128m$([ "$runtime" = native ] && echo ' --disk 32m'): $([ "$runtime" = gvisor ] && echo 'layer bytes and files OOM' || echo 'ENOSPC, ENOSPC (inodes)'), memory OOM"
}

# `sbx serve` against clients without a token and slow ones (serve_attack.py):
# each case starts its own server (unix socket, TCP and the E2B port, a token
# file) with the flags this sbx has, and stops it. The server's limits do not
# depend on the sandbox runtime: native only.
serve_has() { "$SBX" serve --help 2>&1 | grep -q -- "$1"; }
attack_serve_start() {  # [serve flags...]: starts SERVE_PID on $T/serve.sock, 127.0.0.1:$SP_TCP, E2B 127.0.0.1:$SP_E2B
  printf 'sbx-adv-token-%s%s\n' "$RANDOM" "$RANDOM" >"$T/token"
  chmod 600 "$T/token"
  SP_TCP=$(free_port) SP_E2B=$(free_port)
  rm -f "$T/serve.sock"
  "$SBX" --root "$R" --run-root "$RR" serve --socket "$T/serve.sock" --tcp "127.0.0.1:$SP_TCP" \
    --e2b "127.0.0.1:$SP_E2B" --token-file "$T/token" "$@" 2>"$T/out/serve.log" &
  SERVE_PID=$!
  local i
  for i in $(seq 100); do
    curl -s -o /dev/null --max-time 2 --unix-socket "$T/serve.sock" http://sbx/_ping && return 0
    sleep 0.1
  done
  indent <"$T/out/serve.log"
  return 1
}
attack_serve_stop() {
  [ -n "$SERVE_PID" ] || return 0
  kill -TERM "$SERVE_PID" 2>/dev/null
  wait "$SERVE_PID" 2>/dev/null
  SERVE_PID=""
}
serve_case() {  # NAME WHAT [serve flags...]: runs serve_attack.py WHAT against a fresh server
  local name=$1 what=$2
  shift 2
  if [ "$runtime" != native ]; then na "$name" "the server's limits do not depend on the runtime (native runs it)"; return; fi
  command -v python3 >/dev/null && command -v curl >/dev/null || { na "$name" "needs python3 and curl"; return; }
  attack_serve_start "$@" || { fail "$name" "sbx serve did not start"; attack_serve_stop; return; }
  python3 "$here/serve_attack.py" "$what" --pid "$SERVE_PID" --unix "$T/serve.sock" --tcp "$SP_TCP" \
    --e2b "$SP_E2B" --token "$(cat "$T/token")" ${SERVE_ATTACK_ARGS:-} >"$T/out/last" 2>&1
  local rc=$?
  attack_serve_stop
  indent <"$T/out/last"
  if [ $rc = 0 ]; then pass "$name" "$(grep -c '^ok' "$T/out/last") checks"
  else fail "$name" "$(grep '^FAIL' "$T/out/last" | head -3 | tr '\n' ';')"; fi
}
case_serve_bodies() {  # bodies before authorization: two unauthenticated 1 GiB uploads, TCP and E2B
  serve_case serve-unauth-bodies bodies
}
case_serve_flood() {  # 1100 idle connections on TCP and on the E2B port
  local f=()
  serve_has --header-timeout && f=(--header-timeout 120s)  # the flood must outlive the checks
  serve_case serve-idle-flood flood "${f[@]}"
}
case_serve_slow() {  # slowloris, silent and stalled clients on the unix socket, TCP and E2B
  local f=()
  serve_has --header-timeout && f=(--header-timeout 2s --idle-timeout 3s)
  SERVE_ATTACK_ARGS="--header-timeout 2 --idle-timeout 3" serve_case serve-slow-clients slow "${f[@]}"
}
case_serve_fds() {  # out of descriptors: accept must back off, not spin, and recover
  local f=()
  serve_has --header-timeout && f=(--header-timeout 120s)
  command -v prlimit >/dev/null || { na serve-fd-exhaustion "needs prlimit (util-linux)"; return; }
  serve_case serve-fd-exhaustion fds "${f[@]}"
}
case_serve_sparse() {  # a sandbox's 1 GiB and 1 TiB sparse files fetched through every copy path
  command -v python3 >/dev/null && command -v curl >/dev/null || { na serve-sparse-files "needs python3 and curl"; return; }
  attack_serve_start --runtime "$runtime" || { fail serve-sparse-files "sbx serve did not start"; attack_serve_stop; return; }
  python3 "$here/serve_sparse.py" --pid "$SERVE_PID" --unix "$T/serve.sock" --e2b "$SP_E2B" \
    --token "$(cat "$T/token")" --root "$R" --sbx "$SBX --root $R --run-root $RR" --out "$T/sparse" \
    --runtime "$runtime" ${SERVE_SPARSE_ARGS:-} >"$T/out/last" 2>&1
  local rc=$?
  attack_serve_stop
  indent <"$T/out/last"
  if [ $rc = 0 ]; then pass serve-sparse-files "$(grep -c '^ok' "$T/out/last") checks"
  else fail serve-sparse-files "$(grep '^FAIL' "$T/out/last" | head -3 | tr '\n' ';')"; fi
}

# ----------------------------------------------------------- leak checks ---
leaks() {  # WHEN: nothing of this run may be left on the host
  local what=$1 bad=0 x
  x=$(findmnt -rn -o TARGET,SOURCE | grep -F "$T" || true)
  [ -n "$x" ] && { log "leak ($what): mounts: $(head -3 <<<"$x" | tr '\n' ';')"; bad=1; }
  x=$(grep -c . /proc/self/mountinfo)
  # Not scoped to this run (other users of the machine mount things too): for the log only.
  [ "$x" -gt "$mounts_before" ] && log "note ($what): the host has $((x - mounts_before)) more mounts than at the start (none under $T)"
  x=$(grep -c ' nsfs ' /proc/self/mountinfo)
  [ "$x" -gt "$nsfs_before" ] && { log "leak ($what): $((x - nsfs_before)) more nsfs (namespace) mounts"; bad=1; }
  x=$(cg_children)
  [ -n "$x" ] && { log "leak ($what): cgroups: $(head -3 <<<"$x" | tr '\n' ' ')"; bad=1; }
  x=$(pgrep -af "$marker|$RR" | grep -v "pgrep" || true)
  [ -n "$x" ] && { log "leak ($what): processes: $(head -3 <<<"$x" | tr '\n' ';')"; bad=1; }
  # State dirs: the run root may keep empty bookkeeping dirs, nothing else
  # (but the holder's program, written once per run root: .init/sbx-init-<sha256>).
  x=$(find "$RR" -mindepth 1 \( -type f -o -type l \) ! -name '*.lock' ! -path "$RR/.init/sbx-init-*" 2>/dev/null | head -5)
  [ -n "$x" ] && { log "leak ($what): state files: $(tr '\n' ' ' <<<"$x")"; bad=1; }
  x=$(find "$RR" -mindepth 1 -maxdepth 1 -type d -regextype egrep -regex '.*/[0-9a-f]{64}' 2>/dev/null | head -3)
  [ -n "$x" ] && { log "leak ($what): sandbox state dirs: $(tr '\n' ' ' <<<"$x")"; bad=1; }
  x=$(ip netns list 2>/dev/null | grep -F sbx || true)
  [ -n "$x" ] && { log "leak ($what): named netns: $x"; bad=1; }
  # Networks and endpoints (sbx network) of this run: their records name its run root.
  x=$(grep -l -F "$RR" "${SBX_NETWORK_STATE:-/run/sbx-net}"/networks/*/network.json "${SBX_NETWORK_STATE:-/run/sbx-net}"/sandboxes/*/*.json "${SBX_NETWORK_STATE:-/run/sbx-net}"/*.json 2>/dev/null | head -3)
  [ -n "$x" ] && { log "leak ($what): network records: $(tr '\n' ' ' <<<"$x")"; bad=1; }
  # User-namespace id ranges: any allocation file left under the run root.
  x=$(find "$RR" -name userns 2>/dev/null | head -3)
  [ -n "$x" ] && { log "leak ($what): user-namespace ranges: $(tr '\n' ' ' <<<"$x")"; bad=1; }
  if [ $bad = 0 ]; then pass "no-leaks-$what"; else fail "no-leaks-$what" "see the leak lines above"; fi
}

host_intact() {
  local bad=0
  [ "$(sha256sum "$SBX" | cut -d' ' -f1)" = "$sha_sbx" ] || { log "host: the sbx binary changed"; bad=1; }
  [ "$(hostname)" = "$host_hostname" ] || { log "host: hostname is $(hostname)"; bad=1; }
  snap_sysctl >"$T/sysctl.after"
  local d
  d=$(diff "$T/sysctl.before" "$T/sysctl.after" | grep '^[<>]' | head -10)
  [ -n "$d" ] && { log "host: sysctls changed:"; echo "$d" | indent; bad=1; }
  if [ $bad = 0 ]; then pass host-intact "sbx binary, hostname, all sysctls unchanged"; else fail host-intact "see above"; fi
}

# ------------------------------------------------------------------ main ---
log "sbx adversarial suite: runtime=$runtime${rtflag[*]:+ (${rtflag[*]})} sbx=$SBX ($("$SBX" --version 2>&1 | head -1))"
for c in info syscalls devices procsys masked fds hostread robind volume_setid network hostname kill \
         forkbomb threads membomb disk spin argv hostile_rootfs exe created cp_out sbx_killed \
         vsock ids names mount_errors snapshot_symlink end_reason serve_userns serve_racer bounds \
         serve_bodies serve_flood serve_slow serve_fds serve_sparse netisolate netspoof netrebind netleftover; do
  want "$c" || continue
  "case_$c"
done
serve_stop
leaks suite
if [ "$loops" -gt 0 ] && want loop; then
  t0=$(date +%s.%N)
  nbad=0
  for ((i = 0; i < loops; i++)); do
    "$SBX" --root "$R" --run-root "$RR" run "${rtflag[@]}" "${IMG[@]}" -- /bin/true >/dev/null 2>&1 || nbad=$((nbad + 1))
  done
  t1=$(date +%s.%N)
  log "loop: $loops x 'sbx run ${IMG[*]} -- /bin/true' in $(echo "$t1 - $t0" | bc) s, $nbad failed"
  [ $nbad = 0 ] && pass "loop-$loops" || fail "loop-$loops" "$nbad runs failed"
  leaks "after-$loops-sandboxes"
fi
host_intact
log "summary ($runtime${rtflag[*]:+ ${rtflag[*]}}): $npass passed, $nfail failed${failed[*]:+ (${failed[*]})}, $nunsup unsupported${unsupported[*]:+ (${unsupported[*]})}, $nna n/a"
[ $nfail = 0 ] || exit 1
[ "${SBX_ADV_STRICT:-0}" = 1 ] && [ $nunsup -gt 0 ] && exit 1
exit 0

#!/usr/bin/env bash
# Named volumes (`sbx volume …`, `sbx run|create -v NAME:/PATH`, `--mount
# type=volume,…`): the store (create, ls with filters, inspect, rm, prune),
# bad names refused with nothing made, auto-create on first use, the copy of
# the image's files into an empty volume (owners and modes kept), data that
# outlives its sandbox, two sandboxes sharing one (the same owners in both,
# whatever their id ranges), read-only mounts, rm refused while a sandbox
# (running or ended) uses a volume, `sbx system df`, and nothing left.
source "$(dirname "$0")/../sandbox_lib.sh"
[ "$BB" = busybox ] || { echo "SKIP: needs the image store (busybox image)"; leave_test_cgroup; rm -rf "$T"; exit 77; }
trap 'for id in $($SBX ps -aq --no-trunc 2>/dev/null); do $SBX rm -f "$id" >/dev/null 2>&1; done; rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null' EXIT

# --- the store ----------------------------------------------------------------
expect_rc "create a volume" 0 $SBX volume create --label team=a vol1
check "its name is printed" test "$($SBX volume create vol1)" = vol1
check "ls lists it" grep -qx vol1 <<<"$($SBX volume ls -q)"
insp=$($SBX volume inspect vol1)
check "inspect: docker's shape (Name, Driver local, Mountpoint, Labels)" python3 -c '
import json, sys
v = json.loads(sys.argv[1])[0]
assert v["Name"] == "vol1" and v["Driver"] == "local" and v["Scope"] == "local", v
assert v["Mountpoint"] == sys.argv[2] + "/volumes/vol1/_data", v
assert v["Labels"] == {"team": "a"} and v["CreatedAt"].endswith("Z"), v' "$insp" "$SBX_ROOT"
check "the volume's data dir exists" test -d "$SBX_ROOT/volumes/vol1/_data"
check "the volumes dir is 0700" test "$(stat -c %a "$SBX_ROOT/volumes")" = 700
anon=$($SBX volume create)
check "create without a name: 64 hex characters" grep -Eqx '[0-9a-f]{64}' <<<"$anon"
check "ls --filter label=team=a: only vol1" test "$($SBX volume ls -q --filter label=team=a)" = vol1
check "ls --filter name=vol: only vol1" test "$($SBX volume ls -q --filter name=vol)" = vol1
check "ls --json is an array of inspect objects" python3 -c '
import json, sys
names = sorted(v["Name"] for v in json.loads(sys.argv[1]))
assert names == sorted(["vol1", sys.argv[2]]), names' "$($SBX volume ls --json)" "$anon"
expect_rc "ls --filter bogus=1 is refused" 125 $SBX volume ls --filter bogus=1
for bad in a /abs _x 'a b' 'x/y' '.hidden' 'é1'; do
  out=$($SBX volume create "$bad" 2>&1)
  check "create '$bad' is refused with a clear error" grep -q "invalid volume name" <<<"$out"
done
check "no half-made volume after bad names" test "$(ls -A "$SBX_ROOT/volumes" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$anon" vol1 | sort | tr '\n' ' ')"
expect_rc "rm of a volume that does not exist: 125" 125 $SBX volume rm nosuch
expect_rc "rm -f of a volume that does not exist: 0" 0 $SBX volume rm -f nosuch
expect_rc "rm the anonymous volume" 0 $SBX volume rm "$anon"

# --- -v NAME:/PATH -------------------------------------------------------------
expect_rc "run -v vol1:/data writes" 0 $SBX run --rm -v vol1:/data $BB -- sh -c 'echo hello >/data/f; mkdir /data/d; chown 1000:1000 /data/d; echo u >/data/d/g; chown 1000:1000 /data/d/g'
check "a second sandbox reads what the first wrote" test "$($SBX run --rm -v vol1:/data $BB -- cat /data/f)" = hello
check "owners are the same in the next sandbox (root and 1000)" test \
  "$($SBX run --rm -v vol1:/data $BB -- stat -c '%u:%g' /data/f /data/d/g | tr '\n' ' ')" = "0:0 1000:1000 "
check "the volume root is the sandbox's root's" test "$($SBX run --rm -v vol1:/data $BB -- stat -c %u:%g /data)" = 0:0
check "on the host the files are volume ids, not host root's" test \
  "$(stat -c %u "$SBX_ROOT/volumes/vol1/_data/f")" = 4294901759
out=$($SBX run --rm -v vol1:/data:ro $BB -- sh -c 'cat /data/f; echo x >/data/new 2>&1 || echo refused')
check ":ro mounts it read-only" test "$(tail -n1 <<<"$out")" = refused
check "--mount type=volume reads it" test "$($SBX run --rm --mount type=volume,source=vol1,target=/m,readonly $BB -- cat /m/f)" = hello

# An unknown name is created; an empty volume gets the image's files at the mount point.
expect_rc "run -v auto1:/etc creates the volume" 0 $SBX run --rm -v auto1:/etc $BB -- true
check "auto1 exists now" grep -qx auto1 <<<"$($SBX volume ls -q)"
check "the image's /etc/passwd was copied into it" test -s "$SBX_ROOT/volumes/auto1/_data/passwd"
check "copied files keep their mode" test "$(stat -c %a "$SBX_ROOT/volumes/auto1/_data/passwd")" = \
  "$($SBX run --rm $BB -- stat -c %a /etc/passwd)"
check "copied files are the sandbox's root's inside" test "$($SBX run --rm -v auto1:/x $BB -- stat -c %u /x/passwd)" = 0
expect_rc "nocopy: no copy into an empty volume" 0 $SBX run --rm -v empty1:/etc:nocopy $BB -- true
check "empty1 stayed empty" test -z "$(ls -A "$SBX_ROOT/volumes/empty1/_data")"
expect_rc "a volume that is not empty is not overwritten" 0 $SBX run --rm -v vol1:/etc $BB -- true
check "vol1 has no passwd" test ! -e "$SBX_ROOT/volumes/vol1/_data/passwd"
if [ -n "$PY" ]; then
  # The python image has several layers: the copy merges them (overlay).
  expect_rc "copy from a layered image" 0 $SBX run --rm -v pyetc:/etc $PY -- true
  check "its /etc was copied from the image's layers (merged)" test "$(cat "$SBX_ROOT/volumes/pyetc/_data/passwd")" = \
    "$($SBX run --rm $PY -- cat /etc/passwd)"
fi
out=$($SBX run --rm -v 'bad name:/x' $BB -- true 2>&1)
check "a bad volume name in -v is refused" grep -q "invalid --volume" <<<"$out"
before=$($SBX volume ls -q | sort | tr '\n' ' ')
check "run --mount type=volume without a source: an anonymous volume there" \
  test "$($SBX run --rm --mount type=volume,target=/x $BB -- sh -c 'echo w >/x/w; grep -c " /x " /proc/self/mounts')" = 1
check "... which goes with the run" test "$($SBX volume ls -q | sort | tr '\n' ' ')" = "$before"
$SBX create --name mnt-anon --mount type=volume,target=/x $BB -- sleep 600 >/dev/null
manon=$(python3 -c '
import json, sys
print([m["Name"] for s in json.loads(sys.argv[1]) if s["Name"] == "mnt-anon" for m in s["Mounts"] if m["Destination"] == "/x"][0])' "$($SBX ps --json)")
check "create --mount type=volume,target=/x: a 64-hex volume ($manon)" grep -qE '^[0-9a-f]{64}$' <<<"$manon"
check "... labelled anonymous" python3 -c '
import json, sys; assert "com.docker.volume.anonymous" in json.loads(sys.argv[1])[0]["Labels"]' "$($SBX volume inspect "$manon")"
expect_rc "rm -f -v of it" 0 $SBX rm -f -v mnt-anon
check "... removed the anonymous volume" test ! -e "$SBX_ROOT/volumes/$manon"
rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null
out=$($SBX run --rm -v vol1:rel $BB -- true 2>&1)
check "a relative target is refused" grep -q "must be absolute" <<<"$out"

# --- tmpfs volumes: docker's local-driver options -----------------------------
expect_rc "volume create --opt type=tmpfs --opt o=size=1m" 0 $SBX volume create --opt type=tmpfs -o o=size=1m,mode=1777 small1
check "inspect shows its Options" python3 -c '
import json, sys; o = json.loads(sys.argv[1])[0]["Options"]; assert o == {"type": "tmpfs", "o": "size=1m,mode=1777"}, o' \
  "$($SBX volume inspect small1)"
out=$($SBX run --rm -v small1:/s $BB -- sh -c 'dd if=/dev/zero of=/s/f bs=1024 count=2048 2>&1; echo rc=$?; stat -f -c %t /s')
check "a write past 1 MiB fails with ENOSPC ($out)" grep -q "No space left on device" <<<"$out"
check "... on a tmpfs mounted there" grep -qx 1021994 <<<"$out"
check "... and 1 MiB fits" test "$($SBX run --rm -v small1:/s $BB -- sh -c 'dd if=/dev/zero of=/s/f bs=1024 count=512 2>/dev/null && echo ok')" = ok
for bad in "size=1m" "type=ext4 device=/dev/sda1" "type=none device=/tmp" "type=none o=bind device=rel/dir" \
           "type=none o=bind,uid=5 device=/tmp" "type=nfs o=addr=192.0.2.1 device=:/x" "type=tmpfs o=size=lots" "type=tmpfs o=uid=5" "bogus=1"; do
  args=(); for kv in $bad; do args+=(--opt "$kv"); done
  out=$($SBX volume create "${args[@]}" badopt 2>&1); rc=$?
  check "create --opt $bad is refused (125) with a reason ($out)" test "$rc" = 125 -a -n "$out"
done
check "... and made no volume" not_grep badopt "$($SBX volume ls -q)"
check "size= alone names the way that works" grep -q "type=tmpfs" <<<"$($SBX volume create --opt size=1m badopt 2>&1)"
expect_rc "rm the tmpfs volume" 0 $SBX volume rm small1

# --- bind volumes: a named volume that is a host directory (compose's
# driver_opts {type: none, o: bind, device: /HOST/DIR}) -----------------------
# Owned by a user, writable by all: the native sandbox writes as its own ids,
# gVisor's as the directory's owner (a root-owned one it cannot write).
mkdir -p "$T/hostdir" && echo from-host >"$T/hostdir/f" && chown 1000:1000 "$T/hostdir" && chmod 777 "$T/hostdir"
expect_rc "volume create --opt type=none --opt o=bind --opt device=DIR" 0 \
  $SBX volume create --opt type=none --opt o=bind --opt device="$T/hostdir" hbind
out=$($SBX run --rm -v hbind:/h $BB -- sh -c 'cat /h/f; echo from-sandbox >/h/g')
check "the sandbox sees the host directory's file ($out)" test "$out" = from-host
check "... and what it writes is in the host directory" test "$(cat "$T/hostdir/g" 2>&1)" = from-sandbox
out=$($SBX run --rm --mount type=volume,source=hbind,target=/h,readonly $BB -- sh -c 'cat /h/f; echo x >/h/x' 2>&1)
check "readonly: read, and no write ($out)" grep -q "^from-host" <<<"$out"
check "... nothing written" test ! -e "$T/hostdir/x"
expect_rc "o=bind,ro volume" 0 $SBX volume create --opt type=none --opt o=bind,ro --opt device="$T/hostdir" hbindro
out=$($SBX run --rm -v hbindro:/h $BB -- sh -c 'echo x >/h/x' 2>&1)
check "an o=bind,ro volume is read-only in the sandbox ($out)" test ! -e "$T/hostdir/x"
expect_rc "rm the bind volumes" 0 $SBX volume rm hbind hbindro
check "rm of a bind volume leaves the host directory as it was" test "$(cat "$T/hostdir/f" "$T/hostdir/g")" = $'from-host\nfrom-sandbox'
expect_rc "a bind volume of a missing directory: create as docker (no check)" 0 \
  $SBX volume create --opt type=none --opt o=bind --opt device="$T/nohostdir" hmissing
out=$($SBX run --rm -v hmissing:/h $BB -- true 2>&1); rc=$?
check "... and a run with it fails naming the directory (rc $rc: $out)" test "$rc" = 125 -a -n "$(grep -F "$T/nohostdir" <<<"$out")"
check "... leaving no sandbox" test -z "$($SBX ps -aq)"
expect_rc "rm it" 0 $SBX volume rm hmissing

# --- in use ------------------------------------------------------------------
id=$($SBX create --name holder -v vol1:/data $BB -- sleep 600)
check "create -v: the sandbox sees the data" test "$($SBX exec holder cat /data/f)" = hello
check "ps --json lists its volume mount" python3 -c '
import json, sys
ms = [s["Mounts"] for s in json.loads(sys.argv[1]) if s["Name"] == "holder"][0]
assert [(m["Type"], m["Name"], m["Destination"], m["RW"]) for m in ms] == [("volume", "vol1", "/data", True)], ms
assert ms[0]["Source"] == sys.argv[2] + "/volumes/vol1/_data", ms' "$($SBX ps --json)" "$SBX_ROOT"
out=$($SBX volume rm vol1 2>&1); rc=$?
check "rm of a volume a running sandbox uses: exit 125" test "$rc" = 125
check "... with a clear error naming the sandbox" grep -q "in use by sandbox ${id:0:12}" <<<"$out"
expect_rc "rm -f is refused too (docker's rule)" 125 $SBX volume rm -f vol1
check "inspect counts the sandbox" python3 -c '
import json, sys; assert json.loads(sys.argv[1])[0]["UsageData"]["RefCount"] == 1' "$($SBX volume inspect vol1)"
check "ls --filter dangling=false lists vol1" grep -qx vol1 <<<"$($SBX volume ls -q --filter dangling=false)"
check "ls --filter dangling=true does not" not_grep vol1 "$($SBX volume ls -q --filter dangling=true)"
# Two sandboxes at once share it.
check "a second sandbox writes while the first runs" $SBX run --rm -v vol1:/v $BB -- sh -c 'echo two >/v/two'
check "the running one sees it at once" test "$($SBX exec holder cat /data/two)" = two
$SBX stop -t 1 holder >/dev/null
expect_rc "rm of a volume an ended sandbox uses: 125" 125 $SBX volume rm vol1
df=$($SBX system df --json)
check "system df counts volumes" python3 -c '
import json, sys; d = json.loads(sys.argv[1]); assert d["Volumes"] >= 3 and d["VolumesSize"] > 0, d' "$df"
check "system df's table has a volumes row" grep -q "^Local Volumes" <<<"$($SBX system df)"
pruned=$($SBX volume prune -f)
check "prune removes the unused ones" grep -qx auto1 <<<"$pruned"
check "prune keeps the one in use" grep -qx vol1 <<<"$($SBX volume ls -q)"
$SBX rm holder >/dev/null
rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null  # name links' dir (empty once every sandbox is gone)
expect_rc "rm after the sandbox is gone" 0 $SBX volume rm vol1
check "its directory is gone" test ! -e "$SBX_ROOT/volumes/vol1"

# --- anonymous volumes: the image's VOLUME paths --------------------------------
mkdir -p "$T/volctx"
echo seeded >"$T/volctx/seed"
printf 'FROM %s\nCOPY seed /data/seed\nVOLUME /data\n' "$BB" >"$T/volctx/Dockerfile"
expect_rc "build an image with a VOLUME line" 0 $SBX build -t sbxvoltest:1 "$T/volctx"
before=$($SBX volume ls -q | sort | tr '\n' ' ')
check "run: the VOLUME path is a volume seeded with the image's files" \
  test "$($SBX run --rm sbxvoltest:1 -- sh -c 'cat /data/seed; grep " /data " /proc/self/mounts | wc -l')" = "seeded
1"
check "run: its anonymous volume goes with the run" test "$($SBX volume ls -q | sort | tr '\n' ' ')" = "$before"
check "-v NAME:/data covers it: no anonymous volume, NAME seeded" \
  test "$($SBX run --rm -v covered1:/data sbxvoltest:1 -- cat /data/seed)" = seeded
check "... and only covered1 was made" test "$($SBX volume ls -q | sort | tr '\n' ' ')" = "$(printf '%s\n' $before covered1 | sort | tr '\n' ' ')"
$SBX volume rm covered1 >/dev/null
$SBX create --name anon1 sbxvoltest:1 -- sleep 600 >/dev/null
$SBX exec anon1 sh -c 'echo mine >/data/mine'
anon=$(python3 -c '
import json, sys
ms = [s["Mounts"] for s in json.loads(sys.argv[1]) if s["Name"] == "anon1"][0]
print(" ".join(m["Name"] for m in ms if m["Type"] == "volume" and m["Destination"] == "/data"))' "$($SBX ps --json)")
check "create: an anonymous volume with a 64-hex name at /data ($anon)" grep -qE '^[0-9a-f]{64}$' <<<"$anon"
check "... labelled anonymous as docker's" python3 -c '
import json, sys; assert "com.docker.volume.anonymous" in json.loads(sys.argv[1])[0]["Labels"]' "$($SBX volume inspect "$anon")"
check "... holding the image's file and the sandbox's write" \
  test "$(cat "$SBX_ROOT/volumes/$anon/_data/seed" "$SBX_ROOT/volumes/$anon/_data/mine")" = "seeded
mine"
expect_rc "volume rm of it while the sandbox exists: 125" 125 $SBX volume rm "$anon"
$SBX rm -f anon1 >/dev/null
check "rm without -v leaves it, dangling" grep -qx "$anon" <<<"$($SBX volume ls -q --filter dangling=true)"
expect_rc "... and volume rm removes it then" 0 $SBX volume rm "$anon"
# A create or rm reads and touches only the volumes its sandbox names (not
# every volume of the store: their cost would grow with the store).
$SBX volume create bystander1 >/dev/null
$SBX volume create bystander2 >/dev/null
anon2id=$(strace -qq -e trace=openat,open,unlink,unlinkat,rename,renameat,renameat2 -o "$T/create.trace" \
  $SBX create --name anon2 sbxvoltest:1 -- sleep 600)
check "create reads no other volume (strace: no bystander path)" not_grep bystander "$(cat "$T/create.trace")"
check "... (the trace saw its own volume: the check can fail)" grep -q "$SBX_ROOT/volumes/" "$T/create.trace"
check "create records the image's VOLUME paths in the sandbox's spec" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["annotations"]
assert json.loads(a["org.sbx.image-volumes"]) == ["/data"], a' "$SBX_RUN_ROOT/$anon2id/config.json"
anon2=$(python3 -c '
import json, sys
print([m["Name"] for s in json.loads(sys.argv[1]) if s["Name"] == "anon2" for m in s["Mounts"]][0])' "$($SBX ps --json)")
check "a second sandbox gets a volume of its own" test -n "$anon2" -a "$anon2" != "$anon"
expect_rc "rm -f -v" 0 strace -qq -e trace=openat,open,unlink,unlinkat,rename,renameat,renameat2 -o "$T/rm.trace" \
  $SBX rm -f -v anon2
check "rm touches no other volume (strace: no bystander path)" not_grep bystander "$(cat "$T/rm.trace")"
check "... (the trace saw its own volume: the check can fail)" grep -q "$SBX_ROOT/volumes/$anon2" "$T/rm.trace"
$SBX volume rm bystander1 bystander2 >/dev/null
check "rm -v removed its anonymous volume" test ! -e "$SBX_ROOT/volumes/$anon2"
out=$($SBX create sbxvoltest:1 -- /no/such/command 2>&1); rc=$?
check "create of a command that does not exist fails ($rc)" test "$rc" != 0
check "... and leaves no anonymous volume" test "$($SBX volume ls -q | sort | tr '\n' ' ')" = "$before"
for id in $($SBX ps -aq --no-trunc); do $SBX rm -f "$id" >/dev/null; done
$SBX rmi sbxvoltest:1 >/dev/null
rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null
expect_rc "prune the rest" 0 $SBX volume prune -f
check "no volume left" test -z "$($SBX volume ls -q)"
check "nothing left in the volumes dir" test -z "$(ls -A "$SBX_ROOT/volumes")"
finish

#!/usr/bin/env bash
# sbx run: exit codes, stdio, env, -w, -u, volumes, tmpfs, --read-only,
# --hostname, -i, -t, image config, on the real busybox image.
source "$(dirname "$0")/../sandbox_lib.sh"
run() { $SBX run "$@"; }

# --- exit codes -------------------------------------------------------------
expect_rc "true exits 0" 0 run $BB true
expect_rc "exit 3 passes through" 3 run $BB sh -c 'exit 3'
expect_rc "missing command is 127" 127 run $BB no-such-command
out=$(run $BB no-such-command 2>&1)
check "missing command says so" grep -q 'executable file not found' <<<"$out"
expect_rc "non-executable file is 126" 126 run $BB /etc/passwd
expect_rc "directory as command is 126" 126 run $BB /tmp
expect_rc "killed by SIGKILL is 137" 137 run $BB sh -c 'kill -9 $$'
# Output redirected to a file continues it (runsc alone writes from offset 0).
(echo first; run $BB sh -c 'echo second; echo third >&2'; echo fourth) > "$T/appended" 2>&1
check "output to a file continues it" test "$(tr '\n' ' ' < "$T/appended")" = "first second third fourth "
expect_rc "killed by SIGTERM is 143" 143 run $BB sh -c 'kill -TERM $$'
expect_rc "bad option is 125" 125 run --no-such-flag $BB true
expect_rc "unknown command is 125" 125 $SBX --log-level warn no-such-command x
out=$($SBX --log-level warn no-such-command x 2>&1)
check "unknown command is named" grep -qx "sbx: unknown command 'no-such-command'" <<<"$out"
check "unknown command lists the commands" grep -q '^Commands:.* run .*exec' <<<"$out"
out=$($SBX rn 2>&1)
check "a mistyped command gets a suggestion" grep -q "unknown command 'rn'; did you mean 'run'?" <<<"$out"
# An unknown option before "--" is the error named, not the command's words.
for bad in --nosuchflag --memroy=1g; do
  expect_rc "run $bad IMAGE -- CMD is 125" 125 run $bad $BB -- echo hi
  out=$(run $bad $BB -- echo hi 2>&1)
  check "run $bad IMAGE -- CMD names the option" grep -q "unknown option ${bad%%=*}; see 'sbx run --help'" <<<"$out"
done
# After "IMAGE --" every word is the command's: its -h/-v are not sbx's.
check "run IMAGE -- CMD -v: the command gets -v (not sbx's version)" test "$(run $BB -- echo -v 2>&1)" = "-v"
check "run IMAGE -- CMD --help: the command gets it (not run's help)" test "$(run $BB -- sh -c 'echo "$1"' sh --help 2>&1)" = "--help"
check "run -e K=V -- IMAGE CMD: a leading -- still works" test "$(run -e K=V -- $BB sh -c 'echo $K' 2>&1)" = "V"
check "run IMAGE -- -x: a command word starting with '-' stays the command" grep -q 'executable file not found' <<<"$(run $BB -- -x 2>&1)"
for c in "run [OPTIONS] IMAGE [--] [COMMAND" "create [OPTIONS] IMAGE [--] [COMMAND" "exec [OPTIONS] SANDBOX [--] COMMAND"; do
  check "sbx ${c%% *} --help's usage line names its positionals" grep -qF "Usage: sbx $c" <<<"$($SBX ${c%% *} --help)"
done
out=$($SBX exec --nosuch agent -- true 2>&1)
check "exec --nosuch names the option" grep -q "unknown option --nosuch; see 'sbx exec --help'" <<<"$out"
out=$($SBX --root "$T/r1" --root "$T/r2" ps 2>&1)
check "an option given twice says so" grep -qx "sbx: --root was given 2 times; give it once" <<<"$out"
expect_rc "a missing snapshot is 125" 125 $SBX snapshots rm no-such-snapshot-sbx
expect_rc "restore of a missing snapshot is 125" 125 $SBX restore no-such-snapshot-sbx
expect_rc "missing --rootfs dir is 125" 125 run --rootfs /nonexistent-sbx-dir true
expect_rc "bad --memory is 125" 125 run --memory lots $BB true
expect_rc "bad --network is 125" 125 run --network no-such-mode $BB true
expect_rc "missing volume source is 125" 125 run -v /nonexistent-sbx-dir:/x $BB true
expect_rc "unknown user is 125" 125 run -u no-such-user $BB true
check "help documents the exit codes" bash -c "$SBX run --help | grep -q '124 .*timeout'"

# --- stdio ------------------------------------------------------------------
head -c 1048576 /dev/urandom >"$T/blob"
run $BB cat /dev/zero 2>/dev/null | head -c 0  # SIGPIPE path must not hang
run -i $BB cat <"$T/blob" >"$T/blob.out"
check "stdin/stdout binary-safe with -i (1 MiB random)" cmp -s "$T/blob" "$T/blob.out"
run -i $BB sh -c 'cat >&2' <"$T/blob" 2>"$T/blob.err" >/dev/null
check "stderr binary-safe" cmp -s "$T/blob" "$T/blob.err"
out=$(echo hidden | run $BB cat)
check "without -i stdin is empty" test -z "$out"
out=$(run $BB sh -c 'echo out; echo err >&2' 2>"$T/err")
check "stdout and stderr stay separate" bash -c "[ '$out' = out ] && [ \"\$(cat $T/err)\" = err ]"
out=$(run -t $BB sh -c 'test -t 0 && test -t 1 && echo tty-yes; tty' </dev/null | tr -d '\r')
check "-t gives a terminal inside" grep -q '^tty-yes$' <<<"$out"
# (gVisor: the terminal is runsc's host pty, which has no name inside.)
native_only && check "-t terminal is the sandbox's own /dev/pts" grep -q '^/dev/pts/0$' <<<"$out"
expect_rc "-t passes the exit status through" 5 run -t $BB sh -c 'exit 5' </dev/null
out=$(run $BB sh -c 'test -t 1 && echo tty || echo notty')
check "no -t: no terminal" test "$out" = notty

# --- environment, workdir, user, hostname -----------------------------------
out=$(FROMHOST=yes run -e A=1 -e 'B=two words' -e FROMHOST -e UNSET_ON_HOST_$$ $BB sh -c 'echo "$A|$B|$FROMHOST|${UNSET_ON_HOST_'$$'-unset}"')
check "-e sets variables (and copies bare names)" test "$out" = "1|two words|yes|unset"
out=$(run $BB sh -c 'echo $PATH')
check "PATH is set (image Env or the default)" grep -q '/bin' <<<"$out"
out=$(run -e PATH=/custom:/bin $BB sh -c 'echo $PATH')
check "-e overrides the image's Env" test "$out" = /custom:/bin
if [ "$BB" = busybox ]; then
  out=$(run $BB sh -c 'ls /opt/opaque; test -e /etc/sbx-test/removed && echo whiteout-broken')
  check "image layers: opaque dir and whiteout applied" test "$out" = new
  out=$(run --entrypoint /bin/echo $BB hello)
  check "--entrypoint replaces the image's Entrypoint" test "$out" = hello
fi
printf '# comment\nC=3\n\nD=four=4\n' >"$T/envfile"
out=$(run --env-file "$T/envfile" -e C=override $BB sh -c 'echo "$C|$D"')
check "--env-file, -e wins" test "$out" = "override|four=4"
out=$(run --hostname sbx-box $BB sh -c 'hostname; echo $HOSTNAME')
check "--hostname" test "$out" = "$(printf 'sbx-box\nsbx-box')"
out=$(run -w /tmp $BB pwd)
check "-w sets the working directory" test "$out" = /tmp
out=$(run -w /does/not/exist $BB pwd)
check "-w creates a missing working directory" test "$out" = /does/not/exist
out=$(run -u nobody $BB sh -c 'id -u; id -g')
check "-u NAME resolves in the image's passwd" test "$out" = "$(printf '65534\n65534')"
out=$(run -u 1234:4321 $BB sh -c 'id -u; id -g')
check "-u UID:GID numeric" test "$out" = "$(printf '1234\n4321')"
out=$(run -u nobody $BB sh -c 'grep CapEff /proc/self/status')
check "non-root user has no effective capabilities" grep -q '0000000000000000' <<<"$out"
out=$(run $BB sh -c 'echo $HOME')
check "HOME of root" test "$out" = /root

# --- file system --------------------------------------------------------------
mkdir -p "$T/vol"
echo host-data >"$T/vol/in"
# A volume owned by a host user: the sandbox's root writes as that user (keep-id).
chown 4242:4242 "$T/vol"
out=$(run -v "$T/vol:/data" $BB sh -c 'cat /data/in; echo from-sandbox >/data/out')
check "-v rw: read" test "$out" = host-data
check "-v rw: written file on the host" grep -q from-sandbox "$T/vol/out"
if [ "${SBX_TEST_RUNTIME:-native}" = native ]; then
  check "-v rw: the sandbox's root writes as the volume's owner" test "$(stat -c %u:%g "$T/vol/out")" = 4242:4242
  mkdir -p "$T/rootvol"
  chmod 755 "$T/rootvol"
  expect_rc "-v rw of a host-root dir: the sandbox's root is not host root there" 1 \
    run -v "$T/rootvol:/data" $BB sh -c 'echo x >/data/new 2>/dev/null'
  check "-v rw of a host-root dir: nothing written" test ! -e "$T/rootvol/new"
  run -v "$T/rootvol:/data:idmap=host" $BB sh -c 'echo x >/data/new' >/dev/null 2>&1
  check "-v :idmap=host (opt-in): the old identity mapping" test "$(stat -c %u "$T/rootvol/new" 2>/dev/null)" = 0
fi
expect_rc "-v with an unknown option is 125" 125 run -v "$T/vol:/data:idmap=bogus" $BB true
expect_rc "-v :ro refuses writes" 1 run -v "$T/vol:/data:ro" $BB sh -c 'echo x >/data/new 2>/dev/null'
check "-v :ro wrote nothing" test ! -e "$T/vol/new"
out=$(run -v "$T/vol/in:/etc/injected" $BB cat /etc/injected)
check "-v of a single file" test "$out" = host-data
out=$(run --tmpfs /scratch:size=1m $BB sh -c 'echo hi >/scratch/f && cat /scratch/f && grep " /scratch " /proc/mounts')
check "--tmpfs mounts a tmpfs with its size" bash -c "grep -q '^hi' <<<'$out' && grep -Eq 'size=(1024k|1m)' <<<'$out'"
expect_rc "--read-only: / is read-only" 1 run --read-only $BB sh -c 'touch /newfile 2>/dev/null'
expect_rc "--read-only: --tmpfs still writable" 0 run --read-only --tmpfs /tmp $BB touch /tmp/ok
run $BB sh -c 'echo changed >/etc/passwd; rm /bin/ls'
out=$(run $BB sh -c 'grep -c root /etc/passwd; ls / >/dev/null && echo ls-ok')
check "changes do not persist between sandboxes" test "$out" = "$(printf '1\nls-ok')"

# --- sbx info: the runsc found and what it can do (runtime/gvisor/runsc_features.h) ---
# Both releases where both exist: the current one (bookworm-backports) and
# Debian 12's own (tests/old_runsc.sh); the answer must agree with `runsc flags`.
for rs in "$(command -v runsc)" "${SBX_OLD_RUNSC:-/var/cache/sbx-test/runsc-20221219/runsc}"; do
  [ -x "$rs" ] || { echo "SKIP: sbx info features: no runsc at '$rs' (tests/old_runsc.sh fetches the old one)"; continue; }
  ver=$("$rs" --version | head -1)
  # (Not "runsc flags | grep -q": under pipefail, grep's early exit can kill
  # runsc with SIGPIPE and the pipeline then reads as "no such flag".)
  flags=$("$rs" flags 2>&1)
  if grep -qE '^ +-nvproxy$' <<<"$flags"; then want=true; yn=yes; else want=false; yn=no; fi
  got=$($SBX info --json --runsc "$rs" | python3 -c 'import json,sys; print(str(json.load(sys.stdin)["runtimes"]["gvisor"]["features"]["nvproxy"]).lower())')
  check "sbx info --json --runsc ($ver): features.nvproxy=$got, as 'runsc flags' says" test "$got" = "$want"
  check "sbx info --runsc ($ver): names the version and 'nvproxy $yn'" bash -c "'$SBX' info --runsc '$rs' | grep -qE 'gvisor: .*${ver}; nvproxy $yn( \(drivers up to [0-9.]+\))?, overlay-size (yes|no), exec-tty (yes|no)'"
done

finish

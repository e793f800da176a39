#!/usr/bin/env bash
# sbx run -t driven from a real pseudo-terminal (tests/integration/pty_session.py),
# as a person at a shell: prompt, typed commands, window size and resize, ^C
# reaching the sandbox's foreground job, exit codes, and the user's terminal
# back in its own mode on every way out (exit, error, timeout, signal).
# Runs on both backends (SBX_TEST_RUNTIME=gvisor: runsc's console socket).
source "$(dirname "$0")/../sandbox_lib.sh"
command -v python3 >/dev/null || { echo "SKIP: needs python3"; exit 77; }
PTY="python3 $SBX_TEST_SRC/tests/integration/pty_session.py"

# --- an interactive shell ---------------------------------------------------------
out=$($PTY --size 33 101 --expect '# ' --check-raw \
  --send 'stty size\r' --expect '\n33 101' \
  --resize 40 120 --send 'stty size\r' --expect '\n40 120' \
  --send '[ -t 0 ] && [ -t 1 ] && echo "tt"y-yes\r' --expect '\ntty-yes' \
  --send 'exit 7\r' -- $SBX run -t $BB sh 2>&1)
rc=$?
check "interactive shell on -t: the driver saw every expected output (rc $rc)" test $rc -eq 0
check "the terminal's size reaches the sandbox" grep -q '^33 101$' <<<"$out"
check "a resize (SIGWINCH) reaches the sandbox" grep -q '^40 120$' <<<"$out"
check "stdin and stdout are the terminal" grep -q '^tty-yes$' <<<"$out"
check "the user's terminal is raw while relaying" grep -q '^raw-during: yes$' <<<"$out"
check "exit 7 passes through" grep -q '^exit: 7$' <<<"$out"
check "the user's terminal mode is restored after exit" grep -q '^restored: yes$' <<<"$out"

# --- ^C goes to the sandbox's foreground job, not to sbx --------------------------
start=$(date +%s%N)
out=$($PTY --expect '# ' --send 'sleep 30\r' --sleep 1 --send '\x03' \
  --send 'echo "af"ter-int\r' --expect '\nafter-int' --send 'exit\r' -- $SBX run -t $BB sh 2>&1)
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "^C interrupts the job in the sandbox, the shell goes on ($ms ms)" bash -c "[ $rc -eq 0 ] && [ $ms -lt 20000 ]"
check "... and the shell then exits 0" grep -q '^exit: 0$' <<<"$out"

# --- input end, and output of a non-interactive command ---------------------------
out=$($PTY --expect 'ready' --send 'hello\r' --send '\x04' -- $SBX run -t $BB sh -c 'echo ready; cat; echo done' 2>&1)
check "typed input reaches the command, ^D ends it" bash -c "grep -q '^hello$' <<<'$out' && grep -q '^done$' <<<'$out'"
check "... restored" grep -q '^restored: yes$' <<<"$out"

# --- the terminal is restored on every way out ------------------------------------
out=$($PTY -- $SBX run -t $BB no-such-command-$$ 2>&1)
check "command not found on -t: exit 127" grep -q '^exit: 127$' <<<"$out"
check "... restored" grep -q '^restored: yes$' <<<"$out"
out=$($PTY -- $SBX run -t --timeout 1s $BB sleep 20 2>&1)
check "timeout on -t: exit 124" grep -q '^exit: 124$' <<<"$out"
check "... restored" grep -q '^restored: yes$' <<<"$out"
out=$($PTY --expect '# ' --signal TERM --sleep 0.5 --signal TERM -- $SBX run -t $BB sh 2>&1)
check "SIGTERM twice to sbx run -t: the sandbox is killed (137)" grep -q '^exit: 137$' <<<"$out"
check "... restored" grep -q '^restored: yes$' <<<"$out"

# --- -t without a terminal on sbx's side (CI, pipes) ----------------------------------
out=$($SBX run -t $BB sh -c 'echo out-$((6*7))' </dev/null 2>&1 | tr -d '\r')
check "-t with stdin/stdout not a terminal still relays" grep -q '^out-42$' <<<"$out"

# --- exec -t into a long-lived sandbox (create; runtime/native/exec.cpp's relay) ----------------
if [ "$BB" = busybox ]; then
  id=$($SBX create $BB)
  out=$($PTY --size 25 90 --expect '# ' --check-raw --send 'stty size\r' --expect '25 90' \
    --send 'exit 5\r' -- $SBX exec -it "$id" sh 2>&1)
  check "exec -it: a shell on the terminal's size" grep -q '^25 90$' <<<"$out"
  check "exec -it: the user's terminal is raw while relaying" grep -q '^raw-during: yes$' <<<"$out"
  check "exec -it: exit 5 passes through" grep -q '^exit: 5$' <<<"$out"
  check "exec -it: ... restored" grep -q '^restored: yes$' <<<"$out"
  out=$($PTY --expect 'ready' --send 'hello\r' --send '\x04' -- $SBX exec -it "$id" sh -c 'echo ready; cat; echo done' 2>&1)
  check "exec -it: typed input reaches the command, ^D ends it" bash -c "grep -q '^hello$' <<<'$out' && grep -q '^done$' <<<'$out'"
  if [ "${SBX_TEST_RUNTIME:-native}" = gvisor ]; then
    # runsc 20221219 loses the output of `exec -t` without a terminal, and
    # bookworm-backports' 20240729 still does in about half the runs: sbx
    # refuses it clearly there. A runsc known to be fixed (sbx info: exec-tty
    # yes; none yet) relays it. Both runsc, where both exist.
    for rs in "$(command -v runsc)" "${SBX_OLD_RUNSC:-/var/cache/sbx-test/runsc-20221219/runsc}"; do
      [ -x "$rs" ] || { echo "SKIP: exec -t without a terminal: no runsc at '$rs' (tests/old_runsc.sh fetches the old one)"; continue; }
      ver=$("$rs" --version | head -1)
      rid=$($SBX create --runsc "$rs" $BB)
      if $SBX info --runsc "$rs" | grep -q 'exec-tty yes'; then
        out=$($SBX exec -t "$rid" sh -c 'echo out-$((6*7)); [ -t 1 ] && echo tty-yes' </dev/null 2>&1 | tr -d '\r')
        check "exec -t without a terminal ($ver): the output is relayed" grep -q '^out-42$' <<<"$out"
        check "exec -t without a terminal ($ver): the command's stdout is a terminal" grep -q '^tty-yes$' <<<"$out"
      else
        out=$($SBX exec -t "$rid" sh -c 'echo out-$((6*7))' </dev/null 2>&1); rc=$?
        check "exec -t without a terminal ($ver): exit 125" test "$rc" = 125
        check "exec -t without a terminal ($ver): the error says a terminal is needed" grep -q 'needs a terminal' <<<"$out"
      fi
      $SBX rm -f "$rid" >/dev/null
    done
  else
    out=$($SBX exec -t "$id" sh -c 'echo out-$((6*7))' </dev/null 2>&1 | tr -d '\r')
    check "exec -t without a terminal: the last output is relayed" grep -q '^out-42$' <<<"$out"
  fi
  $SBX rm -f "$id" >/dev/null
fi

finish

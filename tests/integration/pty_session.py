#!/usr/bin/env python3
"""Drives a command on a real pseudo-terminal, as a person at a shell would,
for tests of `sbx run -t` (tests/integration/test_run_tty.sh).

    pty_session.py [--size ROWS COLS] STEP... -- CMD ARGS...

Steps, run in order:
    --expect REGEX     wait (up to 15 s) until the output so far matches REGEX
    --send TEXT        type TEXT (Python escapes: \\r, \\x03 for ^C, \\x04 for ^D)
    --resize ROWS COLS change the terminal's size (the kernel sends SIGWINCH)
    --signal NAME      send signal NAME (TERM, INT, ...) to the command
    --sleep SECONDS    let time pass (reading the output meanwhile)
    --check-raw        record whether the terminal is in raw mode now (no ICANON/ECHO)

The command runs in its own session with the pty's slave as its controlling
terminal and stdio. The driver keeps the slave open too, so that it can read
the terminal's mode after the command has ended. Prints the output (\\r
removed), then lines "raw-during: yes|no" (for --check-raw), "restored: yes|no"
(the terminal's mode after the command ended equals the mode before it
started) and "exit: N". Exits 1 when an --expect times out or the command
does not end within 30 s (it is then killed).
"""
import fcntl
import os
import re
import select
import signal
import struct
import sys
import termios
import time


def main():
    args = sys.argv[1:]
    if "--" not in args:
        sys.exit("usage: pty_session.py [--size R C] STEP... -- CMD...")
    i = args.index("--")
    steps, cmd = args[:i], args[i + 1:]
    master, slave = os.openpty()
    rows, cols = 24, 80
    if steps[:1] == ["--size"]:
        rows, cols = int(steps[1]), int(steps[2])
        steps = steps[3:]
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    before = termios.tcgetattr(slave)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        os.close(master)
        os.execvp(cmd[0], cmd)
    out = bytearray()
    status = None

    def pump(timeout):
        nonlocal status
        r, _, _ = select.select([master], [], [], timeout)
        if r:
            try:
                data = os.read(master, 65536)
                out.extend(data)
            except OSError:
                pass
        if status is None:
            p, st = os.waitpid(pid, os.WNOHANG)
            if p == pid:
                status = st

    raw_during = None
    failed = False
    k = 0
    while k < len(steps):
        s = steps[k]
        if s == "--expect":
            rx = re.compile(steps[k + 1].encode())
            end = time.time() + 15
            while not rx.search(out) and time.time() < end:
                pump(0.05)
            if not rx.search(out):
                print(f"pty_session: timed out waiting for {steps[k + 1]!r}", file=sys.stderr)
                failed = True
                break
            k += 2
        elif s == "--send":
            os.write(master, steps[k + 1].encode().decode("unicode_escape").encode("latin-1"))
            k += 2
        elif s == "--resize":
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", int(steps[k + 1]), int(steps[k + 2]), 0, 0))
            k += 3
        elif s == "--signal":
            os.kill(pid, getattr(signal, "SIG" + steps[k + 1]))
            k += 2
        elif s == "--sleep":
            end = time.time() + float(steps[k + 1])
            while time.time() < end:
                pump(0.05)
            k += 2
        elif s == "--check-raw":
            lflag = termios.tcgetattr(slave)[3]
            raw_during = not (lflag & (termios.ICANON | termios.ECHO))
            k += 1
        else:
            sys.exit(f"pty_session: unknown step {s}")
    end = time.time() + 30
    while status is None and time.time() < end:
        pump(0.05)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        print("pty_session: the command did not end within 30 s (killed)", file=sys.stderr)
        failed = True
    for _ in range(10):  # what is left in the pty
        r, _, _ = select.select([master], [], [], 0.02)
        if not r:
            break
        try:
            out.extend(os.read(master, 65536))
        except OSError:
            break
    after = termios.tcgetattr(slave)
    text = out.decode(errors="replace").replace("\r", "")
    sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")  # report lines start a line
    if raw_during is not None:
        print("raw-during:", "yes" if raw_during else "no")
    print("restored:", "yes" if after == before else "no")
    if after != before:
        print("termios before:", before[:6], file=sys.stderr)
        print("termios after: ", after[:6], file=sys.stderr)
    print("exit:", os.waitstatus_to_exitcode(status))
    sys.exit(1 if failed else 0)


main()

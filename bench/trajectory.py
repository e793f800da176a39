#!/usr/bin/env python3
"""Recording's per-step cost: `sbx exec` in a recorded sandbox beside one
that is not, interleaved; then a branch at step 40 and a replay of the
whole session, timed.

    sudo python3 bench/trajectory.py SBX [--images tests/images/out] [--steps 50] [--files 200]

Two sandboxes of busybox (`sbx create` and `sbx create --record`) each get
the same agent-like session: a 200-file repository written at step 1, then
steps that change nothing (`cat` of a file), steps that edit one file, and
"test runs" (read every file of the repository), in turn; at step 10 a
long-running server starts (a background loop that rewrites /srv.state every
second, so later steps find the layer changed by a process they did not
start). Each step runs in both sandboxes, in a random order, so that the
machine's noise falls on both. Reports per kind the median wall time of a
step (the whole `sbx exec` process) without and with recording, the
difference in ms and the ratio; the checkpoint bytes the recorded sandbox
stored against a full copy of its writable layer after every step; the
median time of the change check (the steps' checkpoint_ms); `sbx branch
--at 40` with one copy and with four (per copy), beside a plain `sbx
create` (what a branch costs beyond making a sandbox); and `sbx replay` of
the whole session against the recorded session's own wall time.
Leaves nothing: its temp store and run root are removed.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sbx")
    ap.add_argument("--images", default="tests/images/out")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--files", type=int, default=200)
    a = ap.parse_args()
    t = tempfile.mkdtemp(prefix="sbx-bench-traj.")
    base = [os.path.abspath(a.sbx), "--root", t + "/root", "--run-root", t + "/run"]

    def sbx(*args, **kw):
        return subprocess.run(base + list(args), check=True, capture_output=True, text=True, **kw).stdout.strip()

    ids = []
    try:
        sbx("import", "-q", a.images + "/busybox-oci", "busybox")
        plain = sbx("create", "busybox")
        rec = sbx("create", "--record", "busybox")
        ids = [plain, rec]
        setup = "mkdir -p /repo && i=0; while [ $i -lt %d ]; do echo \"line $i\" > /repo/f$i.py; i=$((i+1)); done" % a.files
        kinds = ("nochange", "edit", "test", "server")
        times = {n: {k: [] for k in kinds} for n in ("plain", "rec")}
        session_ms = 0.0  # the recorded sandbox's steps, end to end
        for sb in ids:
            t0 = time.perf_counter()
            sbx("exec", sb, "sh", "-c", setup)
            if sb == rec:
                session_ms += (time.perf_counter() - t0) * 1000
        for step in range(2, a.steps + 1):
            if step == 10:
                kind = "server"
                cmd = ["sh", "-c", "nohup sh -c 'while :; do date +%s > /srv.state; sleep 1; done' >/dev/null 2>&1 &"]
            else:
                kind = kinds[step % 3]
                cmd = {"nochange": ["cat", "/repo/f%d.py" % (step % a.files)],
                       "edit": ["sh", "-c", "echo edit %d >> /repo/f%d.py" % (step, step % a.files)],
                       "test": ["sh", "-c", "for f in /repo/*.py; do read -r l < $f; done; echo ok"]}[kind]
            order = [("plain", plain), ("rec", rec)]
            random.shuffle(order)
            for name, sb in order:
                t0 = time.perf_counter()
                sbx("exec", sb, *cmd)
                ms = (time.perf_counter() - t0) * 1000
                times[name][kind].append(ms)
                if name == "rec":
                    session_ms += ms
        print("per-step wall time of `sbx exec` (ms, median):")
        print("%-10s %6s %10s %10s %10s %8s" % ("step", "n", "plain", "recorded", "diff", "ratio"))
        for kind in kinds:
            p = statistics.median(times["plain"][kind])
            r = statistics.median(times["rec"][kind])
            print("%-10s %6d %10.2f %10.2f %10.2f %8.3f" % (kind, len(times["rec"][kind]), p, r, r - p, r / p))
        tdir = "%s/run/%s/trajectory" % (t, rec)
        steps = [json.loads(l) for l in open(tdir + "/trajectory.jsonl")][1:]
        ck = sum((s.get("checkpoint") or {}).get("bytes", 0) for s in steps)
        obj = sum(os.path.getsize(os.path.join(tdir, "objects", f)) for f in os.listdir(tdir + "/objects"))
        upper = "%s/run/%s/fs/upper" % (t, rec)
        layer = 0
        for dp, _, fs in os.walk(upper):
            for f in fs:
                try:
                    layer += os.lstat(os.path.join(dp, f)).st_size
                except OSError:
                    pass
        full = layer * len(steps)  # a full copy of the writable layer after every step (upper bound: its final size)
        cms = [s["checkpoint_ms"] for s in steps if "checkpoint_ms" in s]
        print("checkpoints: %d of %d steps, %d bytes of changed files, %d bytes of objects stored; "
              "a full layer copy per step: ~%d bytes (%.1f%%)" %
              (sum(1 for s in steps if s.get("checkpoint")), len(steps), ck, obj, full, 100.0 * obj / max(full, 1)))
        print("change check (checkpoint_ms): median %.3f ms, max %.3f ms" % (statistics.median(cms), max(cms)))

        def timed(*args):
            t0 = time.perf_counter()
            out = sbx(*args)
            return (time.perf_counter() - t0) * 1000, out.split()

        at = min(40, len(steps))
        c_ms, made = timed("create", "busybox")
        ids += made
        b1_ms, made = timed("branch", rec, "--at", str(at))
        ids += made
        b4_ms, made = timed("branch", rec, "--at", str(at), "--count", "4")
        ids += made
        print("branch --at %d: %.1f ms (one copy), %.1f ms for 4 (%.1f ms per copy); a plain `sbx create`: %.1f ms"
              % (at, b1_ms, b4_ms, b4_ms / 4, c_ms))
        # The server's state file changes on its own clock: left out of the file comparison.
        t0 = time.perf_counter()
        rp = subprocess.run(base + ["replay", "--tolerate-path", "^/srv\\.state$", rec], capture_output=True, text=True)
        r_ms = (time.perf_counter() - t0) * 1000
        print("replay of %d steps: %.0f ms (exit %d: %s); the recorded session: %.0f ms (ratio %.2f)"
              % (len(steps), r_ms, rp.returncode, "all matched" if rp.returncode == 0 else "diverged",
                 session_ms, r_ms / session_ms))
        if rp.returncode != 0:
            print(rp.stdout[-2000:] + rp.stderr[-2000:])
    finally:
        for sb in ids:
            subprocess.run(base + ["rm", "-f", sb], capture_output=True)
        shutil.rmtree(t, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

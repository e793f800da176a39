#!/usr/bin/env python3
"""Recording's per-step cost: `sbx exec` in a recorded sandbox beside one
that is not, interleaved.

    sudo python3 bench/trajectory.py SBX [--images tests/images/out] [--steps 50] [--files 200]

Two sandboxes of busybox (`sbx create` and `sbx create --record`) each get
the same session: a 200-file repository written at step 1, then steps that
change nothing (`cat` of a file) and steps that edit one file, alternating.
Each step runs in both sandboxes, in a random order, so that the machine's
noise falls on both. Reports per kind the median wall time of a step (the
whole `sbx exec` process) without and with recording, the difference in ms
and the ratio; then the checkpoint bytes the recorded sandbox stored against
a full copy of its writable layer after every step, and the median time of
the change check (the steps' checkpoint_ms).
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
        times = {"plain": {"nochange": [], "edit": []}, "rec": {"nochange": [], "edit": []}}
        for sb in ids:
            sbx("exec", sb, "sh", "-c", setup)
        for step in range(a.steps):
            kind = "edit" if step % 2 else "nochange"
            cmd = ["sh", "-c", "echo edit %d >> /repo/f%d.py" % (step, step % a.files)] if kind == "edit" else \
                ["cat", "/repo/f%d.py" % (step % a.files)]
            order = [("plain", plain), ("rec", rec)]
            random.shuffle(order)
            for name, sb in order:
                t0 = time.perf_counter()
                sbx("exec", sb, *cmd)
                times[name][kind].append((time.perf_counter() - t0) * 1000)
        print("per-step wall time of `sbx exec` (ms, median of %d each):" % (a.steps // 2))
        print("%-10s %10s %10s %10s %8s" % ("step", "plain", "recorded", "diff", "ratio"))
        for kind in ("nochange", "edit"):
            p = statistics.median(times["plain"][kind])
            r = statistics.median(times["rec"][kind])
            print("%-10s %10.2f %10.2f %10.2f %8.3f" % (kind, p, r, r - p, r / p))
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
    finally:
        for sb in ids:
            subprocess.run(base + ["rm", "-f", sb], capture_output=True)
        shutil.rmtree(t, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

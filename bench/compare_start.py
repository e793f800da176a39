#!/usr/bin/env python3
"""Compares `sbx run` start time of two sbx binaries, interleaved.

    sudo python3 bench/compare_start.py OLD_SBX NEW_SBX [RUNS]

Imports tests/images/out/busybox-oci into a temp store, then runs
`sbx run --rootfs LAYER true` and `sbx run busybox true` with each binary,
the four variants in a random order each round (so load on the host hits all
alike), 10 warm-up rounds, RUNS (default 300) measured ones. Prints median,
p90 and min wall time per variant. Removes its temp dirs.
"""
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
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    images = os.environ.get("SBX_IMAGES", os.path.join(repo, "tests/images/out"))
    tmp = tempfile.mkdtemp(prefix="sbx-compare-start.")
    try:
        root, run_root = os.path.join(tmp, "root"), os.path.join(tmp, "run")
        g = ["--root", root, "--run-root", run_root]
        subprocess.run([new, *g, "import", "-q", os.path.join(images, "busybox-oci"), "busybox"], check=True,
                       stdout=subprocess.DEVNULL)
        info = json.loads(subprocess.run([new, *g, "inspect", "busybox"], check=True, capture_output=True).stdout)
        layer = info["LayerDirs"][0]  # busybox's first layer is a whole rootfs
        variants = {}
        for name, b in (("old", old), ("new", new)):
            variants[name + " --rootfs"] = [b, *g, "run", "--rootfs", layer, "true"]
            variants[name + " image"] = [b, *g, "run", "busybox", "true"]
        times = {k: [] for k in variants}
        for i in range(runs + 10):
            order = list(variants)
            random.shuffle(order)
            for k in order:
                t0 = time.perf_counter()
                subprocess.run(variants[k], check=True)
                if i >= 10:
                    times[k].append((time.perf_counter() - t0) * 1000)
        print(f"old: {old}\nnew: {new}\nload average: {os.getloadavg()[0]:.1f}")
        for k in sorted(times):
            x = sorted(times[k])
            print(f"{k:14s} n={len(x)} median={statistics.median(x):6.1f} ms  "
                  f"p90={x[int(len(x) * 0.9)]:6.1f} ms  min={x[0]:5.1f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

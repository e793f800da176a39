#!/usr/bin/env python3
"""Benchmark: one-shot start and fan-out throughput, sbx beside chroot and bwrap.

    sudo python3 bench/batch.py SBX [--static SBX_STATIC] [--base SBX_BEFORE] [--rounds R]
                                    [--tasks N] [--parallel 1,2,4,8] [--favordynmods-on] [--out FILE.md]

Workload: `python3 -c pass` in the python test image (its one layer is a whole
rootfs, which chroot and bwrap use directly).

* start: one `sbx run`, `chroot`, `bwrap` (and the static sbx) each round, in a
  random order, R rounds after 5 warm-up ones: medians, ratios to chroot/bwrap.
* throughput at P = 1, 2, 4, 8: N tasks as a `sbx run` loop (xargs -P), as
  one `sbx batch -P --pool 0` (a fresh sandbox per task), as one `sbx batch
  -P` (the warm pool, its default), and as a chroot loop (xargs -P); the four
  interleaved in a random order each round; tasks/s (median of the rounds)
  and % of chroot.
* --base SBX_BEFORE: the same sbx run / sbx batch rows with a build of the
  commit before a change, interleaved in the same rounds, and the ratio
  after/before (start: time, throughput: tasks/s) per row.
* sbx --version of the dynamic and the static binary (process start of sbx).
* favordynmods: the state it ran in is printed; with --favordynmods-on the
  whole bench runs again with it switched on (`sbx system tune`), and the
  state found is restored at the end, whatever happens.
Leaves nothing: temp store and run root removed.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (bench/report.py: the shared report tail)

WORK = ["python3", "-c", "pass"]


def timed(cmd, **kw):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return (time.perf_counter() - t0) * 1000


def favordynmods(sbx):
    return json.loads(subprocess.run([sbx, "system", "tune", "--json"], check=True, capture_output=True).stdout)["favordynmods"]


def run_all(a, sbx, static, g, rootfs, tmp, lines, base=None):
    state = favordynmods(sbx)
    lines.append(f"\n### favordynmods {'on' if state else 'off'}\n")
    # --- one-shot start
    start = {
        "chroot": ["chroot", rootfs, *WORK],
        "bwrap": ["bwrap", "--ro-bind", rootfs, "/", "--proc", "/proc", "--dev", "/dev", "--unshare-all",
                  "--die-with-parent", *WORK],
        "sbx run": [sbx, *g, "run", "python", *WORK],
    }
    if static:
        start["sbx run (static)"] = [static, *g, "run", "python", *WORK]
    if base:
        start["sbx run (base)"] = [base, *g, "run", "python", *WORK]
    times = {k: [] for k in start}
    for i in range(a.rounds + 5):
        order = list(start)
        random.shuffle(order)
        for k in order:
            t = timed(start[k])
            if i >= 5:
                times[k].append(t)
    med = {k: statistics.median(v) for k, v in times.items()}
    lines.append(f"One-shot start, median of {a.rounds} interleaved runs (ms; ratio to chroot, to bwrap):\n")
    lines.append("| | ms | × chroot | × bwrap |\n|---|--:|--:|--:|")
    for k, v in med.items():
        lines.append(f"| {k} | {v:.1f} | {v / med['chroot']:.2f} | {v / med['bwrap']:.2f} |")
    if base:
        lines.append(f"\nsbx run after/before (--base): {med['sbx run'] / med['sbx run (base)']:.3f} "
                     "(time; above 1: slower)")
    # --- throughput
    tasks = os.path.join(tmp, "tasks.jsonl")
    with open(tasks, "w") as f:
        for i in range(a.tasks):
            f.write(json.dumps({"id": str(i), "cmd": WORK}) + "\n")
    seq = "\n".join(str(i) for i in range(a.tasks)) + "\n"
    lines.append(f"\nThroughput, {a.tasks} tasks, median of {a.thr_rounds} interleaved rounds (tasks/s; % of the chroot loop):\n")
    lines.append("| P | chroot loop | sbx run loop | sbx batch (fresh) | sbx batch (warm pool) | run loop % | batch fresh % | batch pool % |\n|--:|--:|--:|--:|--:|--:|--:|--:|")
    vs_base = []
    for p in a.parallel:
        variants = {
            "chroot": lambda p=p: timed(["xargs", "-P", str(p), "-I{}", "chroot", rootfs, *WORK], input=seq.encode()),
            "run": lambda p=p: timed(["xargs", "-P", str(p), "-I{}", sbx, *g, "run", "python", *WORK], input=seq.encode()),
            "fresh": lambda p=p: timed([sbx, *g, "batch", "-q", "-P", str(p), "--pool", "0", "--image", "python", tasks]),
            "batch": lambda p=p: timed([sbx, *g, "batch", "-q", "-P", str(p), "--image", "python", tasks]),
        }
        if base:
            variants.update({
                "run (base)": lambda p=p: timed(["xargs", "-P", str(p), "-I{}", base, *g, "run", "python", *WORK],
                                                input=seq.encode()),
                "fresh (base)": lambda p=p: timed([base, *g, "batch", "-q", "-P", str(p), "--pool", "0", "--image",
                                                   "python", tasks]),
                "batch (base)": lambda p=p: timed([base, *g, "batch", "-q", "-P", str(p), "--image", "python", tasks]),
            })
        rates = {k: [] for k in variants}
        for _ in range(a.thr_rounds):
            order = list(variants)
            random.shuffle(order)
            for k in order:
                rates[k].append(a.tasks / (variants[k]() / 1000))
        r = {k: statistics.median(v) for k, v in rates.items()}
        lines.append(f"| {p} | {r['chroot']:.1f} | {r['run']:.1f} | {r['fresh']:.1f} | {r['batch']:.1f} | "
                     f"{100 * r['run'] / r['chroot']:.0f}% | {100 * r['fresh'] / r['chroot']:.0f}% | "
                     f"{100 * r['batch'] / r['chroot']:.0f}% |")
        if base:
            vs_base.append(f"| {p} | {r['run'] / r['run (base)']:.3f} | {r['fresh'] / r['fresh (base)']:.3f} | "
                           f"{r['batch'] / r['batch (base)']:.3f} |")
    if base:
        lines.append("\nThroughput after/before (--base; tasks/s ratio, below 1: slower):\n")
        lines.append("| P | sbx run loop | sbx batch (fresh) | sbx batch (warm pool) |\n|--:|--:|--:|--:|")
        lines.extend(vs_base)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sbx")
    ap.add_argument("--static")
    ap.add_argument("--base", help="an sbx built from the commit before a change: its rows beside this one's")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--thr-rounds", type=int, default=3)
    ap.add_argument("--parallel", default="1,2,4,8", help="throughput at these P (comma-separated)")
    ap.add_argument("--favordynmods-on", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    a.parallel = [int(x) for x in a.parallel.split(",")]
    sbx = os.path.abspath(a.sbx)
    base = os.path.abspath(a.base) if a.base else None
    static = os.path.abspath(a.static) if a.static else None
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    images = os.environ.get("SBX_IMAGES", os.path.join(repo, "tests/images/out"))
    tmp = tempfile.mkdtemp(prefix="sbx-bench-batch.")
    found = favordynmods(sbx)
    lines = []
    try:
        g = ["--root", os.path.join(tmp, "root"), "--run-root", os.path.join(tmp, "run")]
        subprocess.run([sbx, *g, "import", "-q", os.path.join(images, "python-oci"), "python"], check=True,
                       stdout=subprocess.DEVNULL)
        rootfs = json.loads(subprocess.run([sbx, *g, "inspect", "python"], check=True,
                                           capture_output=True).stdout)["LayerDirs"][0]
        lines.append(f"# sbx batch / start bench (bench/batch.py)\n\n"
                     f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, load average at start "
                     f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, workload `python3 -c pass`.\n"
                     f"Command: `sudo python3 bench/batch.py {' '.join(sys.argv[1:])}`")
        # Process start of sbx itself.
        vers = {"dynamic": [sbx, "--version"]}
        if static:
            vers["static"] = [static, "--version"]
        vt = {k: [] for k in vers}
        for i in range(105):
            for k in random.sample(list(vers), len(vers)):
                t = timed(vers[k])
                if i >= 5:
                    vt[k].append(t)
        lines.append("\n`sbx --version` (process start), median of 100: " +
                     ", ".join(f"{k} {statistics.median(v):.2f} ms" for k, v in vt.items()))
        run_all(a, sbx, static, g, rootfs, tmp, lines, base)
        if a.favordynmods_on and not found:
            subprocess.run([sbx, "system", "tune", "--favordynmods", "on"], check=True, stdout=subprocess.DEVNULL)
            run_all(a, sbx, static, g, rootfs, tmp, lines, base)
    finally:
        if favordynmods(sbx) != found:
            subprocess.run([sbx, "system", "tune", "--favordynmods", "on" if found else "off"], stdout=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
    lines.append(f"\nfavordynmods restored to {'on' if found else 'off'} (as found).")
    report.emit(lines, a.out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Benchmark: HumanEval 164 at P=4 through `sbx batch`, beside a chroot loop.

    sudo python3 bench/batch_humaneval.py SBX [--par 4] [--rounds R] [--problems K]
                                          [--favordynmods-on] [--out FILE.md]

Each problem's program (prompt + canonical_solution + test + check(entry_point)
+ a `HUMANEVAL-OK <task_id>` marker) runs as `python3 -c PROGRAM` in the
python test image, P at a time, four ways, interleaved in a random order each
round:

* chroot loop: `chroot ROOTFS python3 -c PROGRAM` (the image's one layer is a
  whole rootfs), P workers;
* sbx run loop: `sbx run python python3 -c PROGRAM`, P workers;
* sbx batch (fresh): one `sbx batch -P P --pool 0` (a fresh sandbox per task);
* sbx batch (warm pool): one `sbx batch -P P` (the pool, its default).

Every problem must pass in every way (exit 0 and the marker; for batch, the
result line's exit_code 0 and stdout), else the bench fails: a fast wrong
answer is no answer. Reported: wall seconds (median of the rounds), problems/s,
and the ratio to chroot's wall (target: `sbx batch` ≤ 1.1× chroot). The
favordynmods state it ran in is printed; with --favordynmods-on it runs again
with it switched on and restores the state found. Leaves nothing: temp store
and run root removed.
"""
import argparse
import concurrent.futures
import gzip
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

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def programs(path, k):
    out = []
    with gzip.open(path, "rt") as f:
        for line in f:
            p = json.loads(line)
            prog = (p["prompt"] + p["canonical_solution"] + "\n\n" + p["test"] + "\n\n" +
                    f"check({p['entry_point']})\nprint('HUMANEVAL-OK {p['task_id']}')\n")
            out.append((p["task_id"], prog))
    return out[:k] if k else out


def loop(argv_of, progs, par):
    """P workers, one process per problem; returns (wall s, failures)."""
    def one(item):
        tid, prog = item
        r = subprocess.run(argv_of(prog), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return tid, r.returncode == 0 and f"HUMANEVAL-OK {tid}\n" in r.stdout, r.stderr[-200:]
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(par) as ex:
        res = list(ex.map(one, progs))
    wall = time.perf_counter() - t0
    return wall, [(tid, err) for tid, ok, err in res if not ok]


def batch(sbx, g, tasks, out, par, pool, n):
    args = [sbx, *g, "batch", "-q", "-P", str(par), *(["--pool", str(pool)] if pool is not None else []),
            "--image", "python", "-o", out, tasks]
    t0 = time.perf_counter()
    rc = subprocess.run(args, stdout=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t0
    if rc not in (0, 1):  # 1: some task failed, found below
        raise SystemExit(f"sbx batch exited {rc}: {' '.join(args[:8])} …")
    bad = []
    seen = 0
    with open(out) as f:
        for line in f:
            r = json.loads(line)
            seen += 1
            if not (r.get("exit_code") == 0 and f"HUMANEVAL-OK {r['id']}\n" in (r.get("stdout") or "")):
                bad.append((r["id"], r.get("error") or (r.get("stderr") or "")[-200:]))
    if seen != n:
        bad.append(("-", f"{seen} results for {n} tasks"))
    return wall, bad


def favordynmods(sbx):
    return json.loads(subprocess.run([sbx, "system", "tune", "--json"], check=True,
                                     capture_output=True).stdout)["favordynmods"]


def run_all(a, sbx, g, rootfs, progs, tmp, lines):
    state = favordynmods(sbx)
    tasks = os.path.join(tmp, "he.jsonl")
    with open(tasks, "w") as f:
        for tid, prog in progs:
            f.write(json.dumps({"id": tid, "cmd": ["python3", "-c", prog]}) + "\n")
    out = os.path.join(tmp, "he.out")
    ways = {
        "chroot loop": lambda: loop(lambda p: ["chroot", rootfs, "python3", "-c", p], progs, a.par),
        "sbx run loop": lambda: loop(lambda p: [sbx, *g, "run", "python", "python3", "-c", p], progs, a.par),
        "sbx batch (fresh)": lambda: batch(sbx, g, tasks, out, a.par, 0, len(progs)),
        "sbx batch (warm pool)": lambda: batch(sbx, g, tasks, out, a.par, None, len(progs)),
    }
    walls = {k: [] for k in ways}
    for _ in range(a.rounds):
        order = list(ways)
        random.shuffle(order)
        for k in order:
            wall, bad = ways[k]()
            if bad:
                raise SystemExit(f"{k}: {len(bad)} of {len(progs)} problems did not pass, first: {bad[0]}")
            walls[k].append(wall)
    med = {k: statistics.median(v) for k, v in walls.items()}
    c = med["chroot loop"]
    lines.append(f"\n### favordynmods {'on' if state else 'off'}\n")
    lines.append(f"HumanEval {len(progs)} problems (all pass in every way), P={a.par}, median of {a.rounds} "
                 f"interleaved rounds (load average now {os.getloadavg()[0]:.1f}):\n")
    lines.append("| | wall s | problems/s | × chroot wall |\n|---|--:|--:|--:|")
    for k, v in med.items():
        lines.append(f"| {k} | {v:.2f} | {len(progs) / v:.1f} | {v / c:.2f} |")
    w = med["sbx batch (warm pool)"] / c
    lines.append(f"\nTarget `sbx batch` ≤ 1.1× chroot: {'met' if w <= 1.1 else f'missed by {100 * (w - 1.1):.0f} points'} "
                 f"({w:.2f}×).")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sbx")
    ap.add_argument("--par", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--problems", type=int, default=0, help="the first K problems only (0: all 164)")
    ap.add_argument("--humaneval", default=os.path.join(REPO, "tests/data/HumanEval.jsonl.gz"))
    ap.add_argument("--favordynmods-on", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    sbx = os.path.abspath(a.sbx)
    images = os.environ.get("SBX_IMAGES", os.path.join(REPO, "tests/images/out"))
    progs = programs(a.humaneval, a.problems)
    tmp = tempfile.mkdtemp(prefix="sbx-bench-he.")
    found = favordynmods(sbx)
    lines = []
    try:
        g = ["--root", os.path.join(tmp, "root"), "--run-root", os.path.join(tmp, "run")]
        subprocess.run([sbx, *g, "import", "-q", os.path.join(images, "python-oci"), "python"], check=True,
                       stdout=subprocess.DEVNULL)
        rootfs = json.loads(subprocess.run([sbx, *g, "inspect", "python"], check=True,
                                           capture_output=True).stdout)["LayerDirs"][0]
        lines.append(f"# sbx batch HumanEval bench (bench/batch_humaneval.py)\n\n"
                     f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, load average at start "
                     f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs.\n"
                     f"Command: `sudo python3 bench/batch_humaneval.py {' '.join(sys.argv[1:])}`")
        run_all(a, sbx, g, rootfs, progs, tmp, lines)
        if a.favordynmods_on and not found:
            subprocess.run([sbx, "system", "tune", "--favordynmods", "on"], check=True, stdout=subprocess.DEVNULL)
            run_all(a, sbx, g, rootfs, progs, tmp, lines)
    finally:
        if favordynmods(sbx) != found:
            subprocess.run([sbx, "system", "tune", "--favordynmods", "on" if found else "off"],
                           stdout=subprocess.DEVNULL)
        subprocess.run([sbx, "--root", os.path.join(tmp, "root"), "--run-root", os.path.join(tmp, "run"), "gc"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
    lines.append(f"\nfavordynmods restored to {'on' if found else 'off'} (as found).")
    report.emit(lines, a.out)


if __name__ == "__main__":
    main()

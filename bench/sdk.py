#!/usr/bin/env python3
"""Benchmark: the Python SDK (through `sbx serve`) beside sbx's CLI and chroot.

    sudo python3 bench/sdk.py SBX [--rounds R] [--thr-rounds N] [--problems K] [--out FILE.md]

* HumanEval (K problems, default all 164, canonical solutions) at P=4, each
  problem in its own sandbox of the python test image:
  - chroot loop: `chroot ROOTFS python3 -c PROG`, 4 at a time;
  - CLI loop: `sbx run python python3 -c PROG`, 4 at a time;
  - SDK one-shot: `Sandbox.create(python, "python3", "-c", PROG)` + `wait()` + `terminate()`, 4 threads;
  - SDK harness: `Sandbox.create(python)` + `exec("python3", "-c", PROG).wait()` + `terminate()`, 4 threads.
  The four interleaved in a random order each round; problems/s (median),
  % of the CLI loop and of chroot. Every run must pass (exit 0).
* Latency of create + exec('true') + terminate, median of R interleaved
  rounds: SDK (`Sandbox.create`, `exec`, `terminate`) beside the CLI (`sbx
  create`, `sbx exec`, `sbx rm -f`).
Leaves nothing: its server stopped, temp store and run root removed.
"""
import argparse
import concurrent.futures
import gzip
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
import sbx  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (bench/report.py: the shared report tail)


def programs(k):
    out = []
    with gzip.open(os.path.join(REPO, "tests/data/HumanEval.jsonl.gz"), "rt") as f:
        for line in f:
            p = json.loads(line)
            out.append(p["prompt"] + p["canonical_solution"] + "\n\n" + p["test"] + "\n\ncheck(" + p["entry_point"] + ")\n")
    return out[:k]


def fanout(fn, items, p=4):
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(p) as pool:
        codes = list(pool.map(fn, items))
    dt = time.perf_counter() - t0
    bad = [c for c in codes if c != 0]
    if bad:
        raise SystemExit(f"{len(bad)} runs failed (codes {bad[:5]})")
    return len(items) / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sbx")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--thr-rounds", type=int, default=3)
    ap.add_argument("--problems", type=int, default=164)
    ap.add_argument("--out")
    a = ap.parse_args()
    sbx_bin = os.path.abspath(a.sbx)
    images = os.environ.get("SBX_IMAGES", os.path.join(REPO, "tests/images/out"))
    tmp = tempfile.mkdtemp(prefix="sbx-bench-sdk.")
    g = ["--root", os.path.join(tmp, "root"), "--run-root", os.path.join(tmp, "run")]
    sock = os.path.join(tmp, "sdk.sock")
    server = None
    lines = []
    try:
        subprocess.run([sbx_bin, *g, "import", "-q", os.path.join(images, "python-oci"), "python"], check=True,
                       stdout=subprocess.DEVNULL)
        rootfs = json.loads(subprocess.run([sbx_bin, *g, "inspect", "python"], check=True,
                                           capture_output=True).stdout)["LayerDirs"][0]
        server = subprocess.Popen([sbx_bin, *g, "serve", "--socket", sock], stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.02)
        c = sbx.Client("unix://" + sock)
        progs = programs(a.problems)
        lines.append(f"# SDK bench (bench/sdk.py)\n\n{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, load average "
                     f"at start {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, native runtime, python test image.\n"
                     f"Command: `sudo python3 bench/sdk.py {' '.join(sys.argv[1:])}`\n")

        def chroot(prog):
            return subprocess.run(["chroot", rootfs, "python3", "-c", prog], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL).returncode

        def cli(prog):
            return subprocess.run([sbx_bin, *g, "run", "python", "python3", "-c", prog], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL).returncode

        def sdk_oneshot(prog):
            sb = sbx.Sandbox.create("python", "python3", "-c", prog, timeout=60, client=c)
            try:
                return sb.wait(raise_on_termination=False)
            finally:
                sb.terminate()

        def sdk_exec(prog):
            with sbx.Sandbox.create("python", timeout=60, client=c) as sb:
                return sb.exec("python3", "-c", prog).wait()

        variants = {"chroot loop": chroot, "CLI loop (sbx run)": cli, "SDK one-shot (create CMD + wait)": sdk_oneshot,
                    "SDK harness (create + exec)": sdk_exec}
        rates = {k: [] for k in variants}
        for _ in range(a.thr_rounds):
            order = list(variants)
            random.shuffle(order)
            for k in order:
                rates[k].append(fanout(variants[k], progs, 4))
        med = {k: statistics.median(v) for k, v in rates.items()}
        cli_rate, chroot_rate = med["CLI loop (sbx run)"], med["chroot loop"]
        lines.append(f"HumanEval, {len(progs)} problems (all pass), P=4, median of {a.thr_rounds} interleaved rounds:\n")
        lines.append("| | problems/s | % of CLI loop | % of chroot |\n|---|--:|--:|--:|")
        for k, v in med.items():
            lines.append(f"| {k} | {v:.1f} | {100 * v / cli_rate:.0f}% | {100 * v / chroot_rate:.0f}% |")

        # --- latency: create + exec true + terminate
        def sdk_cycle():
            t0 = time.perf_counter()
            sb = sbx.Sandbox.create("python", timeout=60, client=c)
            sb.exec("true").wait()
            sb.terminate()
            return (time.perf_counter() - t0) * 1000

        def cli_cycle():
            t0 = time.perf_counter()
            sid = subprocess.run([sbx_bin, *g, "create", "python"], check=True, capture_output=True,
                                 text=True).stdout.strip()
            subprocess.run([sbx_bin, *g, "exec", sid, "true"], check=True)
            subprocess.run([sbx_bin, *g, "rm", "-f", sid], check=True, stdout=subprocess.DEVNULL)
            return (time.perf_counter() - t0) * 1000

        def sdk_exec_only(sb):
            t0 = time.perf_counter()
            sb.exec("true").wait()
            return (time.perf_counter() - t0) * 1000

        cyc = {"SDK": [], "CLI": []}
        ex = {"SDK": [], "CLI": []}
        held = sbx.Sandbox.create("python", timeout=600, client=c)
        for i in range(a.rounds + 3):
            for k in random.sample(["SDK", "CLI"], 2):
                t = sdk_cycle() if k == "SDK" else cli_cycle()
                if i >= 3:
                    cyc[k].append(t)
                if k == "SDK":
                    t = sdk_exec_only(held)
                else:
                    t0 = time.perf_counter()
                    subprocess.run([sbx_bin, *g, "exec", held.object_id, "true"], check=True)
                    t = (time.perf_counter() - t0) * 1000
                if i >= 3:
                    ex[k].append(t)
        held.terminate()
        lines.append(f"\nLatency, median of {a.rounds} interleaved rounds (ms):\n")
        lines.append("| | SDK | CLI | SDK − CLI |\n|---|--:|--:|--:|")
        for name, d in (("create + exec('true') + terminate", cyc), ("exec('true') in a running sandbox", ex)):
            s, cl = statistics.median(d["SDK"]), statistics.median(d["CLI"])
            lines.append(f"| {name} | {s:.1f} | {cl:.1f} | {s - cl:+.1f} |")
    finally:
        if server:
            server.send_signal(signal.SIGTERM)
            server.wait()
        for sid in subprocess.run([sbx_bin, *g, "ps", "-aq", "--no-trunc"], capture_output=True,
                                  text=True).stdout.split():
            subprocess.run([sbx_bin, *g, "rm", "-f", sid], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
    report.emit(lines, a.out)


if __name__ == "__main__":
    main()

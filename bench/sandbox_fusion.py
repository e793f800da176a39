#!/usr/bin/env python3
"""SandboxFusion-compatible endpoint bench: HumanEval through `sbx serve
--sandbox-fusion`'s /run_code beside `sbx batch` (warm pool) and a chroot loop.

    sudo python3 bench/sandbox_fusion.py SBX [--par 4,8] [--rounds R] [--problems K] [--out FILE.md]
    sudo python3 bench/sandbox_fusion.py SBX --langs python,cpp,nodejs [--requests N] [--out FILE.md]

Each problem's program (prompt + canonical_solution + test + check(entry_point))
runs in the python test image, P at a time, three ways, interleaved in a
random order each round:

* /run_code: P client threads POST verl's reward request (urllib, one
  connection per request, as verl's `requests.post`) to one `sbx serve
  --sandbox-fusion --max-concurrency P` started for the bench;
* sbx batch: one `sbx batch -P P` (its warm pool) of the same programs
  (`python3 -c PROGRAM`);
* chroot loop: `chroot ROOTFS python3 -c PROGRAM`, P workers.

With --latency N: N sequential /run_code requests of python `print(1)` (one
at a time), reported as the p50 of client latency and of latency minus the
program's execution_time (what sbx adds); with --base OLD_SBX the same through
`OLD_SBX serve` (its own store), requests alternating between the two servers,
and the new / base ratios: a before/after of a change to the endpoint.

With --langs: per language, N sequential /run_code requests (one at a time,
--max-concurrency 1) of a small stdin -> stdout program on the "langs" test
image (tests/images/langs.sh; go, java, rust on "langs-extra"), after a warm-up
request each; reported: client latency p50/p99 and the p50 of the compile and
run steps' execution_time (what the compiler and the program cost, against
what sbx adds).

Every problem must pass every way (else the bench fails). Reported per P:
wall s and requests/s (median of the rounds), /run_code's client latency
p50/p99 and its ratio to sbx batch's throughput (target ≥ 90 %), and the p50
added latency of /run_code over the program's own run (its execution_time)
next to sbx batch's (start to end of a pooled task minus its duration_ms is not
reported by batch; its per-task duration_ms p50 is shown). Leaves nothing:
temp store, run root and server removed.
"""
import argparse
import concurrent.futures
import gzip
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (bench/report.py: the shared report tail)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def programs(path, k):
    out = []
    with gzip.open(path, "rt") as f:
        for line in f:
            p = json.loads(line)
            out.append((p["task_id"], p["prompt"] + p["canonical_solution"] + "\n\n" + p["test"] + "\n\n" +
                        f"check({p['entry_point']})\n"))
    return out[:k] if k else out


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def run_code(url, progs, par):
    def one(item):
        tid, prog = item
        body = json.dumps({"compile_timeout": 10, "run_timeout": 10, "code": prog, "stdin": "",
                           "language": "python", "files": {}, "fetch_files": []}).encode()
        req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=60) as r:
            res = json.loads(r.read())
        lat = time.perf_counter() - t0
        ok = res.get("status") == "Success"
        ex = (res.get("run_result") or {}).get("execution_time") or 0
        return tid, ok, lat, ex, str(res)[:200]
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(par) as ex:
        res = list(ex.map(one, progs))
    wall = time.perf_counter() - t0
    bad = [(tid, err) for tid, ok, _, _, err in res if not ok]
    return wall, bad, [r[2] for r in res], [r[2] - r[3] for r in res]


def batch(sbx, g, tasks, out, par, n):
    t0 = time.perf_counter()
    rc = subprocess.run([sbx, *g, "batch", "-q", "-P", str(par), "--image", "python", "--network", "none",
                         "-o", out, tasks], stdout=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t0
    bad, durs = [], []
    with open(out) as f:
        for line in f:
            r = json.loads(line)
            durs.append((r.get("duration_ms") or 0) / 1000)
            if r.get("exit_code") != 0:
                bad.append((r["id"], r.get("error") or (r.get("stderr") or "")[-200:]))
    if rc not in (0, 1) or len(durs) != n:
        bad.append(("-", f"sbx batch exited {rc} with {len(durs)} results for {n}"))
    return wall, bad, durs, []


def chroot_loop(rootfs, progs, par):
    def one(item):
        tid, prog = item
        r = subprocess.run(["chroot", rootfs, "python3", "-c", prog], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        return tid, r.returncode == 0, r.stderr[-200:]
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(par) as ex:
        res = list(ex.map(one, progs))
    return time.perf_counter() - t0, [(t, e) for t, ok, e in res if not ok], [], []


# A stdin -> stdout program per language (--langs), answer "42".
LANG_PROGS = {
    "python": "a, b = map(int, input().split())\nprint(a + b)",
    "cpp": "#include <iostream>\nint main() { long a, b; std::cin >> a >> b; std::cout << a + b << std::endl; }",
    "nodejs": "const v = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\nconsole.log(v[0] + v[1]);",
    "go": "package main\nimport \"fmt\"\nfunc main() { var a, b int; fmt.Scan(&a, &b); fmt.Println(a + b) }",
    "java": "import java.util.Scanner;\npublic class Main { public static void main(String[] x) {\n"
            "  Scanner s = new Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }",
    "rust": "use std::io::Read;\nfn main() { let mut s = String::new(); std::io::stdin().read_to_string(&mut s).unwrap();\n"
            "  let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect(); println!(\"{}\", v[0] + v[1]); }",
}


def lang_latency(url, lang, n):
    """n sequential requests of lang's program: (client latencies s, compile
    execution_time s, run execution_time s); exits on a wrong answer."""
    body = json.dumps({"compile_timeout": 60, "run_timeout": 10, "code": LANG_PROGS[lang], "stdin": "2 40\n",
                       "language": lang, "files": {}, "fetch_files": []}).encode()
    lat, comp, run = [], [], []
    for i in range(n + 1):
        req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=120) as r:
            res = json.loads(r.read())
        dt = time.perf_counter() - t0
        if res.get("status") != "Success" or res["run_result"]["stdout"] != "42\n":
            raise SystemExit(f"{lang}: a request failed: {str(res)[:500]}")
        if i:  # the first one warms the pool
            lat.append(dt)
            comp.append((res.get("compile_result") or {}).get("execution_time") or 0.0)
            run.append(res["run_result"]["execution_time"])
    return lat, comp, run


def langs_bench(a, sbx, g, tmp, images, lines):
    extra = [x for x in a.langs.split(",") if x in ("go", "java", "rust")]
    unknown = [x for x in a.langs.split(",") if x not in LANG_PROGS]
    if unknown:
        raise SystemExit(f"--langs: unknown {unknown} (known: {', '.join(LANG_PROGS)})")
    table = {}
    for img, names in (("langs", [x for x in a.langs.split(",") if x not in extra]), ("langs-extra", extra)):
        if not names:
            continue
        path = os.path.join(images, img + "-oci")
        if not os.path.isdir(path):
            raise SystemExit(f"no {path}: build it with tests/images/langs.sh" + (" --with go,java,rust" if extra else ""))
        subprocess.run([sbx, *g, "import", "-q", path, img], check=True, stdout=subprocess.DEVNULL)
        table.update({x: {"image": img} for x in names})
    langs = os.path.join(tmp, "languages.json")
    with open(langs, "w") as f:
        json.dump(table, f)
    server, port = start_server(sbx, g, tmp, langs, 1)
    try:
        lines.append(f"\n## Per language\n\n{a.requests} sequential requests each (stdin -> stdout, "
                     f"--max-concurrency 1, after one warm-up):\n")
        lines.append("| language | image | latency p50 ms | p99 ms | compile step p50 ms | run step p50 ms |\n"
                     "|---|---|--:|--:|--:|--:|")
        for lang in table:
            lat, comp, run = lang_latency(f"http://127.0.0.1:{port}/run_code", lang, a.requests)
            lines.append(f"| {lang} | {table[lang]['image']} | {1000 * pct(lat, 0.5):.0f} | {1000 * pct(lat, 0.99):.0f} | "
                         f"{1000 * pct(comp, 0.5):.0f} | {1000 * pct(run, 0.5):.0f} |")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_server(sbx, g, tmp, langs, concurrency):
    """`sbx serve --sandbox-fusion` on a free loopback port, answering /v1/ping: (process, port)."""
    port = free_port()
    server = subprocess.Popen([sbx, *g, "serve", "--socket", os.path.join(tmp, "d.sock"), "--sandbox-fusion",
                               f"127.0.0.1:{port}", "--languages", langs, "--max-concurrency", str(concurrency)],
                              stderr=open(os.path.join(tmp, "serve.log"), "w"))
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/ping", timeout=1).read()
            break
        except OSError:
            time.sleep(0.05)
    return server, port


def latency_bench(a, sbx, g, tmp, images, lines):
    """--latency: sequential print(1) requests, alternating between this sbx and --base."""
    servers = {}
    try:
        for name, binary in [("new", sbx)] + ([("base", os.path.abspath(a.base))] if a.base else []):
            d = os.path.join(tmp, name)
            os.makedirs(d)
            gg = ["--root", os.path.join(d, "root"), "--run-root", os.path.join(d, "run")]
            subprocess.run([binary, *gg, "import", "-q", os.path.join(images, "python-oci"), "python"], check=True,
                           stdout=subprocess.DEVNULL)
            langs = os.path.join(d, "languages.json")
            with open(langs, "w") as f:
                json.dump({"python": {"image": "python"}}, f)
            server, port = start_server(binary, gg, d, langs, 1)
            servers[name] = (server, f"http://127.0.0.1:{port}/run_code", binary, gg)
        body = json.dumps({"compile_timeout": 10, "run_timeout": 10, "code": "print(1)", "stdin": "",
                           "language": "python", "files": {}, "fetch_files": []}).encode()
        res = {k: ([], []) for k in servers}
        for i in range(a.latency + 3):
            order = list(servers)
            random.shuffle(order)
            for k in order:
                req = urllib.request.Request(servers[k][1], data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
                t0 = time.perf_counter()
                with urllib.request.urlopen(req, timeout=60) as r:
                    out = json.loads(r.read())
                dt = time.perf_counter() - t0
                if out.get("status") != "Success" or out["run_result"]["stdout"] != "1\n":
                    raise SystemExit(f"{k}: a request failed: {str(out)[:500]}")
                if i >= 3:  # the first ones warm the pool
                    res[k][0].append(dt)
                    res[k][1].append(dt - out["run_result"]["execution_time"])
                time.sleep(a.gap)
        lines.append(f"\n## Sequential print(1)\n\n{a.latency} requests each, one at a time, "
                     f"{'alternating in a random order per round, ' if a.base else ''}{a.gap * 1000:.0f} ms apart "
                     f"(load average now {os.getloadavg()[0]:.1f}):\n")
        lines.append("| server | latency p50 ms | p90 ms | added (latency - execution_time) p50 ms | p90 ms |\n|---|--:|--:|--:|--:|")
        for k, (lat, add) in res.items():
            lines.append(f"| {k} ({servers[k][2]}) | {1000 * pct(lat, 0.5):.1f} | {1000 * pct(lat, 0.9):.1f} | "
                         f"{1000 * pct(add, 0.5):.1f} | {1000 * pct(add, 0.9):.1f} |")
        if a.base:
            n, b = res["new"], res["base"]
            lines.append(f"\nnew / base: latency p50 {pct(n[0], 0.5) / pct(b[0], 0.5):.2f}x, added p50 "
                         f"{pct(n[1], 0.5) / pct(b[1], 0.5):.2f}x")
        lines.append(f"Target added latency <= 5 ms: {1000 * pct(res['new'][1], 0.5):.1f} ms "
                     f"({pct(res['new'][1], 0.5) / 0.005:.2f}x the target).")
    finally:
        for server, _, binary, gg in servers.values():
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
            subprocess.run([binary, *gg, "gc"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sbx")
    ap.add_argument("--par", default="4,8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--problems", type=int, default=0, help="the first K problems only (0: all 164)")
    ap.add_argument("--humaneval", default=os.path.join(REPO, "tests/data/HumanEval.jsonl.gz"))
    ap.add_argument("--langs", help="per-language latency on the langs test images instead of HumanEval "
                    "(comma-separated: python,cpp,nodejs,go,java,rust)")
    ap.add_argument("--requests", type=int, default=20, help="with --langs: requests per language")
    ap.add_argument("--latency", type=int, default=0, help="N sequential print(1) requests instead of HumanEval")
    ap.add_argument("--base", help="with --latency: an older sbx binary to compare with, interleaved")
    ap.add_argument("--gap", type=float, default=0.05, help="with --latency: seconds between requests (the pool refills)")
    ap.add_argument("--out")
    a = ap.parse_args()
    sbx = os.path.abspath(a.sbx)
    images = os.environ.get("SBX_IMAGES", os.path.join(REPO, "tests/images/out"))
    progs = programs(a.humaneval, a.problems)
    tmp = tempfile.mkdtemp(prefix="sbx-bench-sf.")
    g = ["--root", os.path.join(tmp, "root"), "--run-root", os.path.join(tmp, "run")]
    lines = [f"# SandboxFusion endpoint bench (bench/sandbox_fusion.py)\n\n"
             f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, load average at start {os.getloadavg()[0]:.1f}, "
             f"{os.cpu_count()} CPUs. Command: `sudo python3 bench/sandbox_fusion.py {' '.join(sys.argv[1:])}`\n"]
    server = None
    if a.latency:
        try:
            latency_bench(a, sbx, g, tmp, images, lines)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        report.emit(lines, a.out)
        return
    if a.langs:
        try:
            langs_bench(a, sbx, g, tmp, images, lines)
        finally:
            subprocess.run([sbx, *g, "gc"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(tmp, ignore_errors=True)
        report.emit(lines, a.out)
        return
    try:
        subprocess.run([sbx, *g, "import", "-q", os.path.join(images, "python-oci"), "python"], check=True,
                       stdout=subprocess.DEVNULL)
        rootfs = json.loads(subprocess.run([sbx, *g, "inspect", "python"], check=True,
                                           capture_output=True).stdout)["LayerDirs"][0]
        langs = os.path.join(tmp, "languages.json")
        with open(langs, "w") as f:
            json.dump({"python": {"image": "python"}}, f)
        tasks = os.path.join(tmp, "he.jsonl")
        with open(tasks, "w") as f:
            for tid, prog in progs:
                f.write(json.dumps({"id": tid, "cmd": ["python3", "-c", prog]}) + "\n")
        for par in [int(p) for p in a.par.split(",")]:
            server, port = start_server(sbx, g, tmp, langs, par)
            url = f"http://127.0.0.1:{port}/run_code"
            run_code(url, progs[:8], par)  # warm the pool
            ways = {
                "/run_code": lambda: run_code(url, progs, par),
                "sbx batch (warm pool)": lambda: batch(sbx, g, tasks, os.path.join(tmp, "he.out"), par, len(progs)),
                "chroot loop": lambda: chroot_loop(rootfs, progs, par),
            }
            walls = {k: [] for k in ways}
            lat, added, bdur = [], [], []
            for _ in range(a.rounds):
                order = list(ways)
                random.shuffle(order)
                for k in order:
                    wall, bad, x, y = ways[k]()
                    if bad:
                        raise SystemExit(f"{k}: {len(bad)} of {len(progs)} problems did not pass, first: {bad[0]}")
                    walls[k].append(wall)
                    if k == "/run_code":
                        lat += x
                        added += y
                    elif k.startswith("sbx batch"):
                        bdur += x
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
            server = None
            med = {k: statistics.median(v) for k, v in walls.items()}
            b = med["sbx batch (warm pool)"]
            lines.append(f"\n## P = {par}\n\nHumanEval {len(progs)} problems (all pass every way), median of "
                         f"{a.rounds} interleaved rounds (load average now {os.getloadavg()[0]:.1f}):\n")
            lines.append("| | wall s | requests/s | × sbx batch throughput |\n|---|--:|--:|--:|")
            for k, v in med.items():
                lines.append(f"| {k} | {v:.2f} | {len(progs) / v:.1f} | {b / v:.2f} |")
            lines.append(f"\n/run_code client latency p50 {1000 * pct(lat, 0.5):.1f} ms, p99 {1000 * pct(lat, 0.99):.1f} ms; "
                         f"latency minus the program's execution_time p50 {1000 * pct(added, 0.5):.1f} ms "
                         f"(sbx batch's per-task duration_ms p50 {1000 * pct(bdur, 0.5):.1f} ms).")
            r = b / med["/run_code"]
            lines.append(f"Target /run_code ≥ 90 % of sbx batch's throughput: {'met' if r >= 0.9 else 'missed'} ({100 * r:.0f} %).")
    finally:
        if server:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        subprocess.run([sbx, *g, "gc"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
    report.emit(lines, a.out)


if __name__ == "__main__":
    main()

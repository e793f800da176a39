#!/usr/bin/env python3
"""Scale on one host: what a start, exec and rm cost with many idle sandboxes alive.

    sudo python3 bench/scale.py SBX [--base SBX_BEFORE] [--counts 0,300,1000] [--reps 10]
                                    [--parallel 4] [--images tests/images/out] [--out FILE.md]
                                    [--network none|private] [--runtime native|gvisor] [--serve]

For each count N (ascending), the live idle busybox sandboxes (`sbx create
busybox sleep 100000`, created at parallelism P) are brought up to N in a
store of their own, then, in R rounds, one of each is timed: `sbx run busybox
true`, `sbx create busybox sleep 100000`, `sbx exec ID true` (a random live
sandbox), `sbx rm -f` (of what this level's `create`s made), `sbx ps -q`,
`sbx ps` and `sbx ps --json`; medians. With --serve, an `sbx serve` on each
store answers `docker ps -q` (the docker CLI) and `GET /sbx/v1/sandboxes`
(curl), timed in the same rounds, and its thread count is reported. At each
level the host counters a limit would show: processes (of kernel.pid_max),
memory cgroups (/proc/cgroups, dying ones included: the memcg id space is
65,535) and mounts. At the end, the time to remove all of them and what is
left (processes, cgroups, mounts, state dirs). With --base, the same with a build of the commit before a change, in
a store of its own, interleaved in the same rounds (alternating which goes
first), and the ratio after/before per row.

Memory (first binary only; both stores are alive together, so the MemAvailable
drop is measured around its own growth): MemAvailable drop per added sandbox
after `echo 3 > /proc/sys/vm/drop_caches`, the drops of Slab, SUnreclaim,
KernelStack, PageTables and Shmem per sandbox (kernel objects: cgroups, mounts,
namespaces, the tmpfs), and the PSS (smaps_rollup) and page tables (VmPTE) of
each process of a few sandboxes (the holder, the command). Other work on the
host moves MemAvailable: run it on a quiet host for absolute numbers.

Leaves nothing: every sandbox removed, temp stores removed.
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


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            out[k] = int(v.split()[0])  # KiB
    return out


def drop_caches():
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    time.sleep(0.5)


class Store:
    """One binary's store and run root, and its live sandboxes."""

    def __init__(self, name, sbx, tmp, images):
        self.name, self.sbx = name, sbx
        self.root = os.path.join(tmp, name)
        self.env = dict(os.environ, SBX_ROOT=self.root + "/root", SBX_RUN_ROOT=self.root + "/run")
        self.ids = []
        self.create_flags = []
        self.serve = None
        self.sock = self.root + "/docker.sock"
        self.sh(["import", "-q", os.path.join(images, "busybox-oci"), "busybox:latest"])

    def sh(self, args, **kw):
        return subprocess.run([self.sbx, *args], env=self.env, check=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, **kw).stdout

    def timed(self, args):
        t0 = time.perf_counter()
        out = self.sh(args)
        return (time.perf_counter() - t0) * 1000, out

    def grow(self, n, parallel):
        """Creates sandboxes until n are alive; returns (added, seconds)."""
        need = n - len(self.ids)
        if need <= 0:
            return 0, 0.0
        t0 = time.perf_counter()
        p = subprocess.run(["xargs", "-P", str(parallel), "-I{}", self.sbx, "create", *self.create_flags, "busybox",
                            "sleep", "100000"],
                           input="\n".join(str(i) for i in range(need)) + "\n", env=self.env, check=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        dt = time.perf_counter() - t0
        self.ids += p.stdout.split()
        return need, dt

    def pids(self, sid):
        st = json.load(open(f"{self.root}/run/{sid}/state.json"))
        init = st.get("pid", 0)
        out = [init]
        try:
            kids = open(f"/proc/{init}/task/{init}/children").read().split()
            out += [int(k) for k in kids]
        except OSError:
            pass
        return out

    def start_serve(self):
        self.serve = subprocess.Popen([self.sbx, "serve", "--socket", self.sock], env=self.env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(self.sock):
                return
            time.sleep(0.05)
        raise RuntimeError("sbx serve did not make its socket " + self.sock)

    def serve_threads(self):
        for line in open(f"/proc/{self.serve.pid}/status"):
            if line.startswith("Threads:"):
                return int(line.split()[1])
        return 0

    def timed_cmd(self, argv):
        """Times argv (not sbx); its stdout."""
        t0 = time.perf_counter()
        out = subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout
        return (time.perf_counter() - t0) * 1000, out

    def docker_ps(self):
        return self.timed_cmd(["docker", "-H", "unix://" + self.sock, "ps", "-q"])

    def v1_list(self):
        return self.timed_cmd(["curl", "-sf", "--unix-socket", self.sock, "http://sbx/sbx/v1/sandboxes"])

    def remove_all(self):
        """Removes every sandbox of the store; seconds it took."""
        t0 = time.perf_counter()
        ids = self.sh(["ps", "-aq", "--no-trunc"]).split()
        for i in range(0, len(ids), 200):
            self.sh(["rm", "-f", *ids[i:i + 200]])
        self.ids = []
        return len(ids), time.perf_counter() - t0

    def stop_serve(self):
        if self.serve:
            self.serve.terminate()
            self.serve.wait()
            self.serve = None


def host_counters():
    """Processes, memory cgroups (dying ones included) and host mounts now."""
    memcg = 0
    for line in open("/proc/cgroups"):
        f = line.split()
        if f and f[0] == "memory":
            memcg = int(f[2])
    procs = int(open("/proc/loadavg").read().split()[3].split("/")[1])
    mounts = sum(1 for _ in open("/proc/self/mountinfo"))
    return {"procs": procs, "memcg": memcg, "mounts": mounts}


def proc_mem(pid):
    pss = pte = 0
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmPTE:"):
                pte = int(line.split()[1])
        comm = open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return None
    return comm, pss, pte


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sbx")
    ap.add_argument("--base", help="sbx of the commit before the change (e.g. main's build/sbx)")
    ap.add_argument("--counts", default="0,300,1000")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--images", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                                     "images", "out"))
    ap.add_argument("--out")
    ap.add_argument("--network", default="none", help="the live sandboxes' --network (none, private)")
    ap.add_argument("--runtime", default="native", help="the live sandboxes' --runtime (native, gvisor)")
    ap.add_argument("--serve", action="store_true", help="time docker ps and GET /sbx/v1/sandboxes too")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("scale.py: needs root")
    counts = sorted(int(c) for c in a.counts.split(","))
    tmp = tempfile.mkdtemp(prefix="sbx-scale-bench.")
    stores = []
    lines = [f"# sbx scale bench ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs)\n",
             f"counts {counts}, {a.reps} rounds, create parallelism {a.parallel}; sbx = {a.sbx}"
             + (f", base = {a.base}" if a.base else "")
             + f"; live sandboxes: --network {a.network} --runtime {a.runtime}\n"]
    counters = [("start", host_counters())]
    removed = []
    try:
        stores.append(Store("new", a.sbx, tmp, a.images))
        if a.base:
            stores.append(Store("base", a.base, tmp, a.images))
        for s in stores:
            s.create_flags = ["--network", a.network, "--runtime", a.runtime]
            if a.serve:
                s.start_serve()
        rows = []
        opnames = ("run", "create", "exec", "rm", "ps", "ps-table", "ps-json") + (
            ("docker-ps", "v1-list") if a.serve else ())
        for n in counts:
            res = {s.name: {o: [] for o in opnames} for s in stores}
            grow = {}
            mem = None
            for s in stores:
                if s is stores[0]:
                    drop_caches()
                    before = meminfo()
                added, secs = s.grow(n, a.parallel)
                grow[s.name] = (added, secs)
                if s is stores[0] and added >= 50:
                    time.sleep(2)
                    drop_caches()
                    after = meminfo()
                    mem = {k: (before[k] - after[k]) / added if k == "MemAvailable" else (after[k] - before[k]) / added
                           for k in ("MemAvailable", "Slab", "SUnreclaim", "KernelStack", "PageTables", "Shmem")}
                    procs = {}
                    for sid in random.sample(s.ids, min(5, len(s.ids))):
                        for role, pid in zip(("holder", "command"), s.pids(sid)):
                            m = proc_mem(pid)
                            if m:
                                procs.setdefault(role, []).append(m)
                    mem["procs"] = procs
            made = {s.name: [] for s in stores}
            for r in range(a.reps):
                order = stores if r % 2 == 0 else list(reversed(stores))
                for s in order:
                    res[s.name]["run"].append(s.timed(["run", "busybox", "true"])[0])
                    ms, out = s.timed(["create", "busybox", "sleep", "100000"])
                    res[s.name]["create"].append(ms)
                    made[s.name].append(out.strip())
                    if s.ids:
                        res[s.name]["exec"].append(s.timed(["exec", random.choice(s.ids), "true"])[0])
                    res[s.name]["ps"].append(s.timed(["ps", "-q"])[0])
                    res[s.name]["ps-table"].append(s.timed(["ps"])[0])
                    ms, out = s.timed(["ps", "--json"])
                    res[s.name]["ps-json"].append(ms)
                    if a.serve:
                        ms, out = s.docker_ps()
                        res[s.name]["docker-ps"].append(ms)
                        seen_d = len(out.split())
                        ms, out = s.v1_list()
                        res[s.name]["v1-list"].append(ms)
                        seen_v = len(json.loads(out))
                        if r == 0:
                            print(f"  {s.name}: docker ps lists {seen_d}, GET /sbx/v1/sandboxes {seen_v} "
                                  f"(live {len(s.ids) + 1}); sbx serve threads {s.serve_threads()}", flush=True)
            for r in range(a.reps):
                for s in (stores if r % 2 == 0 else list(reversed(stores))):
                    res[s.name]["rm"].append(s.timed(["rm", "-f", made[s.name][r]])[0])
            rows.append((n, res, grow, mem))
            counters.append((f"{n} live", host_counters()))
            print(f"N={n}: " + "; ".join(f"{s.name} run {med(res[s.name]['run']):.1f} ms create "
                                        f"{med(res[s.name]['create']):.1f} exec {med(res[s.name]['exec']):.1f} "
                                        f"rm {med(res[s.name]['rm']):.1f} ps {med(res[s.name]['ps']):.1f}"
                                        for s in stores), flush=True)
        # --- the report
        for s in stores:
            removed.append((s.name, *s.remove_all()))
            s.stop_serve()
        time.sleep(2)
        counters.append(("all removed", host_counters()))
        left = {}
        for s in stores:
            left[s.name] = {
                "sandboxes": len(s.sh(["ps", "-aq"]).split()),
                "state dirs": len([d for d in os.listdir(s.root + "/run") if not d.startswith(".")])
                if os.path.isdir(s.root + "/run") else 0,
                "mounts under the store": sum(1 for line in open("/proc/self/mountinfo") if s.root in line),
            }
        ops = opnames
        lines.append("\n## Medians (ms) by live sandboxes\n")
        head = "| live | " + " | ".join(f"{o} {s.name}" for o in ops for s in stores)
        if a.base:
            head += " | " + " | ".join(f"{o} new/base" for o in ops)
        lines.append(head + " |")
        lines.append("|" + "---|" * (head.count("|")))
        for n, res, _, _ in rows:
            cells = [f"{med(res[s.name][o]):.1f}" if res[s.name][o] else "-" for o in ops for s in stores]
            if a.base:
                cells += [f"{med(res['new'][o]) / med(res['base'][o]):.2f}" if res["new"][o] else "-" for o in ops]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines.append("\n## Growth with live sandboxes (median at N / median at the smallest N)\n")
        for s in stores:
            first = rows[0][1][s.name]
            base_row = {o: next((r[1][s.name][o] for r in rows if r[1][s.name][o]), None) for o in ops}
            lines.append(f"- {s.name}: " + ", ".join(
                f"{o} " + " → ".join(f"{med(r[1][s.name][o]) / med(base_row[o]):.2f}×" for r in rows if r[1][s.name][o])
                for o in ops if base_row[o]))
        lines.append("\n## Create throughput at P=%d (growing the store)\n" % a.parallel)
        for n, _, grow, _ in rows:
            lines.append(f"- to {n}: " + ", ".join(f"{k} {g[0]} in {g[1]:.1f} s ({g[0] / g[1]:.0f}/s)"
                                                for k, g in grow.items() if g[0]))
        lines.append("\n## Host counters (processes of kernel.pid_max, memory cgroups incl. dying, mounts)\n")
        pid_max = open("/proc/sys/kernel/pid_max").read().strip()
        for label, c in counters:
            lines.append(f"- {label}: processes {c['procs']} (pid_max {pid_max}), memory cgroups {c['memcg']}, "
                         f"mounts {c['mounts']}")
        lines.append("\n## Removing all\n")
        for name, count, secs in removed:
            lines.append(f"- {name}: {count} sandboxes removed in {secs:.1f} s (sbx rm -f, 200 ids a call); "
                         f"left: " + ", ".join(f"{k} {v}" for k, v in left[name].items()))
        lines.append("\n## Host memory per idle sandbox (first binary; KiB per sandbox added)\n")
        for n, _, _, mem in rows:
            if not mem:
                continue
            lines.append(f"- growing to {n}: MemAvailable drop {mem['MemAvailable']:.0f} KiB; of which kernel: "
                         f"Slab +{mem['Slab']:.0f} (unreclaimable +{mem['SUnreclaim']:.0f}), KernelStack "
                         f"+{mem['KernelStack']:.0f}, PageTables +{mem['PageTables']:.0f}, Shmem +{mem['Shmem']:.0f}")
            for role, ms in mem["procs"].items():
                lines.append(f"  - {role} ({ms[0][0]}): PSS median {med([m[1] for m in ms]):.0f} KiB, "
                             f"VmPTE {med([m[2] for m in ms]):.0f} KiB")
    finally:
        for s in stores:
            try:
                s.stop_serve()
                s.remove_all()
            except Exception as e:  # noqa: BLE001 (report and go on cleaning)
                print(f"scale.py: removing {s.name}'s sandboxes: {e}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    report.emit(lines, a.out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Turns one bench result (bench/results/<date>.json, written by bench/bench.py) into
<date>.md (tables: medians, p90, ratios, targets, machine facts) and <date>.png (chart).

    python3 bench/report.py bench/results/2026-11-22T0700Z.json

The chart needs matplotlib (Debian: python3-matplotlib); without it only the .md is written.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ORDER = ["chroot", "bwrap", "runc", "runsc", "podman", "sbx", "sbx-rootfs", "sbx-gvisor"]
COLORS = {"chroot": "#888888", "bwrap": "#4c72b0", "runc": "#55a868", "runsc": "#8172b2",
          "podman": "#c44e52", "sbx": "#dd8452", "sbx-rootfs": "#e8b04a", "sbx-gvisor": "#937860"}


def f(x, nd=1):
    return "–" if x is None else f"{x:.{nd}f}"


def ratio(a, b):
    return None if not a or not b else a / b



def emit(lines, out=None):
    """Prints a bench script's report (a list of lines) and, when `out` (a
    path) is given, writes the same text there. Returns the text."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)
    return text


def status_cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def med(row):
    return ((row or {}).get("summary_ms") or {}).get("median") if (row or {}).get("status") == "ok" else None


def targets(res):
    """The issue's targets, each as (target, measured, verdict), for `sbx run IMAGE` and for
    `sbx run --rootfs` (same rootfs directory as chroot/bwrap/runc) where measured."""
    out = []
    st = res["scenarios"].get("start", {}).get("images", {}).get("python", {}).get("tools", {})
    tp = res["scenarios"].get("throughput", {}).get("tools", {})
    m = {k: med(v) for k, v in st.items()}

    def tp4(name):
        r = tp.get(name) or {}
        e = (r.get("by_par") or {}).get("4")
        return e["per_s"] if e and r.get("status") == "ok" else None

    variants = [(n, label) for n, label in (("sbx", "`sbx run IMAGE`"), ("sbx-rootfs", "`sbx run --rootfs`"))
                if m.get(n) is not None or tp4(n) is not None] or [("sbx", "`sbx run IMAGE`")]
    if variants[0][0] != "sbx":
        out.append(("`sbx run IMAGE`: all targets", "not measured", f"– ({(st.get('sbx') or {}).get('status', 'not run')})"))
    for name, label in variants:
        s = m.get(name)
        why = (st.get(name) or {}).get("status", "not run")

        def add(text, value, ok, fmt):
            if value is None:
                out.append((text, "not measured", f"– ({why})" if s is None else "–"))
            else:
                out.append((text, fmt.format(value), "met" if ok(value) else "**missed**"))

        add(f"{label} start ≤ 1.3× chroot (python3 -c pass)", ratio(s, m.get("chroot")), lambda v: v <= 1.3, "{:.2f}× chroot")
        add(f"{label} start faster than bwrap", ratio(s, m.get("bwrap")), lambda v: v < 1.0, "{:.2f}× bwrap")
        add(f"{label} ≥ 2.5× faster than runc", ratio(m.get("runc"), s), lambda v: v >= 2.5, "{:.1f}× faster")
        add(f"{label} ≥ 10× faster than podman", ratio(m.get("podman"), s), lambda v: v >= 10, "{:.1f}× faster")
        v = ratio(tp4(name), tp4("chroot"))
        if v is None:
            out.append((f"{label} throughput at P=4 ≥ 85% of chroot", "not measured",
                        f"– ({(tp.get(name) or {}).get('status', 'not run')})"))
        else:
            out.append((f"{label} throughput at P=4 ≥ 85% of chroot", f"{100 * v:.0f}% of chroot",
                        "met" if v >= 0.85 else "**missed**"))
    g = ratio(m.get("sbx-gvisor"), m.get("runsc"))
    if g is None:
        out.append(("`sbx run --runtime gvisor` ≤ 1.1× raw runsc", "not measured",
                    f"– ({(st.get('sbx-gvisor') or {}).get('status', 'not run')})"))
    else:
        out.append(("`sbx run --runtime gvisor` ≤ 1.1× raw runsc", f"{g:.2f}× runsc", "met" if g <= 1.1 else "**missed**"))
    return out


def markdown(res, stem):
    L = []
    mach = res.get("machine", {})
    L.append(f"# sbx benchmark, {res['started_utc']} ({res['profile']} run)")
    L.append("")
    cmd = "bench/run --quick" if res["profile"] == "quick" else "bench/run"
    L.append(f"Reproduce: `sudo {cmd}` in the repository root (results land in `bench/results/`). "
             f"Run took {res.get('duration_s', '?')} s.")
    if res.get("note"):
        L.append("")
        L.append(f"Note: {res['note']}")
    L.append("")
    L.append(f"Machine: {mach.get('os', '?')}, kernel {mach.get('kernel', '?')}, {mach.get('cpus', '?')} CPUs "
             f"({mach.get('cpu_model', '?')}), {mach.get('mem_total_gib', '?')} GiB.")
    ld = res.get("load", {})
    s0, s1 = ld.get("start", {}), ld.get("end", {})
    L.append(f"Load (the host is shared with other engineers' builds): load average "
             f"{s0.get('loadavg')} at start, {s1.get('loadavg')} at end; compiler processes running at start/end: "
             f"{s0.get('compiler_processes')}/{s1.get('compiler_processes')}; host CPU busy "
             f"{ld.get('host_cpu_busy_pct')}% during the run ({ld.get('host_cpu_busy_s')} CPU-s, of which the "
             f"bench's own waited-for processes {ld.get('bench_cpu_s')} CPU-s; gVisor sandboxes and podman's "
             f"conmon are not waited for, so the remainder is not all foreign load).")
    L.append("")
    L.append("| tool | version |")
    L.append("|---|---|")
    for k, v in mach.get("versions", {}).items():
        L.append(f"| {k} | {status_cell(v)} |")
    L.append("")
    L.append("How: every tool runs the same root filesystem, unpacked from the real test images "
             "(`tests/images/out/{busybox,python}-oci`): chroot and bwrap (`--unshare-all`) on the unpacked "
             "directory, runc and runsc on a pre-made bundle around it (`runc spec`, read-only root, "
             "network namespace, runsc `--network=none`), podman `run --rm --network none --runtime runc` on "
             "the `podman load`ed docker-archive, sbx on its own import of the OCI layout. One sample = "
             "spawn (posix_spawn) to exit, wall clock; rounds interleave the tools in a shuffled order. "
             "Each tool's output and exit status are checked before timing (print(6*7) gives 42, exit 3 "
             "gives 3), and every timed run must exit 0.")
    L.append("")

    L.append("## Targets")
    L.append("")
    L.append("| target | measured | verdict |")
    L.append("|---|---|---|")
    for t, v, ok in targets(res):
        L.append(f"| {t} | {v} | {status_cell(ok)} |")
    L.append("")

    sc = res.get("scenarios", {})
    st = sc.get("start")
    if st:
        L.append("## 1. Start latency")
        L.append("")
        L.append(st["description"] + ".")
        for img, data in st["images"].items():
            rows = data["tools"]
            n = next((r["summary_ms"]["n"] for r in rows.values() if r.get("summary_ms")), 0)
            L.append("")
            L.append(f"### {img}: `{' '.join(data['cmd'])}` ({n} runs each after warm-up)")
            L.append("")
            ref = next((n for n in ("sbx", "sbx-rootfs") if med(rows.get(n)) is not None), "sbx")
            L.append(f"| tool | median ms | p90 ms | × chroot | ÷ {ref} (> 1: {ref} faster) | status |")
            L.append("|---|---:|---:|---:|---:|---|")
            c, s = med(rows.get("chroot")), med(rows.get(ref))
            for name in ORDER:
                if name not in rows:
                    continue
                r = rows[name]
                m = med(r)
                p90 = (r.get("summary_ms") or {}).get("p90") if m is not None else None
                vs = "–" if name == ref else (f"{ratio(m, s):.2f}×" if ratio(m, s) else "–")
                xc = f"{ratio(m, c):.2f}" if ratio(m, c) else "–"
                L.append(f"| {name} | {f(m)} | {f(p90)} | {xc} | {vs} | {status_cell(r['status'])} |")
            ok = [n for n in ORDER if med(rows.get(n)) is not None]
            if len(ok) > 1:
                L.append("")
                L.append(f"Ratio of medians, row ÷ column ({img}):")
                L.append("")
                L.append("| | " + " | ".join(ok) + " |")
                L.append("|---|" + "---:|" * len(ok))
                for a in ok:
                    L.append(f"| {a} | " + " | ".join(f"{med(rows[a]) / med(rows[b]):.2f}" for b in ok) + " |")
        L.append("")

    hf = sc.get("hyperfine")
    if hf:
        L.append("Cross-check with an independent timer (" + hf["description"] + "):")
        L.append("")
        L.append("| tool | hyperfine median ms | mean ± sd ms | status |")
        L.append("|---|---:|---:|---|")
        for name in ORDER:
            r = hf["tools"].get(name)
            if r:
                L.append(f"| {name} | {f(r.get('median_ms'))} | {f(r.get('mean_ms'))} ± {f(r.get('stddev_ms'))} | "
                         f"{status_cell(r['status'])} |")
        L.append("")

    tp = sc.get("throughput")
    if tp:
        L.append("## 2. Throughput")
        L.append("")
        L.append(tp["description"] + ". N asked: 500 for the fast tools, 100 for runsc, podman and gVisor "
                 "(the rate is what counts); N done per parallelism is in the table.")
        L.append("")
        pars = tp["parallelism"]
        c4 = ((tp["tools"].get("chroot") or {}).get("by_par") or {}).get("4")
        L.append("| tool | N | " + " | ".join(f"P={p} /s" for p in pars) + " | P=4 vs chroot | status |")
        L.append("|---|---:|" + "---:|" * len(pars) + "---:|---|")
        for name in ORDER:
            r = tp["tools"].get(name)
            if r is None:
                continue
            bp = r.get("by_par") or {}
            cells = [f((bp.get(str(p)) or {}).get("per_s")) + (f" (n={bp[str(p)]['n']})" if str(p) in bp and
                     bp[str(p)].get("n", r.get("n")) != r.get("n") else "") for p in pars]
            e4 = bp.get("4")
            vs = f"{100 * e4['per_s'] / c4['per_s']:.0f}%" if e4 and c4 else "–"
            L.append(f"| {name} | {r.get('n', '–')} | " + " | ".join(cells) + f" | {vs} | {status_cell(r['status'])} |")
        L.append("")

    he = sc.get("humaneval")
    if he:
        L.append("## 3. HumanEval")
        L.append("")
        L.append(he["description"] + ". A deliberately broken solution of HumanEval/0 must exit non-zero in each tool first.")
        L.append("")
        if he.get("error"):
            L.append(f"failed: {he['error']}")
        else:
            cw = (he["tools"].get("chroot") or {}).get("wall_s")
            L.append("| tool | wall s | problems/s | passed | wall × chroot | status |")
            L.append("|---|---:|---:|---:|---:|---|")
            for name in ORDER:
                r = he["tools"].get(name)
                if r is None:
                    continue
                w = r.get("wall_s")
                passed = f"{r['passed']}/{r['total']}" if "passed" in r else "–"
                L.append(f"| {name} | {f(w, 2)} | {f(r.get('per_s'))} | {passed} | "
                         f"{f(ratio(w, cw), 2) if ratio(w, cw) else '–'} | {status_cell(r['status'])} |")
        L.append("")

    pr = sc.get("profile")
    if pr and pr.get("tools"):
        L.append("## Where the time goes (strace)")
        L.append("")
        L.append(pr["description"] + ".")
        L.append("")
        L.append("| tool | setup ms | command ms | teardown ms | costliest syscalls (ms, summed) |")
        L.append("|---|---:|---:|---:|---|")
        for name in ORDER:
            r = pr["tools"].get(name)
            if r is None:
                continue
            if r.get("error"):
                L.append(f"| {name} | – | – | – | failed: {status_cell(r['error'])} |")
                continue
            top = "; ".join(f"`{k}` {v:.1f}" for k, v in r["top_syscalls_ms"][:6])
            L.append(f"| {name} | {f(r['setup_ms'])} | {f(r['command_ms'])} | {f(r['teardown_ms'])} | {status_cell(top)} |")
        L.append("")
        ca = pr.get("cgroup_attach") or {}
        if ca:
            ok = {k: v for k, v in ca.items() if "error" not in v and v.get("first_attach_ms_median") is not None}
            L.append("Moving a process into a freshly made cgroup (no strace; median of 7 fresh cgroups, 0.2 s apart): "
                     + "; ".join(f"{k}: first write to cgroup.procs {f(v.get('first_attach_ms_median'), 2)} ms, "
                                 f"a second one right after {f(v.get('second_attach_ms_median'), 2)} ms"
                                 if k in ok else f"{k}: failed: {v.get('error')}" for k, v in ca.items()) + ". "
                     + ("The first attach waited for an RCU grace period here (the global cgroup_threadgroup_rwsem "
                        "is taken for writing); a runtime that puts each sandbox into new cgroups pays that once per "
                        "start (runc too; bwrap and chroot use no cgroups)."
                        if any(v["first_attach_ms_median"] > 2 for v in ok.values()) else
                        "In this run the first attach was cheap: the rwsem was already on its slow path (other cgroup "
                        "work on the host); on a quiet host it waits for an RCU grace period (~10-15 ms measured here "
                        "at other times), which a runtime that puts each sandbox into new cgroups pays once per start."))
            L.append("")

    ex = sc.get("exec")
    if ex:
        L.append("## 4. Exec latency and idle memory")
        L.append("")
        if ex.get("status"):
            L.append(ex["status"] + ".")
        if ex.get("tools"):
            L.append(ex["description"] + f"; K = {ex.get('sandboxes')}. MemAvailable drop is the host's view "
                     "(includes kernel memory; noisy while others build).")
            L.append("")
            L.append("| tool | exec median ms | exec p90 ms | PSS MiB / idle sandbox | processes | MemAvailable drop MiB / sandbox | status |")
            L.append("|---|---:|---:|---:|---:|---:|---|")
            for name in ORDER:
                r = ex["tools"].get(name)
                if r is None:
                    continue
                sm = (r.get("summary_ms") or {}) if r.get("status") == "ok" else {}
                procs = r.get("processes_per_sandbox")
                L.append(f"| {name} | {f(sm.get('median'))} | {f(sm.get('p90'))} | {f(r.get('pss_mib_median'), 2)} | "
                         f"{max(procs) if procs else '–'} | {f(r.get('memavailable_drop_mib_per_sandbox'))} | "
                         f"{status_cell(r['status'])} |")
        L.append("")

    im = sc.get("import")
    if im:
        L.append("## 5. Image import (python image)")
        L.append("")
        L.append(im["description"] + ".")
        if im.get("note"):
            L.append(f"Note: {im['note']}.")
        L.append("")
        L.append("| case | median ms | p90 ms | runs | status |")
        L.append("|---|---:|---:|---:|---|")
        for name, r in im["cases"].items():
            s = r.get("summary_ms") or {}
            L.append(f"| {name} | {f(s.get('median'))} | {f(s.get('p90'))} | {s.get('n', 0)} | {status_cell(r['status'])} |")
        L.append("")

    sn = sc.get("snapshot")
    if sn:
        L.append("## 6. Snapshots")
        L.append("")
        if sn.get("status"):
            L.append(sn["status"] + ".")
        else:
            L.append(sn["description"] + ".")
            L.append("")
            L.append(f"| case | snapshot s | restore s | fork of {sn.get('fork_n')} s | status |")
            L.append("|---|---:|---:|---:|---|")
            for name, r in sn["cases"].items():
                snap = r.get("snapshot_s", r.get("checkpoint_s"))
                L.append(f"| {name} | {f(snap, 2)} | {f(r.get('restore_s'), 2)} | {f(r.get('fork_s'), 2)} | "
                         f"{status_cell(r['status'])} |")
            if sn.get("ratios"):
                L.append("")
                L.append("sbx beside its peer (ratio = sbx time / peer time; below 1: sbx is faster):")
                L.append("")
                L.append("| what | sbx s | peer | peer s | ratio |")
                L.append("|---|---:|---|---:|---:|")
                for q in sn["ratios"]:
                    if "ratio" in q:
                        L.append(f"| {q['what']} | {f(q['sbx_s'], 2)} | {q['peer']} | {f(q['peer_s'], 2)} | "
                                 f"**{f(q['ratio'], 2)}×** |")
                    else:
                        L.append(f"| {q['what']} | – | {q['peer']} | – | {status_cell(q.get('status') or '–')} |")
        L.append("")

    L.append("## Cleanup and notes")
    L.append("")
    leaks = res.get("leaks", [])
    for n in res.get("cleanup_notes", []):
        L.append(f"- {n}")
    if res.get("cleanup_notes"):
        L.append("")
    L.append("Nothing left behind (no bench containers, mounts, cgroups or sbx state)." if not leaks
             else "**Left behind:** " + "; ".join(leaks))
    L.append("")
    L.append(f"Raw samples: `{stem}.json`. Chart: `{stem}.png`.")
    L.append("")
    return "\n".join(L)


def chart(res, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sc = res.get("scenarios", {})
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    la = res.get("load", {}).get("start", {}).get("loadavg", ["?"])[0]
    fig.suptitle(f"sbx beside peers: {res['started_utc']} ({res['profile']}), "
                 f"{res.get('machine', {}).get('cpus', '?')} CPUs, kernel {res.get('machine', {}).get('kernel', '?')}, "
                 f"load average {la} at start")

    ax = axes[0][0]
    st = sc.get("start", {}).get("images", {})
    imgs = list(st)
    width = 0.8 / len(ORDER)
    for i, name in enumerate(ORDER):
        for j, img in enumerate(imgs):
            r = st[img]["tools"].get(name)
            x = j + (i - len(ORDER) / 2 + 0.5) * width
            m = med(r)
            if m is None:
                ax.text(x, 1.2, "n/a" if r is None or "not yet" in r.get("status", "") else "failed",
                        rotation=90, ha="center", va="bottom", fontsize=7, color=COLORS[name])
                continue
            p90 = r["summary_ms"]["p90"]
            ax.bar(x, m, width, color=COLORS[name], label=name if j == 0 else None,
                   yerr=[[0], [max(p90 - m, 0)]], capsize=2)
            ax.text(x, m * 1.05, f"{m:.0f}" if m >= 10 else f"{m:.1f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(imgs)))
    ax.set_xticklabels([f"{i}: {' '.join(st[i]['cmd'])}" for i in imgs])
    ax.set_yscale("log")
    tops = [r["summary_ms"]["p90"] for i in imgs for r in st[i]["tools"].values() if med(r) is not None]
    ax.set_ylim(1, max(tops + [10]) * 12)  # head room for the legend
    ax.set_ylabel("ms (median, whisker = p90), log scale")
    ax.set_title("1. start latency (lower is better)")
    if st:
        ax.legend(fontsize=7, ncol=4, loc="upper left")

    ax = axes[0][1]
    tp = sc.get("throughput")
    if tp:
        for name in ORDER:
            r = tp["tools"].get(name)
            if not r or not r.get("by_par"):
                continue
            ps = [int(p) for p in r["by_par"]]
            ax.plot(ps, [r["by_par"][str(p)]["per_s"] for p in ps], marker="o", color=COLORS[name],
                    label=name + ("" if r["status"] == "ok" else " (failed)"))
        ax.set_xscale("log", base=2)
        ax.set_xticks(tp["parallelism"])
        ax.set_xticklabels([str(p) for p in tp["parallelism"]])
        ax.legend(fontsize=8)
    ax.set_xlabel("parallelism")
    ax.set_ylabel("sandboxes / s")
    ax.set_title("2. throughput, python3 -c pass (higher is better)")

    ax = axes[1][0]
    he = sc.get("humaneval")
    if he and he.get("tools"):
        names = [n for n in ORDER if n in he["tools"]]
        for i, name in enumerate(names):
            r = he["tools"][name]
            if r.get("status") == "ok":
                ax.bar(i, r["per_s"], color=COLORS[name])
                ax.text(i, r["per_s"], f"{r['per_s']:.1f}/s\n{r['wall_s']:.1f} s", ha="center", va="bottom", fontsize=8)
            else:
                ax.text(i, 0.1, "n/a" if "not yet" in r["status"] else "failed", ha="center", va="bottom",
                        fontsize=8, rotation=90)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names)
    ax.set_ylabel("problems / s")
    ax.set_title(f"3. HumanEval, {he.get('problems', 164) if he else 164} problems, P=4 (higher is better)")

    ax = axes[1][1]
    im = sc.get("import")
    if im:
        names = list(im["cases"])
        for i, name in enumerate(names):
            r = im["cases"][name]
            m = (r.get("summary_ms") or {}).get("median") if r["status"] == "ok" else None
            if m is not None:
                ax.barh(i, m / 1000, color="#dd8452" if name.startswith("sbx") else "#888888")
                ax.text(m / 1000, i, f" {m / 1000:.2f} s", va="center", fontsize=8)
            else:
                ax.text(0.01, i, "n/a" if "not yet" in r["status"] else "failed", va="center", fontsize=8)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names, fontsize=8)
    ax.set_xlabel("seconds (median)")
    ax.set_title("5. import of the python image (lower is better)")

    fig.tight_layout()
    fig.savefig(png, dpi=100)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    jpath = Path(sys.argv[1])
    res = json.loads(jpath.read_text())
    stem = jpath.stem
    (jpath.with_suffix(".md")).write_text(markdown(res, stem))
    try:
        chart(res, jpath.with_suffix(".png"))
    except ImportError:
        print("report.py: matplotlib is missing (apt-get install python3-matplotlib): no chart", file=sys.stderr)


if __name__ == "__main__":
    main()

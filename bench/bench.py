#!/usr/bin/env python3
"""sbx benchmark harness: sbx beside chroot, bwrap, runc, runsc and podman.

Started by bench/run (which installs the peers, builds sbx and the test
images); can be run directly once those exist:

    python3 bench/bench.py --repo . --images tests/images/out --sbx build/sbx [--quick] [--out DIR]

Every tool runs the SAME root filesystem, unpacked from the real test images
(tests/images/out/{busybox,python}-oci): chroot and bwrap use the unpacked
directory, runc and runsc a bundle around it (config.json from `runc spec`),
podman `podman load`s the docker-archive of the same image into its own
storage, sbx imports the OCI layout into its own store.

Timing: one process is spawned (posix_spawn, i.e. vfork+exec) per sample and
timed with CLOCK_MONOTONIC from just before the spawn until waitpid returns.
Tools are interleaved: every round runs each tool once, in a new shuffled
order, so a burst of load from other work on the host hits all tools alike.
Every tool's output is checked before it is timed, and every timed run's exit
status is checked too; a tool that fails is reported as failed, never hidden.

Python stdlib only. Results: OUT/<UTC date>.json (raw samples and summary);
bench/report.py turns it into the Markdown table and the PNG chart.
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Dedicated state roots, so that cleanup can remove exactly what the bench made
# (and never touches other users' runc/runsc/podman/sbx state).
RUNC_ROOT = "/run/bench-runc"
RUNSC_ROOT = "/run/bench-runsc"
PODMAN_RUNROOT = "/run/bench-podman"
SBX_RUN_ROOT = "/run/bench-sbx"
CLEANUP_NOTES: list[str] = []  # what the bench had to clean up or work around for a tool (reported)
PODMAN_CIDS: set[str] = set()  # podman containers the bench started (to check their cgroups are gone)

# Image-relative commands (absolute paths: no PATH lookup differences between tools).
START_CMD = {"busybox": ["/bin/true"], "python": ["/usr/bin/python3", "-c", "pass"]}
CHECK_CMD = {  # (argv, expected stdout, expected exit status)
    "busybox": [(["/bin/sh", "-c", "echo $((6*7))"], "42\n", 0), (["/bin/sh", "-c", "exit 3"], "", 3)],
    "python": [(["/usr/bin/python3", "-c", "print(6*7)"], "42\n", 0),
               (["/usr/bin/python3", "-c", "import sys; sys.exit(3)"], "", 3)],
}

PROFILES = {
    # start_runs: timed samples per tool and image; tp_n: sandboxes per throughput batch
    # (fast tools / tools whose single start takes > 100 ms); he_tools: HumanEval tools.
    "full": dict(start_runs=40, warmup=3, tp_par=[1, 2, 4, 8], tp_n_fast=500, tp_n_slow=100, tp_budget_s=300,
                 he_par=4, he_tools=["chroot", "bwrap", "runc", "runsc", "podman", "sbx", "sbx-rootfs", "sbx-gvisor"],
                 import_reps=3, exec_runs=30, mem_sandboxes=10, fork_n=50, snap_mb=100),
    "quick": dict(start_runs=8, warmup=1, tp_par=[4], tp_n_fast=60, tp_n_slow=12, tp_budget_s=40,
                  he_par=4, he_tools=["chroot", "sbx", "sbx-rootfs"],
                  import_reps=1, exec_runs=5, mem_sandboxes=2, fork_n=3, snap_mb=25),
}

SLOW_TOOLS = {"runsc", "podman", "sbx-gvisor"}  # ~200 ms a start: fewer sandboxes per throughput batch
TOOLS = ["chroot", "bwrap", "runc", "runsc", "podman", "sbx", "sbx-rootfs", "sbx-gvisor"]


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(argv, check=True, timeout=600, **kw) -> subprocess.CompletedProcess:
    """Runs argv, captures text output; raises with stderr in the message on failure."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv[:6]))}: exit {p.returncode}: {short(p.stderr or p.stdout)}")
    return p


def sh_files_nocheck(argv, timeout=60) -> subprocess.CompletedProcess:
    """Runs argv with stdout/stderr through temp files, not pipes: a command that leaves a
    detached process holding its stdout (runc run --detach, sbx create) must not hang us."""
    with tempfile.TemporaryFile("w+") as o, tempfile.TemporaryFile("w+") as e:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=o, stderr=e, timeout=timeout)
        o.seek(0)
        e.seek(0)
        p.stdout, p.stderr = o.read(), e.read()
    return p


def sh_files(argv, timeout=60) -> subprocess.CompletedProcess:
    """sh_files_nocheck() that raises, with stderr in the message, on a non-zero exit."""
    p = sh_files_nocheck(argv, timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv[:6]))}: exit {p.returncode}: {short(p.stderr or p.stdout)}")
    return p


_SBX_CMDS: dict[str, set] = {}


def sbx_commands(sbx: str) -> set:
    """The subcommands this sbx binary offers, read from the "Subcommands:" list of `sbx --help`
    (asking `sbx CMD --help` is no test: CLI11 prints the main help, exit 0, for an unknown CMD)."""
    if sbx not in _SBX_CMDS:
        cmds, on = set(), False
        p = subprocess.run([sbx, "--help"], capture_output=True, text=True) if sbx and os.access(sbx, os.X_OK) else None
        for line in (p.stdout if p else "").splitlines():
            if line.strip().lower().startswith("subcommands"):
                on = True
            elif on and line.startswith("  ") and line.strip():
                cmds.add(line.split()[0])
            elif on and line.strip() and not line.startswith(" "):
                on = False
        _SBX_CMDS[sbx] = cmds
    return _SBX_CMDS[sbx]


def short(text: str, n: int = 160) -> str:
    """The last meaningful line(s) of an error output, on one line."""
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    s = " / ".join(lines[-2:]) if lines else "(no output)"
    return s if len(s) <= n else s[: n - 1] + "…"


def pct(xs, q):
    """Percentile with linear interpolation (q in 0..100)."""
    s = sorted(xs)
    if not s:
        return None
    k = (len(s) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summary(xs):
    if not xs:
        return None
    return {"n": len(xs), "median": pct(xs, 50), "p90": pct(xs, 90), "min": min(xs), "max": max(xs),
            "mean": sum(xs) / len(xs)}


# --------------------------------------------------------------------------- spawning

class Spawner:
    """Spawns and times child processes. Remembers live ones with a deadline: a watchdog thread
    SIGKILLs a child that overruns it (a hung sandbox must not hang the bench), and Ctrl-C kills
    them all."""

    def __init__(self):
        self.live: dict[int, float] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._watchdog, daemon=True).start()

    def _watchdog(self):
        while True:
            time.sleep(1.0)
            now = time.monotonic()
            with self.lock:
                late = [pid for pid, deadline in self.live.items() if deadline < now]
            for pid in late:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def run(self, argv, env, stdout_path=None, stderr_path=None, timeout=120.0):
        """Runs argv to completion. Returns (seconds, exit status). stdout/stderr go to the given
        files (or /dev/null), stdin is /dev/null. Exit status is negative for a signal (-9 after
        the timeout), like subprocess."""
        fa = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
              (os.POSIX_SPAWN_OPEN, 1, stdout_path or "/dev/null", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
              (os.POSIX_SPAWN_OPEN, 2, stderr_path or "/dev/null", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
        t0 = time.perf_counter_ns()
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=fa)
        with self.lock:
            self.live[pid] = time.monotonic() + timeout
        try:
            _, status = os.waitpid(pid, 0)
        finally:
            with self.lock:
                self.live.pop(pid, None)
        t1 = time.perf_counter_ns()
        return (t1 - t0) / 1e9, os.waitstatus_to_exitcode(status)

    def kill_all(self):
        with self.lock:
            pids = list(self.live)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


SPAWN = Spawner()


# --------------------------------------------------------------------------- images and rootfs

def image_config(layout: Path) -> dict:
    """The OCI image config of tag 'latest' in an OCI layout dir (image-spec image-layout.md)."""
    idx = json.loads((layout / "index.json").read_text())
    desc = next((m for m in idx["manifests"]
                 if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "latest"),
                idx["manifests"][0])
    blob = lambda d: layout / "blobs" / d.split(":")[0] / d.split(":")[1]  # noqa: E731
    manifest = json.loads(blob(desc["digest"]).read_text())
    cfg = json.loads(blob(manifest["config"]["digest"]).read_text())
    return {"manifest_digest": desc["digest"], "config": cfg.get("config", {})}


class Ctx:
    """Everything the tools share: paths, unpacked rootfs per image, image env."""

    def __init__(self, args):
        self.repo = Path(args.repo).resolve()
        self.images = Path(args.images).resolve()
        self.work = self.repo / "bench" / "work"
        self.sbx = args.sbx
        self.work.mkdir(parents=True, exist_ok=True)
        self.rootfs: dict[str, Path] = {}
        self.env: dict[str, dict] = {}
        self.cfg: dict[str, dict] = {}
        self._ids = 0
        self._ids_lock = threading.Lock()
        self.tag = f"{os.getpid()}"

    def next_id(self, tool: str) -> str:
        with self._ids_lock:
            self._ids += 1
            return f"bench-{tool}-{self.tag}-{self._ids}"

    def prepare_rootfs(self):
        """Unpacks each test image once (umoci raw unpack) into bench/work/<image>-rootfs; reused
        while the image's manifest digest is unchanged."""
        for img in ("busybox", "python"):
            layout = self.images / f"{img}-oci"
            if not (layout / "index.json").exists():
                raise RuntimeError(f"{layout} is missing: run tests/images/build.sh")
            info = image_config(layout)
            self.cfg[img] = info
            env = {}
            for kv in info["config"].get("Env", []):
                k, _, v = kv.partition("=")
                env[k] = v
            env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            env.setdefault("HOME", "/root")
            self.env[img] = env
            dst = self.work / f"{img}-rootfs"
            stamp = self.work / f".{img}-rootfs.digest"
            if dst.is_dir() and stamp.exists() and stamp.read_text().strip() == info["manifest_digest"]:
                self.rootfs[img] = dst
                continue
            log(f"unpacking {layout.name} into {dst} (umoci raw unpack)")
            if dst.exists():
                shutil.rmtree(dst)
            stamp.unlink(missing_ok=True)
            sh(["umoci", "raw", "unpack", "--image", f"{layout}:latest", str(dst)])
            stamp.write_text(info["manifest_digest"] + "\n")
            self.rootfs[img] = dst

    def bundle(self, img: str, cmd: list[str]) -> Path:
        """An OCI bundle (config.json from `runc spec`, args = cmd, terminal false, root = the shared
        read-only rootfs) for runc and runsc; made once per (image, cmd) and cached."""
        key = hashlib.sha256(json.dumps([img, cmd, str(self.rootfs[img])]).encode()).hexdigest()[:16]
        b = self.work / "bundles" / f"{img}-{key}"
        if (b / "config.json").exists():
            return b
        base = self.work / "bundles" / "runc-spec.json"
        if not base.exists():
            base.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=base.parent) as t:
                sh(["runc", "spec", "--bundle", t])
                shutil.copy(Path(t) / "config.json", base)
        c = json.loads(base.read_text())
        c["process"]["terminal"] = False
        c["process"]["args"] = cmd
        c["process"]["env"] = [f"{k}={v}" for k, v in self.env[img].items()]
        c["root"] = {"path": str(self.rootfs[img]), "readonly": True}
        c["hostname"] = "bench"
        tmp = b.with_name(b.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "config.json").write_text(json.dumps(c, indent=1))
        os.replace(tmp, b) if not b.exists() else shutil.rmtree(tmp)
        return b


# --------------------------------------------------------------------------- tools

class Tool:
    supports_exec = False
    """One way of running a command in a rootfs. argv() returns what to spawn; error is set (and
    the tool skipped with that message) when it is unavailable or fails verification."""
    name = ""
    env_from_image = True  # chroot/bwrap/runc get the image's env from us; podman/sbx read it themselves

    def __init__(self, ctx: Ctx):
        self.ctx = ctx
        self.error: str | None = None
        self.state = "ok"  # ok | failed | n/a

    def setup(self):
        pass

    def argv(self, img: str, cmd: list[str]) -> list[str]:
        raise NotImplementedError

    def env(self, img: str) -> dict:
        if self.env_from_image:
            return dict(self.ctx.env[img])
        return {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}

    def version(self) -> str:
        return ""

    def cleanup(self):
        pass

    def leaks(self) -> list[str]:
        return []


class Chroot(Tool):
    name = "chroot"

    def argv(self, img, cmd):
        return ["chroot", str(self.ctx.rootfs[img]), *cmd]

    def version(self):
        return sh(["chroot", "--version"]).stdout.splitlines()[0]


class Bwrap(Tool):
    name = "bwrap"

    def argv(self, img, cmd):
        return ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--hostname", "bench",
                "--ro-bind", str(self.ctx.rootfs[img]), "/", "--proc", "/proc", "--dev", "/dev",
                "--tmpfs", "/tmp", "--", *cmd]

    def version(self):
        return sh(["bwrap", "--version"]).stdout.strip()


class Runc(Tool):
    name = "runc"
    root = RUNC_ROOT
    binary = "runc"

    def setup(self):
        os.makedirs(self.root, exist_ok=True)

    def argv(self, img, cmd):
        return [self.binary, "--root", self.root, "run", "--bundle", str(self.ctx.bundle(img, cmd)),
                self.ctx.next_id(self.name)]

    def version(self):
        return sh([self.binary, "--version"]).stdout.splitlines()[0]

    def _ids(self):
        p = sh([self.binary, "--root", self.root, "list", "-q"], check=False)
        return [i for i in p.stdout.split() if i.startswith("bench-")]

    def cleanup(self):
        if not os.path.isdir(self.root):
            return
        for cid in self._ids():
            sh([self.binary, "--root", self.root, "delete", "--force", cid], check=False, timeout=60)
        # A start that failed half-way can leave cgroups (with a live runsc sandbox/gofer in them)
        # that `delete` no longer knows. Only ours: named bench-<tool>-<our pid>-N.
        prefix = f"bench-{self.name}-{self.ctx.tag}-"
        for top, dirs, _ in os.walk("/sys/fs/cgroup"):
            if top.count("/") >= 7:
                dirs[:] = []
                continue
            for d in [d for d in dirs if d.startswith(prefix)]:
                path = os.path.join(top, d)
                try:
                    for pid in open(os.path.join(path, "cgroup.procs")).read().split():
                        os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
                for _ in range(50):
                    try:
                        os.rmdir(path)
                        CLEANUP_NOTES.append(f"{self.name} left cgroup {path}; removed by the bench")
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        time.sleep(0.1)
                dirs.remove(d)
        if not self._ids():
            shutil.rmtree(self.root, ignore_errors=True)

    def leaks(self):
        return [f"{self.name} container {i}" for i in self._ids()] if os.path.isdir(self.root) else []

    # Long-lived sandboxes (scenario 4): start one idle, exec into it, delete it.
    supports_exec = True
    global_flags: list[str] = []

    def start_idle(self, img, cmd):
        cid = self.ctx.next_id(self.name)
        # stdout/stderr must not be pipes: the detached container keeps them open.
        sh_files([self.binary, "--root", self.root, *self.global_flags, "run", "--detach",
                  "--bundle", str(self.ctx.bundle(img, cmd)), cid])
        return cid

    def exec_argv(self, cid, cmd):
        return [self.binary, "--root", self.root, *self.global_flags, "exec", cid, *cmd]

    def stop_idle(self, cid):
        sh([self.binary, "--root", self.root, "delete", "--force", cid], check=False, timeout=60)


class Runsc(Runc):
    name = "runsc"
    root = RUNSC_ROOT
    binary = "runsc"
    global_flags = ["--network=none"]

    def stop_idle(self, cid):
        # Kill the init first: `delete --force` of a container made by `runsc restore` waits
        # ~2 s for processes that its `kill --all` does not reach (runsc 20221219).
        sh([self.binary, "--root", self.root, *self.global_flags, "kill", cid, "KILL"], check=False, timeout=60)
        super().stop_idle(cid)

    def argv(self, img, cmd):
        # Default platform (ptrace/systrap); kvm hangs on this host. No network, like the others.
        return [self.binary, "--root", self.root, "--network=none", "run", "--bundle",
                str(self.ctx.bundle(img, cmd)), self.ctx.next_id(self.name)]


class Podman(Tool):
    name = "podman"
    env_from_image = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self.storage = ctx.work / "podman-storage"
        self.base = ["podman", "--root", str(self.storage), "--runroot", PODMAN_RUNROOT,
                     "--tmpdir", PODMAN_RUNROOT + "/tmp", "--cgroup-manager=cgroupfs"]
        self.refs = {}

    def setup(self):
        """Loads the docker-archive of each test image into the bench's own podman storage
        (once; reloaded when the image changed)."""
        for img in ("busybox", "python"):
            ref = f"localhost/bench-{img}:{self.ctx.cfg[img]['manifest_digest'][7:19]}"
            if sh([*self.base, "image", "exists", ref], check=False).returncode != 0:
                log(f"podman: loading {img}.docker.tar")
                out = sh([*self.base, "load", "-q", "-i", str(self.ctx.images / f"{img}.docker.tar")]).stdout
                loaded = out.strip().split()[-1]
                sh([*self.base, "tag", loaded, ref])
            self.refs[img] = ref

    def argv(self, img, cmd):
        return [*self.base, "run", "--rm", "--pull=never", "--runtime", "runc", "--network", "none",
                "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", self.refs[img], *cmd]

    def version(self):
        return sh(["podman", "--version"]).stdout.strip()

    supports_exec = True

    def start_idle(self, img, cmd):
        p = sh_files([*self.base, "run", "--detach", "--rm", "--pull=never", "--runtime", "runc", "--network", "none",
                      "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", self.refs[img], *cmd])
        cid = p.stdout.strip().splitlines()[-1]
        PODMAN_CIDS.add(cid)
        return cid

    def exec_argv(self, cid, cmd):
        return [*self.base, "exec", cid, *cmd]

    def stop_idle(self, cid):
        sh([*self.base, "rm", "--force", "--time", "0", cid], check=False, timeout=60)

    def cleanup(self):
        if self.storage.exists():
            sh([*self.base, "rm", "--all", "--force", "--time", "0"], check=False, timeout=120)
        # Run-time state only (recreated on the next run); the image storage is kept as a cache.
        shutil.rmtree(PODMAN_RUNROOT, ignore_errors=True)

    def leaks(self):
        if not self.storage.exists():
            return []
        p = sh([*self.base, "ps", "-aq"], check=False)
        shutil.rmtree(PODMAN_RUNROOT, ignore_errors=True)  # `ps` recreated it
        return [f"podman container {i}" for i in p.stdout.split()]


class Sbx(Tool):
    name = "sbx"
    env_from_image = False
    runtime_args: list[str] = []

    def __init__(self, ctx):
        super().__init__(ctx)
        self.store = ctx.work / "sbx-root"
        self.base = [str(ctx.sbx), "--root", str(self.store), "--run-root", SBX_RUN_ROOT]

    def setup(self):
        if not self.ctx.sbx or not os.access(self.ctx.sbx, os.X_OK):
            self.state, self.error = "n/a", f"not yet available: no sbx binary ({self.ctx.sbx})"
            return
        h = sh([str(self.ctx.sbx), "--help"], check=False)
        if h.returncode != 0:
            self.state, self.error = "failed", f"failed: `sbx --help` exits {h.returncode}: {short(h.stderr or h.stdout)}"
            return
        p = sh([*self.base, "run", "--help"], check=False)
        if "run" not in sbx_commands(self.ctx.sbx):
            self.state, self.error = "n/a", "not yet available: this sbx has no `run` command"
            return
        if self.runtime_args and "--runtime" not in p.stdout:
            self.state, self.error = "n/a", "not yet available: `sbx run` has no --runtime flag"
            return
        for img in ("busybox", "python"):
            name = f"bench-{img}"
            digest = self.ctx.cfg[img]["manifest_digest"]
            stamp = self.store / f".bench-{img}.digest"
            if stamp.exists() and stamp.read_text().strip() == digest:
                continue
            log(f"sbx: importing {img}-oci as {name}")
            self.store.mkdir(parents=True, exist_ok=True)
            sh([*self.base, "rmi", name], check=False)
            sh([*self.base, "import", "-q", str(self.ctx.images / f"{img}-oci"), name])
            stamp.write_text(digest + "\n")
        # The documented form is `sbx run IMAGE -- CMD`; if this build cannot parse the "--", use
        # `sbx run IMAGE CMD` (also documented) and say so in the report.
        p = sh([*self.base, "run", *self.runtime_args, "--network", "none", "bench-busybox", "--", "/bin/true"],
               check=False, timeout=120)
        if p.returncode != 0 and "not expected" in p.stderr:
            self.dashdash = []
            CLEANUP_NOTES.append(f"{self.name}: `sbx run IMAGE -- CMD` failed to parse ({short(p.stderr, 100)}); "
                                 "the bench used `sbx run IMAGE CMD`")

    dashdash = ["--"]

    def argv(self, img, cmd):
        return [*self.base, "run", *self.runtime_args, "--network", "none", f"bench-{img}", *self.dashdash, *cmd]

    # Long-lived sandboxes (issue: sbx create/exec/rm); used only when this sbx has them.
    @property
    def supports_exec(self):
        return {"create", "exec", "rm"} <= sbx_commands(self.ctx.sbx)

    def start_idle(self, img, cmd):
        # `sbx create IMAGE CMD...` (no "--": this build's create refuses it after IMAGE).
        p = sh_files([*self.base, "create", *self.runtime_args, "--network", "none", f"bench-{img}", *cmd])
        return p.stdout.strip().splitlines()[-1].strip()

    def exec_argv(self, cid, cmd):
        return [*self.base, "exec", cid, "--", *cmd]

    def stop_idle(self, cid):
        sh([*self.base, "rm", "-f", cid], check=False, timeout=60)

    def version(self):
        if not self.ctx.sbx or not os.access(self.ctx.sbx, os.X_OK):
            return "(not built)"
        p = sh([str(self.ctx.sbx), "--version"], check=False)
        git = sh(["git", "-C", str(self.ctx.repo), "describe", "--always", "--dirty"], check=False).stdout.strip()
        return f"{(p.stdout or p.stderr).strip().splitlines()[0] if (p.stdout or p.stderr).strip() else 'sbx'} (git {git})"

    def leaks(self):
        out = []
        if os.path.isdir(SBX_RUN_ROOT):
            # A sandbox leaves a state dir with something in it; dirs holding only dotfiles
            # (userns/.lock) are sbx's own bookkeeping.
            for e in os.listdir(SBX_RUN_ROOT):
                path = os.path.join(SBX_RUN_ROOT, e)
                own = os.path.isdir(path) and all(x.startswith(".") for x in os.listdir(path))  # e.g. userns/.lock
                if not e.startswith(".") and not own:
                    out.append(f"sbx state {path}")
            if not out:
                shutil.rmtree(SBX_RUN_ROOT, ignore_errors=True)
        return out


class SbxRootfs(Sbx):
    """`sbx run --rootfs DIR`: sbx on the very directory chroot/bwrap/runc use (no image store)."""
    name = "sbx-rootfs"

    def setup(self):
        if not self.ctx.sbx or not os.access(self.ctx.sbx, os.X_OK):
            self.state, self.error = "n/a", f"not yet available: no sbx binary ({self.ctx.sbx})"
            return
        h = sh([str(self.ctx.sbx), "--help"], check=False)
        if h.returncode != 0:
            self.state, self.error = "failed", f"failed: `sbx --help` exits {h.returncode}: {short(h.stderr or h.stdout)}"
            return
        p = sh([*self.base, "run", "--help"], check=False)
        if "run" not in sbx_commands(self.ctx.sbx) or "--rootfs" not in p.stdout:
            self.state, self.error = "n/a", "not yet available: this sbx has no `run --rootfs`"

    def argv(self, img, cmd):
        return [*self.base, "run", "--network", "none", "--rootfs", str(self.ctx.rootfs[img]), "--", *cmd]

    def env(self, img):
        return dict(self.ctx.env[img])

    supports_exec = False


class SbxGvisor(Sbx):
    name = "sbx-gvisor"
    runtime_args = ["--runtime", "gvisor"]

    def setup(self):
        super().setup()


TOOL_CLASSES = {"chroot": Chroot, "bwrap": Bwrap, "runc": Runc, "runsc": Runsc, "podman": Podman,
                "sbx": Sbx, "sbx-rootfs": SbxRootfs, "sbx-gvisor": SbxGvisor}


def verify(tool: Tool, img: str):
    """Checks that tool runs `img` correctly: right stdout and exit status for CHECK_CMD.
    Returns None or an error message."""
    for cmd, want_out, want_rc in CHECK_CMD[img]:
        with tempfile.TemporaryDirectory() as t:
            o, e = os.path.join(t, "out"), os.path.join(t, "err")
            try:
                _, rc = SPAWN.run(tool.argv(img, cmd), tool.env(img), o, e, timeout=60)
            except OSError as ex:
                return f"cannot start: {ex}"
            out, err = Path(o).read_text(errors="replace"), Path(e).read_text(errors="replace")
        if rc != want_rc or out != want_out:
            return (f"`{' '.join(cmd)}` gave exit {rc} and stdout {out[:40]!r} "
                    f"(want {want_rc}, {want_out!r}); stderr: {short(err)}")
    return None


# --------------------------------------------------------------------------- scenarios

def scenario_start(ctx, tools, prof, res):
    """1. Start latency: `true` in busybox, `python3 -c pass` in python; interleaved rounds."""
    out = {"description": "start latency: spawn to exit of one sandbox running `true` (busybox) / "
                          "`python3 -c pass` (python); interleaved rounds, shuffled order", "images": {}}
    rng = random.Random(42)
    for img in ("busybox", "python"):
        cmd = START_CMD[img]
        rows = {}
        ready = []
        for t in tools:
            if t.state != "ok":
                rows[t.name] = {"status": t.error}
                continue
            err = verify(t, img)
            if err:
                rows[t.name] = {"status": f"failed: {err}"}
                log(f"start/{img}: {t.name} failed verification: {err}")
                continue
            rows[t.name] = {"status": "ok", "samples_s": [], "failed_runs": 0}
            ready.append(t)
        argvs = {t.name: None for t in ready}
        total = prof["warmup"] + prof["start_runs"]
        log(f"start/{img}: {len(ready)} tools × {total} rounds")
        for r in range(total):
            order = ready[:]
            rng.shuffle(order)
            for t in order:
                argv = t.argv(img, cmd)
                argvs[t.name] = argv
                secs, rc = SPAWN.run(argv, t.env(img))
                row = rows[t.name]
                if rc != 0:
                    row["failed_runs"] += 1
                elif r >= prof["warmup"]:
                    row["samples_s"].append(secs)
        for t in ready:
            row = rows[t.name]
            row["argv_example"] = argvs[t.name]
            row["summary_ms"] = summary([s * 1000 for s in row["samples_s"]])
            if row["failed_runs"]:
                row["status"] = f"failed: {row['failed_runs']} of {total} runs exited non-zero"
        out["images"][img] = {"cmd": cmd, "tools": rows}
    res["scenarios"]["start"] = out


def scenario_hyperfine(ctx, tools, prof, res):
    """Cross-check of scenario 1 with an independent timer: `hyperfine -N` (no shell) on
    `python3 -c pass`, tools one after another (not interleaved). Opt-in: --hyperfine."""
    out = {"description": "hyperfine -N --warmup 3 --runs 20, python3 -c pass, one tool after another; runc/runsc through `sh -c` for a fresh container id (+1 exec)", "tools": {}}
    st = res["scenarios"].get("start", {}).get("images", {}).get("python", {}).get("tools", {})
    for t in tools:
        if t.state != "ok" or (st and st.get(t.name, {}).get("status") != "ok"):
            continue
        argv = t.argv("python", START_CMD["python"])
        with tempfile.NamedTemporaryFile(suffix=".json") as jf:
            # hyperfine reuses the command line, so runc/runsc get a fresh id from a tiny shell-free wrapper.
            if t.name in ("runc", "runsc"):
                argv = ["/bin/sh", "-c", " ".join(argv[:-1]) + " bench-hf-$$"]  # +1 sh exec
            p = subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", "20", "--export-json", jf.name,
                                "--", subprocess.list2cmdline(argv)], capture_output=True, text=True,
                               env=t.env("python"), timeout=300)
            if p.returncode:
                out["tools"][t.name] = {"status": f"failed: {short(p.stderr)}"}
                continue
            r = json.load(open(jf.name))["results"][0]
            out["tools"][t.name] = {"status": "ok", "median_ms": r["median"] * 1000, "mean_ms": r["mean"] * 1000,
                                    "stddev_ms": (r.get("stddev") or 0) * 1000}
    res["scenarios"]["hyperfine"] = out


def run_batch(tool, img, cmds, par, stdout_check=None, max_s=None):
    """Runs each cmd of cmds in its own sandbox, `par` at a time. Returns (wall seconds,
    per-item list of (seconds, rc, ok, error)). With max_s, no new sandbox is started after
    max_s seconds (items not started stay None), so a loaded host cannot stretch the run."""
    results = [None] * len(cmds)
    nxt = [0]
    lock = threading.Lock()
    tmp = tempfile.mkdtemp(prefix="bench-batch.")

    deadline = time.perf_counter() + max_s if max_s else None

    def worker(w):
        o, e = os.path.join(tmp, f"{w}.out"), os.path.join(tmp, f"{w}.err")
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(cmds) or deadline and time.perf_counter() > deadline:
                return
            secs, rc = SPAWN.run(tool.argv(img, cmds[i]), tool.env(img), o if stdout_check else None, e)
            ok = rc == 0
            msg = ""
            if stdout_check:
                out = Path(o).read_text(errors="replace")
                ok = ok and stdout_check(i, out)
            if not ok:
                msg = f"exit {rc}: {short(Path(e).read_text(errors='replace'))}"
            results[i] = (secs, rc, ok, msg)

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(par)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    shutil.rmtree(tmp, ignore_errors=True)
    return wall, results


def start_ok(res, tool, img="python"):
    row = res["scenarios"].get("start", {}).get("images", {}).get(img, {}).get("tools", {}).get(tool.name)
    if row is None:
        return True, None
    return row.get("status") == "ok", row


def scenario_throughput(ctx, tools, prof, res):
    """2. Throughput: N sandboxes of `python3 -c pass` at parallelism 1, 2, 4, 8."""
    cmd = START_CMD["python"]
    out = {"description": "throughput: N sandboxes of `python3 -c pass`, P at a time; sandboxes/s = N / wall",
           "parallelism": prof["tp_par"], "tools": {}}
    usable = []
    for t in tools:
        ok, row = start_ok(res, t)
        if t.state != "ok" or not ok:
            out["tools"][t.name] = {"status": t.error if t.state != "ok" else (row or {}).get("status", "failed")}
            continue
        n = prof["tp_n_slow"] if t.name in SLOW_TOOLS else prof["tp_n_fast"]
        out["tools"][t.name] = {"status": "ok", "n": n, "by_par": {}}
        usable.append(t)
    rng = random.Random(7)
    # The whole scenario gets tp_budget_s; each batch an equal share (at least 4 s).
    max_s = max(4.0, prof["tp_budget_s"] / max(1, len(usable) * len(prof["tp_par"])))
    out["batch_max_s"] = max_s
    out["description"] += f"; no new sandbox is started after {max_s:.0f} s, so N can be smaller on a busy host"
    for par in prof["tp_par"]:
        order = usable[:]
        rng.shuffle(order)
        for t in order:
            row = out["tools"][t.name]
            if row["status"] != "ok":
                continue
            log(f"throughput: {t.name} P={par} n={row['n']}")
            wall, items = run_batch(t, "python", [cmd] * row["n"], par, max_s=max_s)
            items = [it for it in items if it is not None]
            n = len(items)
            bad = [it for it in items if not it[2]]
            entry = {"n": n, "wall_s": wall, "per_s": n / wall, "failed": len(bad),
                     "latency_ms": summary([it[0] * 1000 for it in items])}
            if bad:
                entry["error"] = bad[0][3]
                row["status"] = f"failed: {len(bad)} of {n} sandboxes failed at P={par}: {bad[0][3]}"
            row["by_par"][str(par)] = entry
    res["scenarios"]["throughput"] = out


def humaneval_programs(path: Path):
    probs = []
    with gzip.open(path, "rt") as f:
        for line in f:
            p = json.loads(line)
            prog = (p["prompt"] + p["canonical_solution"] + "\n\n" + p["test"] + "\n\n" +
                    f"check({p['entry_point']})\nprint('HUMANEVAL-OK {p['task_id']}')\n")
            probs.append((p["task_id"], prog, p))
    return probs


def scenario_humaneval(ctx, tools, prof, res, path: Path):
    """3. HumanEval: all 164 problems, one sandbox each, at parallelism 4; all must pass."""
    out = {"description": f"HumanEval ({path.name}): prompt + canonical_solution + test + check(entry_point), "
                         f"each as `python3 -c PROGRAM` in its own sandbox, P={prof['he_par']}",
           "parallelism": prof["he_par"], "tools": {}}
    if not path.exists():
        out["error"] = f"{path} is missing"
        res["scenarios"]["humaneval"] = out
        return
    probs = humaneval_programs(path)
    cmds = [["/usr/bin/python3", "-c", prog] for _, prog, _ in probs]
    out["problems"] = len(probs)
    # A broken solution must fail: proves the check can fail and that exit status reaches us.
    p0 = probs[0][2]
    broken = p0["prompt"] + "    return None\n\n" + p0["test"] + f"\n\ncheck({p0['entry_point']})\n"

    def check(i, stdout):
        return f"HUMANEVAL-OK {probs[i][0]}\n" in stdout

    sel = [t for t in tools if t.name in prof["he_tools"]]
    for t in tools:
        if t.name not in prof["he_tools"]:
            continue
        ok, row = start_ok(res, t)
        if t.state != "ok":
            out["tools"][t.name] = {"status": t.error}
        elif not ok:
            out["tools"][t.name] = {"status": row.get("status")}
        else:
            out["tools"][t.name] = {"status": "ok"}
    rng = random.Random(3)
    rng.shuffle(sel)
    for t in sel:
        row = out["tools"][t.name]
        if row["status"] != "ok":
            continue
        _, rc = SPAWN.run(t.argv("python", ["/usr/bin/python3", "-c", broken]), t.env("python"))
        if rc == 0:
            row["status"] = "failed: a broken HumanEval/0 solution exited 0 (exit status not propagated)"
            continue
        log(f"humaneval: {t.name} ({len(cmds)} problems, P={prof['he_par']})")
        wall, items = run_batch(t, "python", cmds, prof["he_par"], stdout_check=check)
        passed = sum(1 for it in items if it[2])
        row.update({"wall_s": wall, "per_s": len(cmds) / wall, "passed": passed, "total": len(cmds),
                    "broken_solution_exit": rc,
                    "latency_ms": summary([it[0] * 1000 for it in items])})
        if passed != len(cmds):
            first = next(i for i, it in enumerate(items) if not it[2])
            row["status"] = f"failed: {len(cmds) - passed} of {len(cmds)} did not pass ({probs[first][0]}: {items[first][3]})"
    res["scenarios"]["humaneval"] = out


def sandbox_pss_kib(cid: str) -> tuple[int, int]:
    """Host memory of one sandbox: the sum of PSS (proportional set size, KiB) over every host
    process that is in a cgroup whose path contains the sandbox id, or whose command line names
    it (runsc's sandbox and gofer, podman's conmon). Returns (KiB, process count)."""
    cid = cid[:12] if len(cid) == 64 else cid  # sbx/podman ids: cgroups and argv may carry a prefix
    total = n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cg = open(f"/proc/{pid}/cgroup").read()
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            if cid not in cg and cid not in cmdline:
                continue
            for line in open(f"/proc/{pid}/smaps_rollup"):
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    n += 1
                    break
        except OSError:
            continue
    return total, n


def mem_available_kib() -> int:
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return 0


def scenario_exec(ctx, tools, prof, res):
    """4. Exec latency into a running sandbox and idle host memory per sandbox."""
    out = {"description": "K idle sandboxes (busybox `sleep 3600`) per tool: host memory per sandbox = PSS "
                          "summed over its processes (its cgroup, or naming it: runsc sandbox+gofer, conmon); "
                          "exec latency = `exec /bin/true` into a running one, interleaved rounds",
           "sandboxes": prof["mem_sandboxes"], "tools": {}}
    idle_cmd = ["/bin/sleep", "3600"]
    ready, live = [], {}
    for t in tools:
        if t.state != "ok":
            out["tools"][t.name] = {"status": t.error}
            continue
        if not t.supports_exec:
            why = ("not yet available: this sbx has no create/exec/rm commands" if t.name.startswith("sbx")
                   else "no long-lived sandbox (runs one command and exits)")
            out["tools"][t.name] = {"status": why}
            continue
        row = out["tools"][t.name] = {"status": "ok"}
        live[t.name] = []
        try:
            before = mem_available_kib()
            for _ in range(prof["mem_sandboxes"]):
                live[t.name].append(t.start_idle("busybox", idle_cmd))
            time.sleep(1.0)  # let them settle (runsc boots its sandbox lazily)
            after = mem_available_kib()
            pss = [sandbox_pss_kib(cid) for cid in live[t.name]]
            row["pss_kib"] = [p for p, _ in pss]
            row["processes_per_sandbox"] = [n for _, n in pss]
            row["pss_mib_median"] = pct([p / 1024 for p, _ in pss], 50)
            row["memavailable_drop_mib_per_sandbox"] = (before - after) / 1024 / len(live[t.name])
            err = None
            with tempfile.TemporaryDirectory() as tdir:
                o, e = os.path.join(tdir, "o"), os.path.join(tdir, "e")
                _, rc = SPAWN.run(t.exec_argv(live[t.name][0], ["/bin/sh", "-c", "echo $((6*7))"]),
                                  t.env("busybox"), o, e, timeout=60)
                got = Path(o).read_text(errors="replace")
                if rc != 0 or got != "42\n":
                    err = f"exec gave exit {rc}, stdout {got!r}: {short(Path(e).read_text(errors='replace'))}"
            if err:
                row["status"] = f"failed: {err}"
                continue
            row["samples_s"] = []
            row["failed_runs"] = 0
            ready.append(t)
        except Exception as ex:  # noqa: BLE001 - reported
            row["status"] = f"failed: {ex}"
    try:
        rng = random.Random(11)
        total = prof["warmup"] + prof["exec_runs"]
        log(f"exec: {len(ready)} tools × {total} rounds")
        for r in range(total):
            order = ready[:]
            rng.shuffle(order)
            for t in order:
                secs, rc = SPAWN.run(t.exec_argv(live[t.name][0], ["/bin/true"]), t.env("busybox"))
                row = out["tools"][t.name]
                if rc != 0:
                    row["failed_runs"] += 1
                elif r >= prof["warmup"]:
                    row["samples_s"].append(secs)
        for t in ready:
            row = out["tools"][t.name]
            row["summary_ms"] = summary([x * 1000 for x in row["samples_s"]])
            if row["failed_runs"]:
                row["status"] = f"failed: {row['failed_runs']} of {total} execs exited non-zero"
    finally:
        for t in tools:
            for cid in live.get(t.name, []):
                t.stop_idle(cid)
    res["scenarios"]["exec"] = out


def wait_for(tool, cid, path, timeout=120.0):
    """Polls `exec test -f path` in a running sandbox until it succeeds (or raises)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        _, rc = SPAWN.run(tool.exec_argv(cid, ["/bin/test", "-f", path]), tool.env("busybox"), timeout=30)
        if rc == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{tool.name}: {path} did not appear in {cid} within {timeout:.0f} s")


def sbx_upper(cid: str, sub: str = "") -> Path:
    """The host path of a created sbx sandbox's overlay upper dir (RUN_ROOT/<id>/fs/upper)."""
    for d in sorted(Path(SBX_RUN_ROOT).glob(f"{cid}*/fs/upper")):
        return d / sub if sub else d
    raise RuntimeError(f"sbx sandbox {cid}: no upper dir under {SBX_RUN_ROOT}")


def gvisor_create_refused(sbx) -> str:
    """'' when `sbx create --runtime gvisor` works here, else why not (probed once, removed at once)."""
    p = sh_files_nocheck([*sbx.base, "create", *sbx.runtime_args, "--network", "none", "bench-busybox",
                          "/bin/sleep", "60"])
    if p.returncode != 0:
        return f"not yet available: `sbx create --runtime gvisor` is refused here ({short(p.stderr or p.stdout, 150)})"
    sbx.stop_idle(p.stdout.strip().splitlines()[-1].strip())
    return ""


def scenario_snapshot(ctx, tools, prof, res):
    """6. Snapshots, each sbx case beside its peer, as ratios:
    - filesystem snapshot of a sandbox that wrote 100 MB: `sbx snapshot` / `podman commit`;
    - directory snapshot of those 100 MB: `sbx snapshot-dir` / `tar | zstd -3` of the same host dir
      (the floor: the same bytes through the same compressor, with no sandbox around them);
    - fork N sandboxes from the filesystem snapshot: N x `sbx create` / N x `podman run -d` of the
      committed image;
    - memory checkpoint, restore and a fork of N from one checkpoint: `sbx checkpoint` / `sbx
      restore` / `sbx restore --count N` of a gVisor sandbox beside raw `runsc checkpoint` /
      `runsc restore` (N times) on a raw bundle.
    Each result is checked before it counts (the file's size read back, an exec that prints 42)."""
    mb = prof["snap_mb"]
    nbytes = str(mb * 1048576)
    nfork = prof["fork_n"]
    out = {"description": f"filesystem snapshot of a sandbox that wrote {mb} MB to /work/data.bin (checked by reading "
                          f"the file's size in a new sandbox of the snapshot); directory snapshot of /work (checked by "
                          f"extracting it) beside `tar | zstd -3` of the same host directory; fork of {nfork} "
                          f"sandboxes from the filesystem snapshot; memory checkpoint + restore of an idle gVisor "
                          f"sandbox (checked by exec into the restored one) and fork of {nfork} from one checkpoint",
           "cases": {}, "fork_n": nfork, "ratios": []}
    by = {t.name: t for t in tools}
    writer = ["/bin/sh", "-c", f"mkdir -p /work && head -c {nbytes} /dev/urandom > /work/data.bin && touch /done "
                               "&& exec sleep 3600"]
    sbx = by.get("sbx")
    sbxg = by.get("sbx-gvisor")
    sbx_cmds = set()
    if sbx is not None and sbx.state == "ok" and start_ok(res, sbx, "busybox")[0]:
        sbx_cmds = {"snapshot", "snapshot-dir", "checkpoint", "restore", "snapshots"} & sbx_commands(ctx.sbx)
        if not sbx.supports_exec:
            sbx_cmds = set()
    sbx_why = (sbx.error if sbx is not None and sbx.state != "ok" else
               "failed: sbx run does not work (see scenario 1)" if sbx is not None and not start_ok(res, sbx, "busybox")[0]
               else "not yet available: this sbx has no create/exec/rm (a running sandbox to snapshot)"
               if sbx is not None and not sbx.supports_exec else "")
    na = "not yet available: this sbx has no `{}` command"
    cases = {}

    def check_size(p):
        if p.stdout.split()[:1] != [nbytes]:
            raise RuntimeError(f"the snapshot's /work/data.bin: {p.stdout.strip()!r} {short(p.stderr)}, want {nbytes} bytes")

    pod_key = f"filesystem: podman commit ({mb} MB written)"
    pod = by.get("podman")
    if pod is not None and pod.state == "ok":
        def podman_fs():
            ref = "localhost/bench-snap:1"
            cid = pod.start_idle("busybox", writer)
            try:
                wait_for(pod, cid, "/done")
                t0 = time.perf_counter()
                sh([*pod.base, "commit", "-q", cid, ref], timeout=300)
                secs = time.perf_counter() - t0
            finally:
                pod.stop_idle(cid)
            forks = []
            try:
                check_size(sh_files([*pod.base, "run", "--rm", "--pull=never", "--runtime", "runc", "--network", "none",
                                     "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", ref,
                                     "/bin/wc", "-c", "/work/data.bin"], timeout=120))
                # Fork: N long-lived containers of the committed image, one after another.
                t0 = time.perf_counter()
                for _ in range(nfork):
                    p = sh_files([*pod.base, "run", "--detach", "--pull=never", "--runtime", "runc", "--network",
                                  "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", ref,
                                  "/bin/sleep", "3600"], timeout=120)
                    c = p.stdout.strip().splitlines()[-1]
                    PODMAN_CIDS.add(c)
                    forks.append(c)
                fork_s = time.perf_counter() - t0
                check_size(sh_files(pod.exec_argv(forks[-1], ["/bin/wc", "-c", "/work/data.bin"])))
            finally:
                for c in forks:
                    pod.stop_idle(c)
                sh([*pod.base, "rmi", "-f", ref], check=False)
            return {"snapshot_s": secs, "fork_s": fork_s}
        cases[pod_key] = podman_fs

    fs_key, dir_key = f"filesystem: sbx snapshot ({mb} MB written)", f"directory: sbx snapshot-dir ({mb} MB)"
    floor_key = f"directory: tar piped to zstd -3, the same host dir ({mb} MB)"
    if "snapshot" in sbx_cmds:
        def sbx_fs():
            cid = sbx.start_idle("busybox", writer)
            r = {}
            forks = []
            try:
                wait_for(sbx, cid, "/done")
                t0 = time.perf_counter()
                sh([*sbx.base, "snapshot", cid, "--name", "bench-snap"], timeout=300)
                r["snapshot_s"] = time.perf_counter() - t0
                if "snapshot-dir" in sbx_cmds:
                    # The floor first, on the very directory snapshot-dir reads (page cache warm for both).
                    work = sbx_upper(cid, "work")
                    dst = ctx.work / "floor.tar.zst"
                    t0 = time.perf_counter()
                    sh(["/bin/sh", "-c", 'tar -C "$1" -cf - . | zstd -3 -q -f -o "$2"', "sh", str(work), str(dst)],
                       timeout=300)
                    r["floor_s"] = time.perf_counter() - t0
                    r["floor_bytes"] = dst.stat().st_size
                    dst.unlink()
                    t0 = time.perf_counter()
                    sh([*sbx.base, "snapshot-dir", cid, "/work", "--name", "bench-dir"], timeout=300)
                    r["dir_s"] = time.perf_counter() - t0
            finally:
                sbx.stop_idle(cid)
            try:
                check_size(sh_files([*sbx.base, "run", "--network", "none", "bench-snap", *sbx.dashdash,
                                     "/bin/wc", "-c", "/work/data.bin"], timeout=120))
                # Fork: N long-lived sandboxes of the snapshot, one after another.
                t0 = time.perf_counter()
                for _ in range(nfork):
                    p = sh_files([*sbx.base, "create", "--network", "none", "bench-snap", "/bin/sleep", "3600"],
                                 timeout=120)
                    forks.append(p.stdout.strip().splitlines()[-1].strip())
                r["fork_s"] = time.perf_counter() - t0
                check_size(sh_files(sbx.exec_argv(forks[-1], ["/bin/wc", "-c", "/work/data.bin"])))
                if "dir_s" in r:
                    d = Path(tempfile.mkdtemp(prefix="dirsnap.", dir=ctx.work))
                    try:
                        shutil.rmtree(d)
                        sh([*sbx.base, "snapshots", "extract", "bench-dir", str(d)], timeout=120)
                        got = next((str(p.stat().st_size) for p in d.rglob("data.bin")), "missing")
                        r["dir_check"] = "ok" if got == nbytes else f"failed: extracted data.bin has {got} bytes"
                    finally:
                        shutil.rmtree(d, ignore_errors=True)
            finally:
                for c in forks:
                    sbx.stop_idle(c)
                sh([*sbx.base, "rmi", "-f", "bench-snap"], check=False)
                sh([*sbx.base, "snapshots", "rm", "bench-dir"], check=False)
            return r
        cases[fs_key] = sbx_fs
    else:
        out["cases"][fs_key] = {"status": sbx_why or na.format("snapshot")}
    if "snapshot-dir" not in sbx_cmds or "snapshot" not in sbx_cmds:
        out["cases"][dir_key] = {"status": sbx_why or na.format("snapshot-dir")}

    rs_key = "memory: runsc checkpoint + restore, fork (restore ×N)"
    rs = by.get("runsc")
    if rs is not None and rs.state == "ok":
        def runsc_ckpt():
            img = Path(tempfile.mkdtemp(prefix="ckpt.", dir=ctx.work))
            cid = rs.start_idle("busybox", ["/bin/sleep", "3600"])
            restored = []
            try:
                t0 = time.perf_counter()
                sh([rs.binary, "--root", rs.root, *rs.global_flags, "checkpoint", "--image-path", str(img), cid])
                t1 = time.perf_counter()
                b = str(ctx.bundle("busybox", ["/bin/sleep", "3600"]))
                for i in range(1 + nfork):
                    nid = ctx.next_id("runsc")
                    if i == 1:
                        t3 = time.perf_counter()
                    sh_files([rs.binary, "--root", rs.root, *rs.global_flags, "restore", "--detach",
                              "--image-path", str(img), "--bundle", b, nid])
                    restored.append(nid)
                    if i == 0:
                        t2 = time.perf_counter()
                        p = sh_files(rs.exec_argv(nid, ["/bin/sh", "-c", "echo $((6*7))"]))
                        if p.stdout != "42\n":
                            raise RuntimeError(f"exec into the restored sandbox gave {p.stdout!r}")
                t4 = time.perf_counter()
                return {"checkpoint_s": t1 - t0, "restore_s": t2 - t1, "fork_s": t4 - t3}
            finally:
                for c in [cid, *restored]:
                    rs.stop_idle(c)
                shutil.rmtree(img, ignore_errors=True)
        cases[rs_key] = runsc_ckpt

    mem_key = "memory: sbx checkpoint + restore, fork (restore --count N)"
    gv_why = ""
    if {"checkpoint", "restore"} <= sbx_cmds and sbxg is not None and sbxg.state == "ok":
        gv_why = gvisor_create_refused(sbxg)
    if {"checkpoint", "restore"} <= sbx_cmds and sbxg is not None and sbxg.state == "ok" and not gv_why:
        def sbx_ckpt():
            cid = sbxg.start_idle("busybox", ["/bin/sleep", "3600"])
            tag = f"bench-ck-{ctx.tag}"
            made = [cid]
            try:
                t0 = time.perf_counter()
                sh([*sbx.base, "checkpoint", cid, "--name", tag], timeout=300)
                t1 = time.perf_counter()
                sh_files([*sbx.base, "restore", tag, "--name", f"{tag}-r"], timeout=300)
                t2 = time.perf_counter()
                made.append(f"{tag}-r")
                p = sh_files(sbx.exec_argv(f"{tag}-r", ["/bin/sh", "-c", "echo $((6*7))"]))
                if p.stdout != "42\n":
                    raise RuntimeError(f"exec into the restored sandbox gave {p.stdout!r}")
                t3 = time.perf_counter()
                sh_files([*sbx.base, "restore", tag, "--count", str(nfork), "--name", f"{tag}-f"], timeout=600)
                t4 = time.perf_counter()
                made += [f"{tag}-f-{i}" for i in range(1, nfork + 1)] if nfork > 1 else [f"{tag}-f"]
                return {"checkpoint_s": t1 - t0, "restore_s": t2 - t1, "fork_s": t4 - t3}
            finally:
                for c in made:
                    sbx.stop_idle(c)
                sh([*sbx.base, "snapshots", "rm", tag], check=False)
        cases[mem_key] = sbx_ckpt
    else:
        out["cases"][mem_key] = {"status": sbx_why or gv_why or (sbxg.error if sbxg is not None and sbxg.state != "ok"
                                                                else na.format("checkpoint` / `restore"))}

    for name, fn in cases.items():
        log(f"snapshot: {name}")
        try:
            r = fn()
            out["cases"][name] = {"status": "ok", **r}
            if name == fs_key and "dir_s" in r:
                out["cases"][dir_key] = {"status": r.get("dir_check", "ok"), "snapshot_s": r["dir_s"]}
                out["cases"][floor_key] = {"status": "ok", "snapshot_s": r["floor_s"], "bytes": r["floor_bytes"]}
        except Exception as ex:  # noqa: BLE001 - reported
            out["cases"][name] = {"status": f"failed: {short(str(ex), 200)}"}
            if name == fs_key:
                out["cases"][dir_key] = {"status": "failed: see the filesystem case"}

    # Ratios sbx / peer (below 1: sbx is faster), only where both sides were measured and checked.
    def add_ratio(what, a_key, a_field, b_key, b_field, peer):
        a, b = out["cases"].get(a_key, {}), out["cases"].get(b_key, {})
        if a.get("status") == "ok" and b.get("status") == "ok" and a.get(a_field) and b.get(b_field):
            out["ratios"].append({"what": what, "peer": peer, "sbx_s": a[a_field], "peer_s": b[b_field],
                                  "ratio": a[a_field] / b[b_field]})
        else:
            out["ratios"].append({"what": what, "peer": peer, "status": (a.get("status") if a.get("status") != "ok"
                                                                         else b.get("status", "peer not run"))})
    add_ratio(f"filesystem snapshot, {mb} MB written", fs_key, "snapshot_s", pod_key, "snapshot_s", "podman commit")
    add_ratio(f"directory snapshot, {mb} MB", dir_key, "snapshot_s", floor_key, "snapshot_s", "tar piped to zstd -3 (floor)")
    add_ratio(f"fork {nfork} from a filesystem snapshot", fs_key, "fork_s", pod_key, "fork_s",
              f"{nfork} × podman run -d")
    add_ratio("memory checkpoint (gVisor)", mem_key, "checkpoint_s", rs_key, "checkpoint_s", "runsc checkpoint")
    add_ratio("memory restore, 1 copy (gVisor)", mem_key, "restore_s", rs_key, "restore_s", "runsc restore")
    add_ratio(f"fork {nfork} from a memory snapshot", mem_key, "fork_s", rs_key, "fork_s",
              f"{nfork} × runsc restore")
    res["scenarios"]["snapshot"] = out


# Syscalls that wait for another process or for time, not work: left out of "where the time goes".
WAITING = {"wait4", "waitid", "poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "rt_sigtimedwait",
           "recvmsg", "recvfrom", "read", "futex", "clock_nanosleep", "nanosleep", "pidfd_getfd", "rt_sigsuspend",
           "pause", "accept4", "restart_syscall"}


def strace_breakdown(argv, env, cmd_path, runs=5):
    """Runs argv under `strace -f -tt -T` `runs` times and splits the median run into setup (start of
    the tool to the execve of cmd_path), the command itself and teardown (its exit to the tool's
    exit), plus the syscalls that took longest (summed by name and first argument), waiting ones
    excluded. strace slows syscalls down, so the split is indicative, not a timing."""
    import re
    line_re = re.compile(r"^(\d+)\s+(\d+):(\d+):([\d.]+)\s+(.*)$")
    runs_out = []
    for _ in range(runs):
        with tempfile.NamedTemporaryFile("r", suffix=".strace") as tf:
            subprocess.run(["strace", "-f", "-tt", "-T", "-y", "-o", tf.name, *argv], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
            lines = tf.read().splitlines()
        evs = []
        for ln in lines:
            m = line_re.match(ln)
            if m:
                evs.append((int(m[1]), int(m[2]) * 3600 + int(m[3]) * 60 + float(m[4]), m[5]))
        if not evs:
            continue
        t0, tend = evs[0][1], evs[-1][1]
        cmd_pid, t_exec, t_exit = None, None, None
        for pid, t, rest in evs:
            if rest.startswith(f'execve("{cmd_path}"') and "= 0" in rest.split(")")[-1] or \
                    (rest.startswith("<... execve resumed>") and "= 0" in rest and pid == cmd_pid):
                cmd_pid, t_exec = pid, t
            elif rest.startswith(f'execve("{cmd_path}"'):
                cmd_pid, t_exec = pid, t
            if cmd_pid == pid and rest.startswith("+++ exited"):
                t_exit = t
        costs: dict[str, float] = {}
        pending: dict[int, str] = {}

        def key_of(name, args):
            first = args.split(",")[0].strip() if args else ""
            m2 = re.match(r"^-?\d+<(.*)>$", first)  # -y: fd shown with its path
            arg = m2[1] if m2 else first.strip('"')
            if not arg or arg.isdigit() or arg.startswith("{") or arg == "NULL":
                return name
            arg = re.sub(r"^(/sys/fs/cgroup/[^/]+)/.*/([^/]+)$", r"\1/…/\2", arg)
            arg = re.sub(r"[0-9a-f]{12,}", "…", arg)
            return f"{name}({arg[:70]})"

        for pid, t, rest in evs:
            if rest.endswith("<unfinished ...>"):
                m = re.match(r"^(\w+)\((.*)", rest[: -len("<unfinished ...>")].rstrip())
                if m:
                    pending[pid] = key_of(m[1], m[2])
                continue
            m = re.match(r"^<\.\.\. (\w+) resumed>.*<([\d.]+)>$", rest)
            if m:
                name, dur, key = m[1], float(m[2]), pending.pop(pid, m[1])
            else:
                m = re.match(r"^(\w+)\((.*)\)\s+= .*<([\d.]+)>$", rest)
                if not m:
                    continue
                name, dur, key = m[1], float(m[3]), key_of(m[1], m[2])
            if name in WAITING or name == "execve" and pid == cmd_pid:
                continue
            costs[key] = costs.get(key, 0.0) + dur
        runs_out.append({"total_ms": (tend - t0) * 1000,
                         "setup_ms": ((t_exec or tend) - t0) * 1000,
                         "command_ms": ((t_exit or tend) - (t_exec or tend)) * 1000,
                         "teardown_ms": (tend - (t_exit or tend)) * 1000,
                         "top": sorted(costs.items(), key=lambda kv: -kv[1])[:12]})
    if not runs_out:
        return {"error": "strace gave no output"}
    runs_out.sort(key=lambda r: r["total_ms"])
    med = runs_out[len(runs_out) // 2]
    return {"runs": len(runs_out), **{k: med[k] for k in ("total_ms", "setup_ms", "command_ms", "teardown_ms")},
            "top_syscalls_ms": [(k, v * 1000) for k, v in med["top"]]}


def cgroup_attach_cost(rounds=7):
    """What moving a process into a freshly made cgroup costs on this host (the step every
    runtime that uses cgroups pays per sandbox): for v1 memory and the cgroup2 (unified) hierarchy,
    the time of the first write of a pid to a new cgroup's cgroup.procs, and of a second write
    right after. The first one waits for an RCU grace period (cgroup_threadgroup_rwsem), unless
    the hierarchy is mounted with favordynmods. Only cgroups named bench-cgtest-* are made."""
    out = {}
    for ctrl in ("memory", "unified"):
        base = f"/sys/fs/cgroup/{ctrl}"
        if not os.path.isdir(base):
            continue
        first, second = [], []
        for i in range(rounds):
            d = f"{base}/bench-cgtest-{os.getpid()}-{i}"
            procs = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
            try:
                os.mkdir(d)
                for j, pr in enumerate(procs):
                    t0 = time.perf_counter()
                    with open(f"{d}/cgroup.procs", "w") as fh:
                        fh.write(str(pr.pid))
                    (first if j == 0 else second).append((time.perf_counter() - t0) * 1000)
            except OSError as ex:
                out[ctrl] = {"error": str(ex)}
                break
            finally:
                for pr in procs:
                    pr.kill()
                    pr.wait()
                for _ in range(50):
                    try:
                        os.rmdir(d)
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        time.sleep(0.02)
            time.sleep(0.2)  # let the rwsem fall back to its fast path, as between sandbox starts
        if ctrl not in out:
            out[ctrl] = {"first_attach_ms_median": pct(first, 50), "second_attach_ms_median": pct(second, 50)}
    return out


def scenario_profile(ctx, tools, prof, res):
    """Where the time goes in one start (`true` in busybox), under strace: setup, command,
    teardown and the costliest syscalls, for every tool that creates namespaces."""
    out = {"description": "one `true` in busybox under `strace -f -tt -T` (median of 5): setup = tool start to "
                          "execve of /bin/true, teardown = its exit to the tool's exit; costliest syscalls summed "
                          "(waiting ones excluded). strace inflates syscall costs: read the split, not the totals",
           "tools": {}}
    if not shutil.which("strace"):
        out["error"] = "strace is missing"
    else:
        for t in tools:
            if t.state != "ok" or t.name in ("chroot", "podman", "runsc", "sbx-gvisor") or not start_ok(res, t, "busybox")[0]:
                continue
            log(f"profile: {t.name}")
            try:
                out["tools"][t.name] = strace_breakdown(t.argv("busybox", ["/bin/true"]), t.env("busybox"), "/bin/true")
            except Exception as ex:  # noqa: BLE001
                out["tools"][t.name] = {"error": str(ex)}
    try:
        out["cgroup_attach"] = cgroup_attach_cost()
    except Exception as ex:  # noqa: BLE001
        out["cgroup_attach"] = {"error": str(ex)}
    res["scenarios"]["profile"] = out


def timed(argv, timeout=600, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    return time.perf_counter() - t0, p


def scenario_import(ctx, tools, prof, res):
    """5. Image import of the python image: sbx import (docker-archive, OCI layout) beside
    podman load (docker-archive) and umoci unpack (OCI layout), each into a fresh store."""
    out = {"description": "import the python image into a fresh, empty store (each repetition); "
                          "sbx and podman checked by running print(6*7) from the imported image, umoci by chroot",
           "cases": {}}
    img_oci = ctx.images / "python-oci"
    img_docker = ctx.images / "python.docker.tar"
    tmp_base = ctx.work / "import-tmp"
    shutil.rmtree(tmp_base, ignore_errors=True)
    tmp_base.mkdir(parents=True)
    sbx = next((t for t in tools if t.name == "sbx"), None)
    sbx_has_import = "import" in sbx_commands(ctx.sbx)
    sbx_runs = sbx is not None and sbx.state == "ok" and start_ok(res, sbx, "python")[0]

    def case_umoci(d):
        t, p = timed(["umoci", "unpack", "--image", f"{img_oci}:latest", str(d / "bundle")])
        if p.returncode:
            return t, f"failed: {short(p.stderr)}"
        q = sh(["chroot", str(d / "bundle" / "rootfs"), "/usr/bin/python3", "-c", "print(6*7)"], check=False)
        return t, None if q.stdout == "42\n" else f"failed: unpacked rootfs gave {q.stdout!r} {short(q.stderr)}"

    def case_podman(d):
        # podman refuses a runroot longer than 50 characters: keep it short, under /run.
        rr = tempfile.mkdtemp(prefix="bench-podman-imp.", dir="/run")
        base = ["podman", "--root", str(d / "storage"), "--runroot", rr, "--tmpdir", rr + "/tmp",
                "--cgroup-manager=cgroupfs"]
        try:
            t, p = timed([*base, "load", "-q", "-i", str(img_docker)])
            if p.returncode:
                return t, f"failed: {short(p.stderr)}"
            ref = p.stdout.strip().split()[-1]
            q = sh([*base, "run", "--rm", "--pull=never", "--runtime", "runc", "--network", "none",
                    "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", ref,
                    "/usr/bin/python3", "-c", "print(6*7)"], check=False)
            return t, None if q.stdout == "42\n" else f"failed: imported image gave {q.stdout!r} {short(q.stderr)}"
        finally:
            sh([*base, "rm", "-af"], check=False)
            sh([*base, "rmi", "-af"], check=False)
            sh([*base, "system", "reset", "-f"], check=False, timeout=120)
            shutil.rmtree(rr, ignore_errors=True)

    def case_sbx(src):
        def run(d):
            base = [str(ctx.sbx), "--root", str(d / "store"), "--run-root", str(d / "run")]
            t, p = timed([*base, "import", str(src), "py"])
            if p.returncode:
                return t, f"failed: {short(p.stderr)}"
            if sbx_runs:
                q = sh([*base, "run", "--network", "none", "py", *sbx.dashdash, "/usr/bin/python3", "-c", "print(6*7)"],
                       check=False)
                ok = q.stdout == "42\n"
            else:
                q = sh([*base, "images"], check=False)
                ok = q.returncode == 0 and "py" in q.stdout
            return t, None if ok else f"failed: imported image check gave {q.stdout[:60]!r} {short(q.stderr)}"
        return run

    cases = [("umoci unpack (OCI layout)", case_umoci), ("podman load (docker-archive)", case_podman)]
    if sbx_has_import:
        cases += [("sbx import (OCI layout)", case_sbx(img_oci)), ("sbx import (docker-archive)", case_sbx(img_docker))]
    else:
        out["cases"]["sbx import"] = {"status": "not yet available: this sbx has no `import` command"}
    if not sbx_runs and sbx_has_import:
        out["note"] = "`sbx run` of an image does not work in this build, so the sbx import check is `sbx images` only"
    for name, fn in cases:
        out["cases"][name] = {"status": "ok", "samples_s": []}
    for r in range(prof["import_reps"]):
        order = cases[:]
        random.Random(r).shuffle(order)
        for name, fn in order:
            row = out["cases"][name]
            if row["status"] != "ok":
                continue
            d = Path(tempfile.mkdtemp(prefix="imp.", dir=tmp_base))
            try:
                log(f"import: {name} (rep {r + 1})")
                secs, err = fn(d)
            except Exception as ex:  # noqa: BLE001 - reported, never hidden
                secs, err = 0, f"failed: {ex}"
            finally:
                for m in reversed(sh(["findmnt", "-rn", "-o", "TARGET"], check=False).stdout.split()):
                    if m.startswith(str(d)):
                        sh(["umount", "-l", m], check=False)
                shutil.rmtree(d, ignore_errors=True)
            if err:
                row["status"] = err
            else:
                row["samples_s"].append(secs)
    for row in out["cases"].values():
        if "samples_s" in row:
            row["summary_ms"] = summary([s * 1000 for s in row["samples_s"]])
    shutil.rmtree(tmp_base, ignore_errors=True)
    res["scenarios"]["import"] = out


# --------------------------------------------------------------------------- machine facts, cleanup

def cpu_jiffies():
    f = open("/proc/stat").readline().split()[1:]
    v = list(map(int, f))
    idle = v[3] + v[4]
    return sum(v[:8]), idle


def machine_facts(tools):
    facts = {"kernel": platform.release(), "cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                facts["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                facts["mem_total_gib"] = round(int(line.split()[1]) / 2**20, 1)
        facts["os"] = next((line.split("=", 1)[1].strip().strip('"') for line in open("/etc/os-release")
                            if line.startswith("PRETTY_NAME")), "")
    except OSError:
        pass
    vers = {}
    for t in tools:
        try:
            vers[t.name] = t.version()
        except Exception as ex:  # noqa: BLE001
            vers[t.name] = f"? ({ex})"
    for extra in (["umoci", "--version"], ["hyperfine", "--version"]):
        p = sh(extra, check=False)
        vers[extra[0]] = p.stdout.strip().splitlines()[0] if p.stdout.strip() else "?"
    facts["versions"] = vers
    return facts


def load_snapshot():
    la = open("/proc/loadavg").read().split()[:3]
    ps = sh(["ps", "-eo", "comm="], check=False).stdout.split()
    builders = sum(1 for c in ps if c in ("cc1plus", "cc1", "ld", "collect2", "ld.gold", "ld.lld", "make", "ninja"))
    return {"loadavg": list(map(float, la)), "compiler_processes": builders, "time": time.strftime("%H:%M:%S")}


def leak_check(tools):
    leaks = []
    for t in tools:
        try:
            leaks += t.leaks()
        except Exception as ex:  # noqa: BLE001
            leaks.append(f"{t.name}: leak check failed: {ex}")
    mounts = sh(["findmnt", "-rn", "-o", "TARGET"], check=False).stdout.split()
    leaks += [f"mount {m}" for m in mounts if "/bench-" in m or "/bench/work/" in m]
    # runc nests its cgroups under the caller's cgroup, runsc puts them at the top: look a few levels deep.
    for top, dirs, _ in os.walk("/sys/fs/cgroup"):
        if top.count("/") >= 7:
            dirs[:] = []
            continue
        # Only ours: other people on this host may name their cgroups bench-* too.
        leaks += [f"cgroup {top}/{d}" for d in dirs
                  if any(d.startswith(f"bench-{t.name}-{t.ctx.tag}-") for t in tools)
                  or d.startswith(f"bench-cgtest-{os.getpid()}-")
                  or d.startswith("libpod-") and PODMAN_CIDS.intersection({d[7:].split(".")[0]})]
    return leaks


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=str(HERE.parent))
    ap.add_argument("--images", default=os.environ.get("SBX_IMAGES", str(HERE.parent / "tests/images/out")))
    ap.add_argument("--sbx", default=str(HERE.parent / "build" / "sbx"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--only", default="", help="comma list of scenarios: start,throughput,humaneval,profile,exec,import,snapshot")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma list of tools")
    ap.add_argument("--humaneval", default=str(HERE.parent / "tests/data/HumanEval.jsonl.gz"))
    ap.add_argument("--hyperfine", action="store_true", help="cross-check start latency with hyperfine")
    ap.add_argument("--note", default="", help="free text recorded in the results (e.g. why a run was made)")
    args = ap.parse_args()
    prof = PROFILES["quick" if args.quick else "full"]
    only = set(filter(None, args.only.split(",")))
    want = lambda s: not only or s in only or s == "hyperfine"  # noqa: E731

    # Ctrl-C / SIGTERM: stop children, then the finally block below cleans up.
    def on_signal(signum, _frame):
        SPAWN.kill_all()
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    t_start = time.time()
    started = dt.datetime.now(dt.timezone.utc)
    ctx = Ctx(args)
    tools = [TOOL_CLASSES[n](ctx) for n in args.tools.split(",") if n]
    res = {"started_utc": started.isoformat(timespec="seconds"), "profile": "quick" if args.quick else "full",
           "settings": prof, "note": args.note, "scenarios": {}, "load": {"start": load_snapshot()}}
    j0 = cpu_jiffies()
    c0 = os.times()
    interrupted = False
    try:
        ctx.prepare_rootfs()
        res["images"] = {img: {"manifest_digest": ctx.cfg[img]["manifest_digest"], "rootfs": str(ctx.rootfs[img])}
                         for img in ctx.cfg}
        for t in tools:
            try:
                t.setup()
            except Exception as ex:  # noqa: BLE001 - a tool that cannot be set up is reported, not hidden
                t.state, t.error = "failed", f"failed: setup: {ex}"
                log(f"{t.name}: {t.error}")
        res["machine"] = machine_facts(tools)

        def scenario(name, fn, *extra):
            """Runs one scenario; a bug in the harness is reported in the results, not fatal."""
            if not want(name):
                return
            try:
                fn(ctx, tools, prof, res, *extra)
            except KeyboardInterrupt:
                raise
            except Exception as ex:  # noqa: BLE001
                import traceback
                log(f"{name}: harness error: {ex}\n{traceback.format_exc()}")
                res["scenarios"][name] = {"status": f"failed: harness error: {ex!r}"}
            res["load"][f"after_{name}"] = load_snapshot()

        scenario("start", scenario_start)
        if args.hyperfine:
            scenario("hyperfine", scenario_hyperfine)
        scenario("throughput", scenario_throughput)
        scenario("humaneval", scenario_humaneval, Path(args.humaneval))
        scenario("profile", scenario_profile)
        scenario("exec", scenario_exec)
        scenario("import", scenario_import)
        scenario("snapshot", scenario_snapshot)
    except KeyboardInterrupt:
        interrupted = True
        log("interrupted: cleaning up")
    finally:
        for t in tools:
            try:
                t.cleanup()
            except Exception as ex:  # noqa: BLE001
                log(f"{t.name}: cleanup: {ex}")
        res["leaks"] = leak_check(tools)
        res["cleanup_notes"] = CLEANUP_NOTES
        for leak in res["leaks"]:
            log(f"LEAK: {leak}")
    if interrupted:
        sys.exit(130)
    j1 = cpu_jiffies()
    c1 = os.times()
    total, idle = j1[0] - j0[0], j1[1] - j0[1]
    ours = (c1.children_user + c1.children_system + c1.user + c1.system) - \
           (c0.children_user + c0.children_system + c0.user + c0.system)
    hz = os.sysconf("SC_CLK_TCK")
    res["load"]["end"] = load_snapshot()
    res["load"]["host_cpu_busy_pct"] = round(100 * (total - idle) / total, 1) if total else None
    res["load"]["bench_cpu_s"] = round(ours, 1)
    res["load"]["host_cpu_busy_s"] = round((total - idle) / hz, 1)
    res["duration_s"] = round(time.time() - t_start, 1)

    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    stem = started.strftime("%Y-%m-%dT%H%MZ") + ("-quick" if args.quick else "")
    jpath = outdir / f"{stem}.json"
    # Paths inside the checkout are recorded relative to it ("build/sbx",
    # "bench/work/..."): the results say nothing about the machine's layout.
    repo = str(Path(args.repo).resolve())
    jpath.write_text(json.dumps(res, indent=1).replace(repo + "/", "").replace(repo, ".") + "\n")
    log(f"wrote {jpath}")
    r = subprocess.run([sys.executable, str(HERE / "report.py"), str(jpath)])
    if r.returncode:
        sys.exit(r.returncode)
    for ext in ("json", "md", "png"):
        src = outdir / f"{stem}.{ext}"
        if src.exists():
            shutil.copy(src, outdir / f"latest.{ext}")
    print((outdir / f"{stem}.md").read_text())


if __name__ == "__main__":
    main()

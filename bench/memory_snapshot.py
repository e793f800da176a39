#!/usr/bin/env python3
"""Memory snapshots: checkpoint, restore and fork of a Python process.

    sudo python3 bench/memory_snapshot.py [--rounds N] [--sizes 10,100] [--forks 8,50]
                                          [--sbx build/sbx] [--criu PATH] [--json FILE]

For each size (MiB of non-zero data a Python process holds in memory), in
interleaved rounds (every variant once per round, in a random order, so the
load of a shared host hits all alike), medians over the rounds:

- raw CRIU (criu 4.1 from /usr/local/lib/sbx/criu, .ci/criu-build.sh): the
  process runs as pid 1 of its own pid, ipc and uts namespaces
  (`unshare -p -i -u --fork setsid python3 …`); `criu dump`, one
  `criu restore -d`, and a fork of K: K `criu restore -d` of one image at
  once. Images on disk (under --root's disk) and on tmpfs (/dev/shm).
  Per copy = wall time of the K restores / K (restore -d returns once the
  tree runs).
- lazy restore (`criu lazy-pages` + `criu restore --lazy-pages`): a copy
  pays only for the pages it touches before it runs (one lazy-pages daemon
  per copy, each reading the same image; CRIU has no page server shared by
  several restores).
- sandbox-shaped ("shaped"): the process as pid 1 of its own user (a host
  id range), pid, mount, ipc, uts and net namespaces, pivoted into an
  overlay of the python image: what a native sbx sandbox is, without sbx's
  init. A fork of K makes per copy an image dir (hard links; the userns
  maps rewritten to a host id range of its own), a copy of the writable
  layer chowned to it and an overlay, then runs the K `criu restore --root`
  at once; timed from the first copy's preparation until every copy has
  answered a first exec (nsenter into all its namespaces + /bin/true, as
  `sbx exec` joins them). Checks that no two copies share host ids.
- gVisor through sbx: `sbx checkpoint`, `sbx restore`, `sbx restore --count
  K`, per copy = wall time until every copy has answered `sbx exec ID true`,
  / K.
- native through sbx: `sbx checkpoint` of a native sandbox (reported: it is
  refused today, see the note printed).

Targets (issue): fork per copy < 50 ms (100 MiB, K=8) and <= 0.5x gVisor's.
Everything is made in a temp dir and removed at the end (processes killed).
"""
import argparse
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

PROG = r"""
import os, sys, time
mib = int(sys.argv[1])
block = os.urandom(1 << 20)
data = [bytearray(block) for _ in range(mib)]   # mib MiB of distinct, non-zero pages
open(sys.argv[2], "w").write("ready")
n = 0
while True:
    n += 1
    time.sleep(0.05)
"""


def now():
    return time.perf_counter()


def wait_file(path, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            return
        time.sleep(0.01)
    raise RuntimeError(f"{path} did not appear within {timeout} s")

LAUNCH = r"""
# Starts `python3 /prog.py MIB /tmp/ready` as pid 1 of new user (ids
# 0..65535 -> host BASE..), pid, mount, ipc, uts and net namespaces, pivoted
# into ROOT (an overlay of the python image), stdio on files inside ROOT:
# the shape of a native sbx sandbox (without sbx's init).
import ctypes, os, sys, time
base, mib, root = int(sys.argv[1]), sys.argv[2], sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    if libc.unshare(0x10000000 | 0x20000000 | 0x08000000 | 0x04000000 | 0x40000000 | 0x00020000) != 0:
        os._exit(90)
    os.read(r, 1)  # maps written
    if os.fork() == 0:
        os.setsid()
        os.setresgid(0, 0, 0); os.setresuid(0, 0, 0)
        libc.mount(b"none", b"/", None, 0x40000 | 0x4000, None)
        libc.mount(root.encode(), root.encode(), None, 0x1000 | 0x4000, None)
        os.chdir(root)
        if libc.syscall(155, b".", b"old") != 0: os._exit(92)
        os.chdir("/")
        if libc.mount(b"proc", b"/proc", b"proc", 0, None) != 0: os._exit(91)
        libc.umount2(b"/old", 2)
        fd = os.open("/prog.py", os.O_RDONLY); os.dup2(fd, 0)
        fd = os.open("/tmp/out.log", os.O_WRONLY | os.O_CREAT, 0o644)
        os.dup2(fd, 1); os.dup2(fd, 2)
        os.closerange(3, 65536)
        os.execv("/usr/bin/python3", ["python3", "/prog.py", mib, "/tmp/ready"])
    os._exit(0)
os.close(r)
time.sleep(0.05)
open(f"/proc/{pid}/uid_map", "w").write(f"0 {base} 65536")
open(f"/proc/{pid}/setgroups", "w").write("deny")
open(f"/proc/{pid}/gid_map", "w").write(f"0 {base} 65536")
os.write(w, b"g")
os.waitpid(pid, 0)
"""


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            return r, i


def put_varint(v):
    o = bytearray()
    while True:
        c, v = v & 0x7f, v >> 7
        o.append(c | 0x80 if v else c)
        if not v:
            return bytes(o)


def remap_userns(path, old, new, count=65536):
    """userns-*.img: host ids [old, old+count) -> [new, …) (what sbx's
    runtime/native/criu_image.h remap_criu_userns_images does)."""
    b = open(path, "rb").read()
    n = int.from_bytes(b[8:12], "little")
    msg, i, out = b[12:12 + n], 0, bytearray()
    while i < len(msg):
        key, i = varint(msg, i)
        ln, i = varint(msg, i)
        sub, i, j, f = msg[i:i + ln], i + ln, 0, {}
        while j < len(sub):
            k, j = varint(sub, j)
            f[k >> 3], j = varint(sub, j)
        if old <= f[2] < old + count:
            f[2] += new - old
        e = b"".join(put_varint(k << 3) + put_varint(f[k]) for k in (1, 2, 3))
        out += put_varint(key) + put_varint(len(e)) + e
    with open(path, "wb") as fh:
        fh.write(b[:8] + len(out).to_bytes(4, "little") + bytes(out))


def kill_all(pids):
    """SIGKILL each of PIDS that is still there."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Shaped:
    """CRIU on a sandbox-shaped process (LAUNCH): a fork makes, per copy, its
    own image dir (hard links, userns maps rewritten to a host id range of
    its own), writable layer (the checkpoint's upper dir, copied and chowned
    to that range) and overlay, then restores all copies at once with
    `criu restore --root`."""

    BASE = 3_500_000_000  # host ids of the bench's own (65536 per copy)

    def __init__(self, criu, tmp, layer):
        self.criu, self.tmp, self.layer = criu, tmp, layer
        self.mounts, self.restored, self.n = [], [], 0

    def _root(self, upper_from=None, base=None):
        self.n += 1
        d = os.path.join(self.tmp, f"sb{self.n}")
        os.makedirs(os.path.join(d, "work"))
        os.makedirs(os.path.join(d, "merged"))
        up = os.path.join(d, "upper")
        if upper_from:
            subprocess.run(["cp", "-a", upper_from, up], check=True)
            subprocess.run(["chown", "-R", f"--from={self.BASE}:{self.BASE}", f"{base}:{base}", up], check=True)
        else:
            os.makedirs(up)
        merged = os.path.join(d, "merged")
        subprocess.run(["mount", "-t", "overlay", "none", "-o",
                        f"lowerdir={self.layer},upperdir={up},workdir={d}/work", merged], check=True)
        self.mounts.append(merged)
        return d

    def start(self, mib):
        d = self._root()
        os.makedirs(os.path.join(d, "merged/old"))  # pivot_root's put_old
        with open(os.path.join(d, "merged/prog.py"), "w") as f:
            f.write(PROG)
        subprocess.run(["python3", "-c", LAUNCH, str(self.BASE), str(mib), os.path.join(d, "merged")], check=True)
        wait_file(os.path.join(d, "merged/tmp/ready"))
        out = subprocess.run(["pgrep", "-f", f"/prog.py {mib} /tmp/ready"], capture_output=True, text=True).stdout
        pids = [int(p) for p in out.split() if f"{self.BASE}" in open(f"/proc/{p}/uid_map").read()]
        return d, pids[-1]

    def dump(self, pid, images):
        os.makedirs(images)
        t0 = now()
        r = subprocess.run([self.criu, "dump", "-t", str(pid), "-D", images, "-o", "dump.log"], capture_output=True)
        dt = now() - t0
        if r.returncode != 0:
            raise RuntimeError(f"criu dump failed: {open(os.path.join(images, 'dump.log')).read()[-2000:]}")
        return dt

    def fork(self, sbdir, images, k):
        t0 = now()
        procs = []
        for i in range(k):
            base = self.BASE + 65536 * (len(self.restored) + i + 1)
            d = self._root(os.path.join(sbdir, "upper"), base)
            img = os.path.join(d, "img")
            os.makedirs(img)
            for f in os.listdir(images):
                src, dst = os.path.join(images, f), os.path.join(img, f)
                if f.startswith("userns-"):
                    shutil.copy(src, dst)
                    remap_userns(dst, self.BASE, base)
                else:
                    os.link(src, dst)
            pidfile = os.path.join(d, "pid")
            procs.append((subprocess.Popen([self.criu, "restore", "-D", img, "-d", "--root", os.path.join(d, "merged"),
                                            "-o", "restore.log", "--pidfile", pidfile], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE), pidfile, img))
        bad = []
        for p, pidfile, img in procs:
            p.communicate()
            if p.returncode != 0:
                bad.append(open(os.path.join(img, "restore.log")).read()[-800:])
            else:
                self.restored.append(int(open(pidfile).read()))
        if not bad:
            # Every copy answers a first exec: a process joins all its
            # namespaces (as `sbx exec` does) and runs there.
            for pid in self.restored[-k:]:
                subprocess.run(["nsenter", "-t", str(pid), "-U", "-m", "-p", "-i", "-u", "-n", "--preserve-credentials",
                                "/bin/true"], check=True)
        dt = now() - t0
        if bad:
            raise RuntimeError(f"criu restore failed ({len(bad)} of {k}): {bad[0]}")
        # Distinct host ids per copy, and every copy alive.
        maps = {open(f"/proc/{p}/uid_map").read().split()[1] for p in self.restored[-k:]}
        if len(maps) != k:
            raise RuntimeError(f"copies share host ids: {maps}")
        return dt

    def cleanup(self):
        kill_all(self.restored)
        self.restored = []
        time.sleep(0.2)
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)
        self.mounts = []


class Raw:
    """Raw CRIU on a process in its own pid/ipc/uts namespaces."""

    def __init__(self, criu, tmp):
        self.criu, self.tmp = criu, tmp
        self.prog = os.path.join(tmp, "prog.py")
        with open(self.prog, "w") as f:
            f.write(PROG)
        self.restored = []  # host pids of restored trees (killed after each variant)

    def start(self, mib):
        ready = os.path.join(self.tmp, f"ready-{random.getrandbits(32):08x}")
        p = subprocess.Popen(["unshare", "-p", "-i", "-u", "--fork", "setsid", "python3", self.prog, str(mib), ready],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        wait_file(ready)
        kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        return p, int(kids[0])

    def dump(self, pid, images):
        os.makedirs(images)
        t0 = now()
        r = subprocess.run([self.criu, "dump", "-t", str(pid), "-D", images, "-o", "dump.log"], capture_output=True,
                           text=True)
        dt = now() - t0
        if r.returncode != 0:
            raise RuntimeError(f"criu dump failed: {open(os.path.join(images, 'dump.log')).read()[-2000:]}")
        return dt

    def restore_many(self, images, k, lazy=False):
        """K restores of `images` at once; returns the wall time until all run."""
        procs, lazies, wds = [], [], []
        if lazy:
            # One lazy-pages daemon per copy, each with its own socket dir,
            # started ahead (a standing page server, as a fork service would
            # keep one): not counted.
            for i in range(k):
                wd = tempfile.mkdtemp(dir=self.tmp, prefix="lazy.")
                lazies.append(subprocess.Popen([self.criu, "lazy-pages", "-D", images, "-W", wd, "-o",
                                                os.path.join(wd, "lazy.log")], stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL))
                wds.append(wd)
            for wd in wds:
                wait_file(os.path.join(wd, "lazy-pages.socket"), 10)
        t0 = now()
        for i in range(k):
            pidfile = os.path.join(self.tmp, f"pid-{random.getrandbits(32):08x}")
            argv = [self.criu, "restore", "-D", images, "-d", "-o", f"restore-{os.getpid()}-{i}.log",
                    "--pidfile", pidfile]
            if lazy:
                argv += ["--lazy-pages", "-W", wds[i]]
            procs.append((subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), pidfile))
        bad = []
        for p, pidfile in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                bad.append(err.decode()[-500:])
            else:
                try:
                    self.restored.append(int(open(pidfile).read()))
                except (OSError, ValueError):
                    pass
        dt = now() - t0
        for l in lazies:  # each daemon exits once its copy has all its pages
            try:
                l.wait(timeout=60)
            except subprocess.TimeoutExpired:
                l.kill()
        if bad:
            raise RuntimeError(f"criu restore failed ({len(bad)} of {k}): {bad[0]}")
        return dt

    def kill_restored(self):
        kill_all(self.restored)
        self.restored = []


class Sbx:
    def __init__(self, sbx, tmp, images):
        self.sbx = sbx
        self.g = ["--root", os.path.join(tmp, "root"), "--run-root", os.path.join(tmp, "run")]
        self.prog = PROG
        subprocess.run([sbx, *self.g, "import", "-q", os.path.join(images, "python-oci"), "python"], check=True,
                       stdout=subprocess.DEVNULL)

    def run(self, *a, check=True):
        r = subprocess.run([self.sbx, *self.g, *a], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"sbx {' '.join(a[:3])} failed ({r.returncode}): {r.stderr.strip()[-1000:]}")
        return r

    def start(self, runtime, mib):
        sid = self.run("create", "--runtime", runtime, "--network", "none", "--memory", f"{mib * 3 + 128}m", "python",
                       "--", "python3", "-c", self.prog, str(mib), "/tmp/ready").stdout.strip()
        end = time.time() + 60
        while self.run("exec", sid, "test", "-e", "/tmp/ready", check=False).returncode != 0:
            if time.time() > end:
                raise RuntimeError("the sandbox's process never got ready")
            time.sleep(0.05)
        return sid

    def checkpoint(self, sid, name):
        t0 = now()
        self.run("checkpoint", sid, "--name", name)
        return now() - t0

    def restore(self, name, k):
        t0 = now()
        out = self.run("restore", name, "--count", str(k)).stdout.split()
        ids = [x for x in out if len(x) >= 12]
        for i in ids:  # every copy answers its first exec
            self.run("exec", i, "true")
        dt = now() - t0
        for i in ids:
            self.run("rm", "-f", i, check=False)
        return dt

    def cleanup(self):
        for line in self.run("ps", "-aq", check=False).stdout.split():
            self.run("rm", "-f", line, check=False)


def med(x):
    return statistics.median(x) * 1000 if x else float("nan")


def report(samples, forks, rounds, out):
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, rounds {rounds} (medians, ms)", file=out)
    for key in sorted(samples):
        x = samples[key]
        line = f"{key:40s} {med(x):9.1f}"
        for k in forks:
            if key.endswith(f"fork{k} total"):
                line += f"   per copy {med(x) / k:7.1f}"
        print(line, file=out, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="10,100")
    ap.add_argument("--forks", default="8,50")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--sbx", default=os.path.join(repo, "build/sbx"))
    ap.add_argument("--criu", default="/usr/local/lib/sbx/criu/sbin/criu")
    ap.add_argument("--images", default=os.environ.get("SBX_IMAGES", os.path.join(repo, "tests/images/out")))
    ap.add_argument("--no-gvisor", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    forks = [int(k) for k in a.forks.split(",")]
    disk_tmp = tempfile.mkdtemp(prefix="sbx-memsnap.", dir="/var/tmp")
    shm_tmp = tempfile.mkdtemp(prefix="sbx-memsnap.", dir="/dev/shm")
    os.chmod(disk_tmp, 0o755)  # the shaped sandboxes' unprivileged root walks through it
    raw = Raw(a.criu, disk_tmp)
    store = Sbx(a.sbx, disk_tmp, a.images)  # the python image's layers, and gVisor
    layers = json.loads(store.run("inspect", "python").stdout)["LayerDirs"]
    shaped = Shaped(a.criu, disk_tmp, ":".join(reversed(layers)))
    sbx = None if a.no_gvisor else store
    samples = {}

    def add(key, v):
        samples.setdefault(key, []).append(v)

    starts = []
    try:
        for rnd in range(a.rounds):
            variants = []
            for mib in sizes:
                for where, base in (("disk", disk_tmp), ("tmpfs", shm_tmp)):
                    variants.append(("raw", mib, where, base))
                variants.append(("lazy", mib, "disk", disk_tmp))
                variants.append(("shaped", mib, "disk", disk_tmp))
                if sbx:
                    variants.append(("gvisor", mib, "disk", disk_tmp))
            random.shuffle(variants)
            for kind, mib, where, base in variants:
                tag = f"{kind} {mib}MiB" + (f" {where}" if kind == "raw" else "")
                if kind in ("raw", "lazy"):
                    imgs = os.path.join(base, f"img-{rnd}-{kind}-{mib}-{where}")
                    p, pid = raw.start(mib)
                    starts.append(p)
                    add(f"{tag} checkpoint", raw.dump(pid, imgs))
                    p.wait()
                    add(f"{tag} restore", raw.restore_many(imgs, 1, lazy=kind == "lazy"))
                    raw.kill_restored()
                    for k in forks:
                        add(f"{tag} fork{k} total", raw.restore_many(imgs, k, lazy=kind == "lazy"))
                        raw.kill_restored()
                    shutil.rmtree(imgs, ignore_errors=True)
                elif kind == "shaped":
                    imgs = os.path.join(base, f"img-{rnd}-{kind}-{mib}")
                    d, pid = shaped.start(mib)
                    add(f"{tag} checkpoint", shaped.dump(pid, imgs))
                    shaped.cleanup()
                    add(f"{tag} restore", shaped.fork(d, imgs, 1))
                    shaped.cleanup()
                    for k in forks:
                        add(f"{tag} fork{k} total", shaped.fork(d, imgs, k))
                        shaped.cleanup()
                    shutil.rmtree(imgs, ignore_errors=True)
                else:
                    sid = sbx.start("gvisor", mib)
                    name = f"bench-{rnd}-{mib}"
                    add(f"{tag} checkpoint", sbx.checkpoint(sid, name))
                    add(f"{tag} restore", sbx.restore(name, 1))
                    for k in forks:
                        add(f"{tag} fork{k} total", sbx.restore(name, k))
                    sbx.run("snapshots", "rm", name, check=False)
                    sbx.cleanup()
                print(f"round {rnd + 1}/{a.rounds}: {tag} done", file=sys.stderr)
            report(samples, forks, rnd + 1, sys.stderr)  # so far (a long run may be cut short)
        native_note = ""
        if sbx:
            try:
                sid = sbx.start("native", 10)
                r = sbx.run("checkpoint", sid, "--name", "bench-native", check=False)
                native_note = (r.stderr or r.stdout).strip().splitlines()[-1] if r.returncode else "native checkpoint works"
                sbx.cleanup()
            except RuntimeError as e:
                native_note = str(e)
    finally:
        raw.kill_restored()
        shaped.cleanup()
        for p in starts:
            if p.poll() is None:
                p.kill()
        store.cleanup()
        shutil.rmtree(disk_tmp, ignore_errors=True)
        shutil.rmtree(shm_tmp, ignore_errors=True)

    report(samples, forks, a.rounds, sys.stdout)
    if native_note:
        print(f"native sbx checkpoint: {native_note}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"samples_s": samples, "native": native_note, "load": os.getloadavg()[0]}, f, indent=2)


if __name__ == "__main__":
    main()

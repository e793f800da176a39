#!/usr/bin/env python3
"""Attacks on `sbx serve` from clients without a token, or slow ones, for the
adversarial suite (tests/adversarial/run.sh, cases serve_*). Each check prints
"ok: …" or "FAIL: …"; the exit status is 1 when any failed.

    serve_attack.py bodies|flood|slow|fds --pid PID --unix SOCK --tcp PORT
        --e2b PORT --token TOKEN [--header-timeout S] [--idle-timeout S] [--flood N]

  bodies: an authenticated 256 MiB tar goes to disk, not memory; two
          unauthenticated 1 GiB uploads at once (TCP: PUT archive, no
          token; E2B: POST /files for no sandbox) are refused on their
          headers: the answer comes before the body is sent and the server's
          peak RSS (VmHWM) stays within 100 MB; an authenticated
          Content-Length over the bound is 413 before the body, and a chunked
          JSON body over 4 MiB is cut off with 413.
  flood:  N idle connections to the TCP and the E2B port each (from
          127.0.0.1): the server holds them without a thread each, the unix
          socket and TCP/E2B clients from another address (127.0.0.2) are
          answered, and 127.0.0.1 over its per-client bound gets 503.
  slow:   a silent connection and a slowloris head (one byte every 0.5 s)
          are closed by the header time-out on the unix socket, TCP and E2B;
          a stalled body gets 408; a kept-alive idle connection is closed by
          the idle time-out; an /events stream outlives both.
  fds:    with the server's RLIMIT_NOFILE lowered (prlimit) and connections
          pending, the server does not spin (CPU time over 3 s) and answers
          again once the limit is back.

Deadlines here are liveness bounds for a hung server, generous on purpose
(a loaded host), never speed targets.
"""
import argparse
import os
import select
import socket
import subprocess
import sys
import threading
import time

failed = 0


def ok(msg):
    print("ok: " + msg, flush=True)


def fail(msg):
    global failed
    failed += 1
    print("FAIL: " + msg, flush=True)


def check(cond, msg):
    (ok if cond else fail)(msg)
    return cond


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def connect(target, src=None, timeout=30):
    """target: a unix socket path or a TCP port on 127.0.0.1."""
    if isinstance(target, str):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(target)
        return s
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if src:
        s.bind((src, 0))
    s.connect(("127.0.0.1", target))
    return s


def read_response(s, deadline):
    """(status, raw head) of the response on s; status None when the
    connection ended or the deadline passed first."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        left = deadline - time.time()
        if left <= 0:
            return None, buf
        s.settimeout(left)
        try:
            d = s.recv(65536)
        except (socket.timeout, ConnectionResetError, BrokenPipeError, OSError):
            return None, buf
        if not d:
            return None, buf
        buf += d
    try:
        return int(buf.split(b" ", 2)[1]), buf
    except (IndexError, ValueError):
        return None, buf


def request(target, method, path, headers=None, body=b"", src=None, timeout=30):
    h = {"Host": "sbx", "Content-Length": str(len(body))}
    h.update(headers or {})
    raw = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    try:
        s = connect(target, src, timeout)
        s.sendall(raw.encode() + body)
        st, _ = read_response(s, time.time() + timeout)
        s.close()
        return st
    except OSError:
        return None


def upload(target, head, total, timeout=120):
    """Sends head, then up to `total` body bytes while watching for an
    answer. Returns (status, bytes of body sent, seconds to the answer)."""
    s = connect(target)
    t0 = time.time()
    s.sendall(head.encode())
    s.setblocking(False)
    chunk = b"\0" * (1 << 20)
    sent, resp = 0, b""
    deadline = t0 + timeout
    while time.time() < deadline:
        r, w, _ = select.select([s], [s] if sent < total else [], [], 1)
        if r:
            try:
                d = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                break
            if not d:
                break
            resp += d
            if b"\r\n\r\n" in resp:
                break
        elif w:
            try:
                sent += s.send(chunk[: min(len(chunk), total - sent)])
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                # Refused and closed: the answer may still be readable.
                s.setblocking(True)
                st, _ = read_response(s, time.time() + 5)
                s.close()
                return st, sent, time.time() - t0
    s.close()
    try:
        st = int(resp.split(b" ", 2)[1]) if resp else None
    except (IndexError, ValueError):
        st = None
    return st, sent, time.time() - t0


GiB = 1 << 30


def cmd_bodies(a):
    # First (VmHWM is the peak of the server's life): an authenticated tar
    # is read whole, to disk.
    auth = f"Authorization: Bearer {a.token}\r\n"
    hwm0 = proc_status(a.pid, "VmHWM")
    size = 256 << 20
    head = ("PUT /v1.44/containers/nosuch/archive?path=/ HTTP/1.1\r\nHost: sbx\r\n" + auth +
            f"Content-Type: application/x-tar\r\nContent-Length: {size}\r\n\r\n")
    st, sent, _ = upload(a.tcp, head, size)
    grew = (proc_status(a.pid, "VmHWM") - hwm0) // 1024
    check(st == 404 and sent == size, f"an authenticated 256 MiB tar for no container was read whole and answered {st} (want 404)")
    check(grew < 100, f"… the server's peak RSS grew {grew} MB (the body went to disk; bound 100 MB)")

    hwm0 = proc_status(a.pid, "VmHWM")
    results = {}

    def tcp():
        head = ("PUT /v1.44/containers/nosuch/archive?path=/ HTTP/1.1\r\nHost: sbx\r\n"
                f"Content-Type: application/x-tar\r\nContent-Length: {GiB}\r\n\r\n")
        results["tcp"] = upload(a.tcp, head, GiB)

    def e2b():
        head = ("POST /files?path=/tmp/x HTTP/1.1\r\nHost: sbx\r\nE2b-Sandbox-Id: nosuchsandbox\r\n"
                "X-Access-Token: nope\r\nContent-Type: application/octet-stream\r\n"
                f"Content-Length: {GiB}\r\n\r\n")
        results["e2b"] = upload(a.e2b, head, GiB)

    ts = [threading.Thread(target=tcp), threading.Thread(target=e2b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    grew = (proc_status(a.pid, "VmHWM") - hwm0) // 1024
    st, sent, dt = results["tcp"]
    check(st == 401, f"TCP upload without a token answered {st} (want 401) after {sent >> 20} MiB sent, {dt:.1f} s")
    check(sent < GiB // 2, f"… the answer came before the body was sent ({sent >> 20} of 1024 MiB)")
    st, sent, dt = results["e2b"]
    check(st in (401, 502), f"E2B upload for no sandbox answered {st} (want 502/401) after {sent >> 20} MiB sent, {dt:.1f} s")
    check(sent < GiB // 2, f"… the answer came before the body was sent ({sent >> 20} of 1024 MiB)")
    check(grew < 100, f"the server's peak RSS grew {grew} MB over both uploads (bound 100 MB)")

    head = ("PUT /v1.44/containers/nosuch/archive?path=/ HTTP/1.1\r\nHost: sbx\r\n" + auth +
            f"Content-Type: application/x-tar\r\nContent-Length: {2 * GiB}\r\n\r\n")
    st, sent, _ = upload(a.tcp, head, 2 * GiB)
    check(st == 413 and sent < GiB, f"an authenticated 2 GiB Content-Length answered {st} (want 413) after {sent >> 20} MiB")
    head = ("POST /v1.44/containers/create HTTP/1.1\r\nHost: sbx\r\n" + auth +
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    s = connect(a.tcp)
    s.sendall(head.encode())
    piece = b"%x\r\n%s\r\n" % (1 << 16, b" " * (1 << 16))
    st = None
    try:
        for _ in range(128):  # 8 MiB, twice the JSON bound
            s.sendall(piece)
            r, _, _ = select.select([s], [], [], 0)
            if r:
                break
        st, _ = read_response(s, time.time() + 30)
    except OSError:
        st, _ = read_response(s, time.time() + 5)
    s.close()
    check(st == 413, f"an authenticated chunked JSON body over 4 MiB answered {st} (want 413)")

def cmd_flood(a):
    rss0 = proc_status(a.pid, "VmRSS")
    conns = []
    for port in (a.tcp, a.e2b):
        for _ in range(a.flood):
            try:
                conns.append(connect(port, timeout=30))
            except OSError as e:
                fail(f"connect {len(conns) + 1} to port {port}: {e}")
                break
    ok(f"{len(conns)} idle connections open to the TCP and E2B ports (from 127.0.0.1)")
    time.sleep(2)
    th = proc_status(a.pid, "Threads")
    check(th < 100, f"the server runs {th} threads while holding them (no thread per connection)")
    check(request(a.unix, "GET", "/_ping", timeout=30) == 200, "the unix socket answers _ping")
    auth = {"Authorization": f"Bearer {a.token}"}
    check(request(a.tcp, "GET", "/_ping", auth, src="127.0.0.2", timeout=30) == 200,
          "TCP with the token from 127.0.0.2 (within its per-client bound) answers _ping")
    check(request(a.e2b, "GET", "/sandboxes", {"X-API-Key": a.token}, src="127.0.0.2", timeout=30) == 200,
          "the E2B API from 127.0.0.2 answers GET /sandboxes")
    st = request(a.tcp, "GET", "/_ping", auth, timeout=30)
    check(st == 503, f"TCP from 127.0.0.1, over its per-client bound, answered {st} (want 503)")
    grew = (proc_status(a.pid, "VmRSS") - rss0) // 1024
    check(grew < 100, f"the server's RSS grew {grew} MB holding them (bound 100 MB)")
    for c in conns:
        c.close()
    check(request(a.tcp, "GET", "/_ping", auth, timeout=30) == 200, "after the flood, TCP from 127.0.0.1 answers again")


def wait_closed(s, limit):
    """Seconds until the server closed s (EOF, reset, or its answer then EOF); None past limit."""
    t0 = time.time()
    s.settimeout(0.5)
    while time.time() - t0 < limit:
        try:
            d = s.recv(65536)
            if not d:
                return time.time() - t0
        except socket.timeout:
            continue
        except OSError:
            return time.time() - t0
    return None


def cmd_slow(a):
    limit = a.header_timeout * 3 + 10
    results = {}

    def silent(name, target):
        s = connect(target)
        results["silent " + name] = wait_closed(s, limit)
        s.close()

    def slowloris(name, target):
        s = connect(target)
        s.sendall(b"GET /_ping HTTP/1.1\r\nHost: sbx\r\nX-Slow: ")
        t0 = time.time()
        closed = None
        while time.time() - t0 < limit:
            try:
                s.send(b"a")
            except OSError:
                closed = time.time() - t0
                break
            r, _, _ = select.select([s], [], [], 0.5)
            if r:
                try:
                    if not s.recv(65536):
                        closed = time.time() - t0
                        break
                except OSError:
                    closed = time.time() - t0
                    break
        results["slowloris " + name] = closed
        s.close()

    def slow_body():
        s = connect(a.unix)
        s.sendall(b"POST /v1.44/containers/create HTTP/1.1\r\nHost: sbx\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n{")
        st, _ = read_response(s, time.time() + a.idle_timeout * 3 + 10)
        results["slow body"] = st
        s.close()

    def keepalive():
        s = connect(a.unix)
        s.sendall(b"GET /_ping HTTP/1.1\r\nHost: sbx\r\n\r\n")
        st, raw = read_response(s, time.time() + 30)
        if st != 200:
            results["kept-alive idle"] = "no answer"
            return
        results["kept-alive idle"] = wait_closed(s, a.idle_timeout * 3 + 10)
        s.close()

    def stream():
        s = connect(a.unix)
        s.sendall(b"GET /v1.44/events HTTP/1.1\r\nHost: sbx\r\n\r\n")
        st, _ = read_response(s, time.time() + 30)
        if st != 200:
            results["events"] = f"answered {st}"
            return
        closed = wait_closed(s, a.header_timeout + a.idle_timeout + 4)
        results["events"] = "closed after %.1f s" % closed if closed is not None else "open"
        s.close()

    ts = []
    for name, target in (("unix", a.unix), ("TCP", a.tcp), ("E2B", a.e2b)):
        ts.append(threading.Thread(target=silent, args=(name, target)))
        ts.append(threading.Thread(target=slowloris, args=(name, target)))
    ts += [threading.Thread(target=slow_body), threading.Thread(target=keepalive), threading.Thread(target=stream)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for k in sorted(results):
        v = results[k]
        if k.startswith("silent") or k.startswith("slowloris") or k == "kept-alive idle":
            check(isinstance(v, float), f"{k}: closed by the server" + (f" after {v:.1f} s" if isinstance(v, float)
                                                                          else f": {v or 'not within %d s' % limit}"))
        elif k == "slow body":
            check(v == 408, f"a stalled body answered {v} (want 408)")
        elif k == "events":
            check(v == "open", f"an /events stream past both time-outs: {v} (want open)")
    check(request(a.unix, "GET", "/_ping", timeout=30) == 200, "the unix socket still answers")


def cmd_fds(a):
    fd_dir = f"/proc/{a.pid}/fd"
    n = len(os.listdir(fd_dir))
    soft = hard = None
    with open(f"/proc/{a.pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
    subprocess.run(["prlimit", "--pid", str(a.pid), f"--nofile={n + 4}:{hard}"], check=True)
    conns = []
    try:
        for _ in range(40):
            conns.append(connect(a.tcp, timeout=5))
        time.sleep(1)
        c0 = cpu_seconds(a.pid)
        time.sleep(3)
        used = cpu_seconds(a.pid) - c0
        check(used < 0.3, f"out of descriptors with connections pending, the server used {used:.2f} s of CPU in 3 s "
                          "(bound 0.3: it must not spin on accept)")
    finally:
        subprocess.run(["prlimit", "--pid", str(a.pid), f"--nofile={soft}:{hard}"], check=True)
        for c in conns:
            c.close()
    deadline = time.time() + 30
    auth = {"Authorization": f"Bearer {a.token}"}
    u = t = None
    while time.time() < deadline and (u != 200 or t != 200):
        u = request(a.unix, "GET", "/_ping", timeout=10)
        t = request(a.tcp, "GET", "/_ping", auth, timeout=10)
        if u != 200 or t != 200:
            time.sleep(0.5)
    check(u == 200 and t == 200, f"with the limit back, the unix socket and TCP answer ({u}, {t})")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["bodies", "flood", "slow", "fds"])
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--unix", required=True)
    p.add_argument("--tcp", type=int, required=True)
    p.add_argument("--e2b", type=int, required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--header-timeout", type=float, default=2)
    p.add_argument("--idle-timeout", type=float, default=3)
    p.add_argument("--flood", type=int, default=1100)
    a = p.parse_args()
    {"bodies": cmd_bodies, "flood": cmd_flood, "slow": cmd_slow, "fds": cmd_fds}[a.what](a)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

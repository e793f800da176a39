"""The connection to ``sbx serve``: HTTP/1.1 over a unix socket or loopback
TCP with a bearer token, standard library only.

Where the server is, in this order: the ``host`` given to :class:`Client`;
``SBX_HOST`` (``unix:///path/to.sock`` or ``http://127.0.0.1:PORT``, the
token in ``SBX_TOKEN``); ``sbx serve``'s default socket, ``docker.sock`` in
sbx's run root (``$SBX_RUN_ROOT``, default ``/run/sbx``).
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import urllib.parse
from typing import Any, Dict, Iterator, Optional, Tuple

from . import errors

DEFAULT_SOCKET = "/run/sbx/docker.sock"


def default_socket() -> str:
    """``sbx serve``'s default socket: docker.sock in the run root that sbx
    itself uses (``$SBX_RUN_ROOT``, else /run/sbx)."""
    run_root = os.environ.get("SBX_RUN_ROOT")
    return os.path.join(run_root, "docker.sock") if run_root else DEFAULT_SOCKET

# The exec stream's frame kinds (docs/api.md, server/v1/sbx_v1.h).
STDIN, STDOUT, STDERR, EXIT, STDIN_CLOSE, KILL, RESIZE, ERROR = range(8)


def frame(kind: int, payload: bytes = b"") -> bytes:
    """One exec-stream frame: kind (1 byte), length (4 bytes, big-endian), payload."""
    return bytes([kind]) + len(payload).to_bytes(4, "big") + payload


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if self.timeout is not None:
            s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class Client:
    """A connection to one ``sbx serve``.

    ``host``: ``unix:///path`` or ``http://127.0.0.1:PORT`` (default: as the
    module says); ``token``: the bearer token for TCP (default ``SBX_TOKEN``);
    ``timeout``: seconds to wait for a plain answer (None: forever).
    Thread-safe: every call opens its own connection (kept alive per thread).
    Raises :class:`sbx.ConnectionError` when the server cannot be reached.
    """

    def __init__(self, host: Optional[str] = None, token: Optional[str] = None,
                 timeout: Optional[float] = None) -> None:
        host = host or os.environ.get("SBX_HOST") or ("unix://" + default_socket())
        self.host = host
        self.token = token if token is not None else os.environ.get("SBX_TOKEN")
        self.timeout = timeout
        u = urllib.parse.urlparse(host)
        if u.scheme == "unix":
            self._unix: Optional[str] = u.path or u.netloc
            self._tcp: Optional[Tuple[str, int]] = None
        elif u.scheme in ("http", "tcp"):
            self._unix = None
            self._tcp = (u.hostname or "127.0.0.1", u.port or 80)
        else:
            raise errors.InvalidArgument(f"SBX_HOST {host!r}: use unix:///path or http://127.0.0.1:PORT")
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"sbx.Client({self.host!r})"

    # -- plumbing ----------------------------------------------------------

    def _unreachable(self, e: BaseException) -> errors.ConnectionError:
        return errors.ConnectionError(
            f"cannot reach sbx serve at {self.host} ({e}); start it with "
            f"'sbx serve' (or 'sbx serve --socket PATH'), or set SBX_HOST=unix:///path/to.sock")

    def _connection(self) -> http.client.HTTPConnection:
        c = getattr(self._local, "conn", None)
        if c is None:
            if self._unix is not None:
                c = _UnixHTTPConnection(self._unix, self.timeout)
            else:
                assert self._tcp is not None
                c = http.client.HTTPConnection(self._tcp[0], self._tcp[1], timeout=self.timeout)
            self._local.conn = c
        return c

    def _headers(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        h = {"Host": "sbx"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if extra:
            h.update(extra)
        return h

    @staticmethod
    def _target(path: str, query: Optional[Dict[str, Any]]) -> str:
        if not query:
            return path
        def one(v: Any) -> str:
            return "1" if v is True else "0" if v is False else str(v)
        # A list: the key repeated (tolerate_regex=a&tolerate_regex=b).
        q = [(k, one(x)) for k, v in query.items() if v is not None
             for x in (v if isinstance(v, (list, tuple)) else [v])]
        return path + "?" + urllib.parse.urlencode(q)

    def _raise_for(self, status: int, data: bytes) -> None:
        try:
            body = json.loads(data.decode("utf-8", "replace")) if data else {}
        except ValueError:
            body = {"message": data.decode("utf-8", "replace")}
        raise errors.from_response(status, body if isinstance(body, dict) else {})

    def _open(self, method: str, path: str, query: Optional[Dict[str, Any]] = None,
              body: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None) -> http.client.HTTPResponse:
        target = self._target(path, query)
        for attempt in (0, 1):
            c = self._connection()
            try:
                c.request(method, target, body=body, headers=self._headers(headers))
                return c.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                # A kept-alive connection the server closed meanwhile: once more on a new one.
                c.close()
                self._local.conn = None
                if attempt == 1:
                    raise self._unreachable(e)
            except OSError as e:
                c.close()
                self._local.conn = None
                raise self._unreachable(e)
        raise AssertionError("unreachable")

    def request(self, method: str, path: str, query: Optional[Dict[str, Any]] = None,
                body: Any = None) -> Any:
        """One JSON call: ``body`` (JSON-encoded) in, the decoded JSON answer
        out (None for 204). Raises the :mod:`sbx.errors` class of the answer."""
        out = self.request_bytes(method, path, query, body)
        if not out:
            return None
        return json.loads(out)

    def request_bytes(self, method: str, path: str, query: Optional[Dict[str, Any]] = None,
                      body: Any = None) -> bytes:
        """As :meth:`request`, the answer's body as it came (b"" for 204)."""
        data = None if body is None else json.dumps(body).encode()
        r = self._open(method, path, query, data, {"Content-Type": "application/json"} if data is not None else None)
        out = r.read()
        if r.will_close:
            self._local.conn = None
        if r.status >= 400:
            self._raise_for(r.status, out)
        return b"" if r.status == 204 else out

    def upload(self, method: str, path: str, query: Optional[Dict[str, Any]], data: Optional[bytes],
               content_type: str = "application/octet-stream") -> bytes:
        """A request whose body is ``data`` as it is (None: no body); the
        answer's body. Raises the answer's error for a status >= 400."""
        r = self._open(method, path, query, data, {"Content-Type": content_type} if data is not None else None)
        out = r.read()
        if r.will_close:
            self._local.conn = None
        if r.status >= 400:
            self._raise_for(r.status, out)
        return out

    def stream_json(self, method: str, path: str, query: Optional[Dict[str, Any]], body: Any, length: int,
                    content_type: str) -> Iterator[Dict[str, Any]]:
        """A request whose body is the file object ``body`` (``length``
        bytes, sent as it is read) and whose answer is JSON lines, yielded
        as dicts as they arrive. Raises the answer's error for a status >= 400."""
        target = self._target(path, query)
        c = self._connection()
        try:
            c.request(method, target, body=body,
                      headers=self._headers({"Content-Type": content_type, "Content-Length": str(length)}))
            r = c.getresponse()
        except OSError as e:
            c.close()
            self._local.conn = None
            raise self._unreachable(e)
        if r.status >= 400:
            data = r.read()
            if r.will_close:
                self._local.conn = None
            self._raise_for(r.status, data)
        try:
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.strip()
                if line:
                    yield json.loads(line.decode("utf-8", "replace"))
        finally:
            if r.will_close or not r.isclosed():
                r.close()
                self._local.conn = None

    def download(self, path: str, query: Dict[str, Any], chunk: int = 1 << 20) -> Iterator[bytes]:
        """A GET whose body is streamed in chunks of at most ``chunk`` bytes."""
        r = self._open("GET", path, query)
        if r.status >= 400:
            data = r.read()
            self._raise_for(r.status, data)
        try:
            while True:
                b = r.read(chunk)
                if not b:
                    break
                yield b
        finally:
            if r.will_close or not r.isclosed():
                r.close()
                self._local.conn = None

    def upgrade(self, path: str, query: Optional[Dict[str, Any]] = None,
                body: Any = None) -> Tuple[socket.socket, bytes]:
        """POST with ``Upgrade: sbx-stream/1``: returns the raw socket once
        the server answered 101, and the bytes it sent past the head.
        Raises the answer's error otherwise."""
        data = b"" if body is None else json.dumps(body).encode()
        try:
            if self._unix is not None:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self._unix)
            else:
                assert self._tcp is not None
                s = socket.create_connection(self._tcp)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as e:
            raise self._unreachable(e)
        head = f"POST {self._target(path, query)} HTTP/1.1\r\n"
        hdrs = self._headers({"Connection": "Upgrade", "Upgrade": "sbx-stream/1",
                              "Content-Type": "application/json", "Content-Length": str(len(data))})
        head += "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
        try:
            s.sendall(head.encode() + data)
            buf = b""
            while b"\r\n\r\n" not in buf:
                more = s.recv(65536)
                if not more:
                    raise self._unreachable(OSError("the server closed the connection"))
                buf += more
        except OSError as e:
            s.close()
            raise self._unreachable(e)
        head_bytes, rest = buf.split(b"\r\n\r\n", 1)
        lines = head_bytes.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        if status == 101:
            return s, rest
        length = 0
        for line in lines[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v.strip())
        while len(rest) < length:
            more = s.recv(65536)
            if not more:
                break
            rest += more
        s.close()
        self._raise_for(status, rest[:length])
        raise AssertionError("unreachable")


_default: Optional[Client] = None
_default_lock = threading.Lock()


def default_client() -> Client:
    """The client made from the environment (``SBX_HOST``, ``SBX_TOKEN``) on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Client()
        return _default

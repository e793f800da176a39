"""A process started by :meth:`sbx.Sandbox.exec` (Modal's ``ContainerProcess``).

Its stdin, stdout and stderr travel as frames on one upgraded connection
(docs/api.md "Exec stream"); a reader thread takes them off the socket as
they come, so a process that writes much to stderr never blocks one whose
stdout is read, and bytes are kept as they are (NULs, invalid UTF-8).
"""
from __future__ import annotations

import json
import socket
import threading
from typing import Iterator, List, Optional, Union

from . import client as _c


class StreamReader:
    """stdout or stderr of a :class:`Process`: iterate for lines as they come
    (``str`` with ``text=True``, else ``bytes``; line ends kept), or
    :meth:`read` for everything until the process ends."""

    def __init__(self, text: bool) -> None:
        self._text = text
        self._chunks: List[bytes] = []
        self._pos = 0  # bytes of _chunks[0] already given out by iteration
        self._eof = False
        self._cv = threading.Condition()

    def _feed(self, data: bytes) -> None:
        with self._cv:
            self._chunks.append(data)
            self._cv.notify_all()

    def _close(self) -> None:
        with self._cv:
            self._eof = True
            self._cv.notify_all()

    def _decode(self, b: bytes) -> Union[str, bytes]:
        return b.decode("utf-8", "replace") if self._text else b

    def read(self) -> Union[str, bytes]:
        """Everything not yet read, once the stream ended (blocks until then)."""
        with self._cv:
            self._cv.wait_for(lambda: self._eof)
            data = b"".join(self._chunks)[self._pos:]
            self._chunks, self._pos = [], 0
        return self._decode(data)

    def __iter__(self) -> Iterator[Union[str, bytes]]:
        buf = b""
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._chunks or self._eof)
                if self._chunks:
                    buf += b"".join(self._chunks)
                    self._chunks = []
                elif self._eof:
                    break
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    break
                line, buf = buf[:nl + 1], buf[nl + 1:]
                yield self._decode(line)
        if buf:
            yield self._decode(buf)


class StreamWriter:
    """stdin of a :class:`Process`: :meth:`write` bytes or str (UTF-8),
    :meth:`write_eof` / :meth:`close` for end of input."""

    def __init__(self, proc: "Process") -> None:
        self._proc = proc
        self.closed = False

    def write(self, data: Union[str, bytes]) -> None:
        """Sends ``data`` to the process's stdin. Raises ValueError after close."""
        if self.closed:
            raise ValueError("stdin is closed")
        b = data.encode() if isinstance(data, str) else bytes(data)
        for i in range(0, len(b), 1 << 20):
            self._proc._send(_c.frame(_c.STDIN, b[i:i + (1 << 20)]))

    def write_eof(self) -> None:
        """Ends stdin (the process reads EOF). Idempotent."""
        if not self.closed:
            self.closed = True
            self._proc._send(_c.frame(_c.STDIN_CLOSE))

    close = write_eof

    def drain(self) -> None:
        """Modal's drain: writes are sent at once, so nothing to wait for."""


class Process:
    """A running command in a sandbox. ``stdout``/``stderr``:
    :class:`StreamReader`; ``stdin``: :class:`StreamWriter`; ``returncode``:
    None while it runs, then its exit code (128+N for signal N, 124 when its
    ``timeout`` fired, 127 command not found)."""

    def __init__(self, sock: socket.socket, leftover: bytes, text: bool) -> None:
        self._sock = sock
        self._send_lock = threading.Lock()
        self.stdout = StreamReader(text)
        self.stderr = StreamReader(text)
        self.stdin = StreamWriter(self)
        self.returncode: Optional[int] = None
        self.timed_out = False
        self.error: Optional[str] = None  # why the command could not start (also on stderr)
        self._done = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, args=(leftover,), daemon=True)
        self._reader.start()

    def _send(self, data: bytes) -> None:
        with self._send_lock:
            if self._done.is_set():
                return
            try:
                self._sock.sendall(data)
            except OSError:
                pass  # it ended meanwhile: the reader reports how

    def _read_loop(self, buf: bytes) -> None:
        code: Optional[int] = None
        try:
            while True:
                while len(buf) >= 5:
                    n = int.from_bytes(buf[1:5], "big")
                    if len(buf) < 5 + n:
                        break
                    kind, payload, buf = buf[0], buf[5:5 + n], buf[5 + n:]
                    if kind == _c.STDOUT:
                        self.stdout._feed(payload)
                    elif kind == _c.STDERR:
                        self.stderr._feed(payload)
                    elif kind == _c.EXIT:
                        j = json.loads(payload)
                        code = int(j.get("exit_code", -1))
                        self.timed_out = bool(j.get("timed_out", False))
                    elif kind == _c.ERROR:
                        j = json.loads(payload)
                        self.error = str(j.get("message", "exec failed"))
                        self.stderr._feed(("sbx: " + self.error + "\n").encode())
                        code = int(j.get("exit_code", 125)) or 125
                if code is not None:
                    break
                more = self._sock.recv(1 << 20)
                if not more:
                    break
                buf += more
        except OSError:
            pass
        finally:
            if code is None:
                self.error = self.error or "the connection to sbx serve ended before the process did"
                code = -1
            self.returncode = code
            self.stdout._close()
            self.stderr._close()
            with self._send_lock:
                self._done.set()
                try:
                    self._sock.close()
                except OSError:
                    pass

    def wait(self, timeout: Optional[float] = None) -> int:
        """Waits until it ended (at most ``timeout`` seconds: then raises
        TimeoutError, the process keeps running) and returns ``returncode``."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"the process did not end within {timeout} s")
        assert self.returncode is not None
        return self.returncode

    def poll(self) -> Optional[int]:
        """``returncode`` if it ended, else None (never blocks)."""
        return self.returncode if self._done.is_set() else None

    def kill(self) -> None:
        """SIGKILLs the process (its returncode becomes 137)."""
        self._send(_c.frame(_c.KILL))

    def resize(self, rows: int, cols: int) -> None:
        """Window size for a ``pty=True`` exec (accepted; execs run on pipes)."""
        self._send(_c.frame(_c.RESIZE, json.dumps({"rows": rows, "cols": cols}).encode()))

    def __repr__(self) -> str:
        return f"<sbx.Process returncode={self.returncode}>"

"""Sandboxes, shaped like Modal's ``modal.Sandbox`` (see python/README.md)."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import IO, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import errors
from .client import Client, default_client
from .image import Image
from .process import Process

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def _memory_bytes(memory: Union[int, str, None]) -> Optional[int]:
    """Modal's ``memory``: an int is MiB; a str may carry a unit ("512m", "2GiB")."""
    if memory is None:
        return None
    if isinstance(memory, bool):
        raise errors.InvalidArgument("memory: MiB as an int, or a size like '512m'")
    if isinstance(memory, int):
        return memory << 20
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(memory))
    if not m or m.group(2).lower() not in _UNITS:
        raise errors.InvalidArgument(f"memory {memory!r}: MiB as an int, or a size like '512m'")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


@dataclass(eq=False)
class DirSnapshot:
    """A directory snapshot (``sb.snapshot_directory``); mount it into another
    sandbox with ``volumes={snap: "/path"}`` (a private, writable copy)."""
    name: str
    info: Dict[str, Any] = field(default_factory=dict)

    def delete(self, client: Optional[Client] = None) -> None:
        """Removes the snapshot from the store."""
        (client or default_client()).request("DELETE", "/sbx/v1/snapshots/" + urllib.parse.quote(self.name, safe=""))


@dataclass(eq=False)
class Volume:
    """A named volume in sbx's store (``sbx volume``; Modal's ``Volume``
    shape): it outlives the sandboxes that mount it, and several can share
    it at once. Mount it with ``Sandbox.create(..., volumes={"/data": vol})``
    (or ``{vol: "/data"}``; ``"/data:ro"`` read-only); an empty volume is
    first given the image's files at that path."""
    name: str
    info: Dict[str, Any] = field(default_factory=dict)
    client: Optional[Client] = None

    @classmethod
    def create(cls, name: Optional[str] = None, labels: Optional[Mapping[str, str]] = None,
               client: Optional[Client] = None) -> "Volume":
        """Creates volume ``name`` (None: a random 64-hex name); an existing
        one is returned as it is. Raises InvalidArgument (a bad name)."""
        c = client or default_client()
        j = c.request("POST", "/sbx/v1/volumes", body={"name": name or "", "labels": dict(labels or {})})
        return cls(j["name"], j, c)

    @classmethod
    def lookup(cls, name: str, client: Optional[Client] = None) -> "Volume":
        """The volume ``name``. Raises NotFound."""
        c = client or default_client()
        j = c.request("GET", "/sbx/v1/volumes/" + urllib.parse.quote(name, safe=""))
        return cls(j["name"], j, c)

    @classmethod
    def from_name(cls, name: str, create_if_missing: bool = False, client: Optional[Client] = None,
                  **_modal: Any) -> "Volume":
        """Modal's spelling: lookup, or create with ``create_if_missing``."""
        if create_if_missing:
            return cls.create(name, client=client)
        return cls.lookup(name, client=client)

    @classmethod
    def list(cls, client: Optional[Client] = None) -> List["Volume"]:
        """Every volume, by name."""
        c = client or default_client()
        return [cls(j["name"], j, c) for j in c.request("GET", "/sbx/v1/volumes")]

    @classmethod
    def remove(cls, name: str, force: bool = False, client: Optional[Client] = None) -> None:
        """Removes volume ``name``. Raises NotFound (unless ``force``),
        Conflict (a sandbox uses it)."""
        (client or default_client()).request("DELETE", "/sbx/v1/volumes/" + urllib.parse.quote(name, safe=""),
                                              query={"force": "1"} if force else None)

    def delete(self) -> None:
        """Removes this volume (Modal's ``Volume.delete``). Raises Conflict while in use."""
        Volume.remove(self.name, client=self.client)

    def refresh(self) -> Dict[str, Any]:
        """Reads its record again (``used_by``: the sandboxes using it)."""
        self.info = Volume.lookup(self.name, client=self.client).info
        return self.info


@dataclass
class MemorySnapshot:
    """A memory checkpoint (``sb.checkpoint``; gVisor)."""
    name: str
    info: Dict[str, Any] = field(default_factory=dict)
    client: Optional[Client] = None

    def restore(self, count: int = 1, name: Optional[str] = None) -> List["Sandbox"]:
        """``count`` independent sandboxes resumed from the checkpoint (fork).
        Raises SnapshotNotFound, Unsupported."""
        c = self.client or default_client()
        out = c.request("POST", "/sbx/v1/snapshots/" + urllib.parse.quote(self.name, safe="") + "/restore",
                        {"count": count, "name": name})
        return [Sandbox(c, j) for j in out]

    def delete(self) -> None:
        """Removes the checkpoint from the store."""
        (self.client or default_client()).request(
            "DELETE", "/sbx/v1/snapshots/" + urllib.parse.quote(self.name, safe=""))


@dataclass
class Stats:
    """What a sandbox used so far (or in all, once ended)."""
    cpu_ms: int              #: user+system CPU time, milliseconds
    memory_peak_bytes: int   #: peak memory (the memory cgroup's high-water mark), bytes
    wall_ms: int             #: wall time since it started, milliseconds
    memory_bytes: int = 0    #: memory now (running only), bytes
    pids: int = 0            #: processes now (running only)
    oom_kills: int = 0       #: processes the OOM killer took
    io_read_bytes: int = 0
    io_write_bytes: int = 0


@dataclass
class FileInfo:
    """One entry of ``files.list`` / ``files.stat``."""
    name: str
    path: str
    type: str       #: "file", "directory", "symlink", "other"
    size: int       #: bytes
    mode: int       #: permission bits
    mtime: int      #: unix seconds


class _RemoteFile(io.RawIOBase):
    """A file opened with ``sb.open`` in a write mode: bytes are spooled
    locally and sent on close (streamed; large files go to a temp file)."""

    def __init__(self, sb: "Sandbox", path: str, append: bool) -> None:
        super().__init__()
        self._sb, self._path, self._append = sb, path, append
        self._buf = tempfile.SpooledTemporaryFile(max_size=8 << 20)

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        return self._buf.write(bytes(b))

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._buf.seek(0)
            self._sb.files._write_stream(self._path, self._buf, append=self._append)
        finally:
            self._buf.close()
            super().close()


class FileSystem:
    """``sb.files``: files in the sandbox. Reads and writes go through ``sbx
    cp``'s rules (paths resolved inside the sandbox's root); list, stat,
    exists, remove and mkdir run the image's ``sh``/``stat``/``rm``/``mkdir``.
    Paths are absolute. Errors: FileNotFound, IsADirectory, Conflict (not
    running), SandboxNotFound."""

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    @property
    def _base(self) -> str:
        return "/sbx/v1/sandboxes/" + self._sb.object_id

    def read(self, path: str) -> bytes:
        """The whole file at ``path`` as bytes."""
        return b"".join(self._sb._client.download(self._base + "/files", {"path": path}))

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The file at ``path`` decoded (``encoding``)."""
        return self.read(path).decode(encoding)

    def _write_stream(self, path: str, src: IO[bytes], append: bool = False, mode: Optional[int] = None) -> int:
        sock, _ = self._sb._client.upgrade(self._base + "/files", {
            "path": path, "append": append, "mode": None if mode is None else format(mode, "o")})
        try:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                sock.sendall(chunk)
            sock.shutdown(__import__("socket").SHUT_WR)
            data = b""
            while True:
                more = sock.recv(65536)
                if not more:
                    break
                data += more
        finally:
            sock.close()
        res = json.loads(data) if data else {"message": "the server closed the upload without an answer"}
        if "message" in res:
            raise errors.from_response(int(res.get("status", 500)), res)
        return int(res.get("bytes", 0))

    def write(self, path: str, data: Union[str, bytes], mode: Optional[int] = None) -> int:
        """Writes ``data`` (str: UTF-8) to ``path``, replacing it; the parent
        directory must exist. ``mode``: permission bits (default 0644).
        Returns the bytes written."""
        b = data.encode() if isinstance(data, str) else bytes(data)
        return self._write_stream(path, io.BytesIO(b), mode=mode)

    def append(self, path: str, data: Union[str, bytes]) -> int:
        """Appends ``data`` to ``path`` (made when absent)."""
        b = data.encode() if isinstance(data, str) else bytes(data)
        return self._write_stream(path, io.BytesIO(b), append=True)

    def _op(self, op: str, **body: Any) -> Any:
        return self._sb._client.request("POST", self._base + "/files/" + op, body=body)

    def list(self, path: str = "/") -> List[FileInfo]:
        """The entries of directory ``path`` (names with a newline are not supported)."""
        return [FileInfo(**e) for e in self._op("list", path=path)]

    def stat(self, path: str) -> FileInfo:
        """Type, size, mode and mtime of ``path`` (a symlink itself, not its target)."""
        return FileInfo(**self._op("stat", path=path))

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists (a dangling symlink counts)."""
        return bool(self._op("exists", path=path)["exists"])

    def remove(self, path: str, recursive: bool = False) -> None:
        """Removes a file, or a directory tree with ``recursive=True``."""
        self._op("remove", path=path, recursive=recursive)

    def mkdir(self, path: str, parents: bool = True) -> None:
        """Makes directory ``path`` (with its parents unless ``parents=False``)."""
        self._op("mkdir", path=path, parents=parents)


class Sandbox:
    """One sbx sandbox. Make it with :meth:`create`; find it with
    :meth:`from_id`, :meth:`from_name`, :meth:`list`. As a context manager it
    terminates the sandbox on exit."""

    def __init__(self, client: Client, info: Dict[str, Any]) -> None:
        self._client = client
        self._info = info
        self.object_id: str = info["id"]
        self.files = FileSystem(self)

    # -- lifecycle -----------------------------------------------------------

    @classmethod
    def create(cls, *args: str, image: Union[str, Image, None] = None, timeout: Optional[float] = 300,
               idle_timeout: Optional[float] = None, cpu: Optional[float] = None,
               memory: Union[int, str, None] = None, gpu: Optional[str] = None, runtime: Optional[str] = None,
               network: str = "none", allow_egress: Optional[Sequence[str]] = None,
               env: Optional[Mapping[str, str]] = None, workdir: Optional[str] = None,
               volumes: Optional[Mapping[Any, str]] = None, name: Optional[str] = None,
               labels: Optional[Mapping[str, str]] = None, tags: Optional[Mapping[str, str]] = None,
               record: bool = False, redact: Optional[Sequence[str]] = None,
               client: Optional[Client] = None, **_modal: Any) -> "Sandbox":
        """Starts a sandbox and returns once its command runs.

        ``Sandbox.create("python:latest", "python3", "-c", "...")`` or, as
        Modal, ``Sandbox.create("python3", ..., image=Image.from_registry(...))``.
        No command: the sandbox holds until terminated (or its timeout).

        - ``timeout``: seconds until it is ended (Modal's default, 300; None or 0: never).
        - ``idle_timeout``: seconds without an exec until it is ended.
        - ``cpu``: CPUs (float); ``memory``: MiB (int, as Modal) or "512m".
        - ``gpu``: ``sbx run --gpus`` syntax ("all", "0", "count=2").
        - ``runtime``: "native" or "gvisor" (default: the server's).
        - ``network``: "none" (loopback only) or "private" (NAT out, with
          ``allow_egress`` = CIDRs / domains as the only destinations).
        - ``env``, ``workdir``; ``volumes``: {host dir: sandbox path[":ro"]},
          {DirSnapshot: sandbox path}, or a named volume as Modal's
          {sandbox path: Volume} (or {Volume: sandbox path}); ``name`` (unique), ``labels``
          (Modal's ``tags`` too). Other Modal keywords (app, secrets, …) are ignored.
        - ``record``: keep a trajectory of every exec and file operation
          (``sbx trajectory show``, ``sbx branch``, ``sbx replay``; docs/trajectory.md),
          ``redact``: env names (or regexes) recorded as digests only.

        Raises ImageNotFound, InvalidArgument, Conflict (name in use),
        ConnectionError.
        """
        if image is None:
            if not args:
                raise errors.InvalidArgument("Sandbox.create needs an image")
            image, args = args[0], args[1:]
        c = client or default_client()
        if isinstance(image, Image):
            image = image.build(c)  # a build chain or Dockerfile: built (once per object) first
        body: Dict[str, Any] = {"image": str(image), "cmd": list(args), "network": network}
        if timeout:
            body["timeout"] = timeout
        if idle_timeout:
            body["idle_timeout"] = idle_timeout
        if cpu is not None:
            body["cpu"] = cpu
        mb = _memory_bytes(memory)
        if mb is not None:
            body["memory"] = mb
        if gpu:
            body["gpu"] = gpu
        if runtime:
            body["runtime"] = runtime
        if allow_egress:
            body["allow_egress"] = list(allow_egress)
        if env:
            body["env"] = dict(env)
        if workdir:
            body["workdir"] = workdir
        if volumes:
            binds, snaps = {}, {}
            for k, v in volumes.items():
                if isinstance(v, Volume):  # Modal's {"/path": vol}
                    binds[v.name] = k
                elif isinstance(k, Volume):
                    binds[k.name] = v
                elif isinstance(k, DirSnapshot):
                    snaps[k.name] = v
                else:
                    binds[os.path.abspath(str(k))] = v
            if binds:
                body["volumes"] = binds
            if snaps:
                body["snapshots"] = snaps
        if name:
            body["name"] = name
        if record:
            body["record"] = True
            if redact:
                body["redact"] = list(redact)
        lab = dict(tags or {})
        lab.update(labels or {})
        if lab:
            body["labels"] = lab
        return cls(c, c.request("POST", "/sbx/v1/sandboxes", body=body))

    @classmethod
    def from_id(cls, sandbox_id: str, client: Optional[Client] = None) -> "Sandbox":
        """The sandbox with this id (or unique id prefix). Raises SandboxNotFound."""
        c = client or default_client()
        return cls(c, c.request("GET", "/sbx/v1/sandboxes/" + urllib.parse.quote(sandbox_id, safe="")))

    @classmethod
    def from_name(cls, *names: str, client: Optional[Client] = None, **_: Any) -> "Sandbox":
        """The sandbox named ``name`` (Modal's ``from_name(app_name, name)``
        works too: the last argument is the name). Raises SandboxNotFound."""
        if not names:
            raise errors.InvalidArgument("from_name needs a name")
        return cls.from_id(names[-1], client=client)

    @classmethod
    def list(cls, labels: Optional[Mapping[str, str]] = None, tags: Optional[Mapping[str, str]] = None,
             all: bool = False, client: Optional[Client] = None, **_: Any) -> List["Sandbox"]:
        """Running sandboxes (``all=True``: ended ones too), newest first,
        those with every label in ``labels`` (Modal's ``tags``) only."""
        c = client or default_client()
        lab = dict(tags or {})
        lab.update(labels or {})
        q: Dict[str, Any] = {"all": all}
        if lab:
            q["labels"] = json.dumps(lab)
        return [cls(c, j) for j in c.request("GET", "/sbx/v1/sandboxes", q)]

    def refresh(self) -> Dict[str, Any]:
        """Reads the sandbox's state again; returns it (also ``.info``)."""
        self._info = self._client.request("GET", self._path)
        return self._info

    @property
    def _path(self) -> str:
        return "/sbx/v1/sandboxes/" + self.object_id

    @property
    def id(self) -> str:
        return self.object_id

    @property
    def info(self) -> Dict[str, Any]:
        """The server's record: id, name, image, runtime, status, labels, end, …"""
        return self._info

    @property
    def name(self) -> str:
        return str(self._info.get("name", ""))

    @property
    def labels(self) -> Dict[str, str]:
        return dict(self._info.get("labels", {}))

    @property
    def returncode(self) -> Optional[int]:
        """The first process's exit code once the sandbox ended, else None."""
        end = self._info.get("end")
        return None if not end else int(end["exit_code"])

    def poll(self) -> Optional[int]:
        """``returncode`` after reading the state (never blocks)."""
        try:
            self.refresh()
        except errors.SandboxNotFound:
            pass
        return self.returncode

    def wait(self, raise_on_termination: bool = True, timeout: Optional[float] = None) -> Optional[int]:
        """Waits until the sandbox ended (at most ``timeout`` s: then returns
        None) and returns its exit code. Raises SandboxTimeout when its
        timeout ended it and OutOfMemory when the OOM killer did (unless
        ``raise_on_termination=False``)."""
        self._info = self._client.request("POST", self._path + "/wait", {"timeout": timeout})
        end = self._info.get("end")
        if not end:
            return None
        reason = end.get("reason")
        if raise_on_termination and reason in ("timeout", "idle"):
            raise SandboxTimeoutError(f"sandbox {self.object_id[:12]} reached its {reason} limit", "SandboxTimeout")
        if raise_on_termination and (reason == "oom" or end.get("oom_kills")):
            raise errors.OutOfMemory(f"sandbox {self.object_id[:12]} ran out of memory", "OutOfMemory")
        return int(end["exit_code"])

    def terminate(self) -> None:
        """Kills the sandbox and removes it. Idempotent."""
        try:
            self._client.request("DELETE", self._path)
        except errors.SandboxNotFound:
            pass

    def stats(self) -> Stats:
        """CPU time (ms), peak memory (bytes) and wall time (ms) so far."""
        return Stats(**self._client.request("GET", self._path + "/stats"))

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.terminate()

    def __repr__(self) -> str:
        return f"<sbx.Sandbox {self.object_id[:12]} {self._info.get('image', '')}>"

    # -- processes -----------------------------------------------------------

    def exec(self, *args: str, stdin: Union[str, bytes, None] = None, env: Optional[Mapping[str, str]] = None,
             workdir: Optional[str] = None, timeout: Optional[float] = None, pty: bool = False,
             text: bool = True, user: Optional[str] = None, **_modal: Any) -> Process:
        """Starts ``args`` in the sandbox and returns its :class:`Process`
        at once. ``stdin``: bytes/str sent and closed (else write them with
        ``process.stdin``); ``timeout`` seconds (then exit code 124);
        ``pty``: stdout and stderr as one stream with TERM set (no real
        terminal); ``text``: str lines (UTF-8, invalid bytes replaced) or
        bytes. Raises SandboxNotFound, Conflict (not running)."""
        if not args:
            raise errors.InvalidArgument("exec needs a command")
        body: Dict[str, Any] = {"args": [str(a) for a in args], "pty": pty}
        if env:
            body["env"] = dict(env)
        if workdir:
            body["workdir"] = workdir
        if timeout:
            body["timeout"] = timeout
        if user:
            body["user"] = user
        sock, rest = self._client.upgrade(self._path + "/exec", body=body)
        p = Process(sock, rest, text)
        if stdin is not None:
            p.stdin.write(stdin)
            p.stdin.write_eof()
        return p

    # -- files ---------------------------------------------------------------

    def open(self, path: str, mode: str = "r", encoding: str = "utf-8") -> IO[Any]:
        """A file in the sandbox: "r"/"rb" read it whole (then local),
        "w"/"wb"/"a"/"ab" write it on close. Raises FileNotFound."""
        binary = "b" in mode
        if "r" in mode:
            data = io.BytesIO(self.files.read(path))
            return data if binary else io.TextIOWrapper(data, encoding=encoding)
        if "w" in mode or "a" in mode:
            raw = io.BufferedWriter(_RemoteFile(self, path, append="a" in mode))
            return raw if binary else io.TextIOWrapper(raw, encoding=encoding)
        raise errors.InvalidArgument(f"open: mode {mode!r} (r, rb, w, wb, a, ab)")

    def upload(self, local: Union[str, os.PathLike], remote: str) -> int:
        """Copies local file ``local`` to ``remote`` in the sandbox, streamed. Returns bytes."""
        with open(local, "rb") as f:
            return self.files._write_stream(remote, f, mode=os.stat(local).st_mode & 0o7777)

    def download(self, remote: str, local: Union[str, os.PathLike]) -> int:
        """Copies ``remote`` from the sandbox to local file ``local``, streamed. Returns bytes."""
        n = 0
        tmp = str(local) + ".sbx-part"
        with open(tmp, "wb") as f:
            for chunk in self._client.download(self._path + "/files", {"path": remote}):
                f.write(chunk)
                n += len(chunk)
        os.replace(tmp, local)
        return n

    # -- state ---------------------------------------------------------------

    def snapshot_filesystem(self, name: Optional[str] = None) -> Image:
        """The sandbox's file system as a new image (``name``: repository[:tag])."""
        j = self._client.request("POST", self._path + "/snapshot_filesystem", body={"name": name or ""})
        return Image(j["image"])

    def snapshot_directory(self, path: str, name: Optional[str] = None) -> DirSnapshot:
        """Directory ``path`` as a snapshot, mountable into other sandboxes
        (``volumes={snap: "/dir"}``)."""
        j = self._client.request("POST", self._path + "/snapshot_directory", body={"path": path, "name": name or ""})
        return DirSnapshot(j["name"], j)

    def checkpoint(self, name: Optional[str] = None, leave_running: bool = True) -> MemorySnapshot:
        """A memory checkpoint (gVisor): processes and memory, restorable N
        times with :meth:`MemorySnapshot.restore`. Raises Unsupported on native."""
        j = self._client.request("POST", self._path + "/checkpoint",
                                 body={"name": name or "", "leave_running": leave_running})
        return MemorySnapshot(j["name"], j, self._client)

    # -- trajectories (docs/trajectory.md) -------------------------------------

    def trajectory(self, header: bool = False) -> List[Dict[str, Any]]:
        """The steps a sandbox created with ``record=True`` went through, in
        order: one dict per step (``step``, ``kind``, and per kind ``argv``,
        ``exit_code``, ``stdout``, ``checkpoint``, …; docs/trajectory.md).
        ``header=True``: the header first. Raises Conflict when the sandbox
        records none, SandboxNotFound."""
        data = self._client.request_bytes("GET", self._path + "/trajectory")
        lines = [json.loads(l) for l in data.decode("utf-8").splitlines() if l.strip()]
        return lines if header else lines[1:]

    def branch(self, step: Optional[int] = None, count: Optional[int] = None, name: Optional[str] = None,
               at: Optional[int] = None) -> Union["Sandbox", List["Sandbox"]]:
        """New sandboxes with the files this recorded sandbox had right after
        ``step`` (``at`` is the same; processes are not restored), each
        recording a trajectory of its own. ``count`` None: one Sandbox;
        else a list of ``count``. ``name``: NAME, or NAME-1, NAME-2, … for
        several. Raises NotFound (no such step), Conflict (not recorded)."""
        at_step = step if step is not None else at
        if at_step is None:
            raise errors.InvalidArgument("branch needs step=N (the step whose files the branch gets)")
        body: Dict[str, Any] = {"step": at_step}
        if count is not None:
            body["count"] = count
        if name:
            body["name"] = name
        j = self._client.request("POST", self._path + "/branch", body=body)
        if count is None:
            return Sandbox(self._client, j)
        return [Sandbox(self._client, x) for x in j]

    def replay(self, image: Optional[str] = None, until: Optional[int] = None, keep: bool = False,
               tolerate_regex: Optional[Sequence[str]] = None,
               tolerate_path: Optional[Sequence[str]] = None) -> "ReplayResult":
        """Replays this sandbox's trajectory in a fresh sandbox (the recorded
        image, or ``image``) and compares each step with the record; see
        :func:`replay`."""
        return replay(self, image=image, until=until, keep=keep, tolerate_regex=tolerate_regex,
                      tolerate_path=tolerate_path)

    # Modal's name for a file-system snapshot.
    def _experimental_snapshot(self) -> Image:
        return self.snapshot_filesystem()


# Modal's exception name.
SandboxTimeoutError = errors.SandboxTimeout


@dataclass
class ReplayResult:
    """What :func:`replay` found: ``matched`` (every step as recorded),
    ``first_divergence`` (the step number that differed, or None), ``steps``
    (dicts: ``step``, ``kind``, ``what``, ``result`` "match"/"differs"/
    "skipped", ``difference``, ``note``), ``sandbox`` (with keep=True: the
    replay's sandbox)."""
    matched: bool
    first_divergence: Optional[int]
    steps: List[Dict[str, Any]]
    sandbox: Optional[Sandbox] = None


def replay(sandbox: Union[Sandbox, str], image: Optional[str] = None, until: Optional[int] = None,
           keep: bool = False, tolerate_regex: Optional[Sequence[str]] = None,
           tolerate_path: Optional[Sequence[str]] = None, client: Optional[Client] = None) -> ReplayResult:
    """``sbx replay`` of a recorded sandbox's trajectory (a Sandbox or its id
    or name): a fresh sandbox of the recorded image (or ``image``) and spec,
    every recorded step run again and compared with the record (exit code,
    stdout, stderr, the files it changed); stops at the first step that
    differs. ``until``: the last step; ``keep``: keep the replay's sandbox;
    ``tolerate_regex``: output lines matching one are not compared;
    ``tolerate_path``: changed files whose path matches one are not. Raises
    NotFound (sandbox, image or step), Conflict (not recorded)."""
    c = sandbox._client if isinstance(sandbox, Sandbox) else (client or default_client())
    ref = sandbox.object_id if isinstance(sandbox, Sandbox) else urllib.parse.quote(str(sandbox), safe="")
    body: Dict[str, Any] = {"keep": keep}
    if image:
        body["image"] = image
    if until is not None:
        body["until"] = until
    if tolerate_regex:
        body["tolerate_regex"] = list(tolerate_regex)
    if tolerate_path:
        body["tolerate_path"] = list(tolerate_path)
    j = c.request("POST", "/sbx/v1/sandboxes/" + ref + "/replay", body=body)
    sb = Sandbox(c, j["sandbox"]) if j.get("sandbox") else None
    return ReplayResult(bool(j["matched"]), j.get("first_divergence"), list(j["steps"]), sb)


TrajectorySource = Union[str, "os.PathLike[str]", bytes]


def _trajectory_call(op: str, file: Optional[TrajectorySource], path: Optional[str], query: Dict[str, Any],
                     client: Optional[Client]) -> bytes:
    """POST /sbx/v1/trajectories/OP with the trajectory ``file`` (a local
    file's name, or its bytes) as the body, or ``path`` (a file on the
    server's host, under its ``--trajectory-dir``)."""
    c = client or default_client()
    if (file is None) == (path is None):
        raise errors.InvalidArgument("give the trajectory as file= (a local file or bytes) or path= (on the server), one of them")
    q = dict(query)
    data: Optional[bytes] = None
    if path is not None:
        q["path"] = path
    elif isinstance(file, bytes):
        data = file
    else:
        with open(os.fspath(file), "rb") as f:
            data = f.read()
    return c.upload("POST", "/sbx/v1/trajectories/" + op, q, data)


def trajectory_file(file: Optional[TrajectorySource] = None, *, path: Optional[str] = None,
                    client: Optional[Client] = None) -> List[Dict[str, Any]]:
    """A trajectory FILE read by the server: an export of ``sbx trajectory
    export`` (a tar), a ``trajectory.jsonl`` or a mini-swe-agent trajectory
    (imported), given as ``file`` (a local file, uploaded, or its bytes) or
    ``path`` (on the server's host, under its ``--trajectory-dir``). Returns
    the header, then one dict per step. Raises InvalidArgument (not a
    readable trajectory: corrupt, truncated, hostile), Forbidden/NotFound
    (``path`` outside the server's trajectory dir, or missing)."""
    data = _trajectory_call("show", file, path, {}, client)
    return [json.loads(l) for l in data.decode("utf-8").splitlines() if l.strip()]


def branch_file(file: Optional[TrajectorySource] = None, step: Optional[int] = None, count: Optional[int] = None,
                name: Optional[str] = None, *, path: Optional[str] = None,
                client: Optional[Client] = None) -> Union[Sandbox, List[Sandbox]]:
    """``sbx branch FILE --at STEP`` through the server: new sandboxes with the
    files of the trajectory's ``step`` (``file``/``path`` as
    :func:`trajectory_file`; an export archive holds the checkpoints a branch
    needs). ``count`` None: one Sandbox, else a list."""
    if step is None:
        raise errors.InvalidArgument("branch_file needs step=N (the step whose files the branch gets)")
    c = client or default_client()
    q: Dict[str, Any] = {"step": step, "count": count, "name": name or None}
    j = json.loads(_trajectory_call("branch", file, path, q, c))
    if count is None:
        return Sandbox(c, j)
    return [Sandbox(c, x) for x in j]


def replay_file(file: Optional[TrajectorySource] = None, *, path: Optional[str] = None, image: Optional[str] = None,
                until: Optional[int] = None, keep: bool = False, tolerate_regex: Optional[Sequence[str]] = None,
                tolerate_path: Optional[Sequence[str]] = None, client: Optional[Client] = None) -> ReplayResult:
    """``sbx replay FILE`` through the server (``file``/``path`` as
    :func:`trajectory_file`; the other arguments as :func:`replay`): a
    rollout recorded elsewhere, replayed on this server's host."""
    c = client or default_client()
    q: Dict[str, Any] = {"image": image or None, "until": until, "keep": keep,
                         "tolerate_regex": list(tolerate_regex or []) or None,
                         "tolerate_path": list(tolerate_path or []) or None}
    j = json.loads(_trajectory_call("replay", file, path, q, c))
    sb = Sandbox(c, j["sandbox"]) if j.get("sandbox") else None
    return ReplayResult(bool(j["matched"]), j.get("first_divergence"), list(j["steps"]), sb)

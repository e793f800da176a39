"""asyncio: ``sbx.aio`` mirrors the synchronous API with coroutines.

    import asyncio, sbx.aio

    async def one(i):
        async with await sbx.aio.Sandbox.create("busybox") as sb:
            p = await sb.exec("echo", str(i))
            return await p.stdout.read()

    async def main():
        sem = asyncio.Semaphore(8)
        async def bounded(i):
            async with sem:
                return await one(i)
        return await asyncio.gather(*(bounded(i) for i in range(200)))

Each call runs the blocking SDK call in a worker thread
(``asyncio.to_thread``); the server does the waiting, so a thread per call
in flight is cheap. Bound concurrency with a semaphore (or :func:`sbx.map`).
"""
from __future__ import annotations

import asyncio
import functools
from typing import Any, List, Optional, Union

from . import sandbox as _s
from .process import Process as _Process
from .process import StreamReader as _Reader

__all__ = ["Sandbox", "Process", "gather_limited"]


async def _run(fn: Any, *args: Any, **kw: Any) -> Any:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(fn, *args, **kw))


class StreamReader:
    """Async view of a :class:`sbx.process.StreamReader`."""

    def __init__(self, r: _Reader) -> None:
        self._r = r

    async def read(self) -> Union[str, bytes]:
        """Everything, once the stream ended."""
        return await _run(self._r.read)


class Process:
    """Async view of a :class:`sbx.Process`: ``await p.wait()``,
    ``await p.stdout.read()``; ``stdin``, ``kill()`` and ``poll()`` as the sync one."""

    def __init__(self, p: _Process) -> None:
        self.sync = p
        self.stdout = StreamReader(p.stdout)
        self.stderr = StreamReader(p.stderr)
        self.stdin = p.stdin

    @property
    def returncode(self) -> Optional[int]:
        return self.sync.returncode

    async def wait(self) -> int:
        return await _run(self.sync.wait)

    def poll(self) -> Optional[int]:
        return self.sync.poll()

    def kill(self) -> None:
        self.sync.kill()


class Sandbox:
    """Async view of :class:`sbx.Sandbox`: every method is a coroutine;
    ``files`` is the sync :class:`sbx.sandbox.FileSystem` wrapped the same way."""

    def __init__(self, sb: _s.Sandbox) -> None:
        self.sync = sb
        self.object_id = sb.object_id
        self.files = _AsyncFiles(sb.files)

    @classmethod
    async def create(cls, *args: Any, **kw: Any) -> "Sandbox":
        """As :meth:`sbx.Sandbox.create`."""
        return cls(await _run(_s.Sandbox.create, *args, **kw))

    @classmethod
    async def from_id(cls, sandbox_id: str, **kw: Any) -> "Sandbox":
        return cls(await _run(_s.Sandbox.from_id, sandbox_id, **kw))

    @classmethod
    async def from_name(cls, *names: str, **kw: Any) -> "Sandbox":
        return cls(await _run(_s.Sandbox.from_name, *names, **kw))

    @classmethod
    async def list(cls, **kw: Any) -> List["Sandbox"]:
        return [cls(s) for s in await _run(_s.Sandbox.list, **kw)]

    async def exec(self, *args: str, **kw: Any) -> Process:
        """As :meth:`sbx.Sandbox.exec`; returns an async :class:`Process`."""
        return Process(await _run(self.sync.exec, *args, **kw))

    async def wait(self, **kw: Any) -> Optional[int]:
        return await _run(self.sync.wait, **kw)

    async def terminate(self) -> None:
        await _run(self.sync.terminate)

    async def stats(self) -> _s.Stats:
        return await _run(self.sync.stats)

    async def upload(self, local: str, remote: str) -> int:
        return await _run(self.sync.upload, local, remote)

    async def download(self, remote: str, local: str) -> int:
        return await _run(self.sync.download, remote, local)

    async def snapshot_filesystem(self, name: Optional[str] = None) -> _s.Image:
        return await _run(self.sync.snapshot_filesystem, name)

    async def snapshot_directory(self, path: str, name: Optional[str] = None) -> _s.DirSnapshot:
        return await _run(self.sync.snapshot_directory, path, name)

    async def checkpoint(self, name: Optional[str] = None) -> _s.MemorySnapshot:
        return await _run(self.sync.checkpoint, name)

    async def trajectory(self, header: bool = False) -> List[Any]:
        return await _run(self.sync.trajectory, header)

    async def branch(self, step: Optional[int] = None, count: Optional[int] = None, name: Optional[str] = None,
                     at: Optional[int] = None) -> Union["Sandbox", List["Sandbox"]]:
        b = await _run(self.sync.branch, step, count, name, at)
        return [Sandbox(x) for x in b] if isinstance(b, list) else Sandbox(b)

    async def replay(self, **kw: Any) -> _s.ReplayResult:
        return await _run(self.sync.replay, **kw)

    async def __aenter__(self) -> "Sandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.terminate()


class _AsyncFiles:
    def __init__(self, fs: _s.FileSystem) -> None:
        self._fs = fs

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._fs, name)

        async def call(*a: Any, **kw: Any) -> Any:
            return await _run(fn, *a, **kw)
        return call


async def gather_limited(coros: Any, concurrency: int = 8) -> List[Any]:
    """``asyncio.gather`` of ``coros`` with at most ``concurrency`` running at once; results in order."""
    sem = asyncio.Semaphore(concurrency)

    async def one(c: Any) -> Any:
        async with sem:
            return await c
    return await asyncio.gather(*(one(c) for c in coros))

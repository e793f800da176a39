"""sbx: Python SDK for sbx sandboxes, shaped like Modal's Sandbox.

    import sbx
    with sbx.Sandbox.create("python:latest") as sb:
        p = sb.exec("python3", "-c", "print(6 * 7)")
        print(p.stdout.read(), p.wait())

The server is ``sbx serve`` (found through ``SBX_HOST``/``SBX_TOKEN``, else
its default socket, or ``sbx.Client(...)``). asyncio: :mod:`sbx.aio`.
"""
from .client import Client, default_client
from .errors import (BuildError, ConnectionError, Conflict, ExecTimeout, FileNotFound, Forbidden, ImageNotFound,
                     InvalidArgument,
                     IsADirectory, NotFound, OutOfMemory, SandboxNotFound, SandboxTimeout, SbxError,
                     SnapshotNotFound, Unsupported)
from .fanout import Result
from .fanout import map
from .process import Process
from .sandbox import (DirSnapshot, FileInfo, Image, MemorySnapshot, ReplayResult, Sandbox, SandboxTimeoutError, Stats,
                      Volume, branch_file, replay, replay_file, trajectory_file)


class App:
    """Modal's ``App``: sbx has none; ``App.lookup(...)`` returns a stand-in
    so harnesses that pass ``app=`` run unchanged."""

    def __init__(self, name: str = "") -> None:
        self.name = name

    @classmethod
    def lookup(cls, name: str, create_if_missing: bool = False, **_: object) -> "App":
        return cls(name)


__all__ = ["App", "BuildError", "Client", "ConnectionError", "Conflict", "DirSnapshot", "ExecTimeout", "FileInfo", "FileNotFound", "Forbidden",
           "Image", "ImageNotFound", "InvalidArgument", "IsADirectory", "MemorySnapshot", "NotFound", "OutOfMemory",
           "Process", "ReplayResult", "Result", "Sandbox", "SandboxNotFound", "SandboxTimeout", "SandboxTimeoutError", "SbxError",
           "SnapshotNotFound", "Stats", "Unsupported", "Volume", "branch_file", "default_client", "map", "replay", "replay_file",
           "trajectory_file"]
__version__ = "0.1.0"

"""Exceptions raised by the sbx SDK.

Every error the server reports arrives as ``{"message": ..., "kind": ...}``
with an HTTP status; :func:`from_response` turns it into the class named by
``kind``. All derive from :class:`SbxError`.
"""
from __future__ import annotations

import builtins
from typing import Dict, Optional, Type


class SbxError(Exception):
    """Base class of every sbx SDK error. ``status`` is the HTTP status
    (0 when the error did not come from the server), ``kind`` the server's
    error kind."""

    def __init__(self, message: str, kind: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.status = status


class ConnectionError(SbxError, builtins.ConnectionError):
    """The server could not be reached. The message says what to run
    (``sbx serve``) and which address was tried."""


class InvalidArgument(SbxError, ValueError):
    """The server refused a parameter (HTTP 400)."""


class Unsupported(InvalidArgument):
    """The runtime or image cannot do this (e.g. checkpoint on native)."""


class NotFound(SbxError, LookupError):
    """Something named in the request does not exist (HTTP 404)."""


class SandboxNotFound(NotFound):
    """No sandbox with this id, id prefix or name."""


class ImageNotFound(NotFound):
    """The image is not in sbx's store (``sbx pull`` / ``sbx import`` it)."""


class SnapshotNotFound(NotFound):
    """No snapshot with this name."""


class FileNotFound(NotFound, builtins.FileNotFoundError):
    """No such file or directory in the sandbox."""


class IsADirectory(SbxError, builtins.IsADirectoryError):
    """The path names a directory where a file was expected."""


class Forbidden(SbxError, PermissionError):
    """Never allowed as asked, whatever the state (HTTP 403): e.g. a
    trajectory ``path=`` outside the server's ``--trajectory-dir``."""


class Conflict(SbxError):
    """The sandbox is not in a state for this (e.g. not running; HTTP 409)."""


class SandboxTimeout(SbxError, TimeoutError):
    """The sandbox was ended by its ``timeout`` (or ``idle_timeout``)."""


class OutOfMemory(SbxError, MemoryError):
    """The sandbox's workload was killed by the memory limit (OOM killer)."""


class ExecTimeout(SbxError, TimeoutError):
    """An exec's ``timeout`` fired (its process was killed; exit code 124)."""


class BuildError(SbxError):
    """An image build failed (``Image.build``): ``message`` says which step
    and why ("... returned a non-zero code: 3"), ``exit_code`` is ``sbx
    build``'s (1: a RUN failed; 125: a bad Dockerfile, context or image),
    ``log`` the build's output up to the failure."""

    def __init__(self, message: str, kind: str = "", exit_code: int = 1, log: str = "") -> None:
        super().__init__(message, kind, 0)
        self.exit_code = exit_code
        self.log = log


_KINDS: Dict[str, Type[SbxError]] = {
    "InvalidArgument": InvalidArgument,
    "Unsupported": Unsupported,
    "NotFound": NotFound,
    "SandboxNotFound": SandboxNotFound,
    "ImageNotFound": ImageNotFound,
    "SnapshotNotFound": SnapshotNotFound,
    "FileNotFound": FileNotFound,
    "IsADirectory": IsADirectory,
    "Conflict": Conflict,
    "Forbidden": Forbidden,
}


def from_response(status: int, body: Optional[dict], fallback: str = "") -> SbxError:
    """The exception for an error answer (``status``, decoded JSON ``body``)."""
    body = body or {}
    kind = str(body.get("kind", ""))
    message = str(body.get("message", fallback or f"HTTP {status}"))
    cls = _KINDS.get(kind)
    if cls is None:
        cls = NotFound if status == 404 else InvalidArgument if status == 400 else Conflict if status == 409 else \
            Forbidden if status == 403 else SbxError
    return cls(message, kind, status)

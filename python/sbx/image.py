"""Images, and Modal's image builder: each chain is a Dockerfile under the
hood, built by ``sbx serve`` (``POST /sbx/v1/build``, the same builder as
``sbx build``, with its layer cache).

    img = (sbx.Image.from_registry("python:latest")
           .env({"APP": "1"})
           .workdir("/app")
           .add_local_dir("./src", "/app/src")
           .run_commands("python3 -m compileall -q /app/src"))
    sb = sbx.Sandbox.create("python3", "-m", "src", image=img)

An ``Image`` is immutable: every method returns a new one. It is built on
first use (``Sandbox.create(image=...)`` or :meth:`Image.build`), once per
object; a rebuild of an unchanged chain reuses every step from the server's
build cache.
"""
from __future__ import annotations

import io
import json
import os
import shlex
import tarfile
import tempfile
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import errors
from .client import Client, default_client

#: A build progress event, as ``sbx build --json`` prints it (docs/api.md "Builds").
Event = Dict[str, Any]


def _words(args: Sequence[Union[str, Sequence[str]]]) -> List[str]:
    out: List[str] = []
    for a in args:
        if isinstance(a, str):
            out.append(a)
        else:
            out.extend(a)
    return out


def _json_word(s: str) -> str:
    """A value for ENV/WORKDIR: JSON-quoted when it needs quoting (the
    Dockerfile reads double-quoted words with backslash escapes)."""
    if s and all(c.isalnum() or c in "/._-:+,@%" for c in s):
        return s
    return json.dumps(s)


class Image:
    """An image: one in sbx's store by reference (``Image("python:latest")``,
    an id), or a build — a base plus Dockerfile steps, or a Dockerfile.

    ``str(image)`` is its reference once built (the base's before that)."""

    def __init__(self, ref: str = "", *, _base: Optional["Image"] = None, _steps: Sequence[str] = (),
                 _dirs: Sequence[Tuple[str, str]] = (), _dockerfile: Optional[Tuple[str, str]] = None,
                 _build_args: Optional[Mapping[str, str]] = None, _target: str = "") -> None:
        self.ref = ref
        self._base = _base
        self._steps = list(_steps)
        self._dirs = list(_dirs)  # (local path, name in the context)
        self._dockerfile = _dockerfile  # (Dockerfile path, context dir)
        self._build_args = dict(_build_args or {})
        self._target = _target
        self._ignores: Dict[str, List[str]] = {}  # context name -> .dockerignore patterns
        self._built: Optional[str] = None

    def __repr__(self) -> str:
        return f"sbx.Image({self.ref or self.dockerfile()!r})"

    def __str__(self) -> str:
        return self._built or self.ref

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Image):
            return NotImplemented
        return str(self) == str(other) and self.dockerfile_or_none() == other.dockerfile_or_none()

    def dockerfile_or_none(self) -> Optional[str]:
        """:meth:`dockerfile` for an image still to build, else None."""
        return self.dockerfile() if self._needs_build() else None

    def __hash__(self) -> int:
        return hash(str(self))

    # -- where an image comes from ------------------------------------------

    @classmethod
    def from_registry(cls, ref: str, **_: Any) -> "Image":
        """Modal's ``Image.from_registry``: the image ``ref``. A build on it
        pulls it when it is missing from sbx's store (where the server has a
        registry); a sandbox of it alone needs it in the store (``sbx pull``).
        Other keywords (secret, setup_dockerfile_commands, …) are ignored."""
        return cls(ref)

    from_name = from_registry

    @classmethod
    def from_dockerfile(cls, path: Union[str, os.PathLike], context_dir: Union[str, os.PathLike, None] = None,
                        *, build_args: Optional[Mapping[str, str]] = None, target: str = "",
                        **_: Any) -> "Image":
        """The image a Dockerfile builds: ``path`` (a file), with the build
        context ``context_dir`` (default: the Dockerfile's directory; its
        ``.dockerignore`` applies), ``build_args`` (ARG values) and ``target``
        (a stage). Raises FileNotFound when either is missing."""
        path = os.path.abspath(os.fspath(path))
        ctx = os.path.abspath(os.fspath(context_dir)) if context_dir is not None else os.path.dirname(path)
        if not os.path.isfile(path):
            raise errors.FileNotFound(f"Image.from_dockerfile: no Dockerfile at {path}")
        if not os.path.isdir(ctx):
            raise errors.FileNotFound(f"Image.from_dockerfile: the context {ctx} is not a directory")
        return cls("", _dockerfile=(path, ctx), _build_args=build_args, _target=target)

    # -- the builder (each returns a new Image) ------------------------------

    def _own(self) -> bool:
        """Whether a step added to this image joins its own build (else: a
        build on top of it, for a Dockerfile's or a built image)."""
        return self._dockerfile is None and self._built is None

    def _with(self, steps: Sequence[str] = (), dirs: Sequence[Tuple[str, str]] = (),
              ignores: Optional[Mapping[str, Sequence[str]]] = None) -> "Image":
        if self._own():
            img = Image(self.ref, _base=self._base, _steps=self._steps + list(steps), _dirs=self._dirs + list(dirs))
            img._ignores = dict(self._ignores)
        else:
            img = Image(self.ref, _base=self, _steps=steps, _dirs=dirs)
        img._ignores.update(ignores or {})
        return img

    def dockerfile_commands(self, *commands: Union[str, Sequence[str]]) -> "Image":
        """Dockerfile lines as they are ("RUN ...", "ENV ..."), after the others."""
        return self._with(_words(commands))

    def run_commands(self, *commands: Union[str, Sequence[str]]) -> "Image":
        """One ``RUN`` (a shell command line) per command, in order."""
        return self._with(["RUN " + c for c in _words(commands)])

    def env(self, vars: Mapping[str, str]) -> "Image":
        """``ENV``: environment variables of later steps and of sandboxes."""
        if not vars:
            return self._with()
        for k in vars:
            if not k or "=" in k or any(c.isspace() for c in k):
                raise errors.InvalidArgument(f"Image.env: invalid variable name {k!r}")
        return self._with(["ENV " + " ".join(f"{k}={_json_word(str(v))}" for k, v in vars.items())])

    def workdir(self, path: str) -> "Image":
        """``WORKDIR``: the directory of later steps and of sandboxes (made when missing)."""
        return self._with(["WORKDIR " + _json_word(path)])

    def _local_name(self) -> str:
        """The name in the build context of the next local file or directory."""
        return f"sbx-local-{len(self._dirs) if self._own() else 0}"

    def add_local_dir(self, local_path: Union[str, os.PathLike], remote_path: str, *,
                      ignore: Sequence[str] = (), **_: Any) -> "Image":
        """The content of the local directory ``local_path`` copied to
        ``remote_path`` in the image (``COPY``; files keep their modes, owned
        by root). ``ignore``: .dockerignore patterns (relative to the
        directory) of files to leave out. It is read when the image is built."""
        local = os.path.abspath(os.fspath(local_path))
        if not os.path.isdir(local):
            raise errors.FileNotFound(f"Image.add_local_dir: {local} is not a directory")
        name = self._local_name()
        return self._with([f"COPY {name}/ " + _json_word(remote_path)], [(local, name)], {name: list(ignore)})

    def add_local_file(self, local_path: Union[str, os.PathLike], remote_path: str, **_: Any) -> "Image":
        """The local file ``local_path`` copied to ``remote_path`` (a path; a
        trailing / names a directory to put it in)."""
        local = os.path.abspath(os.fspath(local_path))
        if not os.path.isfile(local):
            raise errors.FileNotFound(f"Image.add_local_file: {local} is not a file")
        name = self._local_name()
        return self._with([f"COPY {name} " + _json_word(remote_path)], [(local, name)])

    def apt_install(self, *packages: Union[str, Sequence[str]], **_: Any) -> "Image":
        """``RUN apt-get update && apt-get install -y PACKAGES`` (Debian and
        Ubuntu bases; needs the build's network to reach their mirrors)."""
        pk = _words(packages)
        if not pk:
            return self._with()
        return self._with(["RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                           "--no-install-recommends " + " ".join(shlex.quote(p) for p in pk)])

    def pip_install(self, *packages: Union[str, Sequence[str]], index_url: Optional[str] = None,
                    extra_index_url: Optional[str] = None, pre: bool = False,
                    extra_options: str = "", **_: Any) -> "Image":
        """``RUN python -m pip install PACKAGES`` (a base with Python and pip;
        needs the build's network to reach the index)."""
        pk = _words(packages)
        if not pk:
            return self._with()
        opts = ["--no-cache-dir"]
        if index_url:
            opts += ["--index-url", index_url]
        if extra_index_url:
            opts += ["--extra-index-url", extra_index_url]
        if pre:
            opts.append("--pre")
        line = "RUN python -m pip install " + " ".join(shlex.quote(o) for o in opts + pk)
        if extra_options:
            line += " " + extra_options
        return self._with([line])

    # -- building ------------------------------------------------------------

    def _needs_build(self) -> bool:
        return self._built is None and (self._dockerfile is not None or bool(self._steps) or self._base is not None)

    def dockerfile(self) -> str:
        """The Dockerfile of this image's own build (FROM its base, then its
        steps); a ``from_dockerfile`` image's file as it is."""
        if self._dockerfile is not None:
            with open(self._dockerfile[0], encoding="utf-8", errors="replace") as f:
                return f.read()
        base = str(self._base) if self._base is not None else self.ref
        if not base:
            raise errors.InvalidArgument("an Image needs a base (Image.from_registry) or a Dockerfile")
        return "\n".join([f"FROM {base}"] + self._steps) + "\n"

    def _context(self, out: Any) -> Dict[str, Any]:
        """Writes this build's context tar to ``out``; the build's query."""
        query: Dict[str, Any] = {}
        with tarfile.open(fileobj=out, mode="w") as t:
            if self._dockerfile is not None:
                df, ctx = self._dockerfile
                t.add(ctx, arcname=".")
                rel = os.path.relpath(df, ctx)
                if rel.startswith(".." + os.sep) or rel == "..":
                    # A Dockerfile outside its context travels beside it, as the docker CLI sends one.
                    rel = ".sbx-Dockerfile"
                    t.add(df, arcname=rel)
                query["dockerfile"] = rel
                if self._build_args:
                    query["buildargs"] = json.dumps({k: str(v) for k, v in self._build_args.items()})
                if self._target:
                    query["target"] = self._target
            else:
                text = self.dockerfile().encode()
                info = tarfile.TarInfo("Dockerfile")
                info.size = len(text)
                info.mode = 0o644
                t.addfile(info, io.BytesIO(text))
                ignores: List[str] = []
                for local, name in self._dirs:
                    t.add(local, arcname=name)
                    ignores += [f"{name}/{p.lstrip('/')}" for p in self._ignores.get(name, [])]
                if ignores:
                    data = ("\n".join(ignores) + "\n").encode()
                    info = tarfile.TarInfo(".dockerignore")
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
        return query

    def build(self, client: Optional[Client] = None, *, tag: Optional[str] = None, no_cache: bool = False,
              network: Optional[str] = None, on_event: Optional[Callable[[Event], None]] = None,
              force: bool = False) -> "Image":
        """Builds the image (its base first when that is a build too) and
        returns it, ``str(image)`` then its id. Once per object unless
        ``force``; the server's build cache makes an unchanged rebuild cheap.

        ``tag``: a name for the result (repository[:tag]); ``no_cache``: run
        every step; ``network``: the RUN steps' network ("private", the
        default, "none" or "host"); ``on_event``: called with each progress
        event (a dict: ``event`` step, cached, output, done, warning, pull).

        Raises BuildError (a failing step: its message and output),
        InvalidArgument (a bad Dockerfile or parameter), ConnectionError."""
        if not self._needs_build() and not force:
            return self
        c = client or default_client()
        if self._base is not None:
            self._base.build(c, no_cache=no_cache, network=network, on_event=on_event)
        with tempfile.TemporaryFile() as body:
            query = self._context(body)
            size = body.tell()
            body.seek(0)
            if tag:
                query["t"] = tag
            if no_cache:
                query["nocache"] = True
            if network:
                query["networkmode"] = network
            log: List[str] = []
            result: Optional[Dict[str, Any]] = None
            for ev in c.stream_json("POST", "/sbx/v1/build", query, body, size, "application/x-tar"):
                if on_event is not None and ev.get("event") not in ("result", "error"):
                    on_event(ev)
                kind = ev.get("event")
                if kind == "output":
                    log.append(ev.get("data", ""))
                elif kind == "step":
                    log.append(ev.get("instruction", "") + "\n")
                elif kind == "result":
                    result = ev
                elif kind == "error":
                    raise errors.BuildError(str(ev.get("message", "the build failed")), str(ev.get("kind", "")),
                                            int(ev.get("exit_code", 1)), "".join(log))
        if result is None:
            raise errors.BuildError("the build's stream ended without a result (the server stopped?)", "", 1,
                                    "".join(log))
        self._built = str(result["id"])
        return self

    @property
    def object_id(self) -> str:
        """The image's id once built, else its reference."""
        return str(self)

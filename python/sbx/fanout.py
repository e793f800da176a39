"""``sbx.map``: fan-out of many short sandboxes (rollouts, test suites)."""
from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass
from typing import Any, Callable, Iterable, List, Optional, Sequence, Union

from .sandbox import Sandbox


@dataclass
class Result:
    """One item's run: exit code, stdout and stderr (bytes)."""
    returncode: int
    stdout: bytes
    stderr: bytes


def run_one(cmd: Sequence[str], item: Any, image: str, **create: Any) -> Result:
    """``cmd`` in a fresh sandbox of ``image`` with ``item`` (str/bytes) as
    stdin; the sandbox is terminated afterwards."""
    with Sandbox.create(image, **create) as sb:
        p = sb.exec(*cmd, stdin=item if isinstance(item, (bytes, str)) else str(item), text=False)
        code = p.wait()
        return Result(code, p.stdout.read(), p.stderr.read())  # type: ignore[arg-type]


def map(fn_or_cmd: Union[Callable[[Any], Any], Sequence[str]], items: Iterable[Any], concurrency: int = 8,
        image: Optional[str] = None, **create: Any) -> List[Any]:
    """Runs ``fn_or_cmd`` for every item, ``concurrency`` at a time; results
    in the order of ``items``.

    - a callable: ``fn(item)`` in a worker thread (it makes its own sandboxes);
    - a command (list of str): run in a fresh sandbox of ``image`` per item,
      the item as its stdin; results are :class:`Result`. ``create``
      keywords go to :meth:`Sandbox.create` (memory, timeout, runtime, …).

    An exception of one item is raised after all others finished.
    """
    if callable(fn_or_cmd):
        fn = fn_or_cmd
    else:
        if image is None:
            raise ValueError("sbx.map with a command needs image=")
        cmd = list(fn_or_cmd)

        def fn(item: Any) -> Result:
            return run_one(cmd, item, image, **create)
    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(fn, it) for it in items]
        concurrent.futures.wait(futures)
        return [f.result() for f in futures]

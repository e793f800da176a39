#!/usr/bin/env python3
"""The documentation's examples as a test: turns the shell and Python blocks
of a Markdown file into one bash script that runs them in order.

Usage: docs_examples.py FILE.md            print the script for FILE.md
       docs_examples.py --list FILE.md...  print each block: where, kind, fate
       docs_examples.py --self-test

Which blocks run:
  - fenced blocks marked ```sh, ```bash or ```shell, and indented (4-space)
    blocks, run in bash with `set -eo pipefail`: a command that fails, fails
    the example, named by FILE:LINE;
  - ```python blocks run in python3 (the SDK from the checkout: PYTHONPATH),
    ```js blocks in node as an ES module (node_modules of the working dir);
  - other fenced blocks (json, toml, yaml, text, diagrams without a language)
    are not commands and are left alone.
Blocks of one file share one shell, in order, as a reader typing them would
(a sandbox created in one block is exec'd into by the next). Background jobs
(`sbx serve &`) are killed when the file ends.

Markers, HTML comments the reader does not see, written on the line(s) just
before a block:
  <!-- example: skip REASON -->      the next block is not run (REASON says
                                     why; e.g. it is a synopsis or needs a GPU)
  <!-- example: online REASON -->    the next block needs the Internet (a Docker
                                     Hub pull): it is not run, and a twin must
                                     follow it:
  <!-- example-twin
  commands                           the offline twin: run in its place
  -->
  <!-- example-setup
  commands                           hidden set-up the reader is assumed to
  -->                                have done (a file the example names),
                                     run where it stands
An `online` block without a twin, or a marker that precedes no block, is an
error (exit 2): every example either runs or says why it cannot.
"""
import re
import sys

SHELL_LANGS = {"sh", "bash", "shell"}
MARKER = re.compile(r"^<!--\s*example:\s*(skip|online)\s+(\S.*?)\s*-->\s*$")
HIDDEN = re.compile(r"^<!--\s*example-(setup|twin)\s*$")


class DocError(Exception):
    pass


def blocks(path, text):
    """Yields (line, kind, code, fate) for each block of the Markdown TEXT.

    kind: "shell", "python" or "other"; fate: "run", "skip: …", "online: …",
    "setup" or "twin" (hidden commands from a marker comment).
    Raises DocError for a marker that is malformed or dangling."""
    lines = text.split("\n")
    pending = None  # (line, fate) of a skip/online marker waiting for its block
    need_twin = None  # line of an online block whose twin must come next
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            if pending:
                raise DocError(f"{path}:{pending[0]}: marker followed by another marker, not a block")
            pending = (i + 1, f"{m.group(1)}: {m.group(2)}")
            i += 1
            continue
        if line.startswith("<!-- example"):
            h = HIDDEN.match(line)
            if not h:
                raise DocError(f"{path}:{i + 1}: unknown example marker {line!r} "
                               "(see tests/docs_examples.py)")
            j = i + 1
            while j < len(lines) and lines[j].strip() != "-->":
                j += 1
            if j == len(lines):
                raise DocError(f"{path}:{i + 1}: example-{h.group(1)} is not closed by a '-->' line")
            if h.group(1) == "twin":
                if need_twin is None:
                    raise DocError(f"{path}:{i + 1}: example-twin follows no 'example: online' block")
                need_twin = None
            yield i + 2, "shell", "\n".join(lines[i + 1:j]), h.group(1)
            i = j + 1
            continue
        fenced = line.startswith("```")
        indented = line.startswith("    ") and (i == 0 or lines[i - 1].strip() == "" or bool(MARKER.match(lines[i - 1])))
        if not fenced and not indented:
            if line.strip() and pending:
                raise DocError(f"{path}:{pending[0]}: marker is not followed by a block")
            if line.strip() and need_twin is not None:
                raise DocError(f"{path}:{need_twin}: 'example: online' block has no example-twin after it")
            i += 1
            continue
        if need_twin is not None:
            raise DocError(f"{path}:{need_twin}: 'example: online' block has no example-twin after it")
        start = i + 1
        if fenced:
            lang = line[3:].strip().split()[0] if line[3:].strip() else ""
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            code = "\n".join(lines[i + 1:j])
            kind = "shell" if lang in SHELL_LANGS else lang if lang in ("python", "js") else "other"
            i = j + 1
            start += 1
        else:
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or
                                      (not lines[j].strip() and j + 1 < len(lines) and lines[j + 1].startswith("    "))):
                j += 1
            code = "\n".join(l[4:] for l in lines[i:j])
            kind = "shell"
            i = j
        fate = "run"
        if pending:
            fate = pending[1]
            if fate.startswith("online"):
                need_twin = pending[0]
            pending = None
        elif kind == "other":
            fate = "not code"
        yield start, kind, code, fate
    if pending:
        raise DocError(f"{path}:{pending[0]}: marker is not followed by a block")
    if need_twin is not None:
        raise DocError(f"{path}:{need_twin}: 'example: online' block has no example-twin after it")


def script(path, text):
    """The bash script that runs the blocks of TEXT in order."""
    out = ["set -eo pipefail",
           "trap 'echo \"FAIL example $__where (line $LINENO of the script): exit $?\" >&2' ERR",
           # servers an example started in the background end with the file
           "trap '__rc=$?; trap - ERR; set +e; kill $(jobs -p) 2>/dev/null; wait; exit $__rc' EXIT"]
    n = 0
    for line, kind, code, fate in blocks(path, text):
        if fate not in ("run", "setup", "twin"):
            continue
        n += 1
        where = f"{path}:{line}" + ("" if fate == "run" else f" ({fate})")
        out.append(f"__where={quote(where)}; echo \"--- example {where}\" >&2")
        if kind == "shell":
            out.append(code)
        elif kind == "python":
            out.append("python3 - <<'__SBX_EXAMPLE_PY__'\n" + code + "\n__SBX_EXAMPLE_PY__")
        elif kind == "js":
            out.append("node --input-type=module <<'__SBX_EXAMPLE_JS__'\n" + code + "\n__SBX_EXAMPLE_JS__")
        out.append(f"echo \"ok   example {where}\"")
    out.append(f"echo \"{n} examples of {path} ran\" >&2")
    return "\n".join(out) + "\n"


def quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def self_test():
    good = ("text\n\n    echo a\n\n<!-- example: skip a synopsis -->\n    sbx run IMAGE\n\n"
            "<!-- example: online Docker Hub -->\n```sh\nsbx pull x\n```\n<!-- example-twin\necho twin\n-->\n"
            "```json\n{}\n```\n```python\nprint(1)\n```\n```js\nconsole.log(1)\n```\n")
    got = [(k, c, f) for _, k, c, f in blocks("t.md", good)]
    assert got == [("shell", "echo a", "run"), ("shell", "sbx run IMAGE", "skip: a synopsis"),
                   ("shell", "sbx pull x", "online: Docker Hub"), ("shell", "echo twin", "twin"),
                   ("other", "{}", "not code"), ("python", "print(1)", "run"),
                   ("js", "console.log(1)", "run")], got
    s = script("t.md", good)
    assert "echo a" in s and "echo twin" in s and "sbx pull x" not in s and "sbx run IMAGE" not in s
    for bad in ("<!-- example: online x -->\n    sbx pull\n\ntext\n",
                "<!-- example: skip x -->\ntext\n",
                "<!-- example-twin\necho\n-->\n",
                "<!-- example: bogus -->\n",
                "<!-- example-setup\necho\n"):
        try:
            list(blocks("t.md", bad))
        except DocError:
            continue
        raise AssertionError(f"accepted {bad!r}")
    print("ok   docs_examples self-test")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    try:
        if argv[1:2] == ["--list"]:
            for path in argv[2:]:
                for line, kind, code, fate in blocks(path, open(path, encoding="utf-8").read()):
                    print(f"{path}:{line}\t{kind}\t{fate}")
            return 0
        if len(argv) != 2:
            print(__doc__, file=sys.stderr)
            return 2
        sys.stdout.write(script(argv[1], open(argv[1], encoding="utf-8").read()))
        return 0
    except DocError as e:
        print(f"docs_examples: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

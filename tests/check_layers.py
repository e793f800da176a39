#!/usr/bin/env python3
"""Checks sbx's layering: every quoted #include points down the layer table.

    python3 tests/check_layers.py [SRC_DIR]      # exit 1 and a list of wrong-way includes
    python3 tests/check_layers.py --self-test    # proves the check catches one

The table is the sbx_layer(...) calls of SRC_DIR/CMakeLists.txt, the same
declaration that makes each layer its own static library (and the link check
that builds each layer against only the layers below it). A layer owns the
files of its DIRS (not their subdirectories) and of its FILES (a .cpp listed
there brings its header: runtime/backends.cpp owns runtime/backends.h);
FILES win over DIRS. A file may include its own layer's headers and those of
the layers its USES names directly (not transitively: the engine uses the
backend registry, which uses the backends, but the engine may not include a
backend's header). System headers (<...>) are not checked. It also refuses a
mention of a backend class (NativeBackend, GvisorBackend) outside the
backends and the registry: the rest asks the Backend interface.

Inside the server layer, the APIs (server/docker, server/v1, server/e2b,
server/sandbox_fusion) sit side by side over the shared server/ files: one
API may not include another's headers (what two share belongs in server/ or
the engine), except the routes listed in API_ROUTES (the Docker API's router
hands /sbx/v1 requests to that API on the same socket).
"""
import os
import re
import sys
import tempfile

BACKEND_CLASSES = ("NativeBackend", "GvisorBackend")
SOURCE_EXT = (".h", ".hpp", ".c", ".cc", ".cpp")
API_DIRS = ("server/docker", "server/v1", "server/e2b", "server/sandbox_fusion")
API_ROUTES = {("server/docker", "server/v1")}


def api_of(path):
    """The API directory (API_DIRS) of a repository-relative path, or None."""
    d = os.path.dirname(path)
    return d if d in API_DIRS else None


def parse_table(cmake_text):
    """[(name, dirs, files, uses, may_name_backends)] from sbx_layer(...) calls."""
    layers = []
    for m in re.finditer(r"^\s*sbx_layer\(([^)]*)\)", cmake_text, re.M):
        words = re.sub(r"#[^\n]*", "", m.group(1)).split()
        name, rest = words[0], words[1:]
        fields = {"DIRS": [], "FILES": [], "USES": [], "LINK": [], "EXCLUDE": []}
        flags = set()
        key = None
        for w in rest:
            if w in fields:
                key = w
            elif w in ("NOLIB", "BACKEND"):
                flags.add(w)
                key = None
            elif key:
                fields[key].append(w)
        layers.append((name, fields["DIRS"], fields["FILES"], fields["USES"], "BACKEND" in flags))
    return layers


def owner(path, layers):
    """The layer that owns the repository-relative `path`, or None."""
    stem = os.path.splitext(path)[0]
    for name, _dirs, files, _uses, _b in layers:
        if any(os.path.splitext(f)[0] == stem for f in files):
            return name
    d = os.path.dirname(path)
    for name, dirs, _files, _uses, _b in layers:
        if d in dirs:
            return name
    return None


def check(src):
    with open(os.path.join(src, "CMakeLists.txt")) as f:
        layers = parse_table(f.read())
    if not layers:
        return ["no sbx_layer(...) table in " + os.path.join(src, "CMakeLists.txt")]
    uses = {name: set(u) for name, _d, _f, u, _b in layers}
    may_name = {name for name, _d, _f, _u, b in layers if b}
    problems = []
    dirs = sorted({d for _n, ds, _f, _u, _b in layers for d in ds} |
                  {os.path.dirname(f) for _n, _d, fs, _u, _b in layers for f in fs})
    for d in dirs:
        full = os.path.join(src, d)
        if not os.path.isdir(full):
            continue
        for fn in sorted(os.listdir(full)):
            if not fn.endswith(SOURCE_EXT):
                continue
            rel = os.path.join(d, fn) if d else fn
            mine = owner(rel, layers)
            if mine is None:
                continue
            with open(os.path.join(src, rel), errors="replace") as f:
                text = f.read()
            for n, line in enumerate(text.splitlines(), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if m:
                    inc = m.group(1)
                    a, b = api_of(rel), api_of(inc)
                    if a and b and a != b and (a, b) not in API_ROUTES:
                        problems.append(f"{rel}:{n}: the API in {a}/ includes {inc} of the API in {b}/: "
                                        "move what they share to server/ or the engine")
                        continue
                    theirs = owner(inc, layers)
                    if theirs is None or theirs == mine or theirs in uses[mine]:
                        continue
                    problems.append(f"{rel}:{n}: layer '{mine}' includes {inc} of layer '{theirs}' "
                                    f"(it may use: {', '.join(sorted(uses[mine])) or 'nothing'})")
                elif mine not in may_name:
                    code = re.sub(r"//.*", "", line)
                    for cls in BACKEND_CLASSES:
                        if re.search(r"\b" + cls + r"\b", code):
                            problems.append(f"{rel}:{n}: layer '{mine}' names {cls}: ask the Backend "
                                            "interface (runtime/backend.h) or the registry (runtime/backends.h)")
    return problems


def self_test():
    """A tree with one include each way and one backend name: only the wrong ones are reported."""
    with tempfile.TemporaryDirectory() as t:
        def put(rel, text):
            os.makedirs(os.path.join(t, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(t, rel), "w") as f:
                f.write(text)
        put("CMakeLists.txt", "sbx_layer(low DIRS low)\nsbx_layer(be DIRS low/be USES low BACKEND)\n"
                              "sbx_layer(reg FILES low/reg.cpp USES be low BACKEND)\n"
                              "sbx_layer(high DIRS high USES reg low)\n"
                              "sbx_layer(server DIRS server server/docker server/v1 server/e2b USES low)\n")
        put("low/a.h", "#pragma once\n")
        put("low/be/b.h", '#include "low/a.h"\nclass NativeBackend {};\n')
        put("low/reg.h", '#include "low/be/b.h"\n')
        put("low/reg.cpp", '#include "low/reg.h"\n#include "low/be/b.h"\n')
        put("low/bad.cpp", '#include "high/h.h"\n')  # wrong way: down includes up
        put("high/h.h", '#include "low/a.h"\n#include "low/reg.h"\n')
        put("high/skip.cpp", '#include "low/be/b.h"\n// NativeBackend in a comment is fine\n')  # skips a layer
        put("high/name.cpp", "bool x = NativeBackend::kName;\n")
        put("server/docker/d.h", '#include "server/v1/v.h"\n#include "server/s.h"\n')  # the listed route
        put("server/v1/v.h", '#include "server/s.h"\n')
        put("server/s.h", "#pragma once\n")
        put("server/e2b/e.cpp", '#include "server/docker/d.h"\n')  # one API on another's header
        got = check(t)
        want = ["low/bad.cpp:1: layer 'low' includes high/h.h",
                "high/skip.cpp:1: layer 'high' includes low/be/b.h",
                "high/name.cpp:1: layer 'high' names NativeBackend",
                "server/e2b/e.cpp:1: the API in server/e2b/ includes server/docker/d.h"]
        ok = len(got) == len(want) and all(any(g.startswith(w) for g in got) for w in want)
        print("\n".join(got))
        print("self-test:", "ok" if ok else "FAILED (expected exactly: " + "; ".join(want) + ")")
        return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(src)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} wrong-way include(s) or backend name(s); see docs/architecture.md (Layers)")
        return 1
    print("layers: every include points down the table in CMakeLists.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A client of `sbx serve --sandbox-fusion` that sends exactly the requests
verl sends (its reward: verl/utils/reward_score/sandbox_fusion/utils.py
call_sandbox_api; its tool: verl/tools/sandbox_fusion_tools.py, which goes
through the same function with memory_limit_MB and stdin=str(None)) and
checks SandboxFusion's answers. Standard library only (urllib).

usage:
  sandbox_fusion_client.py verl URL           the cases below; prints "ok"/"FAIL" lines
  sandbox_fusion_client.py humaneval URL HumanEval.jsonl.gz [--wrong] [-P N]
                                              prints "passed N/164"
  sandbox_fusion_client.py jupyter URL        /run_jupyter cases
  sandbox_fusion_client.py stress URL N P     N requests at concurrency P: "answered A/N right R {status: count}"
  sandbox_fusion_client.py langs URL [LANG,…] python (numpy, pandas, …), pytest, cpp and nodejs on real
                                              images (tests/images/langs.sh), plus go, java, rust if named
URL is the server's base, e.g. http://127.0.0.1:8080 (or .../TOKEN).
Exit status: 0 when every check passed.
"""
import base64
import concurrent.futures
import gzip
import json
import sys
import urllib.error
import urllib.request

FAILS = 0


def check(what, cond, detail=""):
    global FAILS
    print(("ok   " if cond else "FAIL ") + what + ("" if cond else "  " + str(detail)[:2000]))
    if not cond:
        FAILS += 1


def post(url, body, raw=None, timeout=60):
    """(HTTP status, parsed JSON or text) for a POST with verl's headers."""
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, text


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def verl_reward(code, stdin, timeout=10, language="python"):
    """The payload of verl's call_sandbox_api (reward), field for field."""
    return {"compile_timeout": timeout, "run_timeout": timeout, "code": code, "stdin": stdin,
            "language": language, "files": {}, "fetch_files": []}


def verl_tool(code, timeout=30, memory_limit_mb=1024, language="python"):
    """The payload of verl's SandboxFusionTool (through _process_single_case
    with stdin_data None: str(None))."""
    return {"compile_timeout": timeout, "run_timeout": timeout, "code": code, "stdin": str(None),
            "memory_limit_MB": memory_limit_mb, "language": language, "files": {}, "fetch_files": []}


def verl_cases(base):
    run = base + "/run_code"
    st, body = get(base + "/v1/ping")
    check("GET /v1/ping answers \"pong\"", st == 200 and json.loads(body) == "pong", (st, body))

    # stdin/stdout: a correct answer (verl compares stdout.rstrip("\n")).
    st, r = post(run, verl_reward("a, b = map(int, input().split())\nprint(a + b)", "2 40\n"))
    check("reward: stdin -> stdout, Success", st == 200 and r["status"] == "Success" and
          r["run_result"]["status"] == "Finished" and r["run_result"]["return_code"] == 0 and
          r["run_result"]["stdout"] == "42\n" and r["compile_result"] is None, r)
    check("reward: the answer has SandboxFusion's fields",
          st == 200 and set(r) >= {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"} and
          set(r["run_result"]) == {"status", "execution_time", "return_code", "stdout", "stderr"} and
          isinstance(r["run_result"]["execution_time"], float), r)

    # A runtime error: Failed, Finished with a non-zero return code.
    st, r = post(run, verl_reward("import sys\nprint('partial')\nraise ValueError('boom')", ""))
    check("reward: runtime error -> Failed, return_code 1, traceback in stderr",
          st == 200 and r["status"] == "Failed" and r["run_result"]["status"] == "Finished" and
          r["run_result"]["return_code"] == 1 and "ValueError: boom" in r["run_result"]["stderr"] and
          r["run_result"]["stdout"] == "partial\n", r)

    # A syntax error: python has no compile step in SandboxFusion either.
    st, r = post(run, verl_reward("print('x'", ""))
    check("reward: python syntax error -> Failed in run_result (no compile step)",
          st == 200 and r["status"] == "Failed" and r["compile_result"] is None and
          "SyntaxError" in r["run_result"]["stderr"], r)

    # A time-out: TimeLimitExceeded, Failed; output before it kept.
    st, r = post(run, verl_reward("import time\nprint('started', flush=True)\nwhile True: time.sleep(0.1)", "", timeout=1))
    check("reward: time-out -> Failed, run_result TimeLimitExceeded, output so far kept",
          st == 200 and r["status"] == "Failed" and r["run_result"]["status"] == "TimeLimitExceeded" and
          r["run_result"]["stdout"] == "started\n" and r["run_result"]["execution_time"] >= 1.0, r)

    # Outputs are bounded (4 MiB of each kept), the program is not blocked.
    st, r = post(run, verl_reward("import sys\nsys.stdout.write('x' * (10 << 20))\nsys.stderr.write('e' * (6 << 20))\nprint('end', file=sys.stderr)", ""))
    check("10 MiB of stdout, 6 MiB of stderr: Success, 4 MiB of each kept",
          st == 200 and r["status"] == "Success" and len(r["run_result"]["stdout"]) == 4 << 20 and
          len(r["run_result"]["stderr"]) == 4 << 20, (st, str(r)[:300]))

    # The tool's request: memory_limit_MB and stdin "None".
    st, r = post(run, verl_tool("import sys\nprint(repr(sys.stdin.read()))"))
    check("tool: memory_limit_MB 1024, stdin 'None' reaches the program as text",
          st == 200 and r["status"] == "Success" and r["run_result"]["stdout"] == "'None'\n", r)
    st, r = post(run, verl_tool("x = bytearray(512 << 20)\nprint('allocated', len(x))", timeout=10, memory_limit_mb=64))
    check("tool: 512 MiB under memory_limit_MB 64 -> Failed, killed (137), nothing printed",
          st == 200 and r["status"] == "Failed" and r["run_result"]["return_code"] == 137 and
          "allocated" not in r["run_result"]["stdout"], r)
    st, r = post(run, verl_tool("x = bytearray(16 << 20)\nprint('allocated', len(x))", timeout=10, memory_limit_mb=256))
    check("tool: 16 MiB under memory_limit_MB 256 -> Success",
          st == 200 and r["status"] == "Success" and r["run_result"]["stdout"] == "allocated 16777216\n", r)

    # files in, fetch_files out.
    files = {"data/in.txt": base64.b64encode(b"from a file\n").decode(),
             "bin.dat": base64.b64encode(bytes(range(256))).decode()}
    code = ("import os\nprint(open('data/in.txt').read(), end='')\nprint(len(open('bin.dat','rb').read()))\n"
            "os.makedirs('out', exist_ok=True)\nopen('out/result.txt','w').write('written in the sandbox')\n")
    st, r = post(run, {"code": code, "language": "python", "files": files,
                       "fetch_files": ["out/result.txt", "bin.dat", "does/not/exist"]})
    check("files: written under the work dir, read by the program",
          st == 200 and r["status"] == "Success" and r["run_result"]["stdout"] == "from a file\n256\n", r)
    check("fetch_files: a file the program wrote and one sent, base64; a missing one left out",
          st == 200 and base64.b64decode(r["files"].get("out/result.txt", "")) == b"written in the sandbox" and
          base64.b64decode(r["files"].get("bin.dat", "")) == bytes(range(256)) and "does/not/exist" not in r["files"], r)

    # Each request in a fresh sandbox: what one writes, the next does not see.
    post(run, verl_reward("open('/tmp/leak','w').write('x'); open('leak','w').write('x')", ""))
    st, r = post(run, verl_reward("import os\nprint(os.path.exists('/tmp/leak'), os.path.exists('leak'))", ""))
    check("a fresh sandbox per request: an earlier request's files are not there",
          st == 200 and r["run_result"]["stdout"] == "False False\n", r)
    st, r = post(run, verl_reward("import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('192.0.2.1', 80))", ""))
    check("no network: a connect fails", st == 200 and r["status"] == "Failed" and "Error" in r["run_result"]["stderr"], r)

    # bash (busybox image in the test's table).
    st, r = post(run, verl_reward("read a; echo \"got $a\"; echo err >&2; exit 3", "x\n", language="bash"))
    check("bash: stdin, stdout, stderr, exit 3 -> Failed",
          st == 200 and r["status"] == "Failed" and r["run_result"]["stdout"] == "got x\n" and
          r["run_result"]["stderr"] == "err\n" and r["run_result"]["return_code"] == 3, r)
    st, r = post(run, verl_reward("echo ok", "", language="bash"))
    check("bash: Success", st == 200 and r["status"] == "Success" and r["run_result"]["stdout"] == "ok\n", r)

    # A compiled language (the test's table maps cpp to a stand-in compiler
    # here; real g++ in langs_cases): compile error and compile + run.
    st, r = post(run, verl_reward("int main() { SYNTAX ERROR }", "", language="cpp"))
    check("compile error: compile_result Finished with its return code and stderr, run_result null, Failed",
          st == 200 and r["status"] == "Failed" and r["compile_result"] is not None and
          r["compile_result"]["status"] == "Finished" and r["compile_result"]["return_code"] == 1 and
          "error" in r["compile_result"]["stderr"] and r["run_result"] is None, r)
    st, r = post(run, verl_reward("int main() { return 0; }", "in\n", language="cpp"))
    check("compile + run: both results, Success",
          st == 200 and r["status"] == "Success" and r["compile_result"]["return_code"] == 0 and
          r["run_result"]["stdout"] == "compiled program ran: in\n", r)

    # Bad input.
    st, r = post(run, verl_reward("x", "", language="cobol"))
    check("unknown language -> 422 with FastAPI's detail (loc body.language)",
          st == 422 and r["detail"][0]["loc"] == ["body", "language"], (st, r))
    st, r = post(run, {"language": "python"})
    check("missing code -> 422 (loc body.code, type missing)",
          st == 422 and r["detail"][0]["loc"] == ["body", "code"] and r["detail"][0]["type"] == "missing", (st, r))
    st, r = post(run, {"code": "x", "language": "python", "run_timeout": "soon"})
    check("run_timeout not a number -> 422", st == 422 and r["detail"][0]["loc"] == ["body", "run_timeout"], (st, r))
    st, r = post(run, None, raw=b'{"code": "print(1)", "language": ')
    check("malformed JSON -> 422 json_invalid", st == 422 and r["detail"][0]["type"] == "json_invalid", (st, r))
    st, r = post(run, {"code": "x", "language": "python", "files": {"a.txt": "not base64!"}})
    check("bad base64 in files -> 200 SandboxError naming the file",
          st == 200 and r["status"] == "SandboxError" and "a.txt" in r["message"] and r["run_result"] is None, (st, r))
    for p in ["../escape.txt", "a/../../escape.txt", "/etc/passwd"]:
        st, r = post(run, {"code": "x", "language": "python", "files": {p: "aGk="}})
        check("files path %r outside the work dir -> SandboxError" % p,
              st == 200 and r["status"] == "SandboxError" and r["run_result"] is None, (st, r))
    st, r = post(run, {"code": "x", "language": "python", "fetch_files": ["../../etc/shadow"]})
    check("fetch_files path outside the work dir -> SandboxError", st == 200 and r["status"] == "SandboxError", (st, r))
    st, r = post(run, verl_reward("x", "", language="rust"))
    check("a language whose image is missing -> SandboxError saying which image and what to do",
          st == 200 and r["status"] == "SandboxError" and "sbx pull" in r["message"] and "--languages" in r["message"], r)
    st, r = post(run, verl_reward("x", "", language="php"))
    check("a SandboxFusion language sbx's table lacks -> SandboxError", st == 200 and r["status"] == "SandboxError", r)
    st, body = get(base + "/metrics")
    check("/metrics: Prometheus text with requests by language and status",
          st == 200 and 'sbx_sandbox_fusion_requests_total{endpoint="run_code",language="python",status="Success"}' in body
          and "sbx_sandbox_fusion_queue_depth" in body and "sbx_sandbox_fusion_request_seconds_bucket" in body, body)


# Programs of the compiled languages: (compile error, reads two ints from
# stdin and prints their sum, exits 3) per language.
COMPILED = {
    "cpp": ("int main() { return undeclared_name; }",
            "#include <bits/stdc++.h>\nint main() { long a, b; std::cin >> a >> b;\n"
            "  std::vector<long> v{a, b}; std::cout << std::accumulate(v.begin(), v.end(), 0L) << std::endl; }",
            "#include <cstdio>\nint main() { std::fprintf(stderr, \"bad\\n\"); return 3; }"),
    "go": ("package main\nfunc main() { undeclared_name() }",
           "package main\nimport \"fmt\"\nfunc main() { var a, b int; fmt.Scan(&a, &b); fmt.Println(a + b) }",
           "package main\nimport (\"fmt\"; \"os\")\nfunc main() { fmt.Fprintln(os.Stderr, \"bad\"); os.Exit(3) }"),
    "java": ("public class Main { public static void main(String[] a) { undeclaredName(); } }",
             "import java.util.Scanner;\npublic class Main { public static void main(String[] x) {\n"
             "  Scanner s = new Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }",
             "public class Main { public static void main(String[] a) { System.err.println(\"bad\"); System.exit(3); } }"),
    "rust": ("fn main() { undeclared_name(); }",
             "use std::io::Read;\nfn main() { let mut s = String::new(); std::io::stdin().read_to_string(&mut s).unwrap();\n"
             "  let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect(); println!(\"{}\", v[0] + v[1]); }",
             "fn main() { eprintln!(\"bad\"); std::process::exit(3); }"),
}


def compiled_cases(run, lang):
    bad, add, exit3 = COMPILED[lang]
    st, r = post(run, verl_reward(bad, "", timeout=60, language=lang))
    check(lang + ": compile error -> Failed, compile_result Finished with return code != 0 and the "
          "compiler's message naming the identifier, run_result null",
          st == 200 and r["status"] == "Failed" and r["compile_result"] is not None and
          r["compile_result"]["status"] == "Finished" and r["compile_result"]["return_code"] not in (0, None) and
          "ndeclared" in r["compile_result"]["stderr"] + r["compile_result"]["stdout"] and
          r["run_result"] is None, (st, r))
    st, r = post(run, verl_reward(add, "2 40\n", timeout=60, language=lang))
    check(lang + ": compile + run, stdin -> stdout, Success, both results with SandboxFusion's fields",
          st == 200 and r["status"] == "Success" and r["compile_result"]["status"] == "Finished" and
          r["compile_result"]["return_code"] == 0 and isinstance(r["compile_result"]["execution_time"], float) and
          set(r["run_result"]) == {"status", "execution_time", "return_code", "stdout", "stderr"} and
          r["run_result"]["status"] == "Finished" and r["run_result"]["return_code"] == 0 and
          r["run_result"]["stdout"] == "42\n", (st, r))
    st, r = post(run, verl_reward(exit3, "", timeout=60, language=lang))
    check(lang + ": a program exiting 3 -> Failed, run_result return code 3, its stderr",
          st == 200 and r["status"] == "Failed" and r["compile_result"]["return_code"] == 0 and
          r["run_result"]["return_code"] == 3 and r["run_result"]["stderr"] == "bad\n", (st, r))


def langs_cases(base, extra):
    """python, pytest, cpp, nodejs (and the compiled languages in extra) on
    real images: the test's --languages points them at tests/images/langs.sh's."""
    run = base + "/run_code"
    code = ("import numpy, scipy.linalg, pandas, sympy, networkx\n"
            "a = numpy.array([[2.0, 0.0], [0.0, 4.0]])\n"
            "print(int(numpy.arange(10).sum()), sympy.factor('x**2-1'), pandas.DataFrame({'a': [1, 2]}).a.sum(),\n"
            "      round(float(scipy.linalg.det(a)), 6), networkx.path_graph(4).number_of_edges())")
    st, r = post(run, verl_reward(code, "", timeout=30))
    check("python: numpy, scipy, pandas, sympy, networkx import and compute",
          st == 200 and r["status"] == "Success" and r["run_result"]["stdout"] == "45 (x - 1)*(x + 1) 3 8.0 3\n", (st, r))
    st, r = post(run, verl_reward("import pandas as pd, sys\ndf = pd.read_csv(sys.stdin)\nprint(df.groupby('k').v.sum().to_dict())",
                                  "k,v\na,1\nb,2\na,3\n"))
    check("python: pandas reads the request's stdin",
          st == 200 and r["status"] == "Success" and r["run_result"]["stdout"] == "{'a': 4, 'b': 2}\n", (st, r))
    st, r = post(run, {"code": "def test_ok():\n    assert 1 + 1 == 2\n\ndef test_bad():\n    assert 1 + 1 == 3\n",
                       "language": "pytest", "args": ["-q"]})
    check("pytest: one test passes, one fails -> Failed, return code 1, pytest's summary",
          st == 200 and r["status"] == "Failed" and r["run_result"]["return_code"] == 1 and
          "1 failed, 1 passed" in r["run_result"]["stdout"], (st, r))

    compiled_cases(run, "cpp")
    st, r = post(run, {"code": "int main() { for (;;) {} }", "language": "cpp", "compile_timeout": 60, "run_timeout": 1})
    check("cpp: a program past run_timeout -> Failed, run_result TimeLimitExceeded, return code null",
          st == 200 and r["status"] == "Failed" and r["compile_result"]["return_code"] == 0 and
          r["run_result"]["status"] == "TimeLimitExceeded" and r["run_result"]["return_code"] is None, (st, r))

    st, r = post(run, verl_reward("const lines = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
                                  "console.log(lines[0] + lines[1]);", "2 40\n", language="nodejs"))
    check("nodejs: stdin -> stdout, Success, no compile step",
          st == 200 and r["status"] == "Success" and r["compile_result"] is None and
          r["run_result"]["return_code"] == 0 and r["run_result"]["stdout"] == "42\n", (st, r))
    st, r = post(run, verl_reward("console.log('partial');\nthrow new Error('boom');", "", language="nodejs"))
    check("nodejs: an exception -> Failed, return code 1, stdout so far, the error in stderr",
          st == 200 and r["status"] == "Failed" and r["run_result"]["return_code"] == 1 and
          r["run_result"]["stdout"] == "partial\n" and "Error: boom" in r["run_result"]["stderr"], (st, r))
    st, r = post(run, verl_reward("console.log(;", "", language="nodejs"))
    check("nodejs: a syntax error -> Failed, SyntaxError in run_result's stderr",
          st == 200 and r["status"] == "Failed" and r["compile_result"] is None and
          "SyntaxError" in r["run_result"]["stderr"], (st, r))

    for lang in extra:
        compiled_cases(run, lang)


def humaneval(base, data, wrong, parallel):
    problems = [json.loads(l) for l in gzip.open(data, "rt")]

    def one(p):
        body = "    return None\n" if wrong else p["canonical_solution"]
        prog = p["prompt"] + body + "\n\n" + p["test"] + "\n\ncheck(" + p["entry_point"] + ")\n"
        st, r = post(base + "/run_code", verl_reward(prog, "", timeout=10))
        return p["task_id"], st, r

    passed = 0
    with concurrent.futures.ThreadPoolExecutor(parallel) as ex:
        for tid, st, r in ex.map(one, problems):
            ok = st == 200 and r.get("status") == "Success"
            passed += ok
            if st != 200 or r.get("status") == "SandboxError":
                print("  %s: HTTP %s %s" % (tid, st, str(r)[:300]))
    print("passed %d/%d" % (passed, len(problems)))
    return passed, len(problems)


def stress(base, n, parallel):
    """N requests at concurrency P (each sleeps a little so some are running
    when the test kills one); prints how many were answered, by status."""
    def one(i):
        code = "import time\ntime.sleep(0.2)\nprint(%d * 2)" % i
        st, r = post(base + "/run_code", verl_reward(code, "", timeout=10), timeout=120)
        ok = st == 200 and isinstance(r, dict) and r.get("status") in ("Success", "Failed", "SandboxError")
        right = ok and r["status"] == "Success" and r["run_result"]["stdout"] == "%d\n" % (i * 2)
        return ok, right, r.get("status") if isinstance(r, dict) else st
    counts = {}
    answered = right = 0
    with concurrent.futures.ThreadPoolExecutor(parallel) as ex:
        for ok, good, status in ex.map(one, range(n)):
            answered += ok
            right += good
            counts[status] = counts.get(status, 0) + 1
    print("answered %d/%d right %d %s" % (answered, n, right, json.dumps(counts, sort_keys=True)))


def jupyter_cases(base):
    url = base + "/run_jupyter"
    st, r = post(url, {"cells": ["a = 123", "a", "print(a * 2)", "import sys; sys.stderr.write('to stderr')",
                                 "raise RuntimeError('error message')", "a + 1"]})
    ok = st == 200 and r.get("status") == "Success" and len(r.get("cells", [])) >= 5
    check("run_jupyter: Success, a result per cell", ok, (st, r))
    if not ok:
        return
    c = r["cells"]
    check("state kept across cells; the last expression's value in display",
          c[1]["display"] and c[1]["display"][0].get("text/plain") == "123", c[1])
    check("print goes to the cell's stdout", c[2]["stdout"] == "246\n", c[2])
    check("stderr of a cell", c[3]["stderr"] == "to stderr", c[3])
    check("an exception in error (ename, evalue, traceback)",
          c[4]["error"] and c[4]["error"][0].get("ename") == "RuntimeError" and
          c[4]["error"][0].get("evalue") == "error message", c[4])
    check("the answer has driver, cells, files", "driver" in r and "files" in r, r)
    st, r = post(url, {"cells": ["x = 1", "import time\nwhile True: time.sleep(0.1)", "x"], "cell_timeout": 1,
                       "total_timeout": 20})
    check("a cell past cell_timeout: Failed, its driver's status TimeLimitExceeded",
          st == 200 and r.get("status") == "Failed" and r["driver"]["status"] == "TimeLimitExceeded", (st, r))
    st, r = post(url, {"cells": ["open('made.txt','w').write('hi')", "print(open('in.txt').read())"],
                       "files": {"in.txt": base64.b64encode(b"given").decode()}, "fetch_files": ["made.txt"]})
    check("run_jupyter files and fetch_files",
          st == 200 and r.get("status") == "Success" and r["cells"][1]["stdout"] == "given\n" and
          base64.b64decode(r["files"].get("made.txt", "")) == b"hi", (st, r))
    st, r = post(url, {"cells": "not a list"})
    check("run_jupyter: cells not a list -> 422", st == 422, (st, r))


def main():
    mode, base = sys.argv[1], sys.argv[2].rstrip("/")
    if mode == "verl":
        verl_cases(base)
    elif mode == "stress":
        stress(base, int(sys.argv[3]), int(sys.argv[4]))
        return 0
    elif mode == "jupyter":
        jupyter_cases(base)
    elif mode == "langs":
        langs_cases(base, [x for x in (sys.argv[3] if len(sys.argv) > 3 else "").split(",") if x])
    elif mode == "humaneval":
        args = sys.argv[4:]
        parallel = int(args[args.index("-P") + 1]) if "-P" in args else 4
        humaneval(base, sys.argv[3], "--wrong" in args, parallel)
        return 0
    else:
        print(__doc__)
        return 2
    print("%d failed" % FAILS)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

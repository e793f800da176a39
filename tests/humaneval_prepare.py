#!/usr/bin/env python3
"""Writes one self-checking program per HumanEval problem (used by
tests/integration/test_humaneval.sh): prompt + solution + test + check(entry_point).

usage: humaneval_prepare.py HumanEval.jsonl.gz OUTDIR [--wrong]
--wrong replaces every canonical solution by a deliberately wrong one (the
function returns None), so the same harness must then report failures.
"""
import gzip
import json
import os
import sys


def main():
    src, out = sys.argv[1], sys.argv[2]
    wrong = "--wrong" in sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    n = 0
    with gzip.open(src, "rt") as f:
        for line in f:
            p = json.loads(line)
            body = "    return None\n" if wrong else p["canonical_solution"]
            prog = p["prompt"] + body + "\n\n" + p["test"] + "\n\ncheck(" + p["entry_point"] + ")\n"
            name = p["task_id"].replace("/", "_")
            with open(os.path.join(out, name + ".py"), "w") as o:
                o.write(prog)
            n += 1
    print(n)


if __name__ == "__main__":
    main()

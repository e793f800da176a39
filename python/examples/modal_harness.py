"""A Modal-style evaluation harness, run on sbx by changing only the import.

On Modal this file starts with ``import modal``; on sbx with the line below.
Everything else is Modal's API as harnesses use it: App.lookup,
Image.from_registry, Sandbox.create(app=, image=, timeout=), sb.open,
sb.exec(...).stdout.read(), wait(), returncode, terminate().

Run (as root): sbx serve & sleep 1; python3 modal_harness.py   (needs python:latest in sbx's store)
"""
import sbx as modal  # was: import modal

PROBLEMS = [
    ("def add(a, b):\n    return a + b\n", "assert add(2, 3) == 5\n"),
    ("def rev(s):\n    return s[::-1]\n", "assert rev('abc') == 'cba'\n"),
    ("def fact(n):\n    return 1 if n < 2 else n * fact(n - 1)\n", "assert fact(5) == 120\n"),
]


def main() -> int:
    app = modal.App.lookup("sbx-harness-example", create_if_missing=True)
    image = modal.Image.from_registry("python:latest")
    passed = 0
    for solution, test in PROBLEMS:
        sb = modal.Sandbox.create(app=app, image=image, timeout=60, cpu=1.0, memory=256)
        try:
            with sb.open("/tmp/solution.py", "w") as f:
                f.write(solution + "\n" + test)
            p = sb.exec("python3", "/tmp/solution.py", timeout=10)
            p.wait()
            out = p.stdout.read() + p.stderr.read()
            if p.returncode == 0:
                passed += 1
            else:
                print("failed:", out)
        finally:
            sb.terminate()
    print(f"{passed}/{len(PROBLEMS)} passed")
    return 0 if passed == len(PROBLEMS) else 1


if __name__ == "__main__":
    raise SystemExit(main())

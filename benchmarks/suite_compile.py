"""Where the test suite's compile time goes: the README's test command from empty
caches, with numba's compiles timed, by caller and by test.

A pytest plugin (this module, loaded in every worker with ``-p suite_compile``) wraps numba's
``Dispatcher.compile``. Each top-level compile (one not made inside another) is timed and
attributed to the first frame outside numba and PyTensor that called the compiled function
(``pm_evidence/model/batched.py:__call__`` for the models' value-and-gradient functions,
``pymc/...`` for PyMC's own) and to the test running (``PYTEST_CURRENT_TEST``). Loading a
function from the cache goes through the same call and is counted, cheaply. Each worker writes
its totals when it exits; the parent adds them up, prints the largest and writes a CSV.

The timing slows the run (859 CPU-seconds against 698-743 without it, measured), so
compare the CPU of runs without it (README) and use this for the split.

Run from the repository root::

    python benchmarks/suite_compile.py
    python benchmarks/suite_compile.py --top 40 --out benchmarks/results/suite_compile.csv
"""

from __future__ import annotations

import argparse
import atexit
import collections
import csv
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

OUT_ENV = "SUITE_COMPILE_OUT"  # the folder the workers write their totals to
HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
TEST_COMMAND = ["-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", "-n", "2"]


# ---------------------------------------------------------------------- the plugin (workers)
def _caller(frame) -> str:
    """``path:function`` of the first frame outside numba and PyTensor."""
    while frame is not None:
        name = frame.f_code.co_filename
        if "/numba/" not in name and "/pytensor/" not in name:
            path = name.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
            return f"{path}:{frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def _install(out: pathlib.Path) -> None:
    from numba.core import dispatcher

    by_caller: collections.Counter = collections.Counter()
    by_test: collections.Counter = collections.Counter()
    depth = [0]
    compile_ = dispatcher.Dispatcher.compile

    def timed(self, sig):
        if depth[0]:
            return compile_(self, sig)
        depth[0] += 1
        start = time.perf_counter()
        try:
            return compile_(self, sig)
        finally:
            seconds = time.perf_counter() - start
            depth[0] -= 1
            by_caller[_caller(sys._getframe(1))] += seconds
            by_test[os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]] += seconds

    dispatcher.Dispatcher.compile = timed

    @atexit.register
    def _write():
        with open(out / f"worker_{os.getpid()}.json", "w") as f:
            json.dump({"caller": by_caller, "test": by_test}, f)


if os.environ.get(OUT_ENV):  # imported by pytest as a plugin of the timed run
    _install(pathlib.Path(os.environ[OUT_ENV]))


# ---------------------------------------------------------------------- the run (parent)
def _totals(folder: pathlib.Path) -> tuple[collections.Counter, collections.Counter]:
    by_caller: collections.Counter = collections.Counter()
    by_test: collections.Counter = collections.Counter()
    for path in folder.glob("worker_*.json"):
        worker = json.loads(path.read_text())
        by_caller.update(worker["caller"])
        by_test.update(worker["test"])
    return by_caller, by_test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="rows printed per table")
    parser.add_argument("--out", type=pathlib.Path, default=None, help="CSV of every row")
    args = parser.parse_args()

    from latency import cold_env  # benchmarks/ (this script's folder, first on sys.path)

    with tempfile.TemporaryDirectory(prefix="suite-compile-") as tmp:
        folder = pathlib.Path(tmp)
        env = cold_env(tmp)  # PyTensor's and numba's caches empty, in the folder
        env[OUT_ENV] = str(folder)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
        before = os.times()
        start = time.perf_counter()
        run = subprocess.run(
            [sys.executable, *TEST_COMMAND, "-p", "suite_compile"], cwd=ROOT, env=env, check=False
        )
        after = os.times()
        wall = time.perf_counter() - start
        cpu = (after.children_user - before.children_user) + (
            after.children_system - before.children_system
        )
        by_caller, by_test = _totals(folder)

    total = sum(by_caller.values())
    print(f"\npytest exit code {run.returncode}; {wall:.0f} s wall, {cpu:.0f} CPU-seconds "
          f"(timed: slower than a plain run); numba compiling {total:.0f} s")  # fmt: skip
    for title, counts in (("by caller", by_caller), ("by test", by_test)):
        print(f"\nnumba compile seconds {title}:")
        for key, seconds in counts.most_common(args.top):
            print(f"  {seconds:7.1f}  {key}")
    if args.out is not None:
        with open(args.out, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["kind", "key", "compile_s"])
            for kind, counts in (("caller", by_caller), ("test", by_test)):
                writer.writerows([kind, key, round(s, 3)] for key, s in counts.most_common())
        print(f"\nCSV written to {args.out}")


if __name__ == "__main__":
    main()

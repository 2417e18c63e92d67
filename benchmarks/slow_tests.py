"""The statistical tests of minutes each, left out of the default ``pytest`` run (CI).

They are marked ``slow`` in ``tests/`` (long runs at defaults on hard models, standard errors
against the spread of many repeated runs, the larger compiles); this script runs exactly them and
prints each one's duration, so that a benchmark run also checks them.

Run:  .venv/bin/python benchmarks/slow_tests.py [extra pytest arguments]
Exit status: pytest's (0 when every slow test passed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1] / "tests"


def main(extra: list[str]) -> int:
    # minutes each: with -n, spread them one by one (the default suite keeps a module together)
    return int(pytest.main([str(TESTS), "-m", "slow", "-q", "-p", "no:cacheprovider",
                            "--dist", "load", "--durations=0", *extra]))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

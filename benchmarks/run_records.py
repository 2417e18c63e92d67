"""What every benchmark script records beside its numbers: which pm_evidence ran, and its rows
as CSV; and the best-of timing the micro-benchmarks share (imported by the scripts in this
folder, which run as ``python benchmarks/<name>.py``)."""

from __future__ import annotations

import csv
import os
import subprocess
import time
from pathlib import Path


def best_of(fn, repeats: int = 15) -> float:
    """The shortest of ``repeats`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def paired_milliseconds(versions: dict, x, rounds: int) -> dict:
    """Milliseconds per point of each ``LogDensity`` in ``versions`` (name -> adapter) at the
    points ``x``, for the value alone and for the value and gradient, the versions called in
    turn ``rounds`` times so that the machine's drift falls on all alike: ``{(name, kind):
    array of the rounds}``, ``kind`` ``"value"`` or ``"value and gradient"``. The value-only
    functions are compiled first (where a model has one)."""
    import numpy as np

    for ld in versions.values():
        ld.evaluate(x, via_gradient=False)
    seconds: dict = {}
    for _ in range(rounds):
        for name, ld in versions.items():
            for kind, call in (
                ("value", lambda ld=ld: ld.evaluate(x, via_gradient=False)),
                ("value and gradient", lambda ld=ld: ld.log_density_and_grad(x)),
            ):
                start = time.perf_counter()
                call()
                seconds.setdefault((name, kind), []).append(time.perf_counter() - start)
    return {key: 1e3 * np.array(s) / len(x) for key, s in seconds.items()}


def write_csv(rows: list[dict], path: Path, columns: list[str]) -> None:
    """``rows`` as CSV at ``path`` (folders made), the ``columns`` in order, others left out."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def source_line() -> str:
    """Which pm_evidence is benchmarked: its directory, and its git commit with a note of
    uncommitted changes when it is a checkout (others may be editing the tree while a benchmark
    runs: a baseline wants a fixed commit, e.g. a ``git archive`` of it on ``PYTHONPATH``, which
    worker processes inherit)."""
    # imported here, not at the top: latency.py's cold workers time the import of pm_evidence
    # themselves, after importing this module
    import pm_evidence

    where = os.path.dirname(os.path.dirname(os.path.abspath(pm_evidence.__file__)))
    try:
        commit = subprocess.run(
            ["git", "-C", where, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", where, "status", "--porcelain", "pm_evidence"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        state = f"commit {commit}" + (", pm_evidence with uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        state = "not a git checkout"
    return f"pm_evidence from {where} ({state})"


def child_record(script: str, *args: str) -> dict:
    """``python script *args`` in a fresh process (a script's own worker mode), and the JSON
    object on the last line it prints; the child's error is raised where it fails."""
    import json
    import sys

    command = [sys.executable, script, *args]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])

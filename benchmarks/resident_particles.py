"""The exploration with its particles kept on the device for the whole run, against the same
exploration with the particles brought back to the host after every call (the same seed, the
same chains up to rounding), warm, best of ``--repeats`` calls each.

On a GPU machine the model runs there (``backend="jax"``); elsewhere on JAX's CPU behind a
backend that says it runs on an accelerator (a stand-in: what runs where is a GPU's, the times
are the CPU's). Printed per model: seconds with the particles on the device, on the host, the
ratio, and the two runs' ``log Z`` (equal up to rounding).

Run from the repository root::

    python benchmarks/resident_particles.py [--models label_switching_mixture ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pm_evidence.model.backend import Backend, sees_accelerator
from pm_evidence.model.log_density import LogDensity
from pm_evidence.search import exploration
from pm_evidence.zoo.testing import zoo

STAND_IN = Backend("jax", "cuda:0 (stand-in: JAX on the CPU)", "jax")


def _target(name: str) -> LogDensity:
    (entry,) = zoo([name])
    target = LogDensity(entry.build()[0], backend="jax")
    if not sees_accelerator():
        target.backend = STAND_IN
    return target


def timed(target, resident: bool, repeats: int) -> tuple[float, float]:
    """The best wall time of ``repeats`` explorations (seeds 1..repeats) after a warm-up, and
    the last one's ``log Z``."""
    real = exploration.resident_chains
    exploration.resident_chains = real if resident else (lambda kernel, path: False)
    try:
        exploration.explore(target, np.random.default_rng(0))  # compiles
        best, log_z = np.inf, np.nan
        for seed in range(1, repeats + 1):
            start = time.perf_counter()
            found = exploration.explore(target, np.random.default_rng(seed))
            best, log_z = min(best, time.perf_counter() - start), found.log_z
        return best, log_z
    finally:
        exploration.resident_chains = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", nargs="+", default=["label_switching_mixture", "gaussian_mixture_10d"]
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'model':<26} {'device s':>9} {'host s':>8} {'ratio':>6}  log Z (device, host)")
    for name in args.models:
        target = _target(name)
        on_device, z_device = timed(target, True, args.repeats)
        on_host, z_host = timed(target, False, args.repeats)
        print(f"{name:<26} {on_device:9.3f} {on_host:8.3f} {on_device / on_host:6.2f}  "
              f"{z_device:.6f}, {z_host:.6f}")  # fmt: skip


if __name__ == "__main__":
    main()

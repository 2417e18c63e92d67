"""The model's value and gradient at 2,048 points, called in blocks of 1 to 1,024 rows, on
models whose points make a large matrix (a Gaussian process's covariance) and on models whose
points make none: where the default rows per call
(:func:`pm_evidence.model.batched.block_size_for`) come from.

Printed per model: the number of observations, the largest matrix one point makes
(``LogDensity.point_matrix_size``), the default rows per call (``LogDensity.block_size``), and
points per second (the best of three calls on the same 2,048 prior draws) at each block size.

Run from the repository root::

    python benchmarks/rows_per_call.py
    python benchmarks/rows_per_call.py --models rv_gp logistic_regression
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pm_evidence import LogDensity
from pm_evidence.model.batched import BlockedFunction
from pm_evidence.zoo.support import rv_gp
from pm_evidence.zoo.testing import ZOO

ROWS = (1, 2, 4, 8, 16, 64, 256, 1024)
N_POINTS = 2048


def build(name: str):
    if name == "rv_gp":  # one Keplerian and a quasi-periodic GP on 200 observations
        return rv_gp(n=200, n_planets=1)[0]
    built = next(e for e in ZOO if e.name == name).build()
    return built[0] if isinstance(built, tuple) else built


def main(names: list[str]) -> None:
    print(f"{'model':24s} {'n obs':>7s} {'matrix':>7s} {'rows':>5s}  points/s at rows per call")
    for name in names:
        target = LogDensity(build(name))
        x = target.sample_prior(np.random.default_rng(0), N_POINTS)
        flat = target.terms_grad_function.fn  # the compiled function, without its blocks
        rates = []
        for rows in ROWS:
            blocked = BlockedFunction(flat, rows, (-np.inf, -np.inf, 0.0, 0.0))
            blocked(x[:rows])  # compiled and warm
            best = 0.0
            for _ in range(3):
                start = time.perf_counter()
                blocked(x)
                best = max(best, N_POINTS / (time.perf_counter() - start))
            rates.append(f"{rows}: {best:.3g}")
        print(
            f"{name:24s} {target.n_observations:7d} {target.point_matrix_size:7d} "
            f"{target.block_size:5d}  {'  '.join(rates)}",
            flush=True,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", nargs="+",
        default=["rv_gp", "large_normal_mean_1e5", "logistic_regression", "lkj_2d"],
    )  # fmt: skip
    main(parser.parse_args().models)

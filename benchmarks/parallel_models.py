"""Sixteen models compared serially and on a two-worker process pool (``compare_models``).

Models: logistic regressions of diabetes on the Pima data (``pm_evidence.zoo.testing.pima_logistic``),
one per subset of the four covariates ``PIMA_COVARIATES`` (2^4 = 16, from the intercept alone
to all four). Each model's ``log Z`` is computed with the same ``method`` and ``random_seed``,
once in this process one model after another (``executor="serial"``) and once on a local
pool of two worker processes (the default executor). Prints each model's ``log Z`` from both,
its gold (Gauss-Hermite quadrature) and the wall times and speed-up; the ``log Z`` of the two
runs must be identical (every model draws from the stream of its position).

The serial run goes first: the pool's workers then find the models' compiled functions in the
on-disk compile cache (each still loads them into its own process).

Run: python benchmarks/parallel_models.py [--method auto] [--workers 2] [--seed 1]
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings

import numpy as np

import pm_evidence as pme
from pm_evidence.zoo.testing import PIMA_COVARIATES, pima_logistic


def build_models() -> tuple[dict, dict[str, float]]:
    """The 16 models by name (the covariates joined by ``+``; ``"intercept"`` for none) and
    their gold ``log Z`` (``pima_logistic``'s Gauss-Hermite quadrature)."""
    models, gold = {}, {}
    models["intercept"], gold["intercept"] = pima_logistic(covariates=())
    for k in range(1, len(PIMA_COVARIATES) + 1):
        for covariates in itertools.combinations(PIMA_COVARIATES, k):
            name = "+".join(covariates)
            models[name], gold[name] = pima_logistic(covariates=covariates)
    return models, gold


def timed(models, **kwargs) -> tuple[pme.ModelComparison, float]:
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = pme.compare_models(models, progressbar=False, **kwargs)
    for w in caught:
        print(f"  warning: {w.message}")
    return result, time.perf_counter() - start


def main(method: str = "auto", workers: int = 2, seed: int = 1) -> None:
    models, gold = build_models()
    print(f"{len(models)} Pima logistic regressions, method={method!r}, random_seed={seed}")
    serial, serial_s = timed(models, executor="serial", method=method, random_seed=seed)
    pool, pool_s = timed(models, max_workers=workers, method=method, random_seed=seed)
    assert not serial.failures and not pool.failures, (serial.failures, pool.failures)
    diff = max(abs(serial[n].log_z - pool[n].log_z) for n in models)
    print(f"\n{'model':<22} {'log Z serial':>14} {'log Z pool':>14} {'SE':>9} {'- gold':>9}")
    for name in models:
        s, p = serial[name], pool[name]
        print(
            f"{name:<22} {s.log_z:14.6f} {p.log_z:14.6f} {s.se:9.6f} {s.log_z - gold[name]:+9.5f}"
        )
    best = pool.compare().index[0]
    print(f"\nbest model: {best}")
    print(f"serial (this process):      {serial_s:7.1f} s wall")
    print(f"pool ({workers} worker processes):  {pool_s:7.1f} s wall")
    print(f"speed-up:                   {serial_s / pool_s:7.2f}x")
    print(f"sum of the pool's per-model times: {sum(pool.seconds.values()):.1f} s")
    print(f"max |log Z serial - log Z pool| = {diff:.3g}")
    assert diff == 0.0, "serial and pool log Z differ"
    assert np.all(np.isfinite([serial[n].log_z for n in models]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="auto")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    main(args.method, args.workers, args.seed)

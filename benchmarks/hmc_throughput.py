"""HMC transitions per second: the whole transition as one compiled graph against the NumPy
leapfrog around the compiled log-density; and the batched log-density + gradient with and
without unwrapping the ``Blockwise`` inner graphs (``pt.logaddexp``) that vectorizing creates.

Run:  .venv/bin/python benchmarks/hmc_throughput.py
Prints milliseconds per call and ratios; not a timed test. Compiling takes a few seconds per
model the first time (PyTensor caches the compiled code on disk).
"""

from __future__ import annotations

import time

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import vectorize_graph

from pm_evidence.model.log_density import LogDensity
from pm_evidence.references import MultivariateStudentTReference, PriorReference
from pm_evidence.tempering.kernels import hmc_step
from pm_evidence.tempering.path import GeometricPath
from pm_evidence.zoo import testing


def ms_per_call(fn, repeats: int = 300) -> float:
    fn()  # compile / warm up
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1e3


def log_density_comparison(target: LogDensity, x: np.ndarray) -> None:
    graphs = target._graphs
    outputs, x_flat = graphs.with_grads(), graphs.x
    x_batch = pt.matrix("x_batch")
    wrapped = pytensor.function([x_batch], vectorize_graph(outputs, replace={x_flat: x_batch}))
    plain = ms_per_call(lambda: wrapped(x))
    unwrapped = ms_per_call(lambda: target.terms_grad_function(x))
    print(f"  log-density + gradient, {x.shape[0]} points: Blockwise {plain:.3f} ms, "
          f"unwrapped {unwrapped:.3f} ms, ratio {plain / unwrapped:.1f}")  # fmt: skip


def hmc_comparison(path: GeometricPath, n_points: int, n_leapfrog: int) -> None:
    rng = np.random.default_rng(0)
    state = path.sample_reference(rng, n_points, with_grad=True)
    beta = rng.uniform(0.0, 1.0, n_points)
    step = np.full(n_points, 0.3)
    times = {
        compiled: ms_per_call(
            lambda c=compiled: hmc_step(rng, path, state, beta, step, n_leapfrog, compiled=c)
        )
        for compiled in (False, True)
    }
    print(f"  HMC transition ({path.reference.name} reference, {n_leapfrog} leapfrog steps, "
          f"{n_points} points): NumPy {times[False]:.3f} ms, compiled {times[True]:.3f} ms, "
          f"ratio {times[False] / times[True]:.1f}")  # fmt: skip


def main():
    n_points = 1000
    mixture, _ = testing.gaussian_mixture_10d()
    target = LogDensity.for_model(mixture)
    print("10-D two-Gaussian mixture (seed 004 App. E.1, written with pt.logaddexp)")
    x = np.random.default_rng(1).normal(size=(n_points, target.dim))
    log_density_comparison(target, x)
    hmc_comparison(GeometricPath(target, PriorReference(target)), n_points, 2)

    regression, _ = testing.linear_regression()
    target = LogDensity.for_model(regression)
    print(f"Linear regression ({target.dim} parameters)")
    x = np.random.default_rng(1).normal(size=(n_points, target.dim))
    log_density_comparison(target, x)
    reference = MultivariateStudentTReference.fit(
        np.random.default_rng(2).normal(size=(500, target.dim))
    )
    for ref in (PriorReference(target), reference):
        hmc_comparison(GeometricPath(target, ref), n_points, 2)


if __name__ == "__main__":
    main()

"""Gibbs sweeps per second on a 10x10 grid MRF written in PyMC: batched over chains x rungs in
one compiled call per block, against a Python loop over chains (the same kernel, one chain per
call).

Run:  .venv/bin/python benchmarks/gibbs_throughput.py
Prints chain-sweeps per second and the ratio; not a timed test.
"""

from __future__ import annotations

import time

import numpy as np

from pm_evidence.model.log_density import LogDensity
from pm_evidence.tempering.kernels import make_kernel
from pm_evidence.tempering.path import GeometricPath
from pm_evidence.zoo import energy


def sweeps_per_second(path, kernel, x, betas, rng, n_sweeps):
    state = path.evaluate(x, with_grad=kernel.needs_grad)
    ones = np.ones(x.shape[0])
    kernel.step(rng, path, state, betas, ones)  # warm-up
    start = time.perf_counter()
    for _ in range(n_sweeps):
        state, _, _ = kernel.step(rng, path, state, betas, ones)
    return x.shape[0] * n_sweeps / (time.perf_counter() - start)


def main():
    mrf = energy.grid_mrf(10, 10, sigma_p=0.5, seed=0)
    target = LogDensity.for_model(mrf.to_pymc())
    path = GeometricPath(target, energy.uniform_reference(100))
    rng = np.random.default_rng(0)
    n_chains, n_rungs = 100, 10  # every chain x rung pair is one point of the batch
    x = (rng.random((n_chains * n_rungs, 100)) < 0.5).astype(float)
    betas = np.repeat(np.linspace(0.1, 1.0, n_rungs), n_chains)
    print(f"10x10 grid MRF, {n_chains} chains x {n_rungs} rungs; chain-sweeps per second")
    for label, kernel in (
        ("gibbs, checkerboard blocks", make_kernel("gibbs", target,
                                                   blocks=energy.checkerboard_blocks((10, 10)))),
        ("gibbs, one site at a time", make_kernel("gibbs", target)),
    ):  # fmt: skip
        batched = sweeps_per_second(path, kernel, x, betas, rng, 5)
        looped_n = 20
        looped = np.mean([
            sweeps_per_second(path, kernel, x[i : i + 1], betas[i : i + 1], rng, 2)
            for i in range(looped_n)
        ])  # fmt: skip
        print(f"{label:28s} batched {batched:10.0f}   loop over chains {looped:8.1f}   "
              f"ratio {batched / looped:7.0f}x")  # fmt: skip


if __name__ == "__main__":
    main()

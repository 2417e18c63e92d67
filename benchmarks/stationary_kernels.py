"""PyMC's stationary kernels on one input with their scaled inputs taken at the constants
(:func:`pm_evidence.model.packed_covariance.gathered_constant_expressions`, the default) and
without, paired.

Models: ``pm.gp.Marginal`` with ``eta^2`` times ``pm.gp.cov.ExpQuad``, ``Matern52``,
``Matern32`` or ``Exponential`` (one input, ``ls ~ HalfNormal(10)``, ``eta ~ HalfNormal(2)``,
noise ``HalfNormal(1)``) on ``n`` simulated observations. Both versions of a model are compiled
in one process (the pass replaced by the identity for the second) and called in turn on the
same 48 prior draws, ``--rounds`` times, so that the machine's drift falls on both alike;
printed: milliseconds per point, the least over the rounds, for the value alone and for the
value and gradient, their ratios, and the largest differences between the two versions'
values and gradients.

Run from the repository root::

    python benchmarks/stationary_kernels.py
    python benchmarks/stationary_kernels.py --sizes 200 --rounds 20
"""

from __future__ import annotations

import argparse

import numpy as np
import pymc as pm
from run_records import paired_milliseconds

import pm_evidence.model.graphs as graphs
from pm_evidence import LogDensity

POINTS = 48
KERNELS = ("ExpQuad", "Matern52", "Matern32", "Exponential")


def gp_model(kernel: str, n: int) -> pm.Model:
    """``pm.gp.Marginal`` with ``kernel`` on one input, ``n`` simulated observations."""
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0.0, 100.0, n))
    y = np.sin(t / 7.0) + rng.normal(0.0, 0.3, n)
    with pm.Model() as model:
        ls = pm.HalfNormal("ls", 10.0)
        eta = pm.HalfNormal("eta", 2.0)
        noise = pm.HalfNormal("noise", 1.0)
        cov = eta**2 * getattr(pm.gp.cov, kernel)(1, ls=ls)
        pm.gp.Marginal(cov_func=cov).marginal_likelihood("y", X=t[:, None], y=y, sigma=noise)
    return model


def paired(kernel: str, n: int, rounds: int) -> dict:
    """Milliseconds per point of both versions of ``kernel``'s model, called in turn."""
    versions = {"at the constants": LogDensity(gp_model(kernel, n))}
    rewrite = graphs.gathered_constant_expressions
    graphs.gathered_constant_expressions = list
    try:
        versions["as packed"] = LogDensity(gp_model(kernel, n))
    finally:
        graphs.gathered_constant_expressions = rewrite
    x = versions["at the constants"].sample_prior(np.random.default_rng(0), POINTS)
    results = {name: ld.log_density_and_grad(x) for name, ld in versions.items()}
    ms = {key: float(s.min()) for key, s in paired_milliseconds(versions, x, rounds).items()}
    (value, grad), (value_packed, grad_packed) = results.values()
    return {
        "ms": ms,
        "value difference": float(np.max(np.abs(value - value_packed))),
        "gradient difference": float(np.max(np.abs(grad - grad_packed) / (1 + np.abs(grad_packed)))),
    }


def main(sizes, rounds: int) -> None:
    print(f"{'kernel':12s} {'n':>4s}  {'version':17s} {'value ms':>9s} {'value+grad ms':>14s}")
    for kernel in KERNELS:
        for n in sizes:
            r = paired(kernel, n, rounds)
            for name in ("as packed", "at the constants"):
                print(
                    f"{kernel:12s} {n:4d}  {name:17s} {r['ms'][name, 'value']:9.3f} "
                    f"{r['ms'][name, 'value and gradient']:14.3f}"
                )
            ratios = [
                r["ms"]["as packed", kind] / r["ms"]["at the constants", kind]
                for kind in ("value", "value and gradient")
            ]
            print(
                f"{'':12s} {'':4s}  {'ratio':17s} {ratios[0]:9.2f} {ratios[1]:14.2f}   largest "
                f"differences: values {r['value difference']:.1e}, gradients (relative) "
                f"{r['gradient difference']:.1e}",
                flush=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[50, 200])
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    main(args.sizes, args.rounds)

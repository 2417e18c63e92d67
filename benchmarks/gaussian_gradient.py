"""A Gaussian process likelihood's value and gradient as compiled by default and with each of
its rewrites turned off, at a few sizes.

Models: ``rv_gp`` (:func:`pm_evidence.zoo.support.rv_gp`, one Keplerian and a quasi-periodic
kernel on ``n`` simulated observations, 11 parameters) at ``n`` = 50, 200 and 800. Printed per
model and size: the default rows per call, then points per second of the value alone and of the
value and gradient (the best of three calls on the same prior draws), for each variant:

- ``default``: the kernel on the covariance's lower triangle
  (:mod:`pm_evidence.model.packed_covariance`), its sines of the lags by angle addition
  (:mod:`pm_evidence.model.trig_differences`), the gradient in closed form with ``K^-1`` by
  LAPACK's ``potri`` (:mod:`pm_evidence.model.gaussian`);
- ``a sine per entry``: the sines of the lags as the model writes them, one per entry;
- ``full matrix``: the kernel on every entry (``lower_triangle_covariances`` off);
- ``full matrix, K^-1 by solves``: also ``K^-1`` by two triangular solves with the identity
  (``cho_solve``) instead of ``potri``;
- ``through the factorization``: the kernel on the lower triangle, the gradient PyTensor's
  through the Cholesky factor (Murray's formula; ``gaussian_gradients`` off).

Each variant runs in a fresh process, where the rewrites it turns off are replaced by the
identity, nothing else; every variant but the default keeps a sine per entry, so that each
later row differs from ``a sine per entry`` by its own rewrite only.

Run from the repository root::

    python benchmarks/gaussian_gradient.py
    python benchmarks/gaussian_gradient.py --sizes 200
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from run_records import child_record

VARIANTS = (
    "default", "a sine per entry", "full matrix", "full matrix, K^-1 by solves",
    "through the factorization",
)  # fmt: skip


def _turn_off(variant: str) -> None:
    """The rewrites ``variant`` goes without, replaced in this process only."""
    import pytensor.tensor as pt

    import pm_evidence.model.gaussian as gaussian
    import pm_evidence.model.graphs as graphs

    if variant != "default":
        graphs.sines_of_differences = list
    if variant.startswith("full matrix"):
        graphs.lower_triangle_covariances = list
    if variant == "full matrix, K^-1 by solves":
        gaussian.cholesky_inverse = lambda L: pt.linalg.cho_solve(
            (L, True), pt.eye(L.shape[-1], dtype=L.dtype), b_ndim=2
        )
    if variant == "through the factorization":
        graphs.gaussian_gradients = list


def rates(n: int, variant: str) -> dict:
    """Points per second of the value and of the value and gradient of ``rv_gp(n)``."""
    _turn_off(variant)
    from pm_evidence import LogDensity
    from pm_evidence.zoo.support import rv_gp

    target = LogDensity(rv_gp(n=n, n_planets=1)[0])
    points = max(32, int(2e7 / n**2))  # about a second per call at the slowest
    x = target.sample_prior(np.random.default_rng(0), points)
    out = {"rows": target.block_size}
    for name, call in (
        ("value", lambda: target.evaluate(x, via_gradient=False)),
        ("value and gradient", lambda: target.log_density_and_grad(x)),
    ):
        call()  # compiles
        best = 0.0
        for _ in range(3):
            start = time.perf_counter()
            call()
            best = max(best, points / (time.perf_counter() - start))
        out[name] = best
    return out


def main(sizes) -> None:
    print(f"{'n':>5s} {'rows':>5s}  {'variant':30s} {'value pts/s':>12s} {'value+grad pts/s':>17s}")
    for n in sizes:
        for variant in VARIANTS:
            r = child_record(__file__, "--child", str(n), variant)
            print(
                f"{n:5d} {r['rows']:5d}  {variant:30s} {r['value']:12.0f} "
                f"{r['value and gradient']:17.0f}",
                flush=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[50, 200, 800])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # one variant, in a child
    args = parser.parse_args()
    if args.child:
        print(json.dumps(rates(int(args.child[0]), args.child[1])))
    else:
        main(args.sizes)

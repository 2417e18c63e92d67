"""A periodic kernel's value and gradient with its sines of the lags by angle addition
(:mod:`pm_evidence.model.trig_differences`, the default) and with a sine per entry, paired.

Models: ``rv_gp`` (:func:`pm_evidence.zoo.support.rv_gp`: one Keplerian and a quasi-periodic
kernel written by hand on ``lag = t[:, None] - t[None, :]``, 11 parameters) and PyMC's own
``pm.gp.cov.Periodic`` times ``ExpQuad`` in ``pm.gp.Marginal``
(:func:`pm_evidence.zoo.support.periodic_gp`, 4 parameters), at ``n``
observations. Both versions of a model are compiled in one process (the rewrite replaced by the
identity for the second) and called in turn on the same 48 prior draws, ``--rounds`` times, so
that the machine's drift falls on both alike; printed: milliseconds per point, the least and the
median over the rounds, for the value alone and for the value and gradient, their ratios, and
the largest difference between the two versions' values. ``--backend jax`` compiles both with
JAX, the rewrite forced on for the first (by default JAX runs the sines as the model writes
them: this is the measurement behind that choice).

Run from the repository root::

    python benchmarks/sines_of_differences.py
    python benchmarks/sines_of_differences.py --sizes 200 --rounds 20
    python benchmarks/sines_of_differences.py --backend jax
"""

from __future__ import annotations

import argparse

import numpy as np
from run_records import paired_milliseconds

import pm_evidence.model.graphs as graphs
import pm_evidence.model.log_density as log_density
from pm_evidence import LogDensity
from pm_evidence.zoo.support import periodic_gp, rv_gp

POINTS = 48


MODELS = {
    "rv_gp": lambda n: rv_gp(n=n, n_planets=1)[0],
    "pm.gp Periodic": lambda n: periodic_gp(n=n)[0],
}


def with_angle_addition(model, backend: str) -> LogDensity:
    """``model``'s adapter on ``backend`` with the sines by angle addition (on JAX, where the
    adapter does without them, forced for this one adapter)."""
    if backend == "numba":
        return LogDensity(model)
    built = log_density.flat_graphs
    log_density.flat_graphs = lambda model, point, angle_addition: built(model, point, True)
    try:
        target = LogDensity(model, backend=backend)
        target.log_density_and_grad(target.sample_prior(np.random.default_rng(0), 1))
        return target
    finally:
        log_density.flat_graphs = built


def paired(build, n: int, rounds: int, backend: str) -> dict:
    """Milliseconds per point of both versions of ``build(n)``, called in turn."""
    versions = {"angle addition": with_angle_addition(build(n), backend)}
    rewrite = graphs.sines_of_differences
    graphs.sines_of_differences = list
    try:
        versions["a sine per entry"] = LogDensity(build(n), backend=backend)
    finally:
        graphs.sines_of_differences = rewrite
    x = versions["angle addition"].sample_prior(np.random.default_rng(0), POINTS)
    values = {name: ld.log_density_and_grad(x)[0] for name, ld in versions.items()}
    ms = paired_milliseconds(versions, x, rounds)
    difference = np.max(np.abs(values["angle addition"] - values["a sine per entry"]))
    return {"ms": ms, "difference": float(difference)}


def main(sizes, rounds: int, backend: str) -> None:
    print(f"{'model':15s} {'n':>4s}  {'version':17s} {'value ms':>15s} {'value+grad ms':>15s}")
    for model, build in MODELS.items():
        for n in sizes:
            r = paired(build, n, rounds, backend)
            for name in ("a sine per entry", "angle addition"):
                cells = [
                    f"{r['ms'][name, kind].min():6.3f} ({np.median(r['ms'][name, kind]):6.3f})"
                    for kind in ("value", "value and gradient")
                ]
                print(f"{model:15s} {n:4d}  {name:17s} {cells[0]:>15s} {cells[1]:>15s}")
            ratios = [
                r["ms"]["a sine per entry", kind].min() / r["ms"]["angle addition", kind].min()
                for kind in ("value", "value and gradient")
            ]
            print(
                f"{'':15s} {'':4s}  {'ratio':17s} {ratios[0]:15.2f} {ratios[1]:15.2f}   "
                f"largest difference of the values {r['difference']:.1e}",
                flush=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[50, 200])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--backend", choices=("numba", "jax"), default="numba")
    args = parser.parse_args()
    main(args.sizes, args.rounds, args.backend)

"""``auto`` at defaults against ``pm.sample_smc`` on priors with their own support
(``pm_evidence.zoo.support``): a normal cut by an ``Interval`` transform (exact mass from the
CDF), a cut whose mass depends on a parent (estimated from forward draws), a circular
radial-velocity orbit with ``CustomDist`` Jeffreys priors (gold by 2-D quadrature), and one- and
two-planet eccentric orbits with ``CustomDist`` and ``TruncatedNormal`` eccentricity components
(no gold: two seeds of ``auto`` and SMC side by side).

Each model: ``marginal_likelihood`` at its defaults, seeds 1 and 2 (seed 1 is the first call of
the process for the model, so it includes compiling), then ``pm.sample_smc`` at its defaults
(seed 1). Printed: wall seconds, log Z and SE, the error against the gold in SEs where there is
one, ``reliable`` and the number of warnings, and whether the exploration ran.

Run from the repository root::

    python benchmarks/support.py
    python benchmarks/support.py --models circular_rv eccentric_rv_1
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pymc as pm

import pm_evidence as pme
from pm_evidence.interop.pymc_smc import from_smc
from pm_evidence.zoo import support

MODELS = {
    "cut_normal": support.cut_normal,
    "hierarchical_cut_normal": support.hierarchical_cut_normal,
    "circular_rv": support.circular_rv,
    "eccentric_rv_1": lambda: support.eccentric_rv(n_planets=1),
    "eccentric_rv_2": lambda: support.eccentric_rv(n_planets=2),
}


def _row(name, label, seconds, log_z, se, gold, extra=""):
    error = "" if not np.isfinite(gold) else f"{(log_z - gold) / se:+8.2f}"
    print(f"{name:24s} {label:8s} {seconds:8.1f} {log_z:12.4f} {se:8.4f} {error:>8s} {extra}", flush=True)


def main(names, smc: bool) -> None:
    print(f"{'model':24s} {'method':8s} {'wall s':>8s} {'log Z':>12s} {'SE':>8s} {'z':>8s}")
    for name in names:
        model, gold = MODELS[name]()
        for seed in (1, 2):
            start = time.perf_counter()
            ev = pme.marginal_likelihood(model, random_seed=seed, progressbar=False)
            seconds = time.perf_counter() - start
            explored = "exploration" not in ev.diagnostics
            _row(
                name, f"auto/{seed}", seconds, ev.log_z, ev.se, gold,
                f"reliable={ev.reliable} warnings={len(ev.warnings)} explored={explored} "
                f"method={ev.method}",
            )  # fmt: skip
        if smc:
            start = time.perf_counter()
            try:  # SMC draws the prior forward, ignoring a cut: its weights can be NaN
                trace = pm.sample_smc(model=model, random_seed=1, progressbar=False)
            except ValueError as err:
                print(f"{name:24s} smc/1    failed after {time.perf_counter() - start:.1f} s: {err}")
                continue
            seconds = time.perf_counter() - start
            result = from_smc(trace, model)
            _row(name, "smc/1", seconds, result.log_z, result.se, gold)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--no-smc", action="store_true", help="skip PyMC's SMC")
    args = parser.parse_args()
    main(args.models, smc=not args.no_smc)

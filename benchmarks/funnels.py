"""``auto`` at defaults against ``pm.sample_smc`` on centered hierarchical models (funnels),
over seeds.

Models (:mod:`pm_evidence.zoo.funnels`, where each builder's docstring gives its gold and how
it is computed, each checked by a second scheme in ``tests/zoo/test_funnels.py``):

- ``eight_schools_centered``: ``mu ~ N(0, 5^2)``, ``tau ~ HalfNormal(5)``,
  ``theta_j ~ N(mu, tau^2)``, ``y_j ~ N(theta_j, sigma_j^2)``, the eight schools' data; gold:
  ``theta`` and ``mu`` integrate out in closed form, then QUADPACK over ``tau`` (the
  non-centered model has the same log Z).
- ``eight_schools_student_t_centered``: the same with ``theta_j ~ StudentT(4, mu, tau)``; gold:
  each ``theta_j`` integrates out as a scale mixture of normals, then 2-D Gauss-Legendre over
  ``(mu, log tau)``.
- ``poisson_lognormal_centered``: 20 Poisson counts with exposures, rates
  ``LogNormal(mu, tau)``; gold: each log rate integrates out by Gauss-Hermite, then 2-D
  Gauss-Legendre over ``(mu, log tau)``.
- ``beta_binomial_centered``: 20 groups of binomial counts, rates
  ``Beta(mu kappa, (1 - mu) kappa)`` (the rat tumours' hierarchy); gold: each rate integrates
  out as a beta-binomial, then 2-D Gauss-Legendre over ``(mu, log kappa)``.
- ``thirty_groups_centered``: 30 groups of one observation each (``sigma_j = 1``), true
  ``tau = 0.3``; ``mu ~ N(0, 1)``, ``tau ~ HalfCauchy(1)``; gold as above.
- ``varying_slopes_centered``: 20 groups of 3 observations, ``(a_j, b_j) ~ MvNormal(mu, L L^T)``
  with ``L ~ LKJCholeskyCov(n=2, eta=2, sd_dist=Exponential(1))``, ``mu ~ N(0, 2^2 I)``,
  ``y_ij ~ N(a_j + b_j x_ij, 1)`` (45 parameters); gold: the group effects and ``mu``
  integrate out given ``(s_1, s_2, rho)``, then 3-D Gauss-Legendre.
- ``funnel_box_10d``: Neal's funnel in a box (:func:`pm_evidence.zoo.multimodal.funnel_box`),
  gold by 1-D quadrature over ``v``.

Printed per run: wall seconds, error against the gold, SE, ``z``, ``reliable``, the variables
computed in non-centered coordinates; per model: the SD of ``log Z`` over seeds divided by the
mean SE (calibration), and SMC's error and time at seeds 1 and 2, after ``auto``'s seeds in the
same process (so each method's later calls are warm).

The first call of each method is also timed on its own, as a user meets it: seed 1 in a fresh
Python process that has imported PyMC and built the model (PyTensor's and Numba's disk caches
warm, as after any earlier session). In one process the comparison is lopsided: whichever
method runs first pays the process's one-time costs (xarray imports Dask and ``sparse`` at its
first array where they are installed, 0.3-0.45 s), and the one that runs second reuses Numba
functions the first compiled.

Run from the repository root::

    python benchmarks/funnels.py
    python benchmarks/funnels.py --models eight_schools_centered --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pymc as pm
from run_records import child_record

import pm_evidence as pme
from pm_evidence.interop.pymc_smc import from_smc
from pm_evidence.zoo.funnels import (
    beta_binomial_centered,
    eight_schools_centered,
    eight_schools_student_t_centered,
    poisson_lognormal_centered,
    thirty_groups_centered,
    varying_slopes_centered,
)
from pm_evidence.zoo.multimodal import funnel_box

MODELS = {
    "eight_schools_centered": eight_schools_centered,
    "eight_schools_student_t_centered": eight_schools_student_t_centered,
    "poisson_lognormal_centered": poisson_lognormal_centered,
    "beta_binomial_centered": beta_binomial_centered,
    "thirty_groups_centered": thirty_groups_centered,
    "varying_slopes_centered": varying_slopes_centered,
    "funnel_box_10d": funnel_box,
}


def timed_first_call(name: str, method: str) -> dict:
    """Seed 1 of ``method`` (``"auto"`` or ``"smc"``) on model ``name``, timed in this process
    after imports and the model's build: run by :func:`first_call` in a fresh process."""
    model, gold = MODELS[name]()
    start = time.perf_counter()
    if method == "auto":
        log_z = pme.marginal_likelihood(model, random_seed=1, progressbar=False).log_z
    else:
        trace = pm.sample_smc(model=model, random_seed=1, progressbar=False)
        log_z = from_smc(trace, model).log_z
    return {"seconds": time.perf_counter() - start, "error": log_z - gold}


def first_call(name: str, method: str) -> dict:
    """:func:`timed_first_call` in a fresh Python process."""
    return child_record(__file__, "--first-call", name, method)


def first_calls(names) -> None:
    """Each method's first call on each model, in fresh processes, and their ratio."""
    print("first calls, each in a fresh process (seed 1):")
    for name in names:
        auto, smc = first_call(name, "auto"), first_call(name, "smc")
        print(
            f"  {name}: auto {auto['seconds']:.1f} s (err {auto['error']:+.4f}), "
            f"smc {smc['seconds']:.1f} s (err {smc['error']:+.4f}), "
            f"ratio {auto['seconds'] / smc['seconds']:.2f}",
            flush=True,
        )


def main(names, seeds, smc: bool) -> None:
    if smc:
        first_calls(names)
    for name in names:
        model, gold = MODELS[name]()
        print(f"{name}: gold log Z = {gold:.6f}")
        values, ses = [], []
        for seed in seeds:
            start = time.perf_counter()
            ev = pme.marginal_likelihood(model, random_seed=seed, progressbar=False)
            seconds = time.perf_counter() - start
            values.append(ev.log_z)
            ses.append(ev.se)
            print(
                f"  auto seed {seed:2d}  {seconds:6.1f} s  err {ev.log_z - gold:+.4f}  "
                f"se {ev.se:.4f}  z {(ev.log_z - gold) / ev.se:+5.1f}  reliable={ev.reliable}  "
                f"{ev.method}  noncentered={ev.diagnostics.get('noncentered', [])}",
                flush=True,
            )
        if len(values) > 1:
            print(f"  SD / mean SE = {np.std(values, ddof=1) / np.mean(ses):.2f}")
        if smc:  # seed 1 compiles PyMC's functions, seed 2 is warm (as auto's later seeds)
            for seed in (1, 2):
                start = time.perf_counter()
                trace = pm.sample_smc(model=model, random_seed=seed, progressbar=False)
                seconds = time.perf_counter() - start
                result = from_smc(trace, model)
                print(
                    f"  smc  seed {seed:2d}  {seconds:6.1f} s  err {result.log_z - gold:+.4f}  "
                    f"se {result.se:.4f}",
                    flush=True,
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(1, 11)))
    parser.add_argument("--no-smc", action="store_true", help="skip PyMC's SMC")
    parser.add_argument(
        "--first-call", nargs=2, metavar=("MODEL", "METHOD"), help=argparse.SUPPRESS
    )  # the child process of first_call
    args = parser.parse_args()
    if args.first_call:
        print(json.dumps(timed_first_call(*args.first_call)))
    else:
        main(args.models, args.seeds, smc=not args.no_smc)

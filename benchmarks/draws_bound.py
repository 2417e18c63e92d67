"""Where batched HMC stops drawing the posterior (``BATCHED_DRAWS_MAX_DIM``):
``method="auto"`` at its defaults on the draws of batched HMC and of PyMC's NUTS, on the
high-dimensional zoo and a centered hierarchical model (a funnel).

For each model and seed, two calls, each in this process after the model is built anew:

* ``batched``: ``pm_evidence.marginal_likelihood(model, random_seed=seed, progressbar=False)``
  with ``BATCHED_DRAWS_MAX_DIM`` set above the model's parameter count for the call (restored
  afterwards): the defaults up to 250 parameters;
* ``nuts``: the same call with ``sample_kwargs={"nuts_sampler": "pymc"}``: PyMC's NUTS, 4 chains
  of 1,000 tuning and 1,000 kept iterations (the default draws above the bound).

The gold ``log Z`` of the high-dimensional zoo comes from :mod:`pm_evidence.zoo.highdim`; the
centered model's (``centered_60``: 60 groups, ``theta_j ~ N(mu, tau)``, ``y_j ~ N(theta_j,
sigma_j)``, ``mu ~ N(0, 5)``, ``tau ~ HalfNormal(2)``) by integrating ``theta`` and ``mu`` in
closed form (``y ~ N(0, diag(tau^2 + sigma^2) + 25 11^T)``) and ``tau`` by QUADPACK. Printed per
call: wall seconds, error against the gold, SE, error in SEs, ``reliable``, the returned method
and the warnings. A model's first call in the process includes its compile (numba's cache on
disk as it is): run both arms in one process, or compare the later seeds.

Run::

    .venv/bin/python benchmarks/draws_bound.py [--models ...] [--seeds 1 2 3]
        [--samplers batched nuts]

Measured (docs/benchmarks.rst): on the four models of 51 to 202 parameters
``auto`` on batched HMC's draws took 0.17 to 1.03 times the time on NUTS's (median per model),
every result reliable and within 1.7 of its SEs of the gold.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pymc as pm
from scipy import integrate, stats

import pm_evidence as pme
from pm_evidence.model import draws
from pm_evidence.zoo import highdim

CENTERED_GROUPS = 60


def centered_model() -> tuple[pm.Model, float]:
    """The centered hierarchical model of the module's text and its gold ``log Z``."""
    rng = np.random.default_rng(0)
    sigma = rng.uniform(1.0, 3.0, CENTERED_GROUPS)
    y = rng.normal(1.0, np.sqrt(0.5**2 + sigma**2))

    def log_lik(tau: float) -> float:
        cov = np.diag(tau**2 + sigma**2) + 25.0
        return stats.multivariate_normal(np.zeros(CENTERED_GROUPS), cov).logpdf(y)

    peak = max(log_lik(t) for t in np.linspace(0.01, 10.0, 200))
    value, _ = integrate.quad(
        lambda t: np.exp(log_lik(t) - peak) * stats.halfnorm(scale=2.0).pdf(t),
        0.0, 30.0, limit=400, epsabs=0.0, epsrel=1e-11,
    )  # fmt: skip
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.0)
        theta = pm.Normal("theta", mu, tau, shape=CENTERED_GROUPS)
        pm.Normal("y", theta, sigma, observed=y)
    return model, float(np.log(value) + peak)


def builders() -> dict:
    out = {entry.name: entry.build for entry in highdim.HIGHDIM_ZOO}
    out[f"centered_{CENTERED_GROUPS}"] = centered_model
    return out


def call(model: pm.Model, sampler: str, seed: int):
    """``auto`` at its defaults on ``sampler``'s draws."""
    options = {"sample_kwargs": {"nuts_sampler": "pymc"}} if sampler == "nuts" else {}
    bound = draws.BATCHED_DRAWS_MAX_DIM
    if sampler == "batched":
        draws.BATCHED_DRAWS_MAX_DIM = 10**9
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the warnings are on the result, printed below
            return pme.marginal_likelihood(model, random_seed=seed, progressbar=False, **options)
    finally:
        draws.BATCHED_DRAWS_MAX_DIM = bound


def main() -> None:
    available = builders()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=sorted(available), default=sorted(available))
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--samplers", nargs="+", choices=("batched", "nuts"),
                        default=["batched", "nuts"])  # fmt: skip
    args = parser.parse_args()
    print("sampler  model                      seed  wall_s   error      se  error/se  reliable  "
          "method  warnings", flush=True)  # fmt: skip
    for name in args.models:
        for sampler in args.samplers:
            for seed in args.seeds:
                model, gold = available[name]()
                start = time.perf_counter()
                ev = call(model, sampler, seed)
                wall = time.perf_counter() - start
                error = ev.log_z - gold
                print(
                    f"{sampler:8s} {name:26s} {seed:4d} {wall:7.1f} {error:+8.4f} {ev.se:7.4f} "
                    f"{error / ev.se:+8.1f}  {ev.reliable!s:8s}  {ev.method:6s}  "
                    f"{[w[:120] for w in ev.warnings]}",
                    flush=True,
                )


if __name__ == "__main__":
    main()

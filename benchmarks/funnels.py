"""``auto`` at defaults against ``pm.sample_smc`` on centered hierarchical models (funnels),
over seeds.

Models (gold: ``theta`` and ``mu`` integrate out in closed form, then adaptive 1-D quadrature
over ``tau``, QUADPACK at relative tolerance 1e-12; the non-centered model has the same log Z):

- ``eight_schools_centered``: ``mu ~ N(0, 5^2)``, ``tau ~ HalfNormal(5)``,
  ``theta_j ~ N(mu, tau^2)``, ``y_j ~ N(theta_j, sigma_j^2)``, the eight schools' data.
- ``thirty_groups_centered``: 30 groups of one observation each (``sigma_j = 1``), true
  ``tau = 0.3``; ``mu ~ N(0, 1)``, ``tau ~ HalfCauchy(1)``.

Printed per run: wall seconds, error against the gold, SE, ``z``, ``reliable``, the variables
computed in non-centered coordinates; per model: the SD of ``log Z`` over seeds divided by the
mean SE (calibration), and SMC's error and time at seed 1.

Run from the repository root::

    python benchmarks/funnels.py
    python benchmarks/funnels.py --models eight_schools_centered --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pymc as pm
from scipy import integrate, stats

import pm_evidence as pme
from pm_evidence.interop.pymc_smc import from_smc
from pm_evidence.zoo.testing import EIGHT_SCHOOLS_SIGMA, EIGHT_SCHOOLS_Y


def _log_z(y, sigma, mu_sd, tau_prior) -> float:
    """``log int p(tau) N(y; 0, diag(sigma^2 + tau^2) + mu_sd^2 11')`` by QUADPACK."""
    y, sigma = np.asarray(y, float), np.asarray(sigma, float)

    def log_marginal(tau):
        cov = np.diag(sigma**2 + tau**2) + mu_sd**2
        return stats.multivariate_normal(np.zeros(len(y)), cov).logpdf(y) + tau_prior.logpdf(tau)

    peak = max(log_marginal(t) for t in np.linspace(1e-6, 20, 400))
    value, _ = integrate.quad(
        lambda t: np.exp(log_marginal(t) - peak), 0, np.inf, epsabs=0, epsrel=1e-12, limit=500
    )
    return float(np.log(value) + peak)


def _centered(y, sigma, mu_sd, tau_dist, tau_prior):
    """``theta_j ~ N(mu, tau^2)``, ``y_j ~ N(theta_j, sigma_j^2)``, ``mu ~ N(0, mu_sd^2)``, and
    ``tau ~ tau_dist`` (PyMC) whose SciPy twin ``tau_prior`` the gold integrates."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, mu_sd)
        tau = tau_dist("tau")
        theta = pm.Normal("theta", mu, tau, shape=len(y))
        pm.Normal("y", theta, sigma, observed=y)
    return model, _log_z(y, sigma, mu_sd, tau_prior)


def eight_schools_centered():
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    return _centered(
        y, sigma, 5.0, lambda name: pm.HalfNormal(name, 5.0), stats.halfnorm(scale=5.0)
    )


def thirty_groups_centered():
    rng = np.random.default_rng(30)
    sigma = np.ones(30)
    y = rng.normal(rng.normal(0.5, 0.3, 30), sigma)
    return _centered(
        y, sigma, 1.0, lambda name: pm.HalfCauchy(name, 1.0), stats.halfcauchy(scale=1.0)
    )


MODELS = {
    "eight_schools_centered": eight_schools_centered,
    "thirty_groups_centered": thirty_groups_centered,
}


def main(names, seeds, smc: bool) -> None:
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
        if smc:
            start = time.perf_counter()
            trace = pm.sample_smc(model=model, random_seed=1, progressbar=False)
            seconds = time.perf_counter() - start
            result = from_smc(trace, model)
            print(f"  smc  seed  1  {seconds:6.1f} s  err {result.log_z - gold:+.4f}  se {result.se:.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(1, 11)))
    parser.add_argument("--no-smc", action="store_true", help="skip PyMC's SMC")
    args = parser.parse_args()
    main(args.models, args.seeds, smc=not args.no_smc)

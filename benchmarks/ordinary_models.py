"""``auto`` against ``pm.sample_smc`` on ordinary models of moderate size: tens to a
hundred parameters and hundreds to thousands of observations, the models a user writes next, where
the latency benchmark's small models say little.

Models (data drawn from one ``numpy`` generator, seed 3, in this order):

- ``hierarchical_logistic``: 30 groups, 600 Bernoulli observations, non-centred intercepts with a
  HalfNormal scale and one slope (33 parameters); no exact value.
- ``poisson_glm``: 2,000 counts, 8 predictors and an intercept; no exact value.
- ``student_regression``: 500 observations, 5 coefficients, HalfNormal scale, Gamma degrees of
  freedom; no exact value.
- ``many_scales``: 100 groups of 5 zero-mean normal observations, one HalfNormal scale each;
  exact log Z by one 1-D quadrature per group (QUADPACK in log scale, relative tolerance 1e-12).
- ``beta_binomial_groups``: 100 groups, ``p_g ~ Beta(2, 5)``, binomial counts; exact log Z: a
  product of beta-binomial evidences.

Each model: ``marginal_likelihood`` at its defaults (seed 0 is the first call of the process for
that model, so it includes compiling; seed 1 is timed warm), then ``pm.sample_smc`` at its
defaults (seed 0 to compile, seed 1 timed). Printed: wall seconds, log Z and SE, error against the
exact value in SEs where there is one, and the warm ratio auto/SMC.

Run from the repository root::

    python benchmarks/ordinary_models.py
    python benchmarks/ordinary_models.py --models many_scales beta_binomial_groups
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pymc as pm
from scipy import integrate, stats
from scipy.special import betaln, gammaln

import pm_evidence as pme


def hierarchical_logistic(rng):
    groups, n = 30, 600
    group = rng.integers(0, groups, n)
    x = rng.normal(size=n)
    intercepts = rng.normal(0.3, 0.7, groups)
    y = rng.binomial(1, 1 / (1 + np.exp(-(intercepts[group] + 0.8 * x))))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        z = pm.Normal("z", 0.0, 1.0, shape=groups)
        b = pm.Normal("b", 0.0, 1.0)
        pm.Bernoulli("y", logit_p=mu + sigma * z[group] + b * x, observed=y)
    return model, None


def poisson_glm(rng):
    n, k = 2000, 8
    X = rng.normal(size=(n, k))
    y = rng.poisson(np.exp(0.5 + X @ rng.normal(0, 0.3, k)))
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 2.0)
        b = pm.Normal("b", 0.0, 1.0, shape=k)
        pm.Poisson("y", pm.math.exp(a + pm.math.dot(X, b)), observed=y)
    return model, None


def student_regression(rng):
    n, k = 500, 5
    X = rng.normal(size=(n, k))
    y = X @ rng.normal(size=k) + rng.standard_t(4, n)
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 2.0, shape=k)
        s = pm.HalfNormal("s", 2.0)
        nu = pm.Gamma("nu", 2.0, 0.1)
        pm.StudentT("y", nu=nu, mu=pm.math.dot(X, b), sigma=s, observed=y)
    return model, None


def _many_scales_group_log_z(row: np.ndarray) -> float:
    def log_f(u):  # u = log s, with the Jacobian
        s = np.exp(u)
        return stats.halfnorm.logpdf(s, scale=3.0) + stats.norm.logpdf(row, 0, s).sum() + u

    grid = np.linspace(-10, 6, 8001)
    scales = np.exp(grid)[:, None]  # log_f on the whole grid at once, to find the peak
    values = (stats.halfnorm.logpdf(scales[:, 0], scale=3.0) + grid
              + stats.norm.logpdf(row[None, :], 0, scales).sum(axis=1))  # fmt: skip
    peak = values.max()
    integral, _ = integrate.quad(
        lambda u: np.exp(log_f(u) - peak), -14, 8, limit=400,
        points=[grid[values.argmax()]], epsabs=0, epsrel=1e-12,
    )  # fmt: skip
    return float(np.log(integral) + peak)


def many_scales(rng):
    groups = 100
    y = rng.normal(0, rng.gamma(2, 1, groups)[:, None], size=(groups, 5))
    with pm.Model() as model:
        s = pm.HalfNormal("s", 3.0, shape=groups)
        pm.Normal("y", 0.0, s[:, None], observed=y)
    return model, sum(_many_scales_group_log_z(row) for row in y)


def beta_binomial_groups(rng, groups: int = 100):
    trials = rng.integers(5, 30, groups)
    y = rng.binomial(trials, rng.beta(2, 5, groups))
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 5.0, shape=groups)
        pm.Binomial("y", trials, p, observed=y)
    log_choose = gammaln(trials + 1) - gammaln(y + 1) - gammaln(trials - y + 1)
    return model, float((log_choose + betaln(y + 2, trials - y + 5) - betaln(2, 5)).sum())


MODELS = {
    f.__name__: f
    for f in (hierarchical_logistic, poisson_glm, student_regression, many_scales,
              beta_binomial_groups)
}  # fmt: skip


def _error(log_z: float, se: float, exact: float | None) -> str:
    if exact is None:
        return ""
    return f"  error {log_z - exact:+.4f} ({(log_z - exact) / se:+.1f} SE)"


def compare_with_smc(name: str, model: pm.Model, exact: float | None) -> None:
    """Print ``auto``'s first (seed 0) and warm (seed 1) calls and SMC's warm call (seed 1, after
    a seed-0 call) on ``model``: wall seconds, log Z and SE, the error where ``exact`` is given."""
    exact_text = "no exact value" if exact is None else f"exact log Z {exact:.4f}"
    n_parameters = sum(np.size(v) for v in model.initial_point().values())
    print(f"\n{name}: {n_parameters} parameters, {exact_text}", flush=True)
    start = time.perf_counter()
    first = pme.marginal_likelihood(model, random_seed=0, progressbar=False)
    first_s = time.perf_counter() - start
    start = time.perf_counter()
    warm = pme.marginal_likelihood(model, random_seed=1, progressbar=False)
    warm_s = time.perf_counter() - start
    with model:
        pm.sample_smc(progressbar=False, random_seed=0)
        start = time.perf_counter()
        trace = pm.sample_smc(progressbar=False, random_seed=1)
        smc_s = time.perf_counter() - start
    smc = pme.from_smc(trace, model)
    for label, seconds, result in (("auto first", first_s, first), ("auto warm", warm_s, warm)):
        print(f"  {label:10s} {seconds:6.1f} s  log Z {result.log_z:.4f} ± {result.se:.4f}"
              f"{_error(result.log_z, result.se, exact)}  {result.method}, "
              f"reliable {result.reliable}")
    print(f"  {'SMC warm':10s} {smc_s:6.1f} s  log Z {smc.log_z:.4f} ± {smc.se:.4f}"
          f"{_error(smc.log_z, smc.se, exact)}")
    print(f"  warm auto/SMC {warm_s / smc_s:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    built = {name: build(rng) for name, build in MODELS.items()}  # one stream, fixed order
    for name in args.models:
        compare_with_smc(name, *built[name])


if __name__ == "__main__":
    main()

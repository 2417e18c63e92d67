"""Generalized linear models in the zoo: Poisson, negative binomial and logistic regressions
on one standardized covariate, and the logistic regression of diabetes on the Pima data
(:func:`pima_logistic`, real data, not in :data:`~pm_evidence.zoo.testing.ZOO`; used by
``benchmarks/defaults.py`` and ``benchmarks/parallel_models.py``).

Gold values: 2-D tensor-product Gauss-Legendre quadrature over (intercept, slope) on a box of
+-10 Laplace standard deviations around the posterior mode, with the error from a coarser grid
and a wider box (:func:`~pm_evidence.zoo.gold.quadrature`); for the Pima model, 5-D
Gauss-Hermite quadrature in the Laplace frame (:func:`~pm_evidence.zoo.gold.gauss_hermite`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm
from scipy import special, stats

from pm_evidence.zoo.entries import ZooModel, entry
from pm_evidence.zoo.gold import (
    Gold,
    gauss_hermite,
    laplace_frame,
    quadrature,
)

__all__ = [
    "GLM_ENTRIES",
    "PIMA_COVARIATES",
    "logistic_regression",
    "logistic_regression_data",
    "negative_binomial_regression",
    "pima_data",
    "pima_logistic",
    "poisson_regression",
]


# --- regressions on one covariate: 2-D quadrature over (intercept, slope) ------------------------


def _glm_covariate(n, rng):
    x = rng.normal(size=n)
    return (x - x.mean()) / x.std()


def _poisson_regression_data(n, seed):
    rng = np.random.default_rng(seed)
    x = _glm_covariate(n, rng)
    return x, rng.poisson(np.exp(0.5 + 0.8 * x))


def _poisson_regression_log_density(beta, x, y, tau):
    """Joint log density at the rows of ``beta`` (intercept, slope)."""
    eta = beta[:, :1] + beta[:, 1:] * x
    log_lik = np.sum(y * eta - np.exp(eta) - special.gammaln(y + 1), axis=-1)
    return log_lik + np.sum(stats.norm.logpdf(beta, 0.0, tau), axis=-1)


@functools.cache
def _poisson_regression_gold(n, tau, seed):
    x, y = _poisson_regression_data(n, seed)

    def log_f(beta):
        return _poisson_regression_log_density(beta, x, y, tau)

    return quadrature(log_f, [laplace_frame(log_f, [0.0, 0.0])], (48, 96))


def _poisson_regression_log_joint(values, n, tau, seed):
    x, y = _poisson_regression_data(n, seed)
    beta = np.array([[float(values["intercept"]), float(values["slope"])]])
    return float(_poisson_regression_log_density(beta, x, y, tau)[0])


def poisson_regression(n: int = 40, tau: float = 2.0, seed: int = 25):
    """``y_i ~ Poisson(exp(a + b x_i))``, ``a, b ~ N(0, tau^2)``, standardized ``x``.

    Gold (2-D quadrature): tensor-product Gauss-Legendre over a box of +-10 Laplace standard
    deviations around the posterior mode, along the Cholesky axes of the Laplace covariance
    (48 vs 96 nodes per axis, box widened 1.3x).
    """
    x, y = _poisson_regression_data(n, seed)
    with pm.Model(name="poisson_regression") as model:
        a = pm.Normal("intercept", np.float64(0.0), np.float64(tau))
        b = pm.Normal("slope", np.float64(0.0), np.float64(tau))
        pm.Poisson("y", pm.math.exp(a + b * x), observed=y)
    return model, _poisson_regression_gold(n, tau, seed).log_z


def _negative_binomial_regression_data(n, alpha, seed):
    rng = np.random.default_rng(seed)
    x = _glm_covariate(n, rng)
    mu = np.exp(1.0 + 0.6 * x)
    return x, rng.negative_binomial(alpha, alpha / (alpha + mu))


def _negative_binomial_regression_log_density(beta, x, y, alpha, tau):
    """Joint log density; ``NB(y | mu, alpha) = G(y + alpha) / (G(alpha) y!)
    (alpha / (alpha + mu))^alpha (mu / (alpha + mu))^y``."""
    eta = beta[:, :1] + beta[:, 1:] * x
    log_mu_alpha = np.logaddexp(eta, np.log(alpha))  # log(mu + alpha)
    log_lik = np.sum(
        special.gammaln(y + alpha)
        - special.gammaln(alpha)
        - special.gammaln(y + 1)
        + alpha * (np.log(alpha) - log_mu_alpha)
        + y * (eta - log_mu_alpha),
        axis=-1,
    )
    return log_lik + np.sum(stats.norm.logpdf(beta, 0.0, tau), axis=-1)


@functools.cache
def _negative_binomial_regression_gold(n, alpha, tau, seed):
    x, y = _negative_binomial_regression_data(n, alpha, seed)

    def log_f(beta):
        return _negative_binomial_regression_log_density(beta, x, y, alpha, tau)

    return quadrature(log_f, [laplace_frame(log_f, [0.0, 0.0])], (48, 96))


def _negative_binomial_regression_log_joint(values, n, alpha, tau, seed):
    x, y = _negative_binomial_regression_data(n, alpha, seed)
    beta = np.array([[float(values["intercept"]), float(values["slope"])]])
    return float(_negative_binomial_regression_log_density(beta, x, y, alpha, tau)[0])


def negative_binomial_regression(n: int = 40, alpha: float = 3.0, tau: float = 2.0, seed: int = 26):
    """``y_i ~ NegativeBinomial(mu = exp(a + b x_i), alpha)`` with ``alpha`` known,
    ``a, b ~ N(0, tau^2)``.

    Gold (2-D quadrature) as in :func:`poisson_regression`.
    """
    x, y = _negative_binomial_regression_data(n, alpha, seed)
    with pm.Model(name="negative_binomial_regression") as model:
        a = pm.Normal("intercept", np.float64(0.0), np.float64(tau))
        b = pm.Normal("slope", np.float64(0.0), np.float64(tau))
        pm.NegativeBinomial("y", mu=pm.math.exp(a + b * x), alpha=np.float64(alpha), observed=y)
    return model, _negative_binomial_regression_gold(n, alpha, tau, seed).log_z


def logistic_regression_data(n, seed):
    rng = np.random.default_rng(seed)
    x = _glm_covariate(n, rng)
    return x, rng.binomial(1, special.expit(-0.3 + 1.2 * x))


def _logistic_regression_log_density(beta, x, y, tau):
    eta = beta[:, :1] + beta[:, 1:] * x
    log_lik = np.sum(y * eta - np.logaddexp(0.0, eta), axis=-1)  # log expit(+-eta)
    return log_lik + np.sum(stats.norm.logpdf(beta, 0.0, tau), axis=-1)


@functools.cache
def _logistic_regression_gold(n, tau, seed):
    x, y = logistic_regression_data(n, seed)

    def log_f(beta):
        return _logistic_regression_log_density(beta, x, y, tau)

    return quadrature(log_f, [laplace_frame(log_f, [0.0, 0.0])], (48, 96))


def _logistic_regression_log_joint(values, n, tau, seed):
    x, y = logistic_regression_data(n, seed)
    beta = np.array([[float(values["intercept"]), float(values["slope"])]])
    return float(_logistic_regression_log_density(beta, x, y, tau)[0])


def logistic_regression(n: int = 50, tau: float = 2.0, seed: int = 41):
    """``y_i ~ Bernoulli(logit^-1(a + b x_i))``, ``a, b ~ N(0, tau^2)``.

    Gold (2-D quadrature) as in :func:`poisson_regression`.
    """
    x, y = logistic_regression_data(n, seed)
    with pm.Model(name="logistic_regression") as model:
        a = pm.Normal("intercept", np.float64(0.0), np.float64(tau))
        b = pm.Normal("slope", np.float64(0.0), np.float64(tau))
        pm.Bernoulli("y", logit_p=a + b * x, observed=y)
    return model, _logistic_regression_gold(n, tau, seed).log_z


# --- a real-data logistic regression -------------------------------------------------------------

PIMA_COVARIATES: tuple[str, ...] = ("npreg", "glu", "bmi", "ped")
"""Covariates of :func:`pima_logistic` by default (the smaller model of Friel & Wyse 2012)."""


@functools.cache
def _pima_table() -> dict[str, np.ndarray]:
    """The columns of ``pm_evidence/data/pima_diabetes.csv`` (see the README beside it)."""
    path = Path(__file__).parent.parent / "data" / "pima_diabetes.csv"
    frame = pd.read_csv(path)
    return {name: frame[name].to_numpy() for name in frame.columns}


def pima_data(covariates: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Design matrix (intercept, then the covariates standardized to mean 0 and sample SD 1, as
    R's ``scale``) and the 0/1 response of all 532 women of ``Pima.tr`` and ``Pima.te``."""
    table = _pima_table()
    unknown = [
        c for c in covariates if c not in ("npreg", "glu", "bp", "skin", "bmi", "ped", "age")
    ]
    if unknown:
        raise ValueError(
            f"Unknown Pima covariates {unknown}; allowed: npreg, glu, bp, skin, bmi, ped, age."
        )
    n = len(table["diabetes"])
    raw = np.column_stack([table[c].astype(float) for c in covariates] or [np.empty((n, 0))])
    scaled = (raw - raw.mean(axis=0)) / raw.std(axis=0, ddof=1) if covariates else raw
    design = np.column_stack([np.ones(n), scaled])
    return design, table["diabetes"].astype(float)


def _pima_log_density(beta, design, y, tau):
    """Joint log density at the rows of ``beta``: Bernoulli-logit likelihood times
    ``N(0, tau^2)`` priors."""
    eta = beta @ design.T
    log_lik = np.sum(y * eta - np.logaddexp(0.0, eta), axis=-1)
    return log_lik + np.sum(stats.norm.logpdf(beta, 0.0, tau), axis=-1)


@functools.cache
def _pima_logistic_gold(covariates: tuple[str, ...] = PIMA_COVARIATES, tau: float = 10.0) -> Gold:
    design, y = pima_data(tuple(covariates))

    def log_f(beta):
        return _pima_log_density(beta, design, y, tau)

    mode, chol = laplace_frame(log_f, np.zeros(design.shape[1]), half_width=1.0)
    return gauss_hermite(log_f, (mode, chol), (8, 12))


def _pima_logistic_log_joint(values, covariates=PIMA_COVARIATES, tau=10.0):
    design, y = pima_data(tuple(covariates))
    beta = np.asarray(values["beta"], dtype=float)[None, :]
    return float(_pima_log_density(beta, design, y, tau)[0])


def pima_logistic(covariates: tuple[str, ...] = PIMA_COVARIATES, tau: float = 10.0):
    """Real data: diabetes in 532 Pima women (R ``MASS::Pima.tr`` and ``Pima.te``),
    ``y_i ~ Bernoulli(logit^-1(x_i^T beta))`` with an intercept and the ``covariates``
    standardized (sample SD), ``beta_k ~ N(0, tau^2)`` i.i.d.; ``tau = 10`` (prior precision
    0.01) is the set-up of Friel & Wyse (2012).

    Gold (5-D Gauss-Hermite quadrature for the default four covariates): a product rule of 12
    nodes per axis (12^5 points) in the Laplace frame (mode by BFGS, covariance from a
    finite-difference Hessian); error = the largest change seen with 8 nodes per axis and with
    the frame widened 1.25 times (3e-7 nats for the defaults). For the defaults
    ``log Z = -257.232588``. The data file, its source and licence are described in
    ``pm_evidence/data/README.md``.

    References: N. Friel and J. Wyse (2012), Estimating the evidence - a review, Statistica
    Neerlandica 66(3), 288-308.
    """
    covariates = tuple(covariates)
    design, y = pima_data(covariates)
    with pm.Model(name="pima_logistic") as model:
        beta = pm.Normal("beta", np.float64(0.0), np.float64(tau), shape=design.shape[1])
        pm.Bernoulli("y", logit_p=pm.math.dot(design, beta), observed=y.astype(np.int64))
    return model, _pima_logistic_gold(covariates, tau).log_z


GLM_ENTRIES: tuple[ZooModel, ...] = (
    entry(
        "poisson_regression",
        poisson_regression,
        "quadrature 2-D",
        {"glm"},
        _poisson_regression_gold,
        _poisson_regression_log_joint,
    ),
    entry(
        "negative_binomial_regression",
        negative_binomial_regression,
        "quadrature 2-D",
        {"glm"},
        _negative_binomial_regression_gold,
        _negative_binomial_regression_log_joint,
    ),
    entry(
        "logistic_regression",
        logistic_regression,
        "quadrature 2-D",
        {"glm"},
        _logistic_regression_gold,
        _logistic_regression_log_joint,
    ),
)
"""The generalized linear models of :data:`pm_evidence.zoo.testing.ZOO`.

:meta hide-value:
"""

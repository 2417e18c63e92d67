"""Truncated, censored and missing data in the zoo: a ``pm.Truncated`` likelihood, a
``pm.Censored`` likelihood, a truncated-normal prior against which the data push, and an observed
array with NaNs that PyMC imputes as a free variable.

Gold values: 1-D Gauss-Legendre quadrature over the mean for the truncated and censored
likelihoods, whose normalizing terms ``Phi(b) - Phi(a)`` (or censored masses) depend on it
(:func:`~pm_evidence.zoo.gold.quadrature`); in closed form for the truncated prior (the
untruncated conjugate evidence times the ratio of posterior and prior mass inside the bounds)
and for the missing data (the imputed values integrate to 1).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pymc as pm
from scipy import special, stats

from pm_evidence.zoo.entries import ZooModel, entry
from pm_evidence.zoo.gold import (
    Gold,
    laplace_frame,
    log_normal_interval,
    normal_mean_log_evidence,
    normal_posterior,
    quadrature,
)

__all__ = [
    "TRUNCATION_ENTRIES",
    "censored_normal",
    "missing_data",
    "truncated_normal_likelihood",
    "truncated_prior",
]


# --- truncated and censored likelihoods ----------------------------------------------------------


def _truncated_normal_likelihood_data(n, lower, upper, sigma, seed):
    rng = np.random.default_rng(seed)
    a, b = (lower - 0.5) / sigma, (upper - 0.5) / sigma
    return stats.truncnorm.rvs(a, b, loc=0.5, scale=sigma, size=n, random_state=rng)


def _truncated_normal_likelihood_log_density(mu, y, lower, upper, sigma, m0, tau):
    """Joint log density at ``mu`` (shape ``(m, 1)``): each ``y_i`` has density
    ``N(y_i | mu, sigma^2) / (Phi((upper - mu) / sigma) - Phi((lower - mu) / sigma))``."""
    mu = mu[:, 0]
    log_norm = log_normal_interval((lower - mu) / sigma, (upper - mu) / sigma)
    log_lik = np.sum(stats.norm.logpdf(y, mu[:, None], sigma), axis=-1) - y.size * log_norm
    return log_lik + stats.norm.logpdf(mu, m0, tau)


@functools.cache
def _truncated_normal_likelihood_gold(n, lower, upper, sigma, m0, tau, seed):
    y = _truncated_normal_likelihood_data(n, lower, upper, sigma, seed)

    def log_f(mu):
        return _truncated_normal_likelihood_log_density(mu, y, lower, upper, sigma, m0, tau)

    return quadrature(log_f, [laplace_frame(log_f, [y.mean()])], (64, 128))


def _truncated_normal_likelihood_log_joint(values, n, lower, upper, sigma, m0, tau, seed):
    y = _truncated_normal_likelihood_data(n, lower, upper, sigma, seed)
    mu = np.array([[float(values["mu"])]])
    return float(_truncated_normal_likelihood_log_density(mu, y, lower, upper, sigma, m0, tau)[0])


def truncated_normal_likelihood(
    n: int = 30,
    lower: float = 0.0,
    upper: float = 3.0,
    sigma: float = 1.0,
    m0: float = 1.0,
    tau: float = 2.0,
    seed: int = 27,
):
    """``y_i ~ Truncated(N(mu, sigma^2), lower, upper)`` (``pm.Truncated``),
    ``mu ~ N(m0, tau^2)``.

    Gold (1-D quadrature over ``mu``, Gauss-Legendre around the mode, 64 vs 128 nodes) of the
    truncated likelihood ``prod_i N(y_i | mu, sigma^2) / (Phi(b) - Phi(a))`` times the prior.

    Note: PyMC's normal log-CDF (``dist_math.normal_lcdf``) scales ``z`` by ``1 / pt.sqrt(2.0)``
    with ``2.0`` cast to float32, so each log-CDF term differs from SciPy's ``log_ndtr`` by
    up to a few 1e-8; PyMC's log density here differs from this integrand by < 1e-6 nats.
    """
    y = _truncated_normal_likelihood_data(n, lower, upper, sigma, seed)
    with pm.Model(name="truncated_normal_likelihood") as model:
        mu = pm.Normal("mu", np.float64(m0), np.float64(tau))
        pm.Truncated(
            "y",
            pm.Normal.dist(mu, np.float64(sigma)),
            lower=np.float64(lower),
            upper=np.float64(upper),
            observed=y,
        )
    gold = _truncated_normal_likelihood_gold(n, lower, upper, sigma, m0, tau, seed)
    return model, gold.log_z


def _censored_normal_data(n, lower, upper, sigma, seed):
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(0.8, sigma, size=n), lower, upper)


def _censored_normal_log_density(mu, y, lower, upper, sigma, m0, tau):
    """Joint log density at ``mu`` (shape ``(m, 1)``): ``log Phi((lower - mu) / sigma)`` for
    ``y_i = lower``, ``log(1 - Phi((upper - mu) / sigma))`` for ``y_i = upper``, the normal
    density in between."""
    mu = mu[:, 0]
    at_lower, at_upper = y == lower, y == upper
    inside = y[~at_lower & ~at_upper]
    log_lik = (
        np.sum(stats.norm.logpdf(inside, mu[:, None], sigma), axis=-1)
        + at_lower.sum() * special.log_ndtr((lower - mu) / sigma)
        + at_upper.sum() * special.log_ndtr((mu - upper) / sigma)
    )
    return log_lik + stats.norm.logpdf(mu, m0, tau)


@functools.cache
def _censored_normal_gold(n, lower, upper, sigma, m0, tau, seed):
    y = _censored_normal_data(n, lower, upper, sigma, seed)

    def log_f(mu):
        return _censored_normal_log_density(mu, y, lower, upper, sigma, m0, tau)

    return quadrature(log_f, [laplace_frame(log_f, [y.mean()])], (64, 128))


def _censored_normal_log_joint(values, n, lower, upper, sigma, m0, tau, seed):
    y = _censored_normal_data(n, lower, upper, sigma, seed)
    mu = np.array([[float(values["mu"])]])
    return float(_censored_normal_log_density(mu, y, lower, upper, sigma, m0, tau)[0])


def censored_normal(
    n: int = 30,
    lower: float = -1.0,
    upper: float = 2.0,
    sigma: float = 1.0,
    m0: float = 0.0,
    tau: float = 2.0,
    seed: int = 28,
):
    """``y_i = clip(y*_i, lower, upper)``, ``y*_i ~ N(mu, sigma^2)`` (``pm.Censored``),
    ``mu ~ N(m0, tau^2)``; some observations sit exactly on each bound.

    Gold (1-D quadrature over ``mu``, Gauss-Legendre around the mode, 64 vs 128 nodes). As in
    :func:`truncated_normal_likelihood`, PyMC's log-CDF terms carry errors of a few 1e-8.
    """
    y = _censored_normal_data(n, lower, upper, sigma, seed)
    with pm.Model(name="censored_normal") as model:
        mu = pm.Normal("mu", np.float64(m0), np.float64(tau))
        pm.Censored(
            "y",
            pm.Normal.dist(mu, np.float64(sigma)),
            lower=np.float64(lower),
            upper=np.float64(upper),
            observed=y,
        )
    return model, _censored_normal_gold(n, lower, upper, sigma, m0, tau, seed).log_z


# --- a truncated prior ---------------------------------------------------------------------------


def _truncated_prior_data(n, sigma, seed):
    return np.random.default_rng(seed).normal(1.4, sigma, size=n)


@functools.cache
def _truncated_prior_gold(n, lower, upper, m0, tau, sigma, seed):
    y = _truncated_prior_data(n, sigma, seed)
    m_post, v_post = normal_posterior(y, sigma, m0, tau)
    s_post = np.sqrt(v_post)
    log_z = (
        normal_mean_log_evidence(y, sigma, m0, tau)
        + log_normal_interval((lower - m_post) / s_post, (upper - m_post) / s_post)
        - log_normal_interval((lower - m0) / tau, (upper - m0) / tau)
    )
    return Gold(float(log_z), 0.0)


def _truncated_prior_log_joint(values, n, lower, upper, m0, tau, sigma, seed):
    mu = float(values["mu"])
    y = _truncated_prior_data(n, sigma, seed)
    a, b = (lower - m0) / tau, (upper - m0) / tau
    return float(
        stats.truncnorm.logpdf(mu, a, b, loc=m0, scale=tau) + stats.norm.logpdf(y, mu, sigma).sum()
    )


def truncated_prior(
    n: int = 15,
    lower: float = 0.0,
    upper: float = 1.5,
    m0: float = 0.5,
    tau: float = 1.0,
    sigma: float = 1.0,
    seed: int = 29,
):
    """``y_i ~ N(mu, sigma^2)``, ``mu ~ TruncatedNormal(m0, tau, lower, upper)``; the data
    put the posterior against the upper bound.

    Gold (closed form): with ``Z_0`` the evidence under the untruncated ``N(m0, tau^2)``
    prior and ``N(m_n, v_n)`` its posterior,
    ``log Z = log Z_0 + log P_post(lower < mu < upper) - log P_prior(lower < mu < upper)``.
    """
    y = _truncated_prior_data(n, sigma, seed)
    with pm.Model(name="truncated_prior") as model:
        mu = pm.TruncatedNormal(
            "mu",
            mu=np.float64(m0),
            sigma=np.float64(tau),
            lower=np.float64(lower),
            upper=np.float64(upper),
        )
        pm.Normal("y", mu, np.float64(sigma), observed=y)
    return model, _truncated_prior_gold(n, lower, upper, m0, tau, sigma, seed).log_z


# --- missing data --------------------------------------------------------------------------------


def _missing_data_data(n, n_missing, sigma, seed):
    rng = np.random.default_rng(seed)
    y = rng.normal(-0.7, sigma, size=n)
    y[rng.choice(n, size=n_missing, replace=False)] = np.nan
    return y


@functools.cache
def _missing_data_gold(n, n_missing, sigma, tau, seed):
    y = _missing_data_data(n, n_missing, sigma, seed)
    return Gold(float(normal_mean_log_evidence(y[~np.isnan(y)], sigma, 0.0, tau)), 0.0)


def _missing_data_log_joint(values, n, n_missing, sigma, tau, seed):
    y = _missing_data_data(n, n_missing, sigma, seed)
    mu, imputed = float(values["mu"]), np.asarray(values["y_unobserved"], dtype=float)
    return float(
        stats.norm.logpdf(mu, 0.0, tau)
        + stats.norm.logpdf(y[~np.isnan(y)], mu, sigma).sum()
        + stats.norm.logpdf(imputed, mu, sigma).sum()
    )


def missing_data(n: int = 30, n_missing: int = 5, sigma: float = 1.0, tau: float = 2.0, seed=30):
    """``y_i ~ N(mu, sigma^2)``, ``mu ~ N(0, tau^2)``, with ``n_missing`` entries of the
    observed array set to NaN: PyMC imputes them as a free variable ``y_unobserved``.

    Gold (closed form): the imputed values integrate to 1, so ``Z`` is the evidence of the
    observed entries alone, ``N(y_obs | 0, sigma^2 I + tau^2 11^T)``.
    """
    y = _missing_data_data(n, n_missing, sigma, seed)
    with pm.Model(name="missing_data") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(tau))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Mm]issing values.*")
            pm.Normal("y", mu, np.float64(sigma), observed=y)
    return model, _missing_data_gold(n, n_missing, sigma, tau, seed).log_z


TRUNCATION_ENTRIES: tuple[ZooModel, ...] = (
    entry(
        "truncated_normal_likelihood",
        truncated_normal_likelihood,
        "quadrature 1-D",
        {"truncated"},
        _truncated_normal_likelihood_gold,
        _truncated_normal_likelihood_log_joint,
    ),
    entry(
        "censored_normal",
        censored_normal,
        "quadrature 1-D",
        {"censored"},
        _censored_normal_gold,
        _censored_normal_log_joint,
    ),
    entry(
        "truncated_prior",
        truncated_prior,
        "closed form",
        {"bounded", "truncated"},
        _truncated_prior_gold,
        _truncated_prior_log_joint,
    ),
    entry(
        "missing_data",
        missing_data,
        "closed form",
        {"missing"},
        _missing_data_gold,
        _missing_data_log_joint,
    ),
)
"""The truncated, censored and missing-data models of :data:`pm_evidence.zoo.testing.ZOO`.

:meta hide-value:
"""

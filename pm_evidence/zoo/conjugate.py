"""Conjugate models of the zoo: a normal mean (also peaked in 20 dimensions, and with 1e5
and 1e6 observations), Gaussian linear regressions (known noise, and normal-inverse-gamma),
beta-binomial, Dirichlet-categorical, Dirichlet-multinomial and gamma-Poisson, and two normal
models whose noise scale has a half-normal prior.

Gold values: in closed form, from the conjugate marginal likelihood (a multivariate normal or
t density of the data, or ratios of gamma and beta functions); with the half-normal noise scale,
the conjugate part integrates out in closed form given ``sigma`` and ``sigma`` by 1-D
Gauss-Legendre quadrature over ``log sigma``
(:func:`~pm_evidence.zoo.gold.log_scale_gold`).
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
from scipy import special, stats

from pm_evidence.zoo.entries import ZooModel, entry
from pm_evidence.zoo.gold import (
    Gold,
    log_scale_gold,
    normal_mean_log_evidence,
    regression_log_evidence,
)

__all__ = [
    "CONJUGATE_ENTRIES",
    "DIRICHLET_CATEGORICAL_ALPHA",
    "beta_binomial",
    "dirichlet_categorical",
    "dirichlet_categorical_data",
    "dirichlet_multinomial",
    "gamma_poisson",
    "large_normal_mean",
    "large_normal_mean_data",
    "linear_regression",
    "normal_halfnormal_sigma",
    "normal_halfnormal_sigma_data",
    "normal_mean",
    "peaked_normal_mean",
    "regression_halfnormal_sigma",
    "regression_halfnormal_sigma_data",
    "regression_inverse_gamma",
]


# --- normal means and linear regressions, beta-binomial ------------------------------------------


def normal_mean(n: int = 30, sigma: float = 1.0, tau: float = 2.0, seed: int = 0):
    """y_i ~ N(mu, sigma^2), mu ~ N(0, tau^2): y ~ N(0, sigma^2 I + tau^2 11^T)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(1.0, sigma, size=n)
    cov = sigma**2 * np.eye(n) + tau**2 * np.ones((n, n))
    exact = stats.multivariate_normal(np.zeros(n), cov).logpdf(y)
    with pm.Model(name="normal_mean") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(tau))
        pm.Normal("y", mu, np.float64(sigma), observed=y)
    return model, float(exact)


def linear_regression(
    n: int = 200, d: int = 10, sigma: float = 1.0, tau: float = 1.0, seed: int = 1
):
    """y ~ N(X beta, sigma^2 I), beta ~ N(0, tau^2 I): y ~ N(0, sigma^2 I + tau^2 X X^T)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(0, tau, size=d) + rng.normal(0, sigma, size=n)
    exact = stats.multivariate_normal(np.zeros(n), sigma**2 * np.eye(n) + tau**2 * X @ X.T).logpdf(
        y
    )
    with pm.Model(name="linear_regression") as model:
        beta = pm.Normal("beta", np.float64(0.0), np.float64(tau), shape=d)
        pm.Normal("y", pm.math.dot(X, beta), np.float64(sigma), observed=y)
    return model, float(exact)


def regression_inverse_gamma(
    n: int = 40, d: int = 3, a: float = 3.0, b: float = 2.0, v0: float = 1.0, seed: int = 2
):
    """Normal-inverse-gamma regression: sigma2 ~ IG(a, b), beta | sigma2 ~ N(0, sigma2 v0 I).

    Marginally y ~ multivariate t with 2a degrees of freedom, location 0 and scale matrix
    (b / a) (I + v0 X X^T).
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ np.array([1.0, -0.5, 0.25])[:d] + rng.normal(0, 0.8, size=n)
    shape = (b / a) * (np.eye(n) + v0 * X @ X.T)
    exact = stats.multivariate_t(loc=np.zeros(n), shape=shape, df=2 * a).logpdf(y)
    with pm.Model(name="regression_inverse_gamma") as model:
        X_data = pm.Data("X", X)
        sigma2 = pm.InverseGamma("sigma2", np.float64(a), np.float64(b))
        beta = pm.Normal("beta", np.float64(0.0), pm.math.sqrt(sigma2 * np.float64(v0)), shape=d)
        pm.Normal("y", pm.math.dot(X_data, beta), pm.math.sqrt(sigma2), observed=y)
    return model, float(exact)


def beta_binomial(alpha: float = 2.0, beta: float = 3.0, seed: int = 3):
    """k_i ~ Binomial(n_i, p), p ~ Beta(alpha, beta); log Z in closed form."""
    rng = np.random.default_rng(seed)
    trials = np.array([10, 20, 15, 30])
    k = rng.binomial(trials, 0.3)
    log_binom = (
        special.gammaln(trials + 1) - special.gammaln(k + 1) - special.gammaln(trials - k + 1)
    )
    exact = (
        log_binom.sum()
        + special.betaln(alpha + k.sum(), beta + (trials - k).sum())
        - special.betaln(alpha, beta)
    )
    with pm.Model(name="beta_binomial") as model:
        p = pm.Beta("p", np.float64(alpha), np.float64(beta))
        pm.Binomial("k", n=trials, p=p, observed=k)
    return model, float(exact)


def peaked_normal_mean(dim: int = 20, n: int = 1000, tau: float = 10.0, seed: int = 7):
    """A peaked posterior: ``y_ij ~ N(mu_j, 1)``, ``n`` observations per dimension,
    ``mu_j ~ N(0, tau^2)``; the likelihood is ~1,000x narrower than the prior."""
    rng = np.random.default_rng(seed)
    y = rng.normal(rng.normal(0, 1, dim), 1.0, size=(n, dim))
    # per dimension: y ~ N(0, I + tau^2 11^T); determinant and quadratic form in closed form
    sums, squares = y.sum(axis=0), (y**2).sum(axis=0)
    log_det = np.log1p(n * tau**2)
    quad = squares - tau**2 * sums**2 / (1 + n * tau**2)
    exact = float(np.sum(-0.5 * n * np.log(2 * np.pi) - 0.5 * log_det - 0.5 * quad))
    with pm.Model(name="peaked_normal_mean") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(tau), shape=dim)
        pm.Normal("y", mu, np.float64(1.0), observed=y)
    return model, exact


# --- simplex and conjugate count models ----------------------------------------------------------


def dirichlet_categorical_data(n, seed):
    rng = np.random.default_rng(seed)
    return rng.choice(4, size=n, p=[0.1, 0.4, 0.2, 0.3])


DIRICHLET_CATEGORICAL_ALPHA = (1.0, 2.0, 0.5, 1.5)


@functools.cache
def _dirichlet_categorical_gold(n, seed):
    alpha = np.array(DIRICHLET_CATEGORICAL_ALPHA)
    counts = np.bincount(dirichlet_categorical_data(n, seed), minlength=alpha.size)
    log_z = (
        special.gammaln(alpha.sum())
        - special.gammaln(alpha.sum() + n)
        + np.sum(special.gammaln(alpha + counts) - special.gammaln(alpha))
    )
    return Gold(float(log_z), 0.0)


def _dirichlet_categorical_log_joint(values, n, seed):
    y = dirichlet_categorical_data(n, seed)
    p = np.asarray(values["p"], dtype=float)
    return float(
        stats.dirichlet.logpdf(p, np.array(DIRICHLET_CATEGORICAL_ALPHA)) + np.log(p[y]).sum()
    )


def dirichlet_categorical(n: int = 40, seed: int = 20):
    """``y_i ~ Categorical(p)`` (4 levels), ``p ~ Dirichlet(1, 2, 0.5, 1.5)``.

    Gold (closed form): with counts ``c_k``,
    ``log Z = log G(A) - log G(A + n) + sum_k [log G(alpha_k + c_k) - log G(alpha_k)]``,
    ``A = sum_k alpha_k``. The value space is the simplex, measured by Lebesgue measure on
    its first ``K - 1`` coordinates (the measure Dirichlet's density is written against).
    """
    y = dirichlet_categorical_data(n, seed)
    with pm.Model(name="dirichlet_categorical") as model:
        p = pm.Dirichlet("p", a=np.array(DIRICHLET_CATEGORICAL_ALPHA))
        pm.Categorical("y", p=p, observed=y)
    return model, _dirichlet_categorical_gold(n, seed).log_z


_DIRICHLET_MULTINOMIAL_ALPHA = (2.0, 1.0, 1.0, 3.0, 0.5)
_DIRICHLET_MULTINOMIAL_TRIALS = (20, 35, 15)


def _dirichlet_multinomial_data(seed):
    rng = np.random.default_rng(seed)
    return rng.multinomial(_DIRICHLET_MULTINOMIAL_TRIALS, [0.2, 0.1, 0.15, 0.45, 0.1])


@functools.cache
def _dirichlet_multinomial_gold(seed):
    alpha = np.array(_DIRICHLET_MULTINOMIAL_ALPHA)
    counts = _dirichlet_multinomial_data(seed)
    trials = np.array(_DIRICHLET_MULTINOMIAL_TRIALS)
    log_coef = np.sum(special.gammaln(trials + 1)) - np.sum(special.gammaln(counts + 1))

    def log_beta(a):
        return np.sum(special.gammaln(a)) - special.gammaln(np.sum(a))

    return Gold(float(log_coef + log_beta(alpha + counts.sum(axis=0)) - log_beta(alpha)), 0.0)


def _dirichlet_multinomial_log_joint(values, seed):
    p = np.asarray(values["p"], dtype=float)
    counts = _dirichlet_multinomial_data(seed)
    log_lik = sum(
        stats.multinomial.logpmf(c, n, p)
        for c, n in zip(counts, _DIRICHLET_MULTINOMIAL_TRIALS, strict=True)
    )
    return float(stats.dirichlet.logpdf(p, np.array(_DIRICHLET_MULTINOMIAL_ALPHA)) + log_lik)


def dirichlet_multinomial(seed: int = 21):
    """Three rows ``c_i ~ Multinomial(N_i, p)`` (``N = 20, 35, 15``, 5 levels),
    ``p ~ Dirichlet(2, 1, 1, 3, 0.5)``.

    Gold (closed form): ``sum_i log multinomial coefficient(N_i; c_i)
    + log B(alpha + sum_i c_i) - log B(alpha)``, ``B`` the multivariate beta function.
    """
    counts = _dirichlet_multinomial_data(seed)
    with pm.Model(name="dirichlet_multinomial") as model:
        p = pm.Dirichlet("p", a=np.array(_DIRICHLET_MULTINOMIAL_ALPHA))
        pm.Multinomial("c", n=np.array(_DIRICHLET_MULTINOMIAL_TRIALS), p=p, observed=counts)
    return model, _dirichlet_multinomial_gold(seed).log_z


def _gamma_poisson_data(n, seed):
    return np.random.default_rng(seed).poisson(3.0, size=n)


@functools.cache
def _gamma_poisson_gold(n, a, b, seed):
    y = _gamma_poisson_data(n, seed)
    s = y.sum()
    log_z = (
        a * np.log(b)
        - special.gammaln(a)
        + special.gammaln(a + s)
        - (a + s) * np.log(b + n)
        - np.sum(special.gammaln(y + 1))
    )
    return Gold(float(log_z), 0.0)


def _gamma_poisson_log_joint(values, n, a, b, seed):
    rate = float(values["rate"])
    y = _gamma_poisson_data(n, seed)
    return float(stats.gamma.logpdf(rate, a, scale=1 / b) + stats.poisson.logpmf(y, rate).sum())


def gamma_poisson(n: int = 25, a: float = 2.0, b: float = 0.5, seed: int = 22):
    """``y_i ~ Poisson(rate)``, ``rate ~ Gamma(a, b)`` (``b`` a rate).

    Gold (closed form): ``a log b - log G(a) + log G(a + S) - (a + S) log(b + n)
    - sum_i log y_i!``, ``S = sum_i y_i``.
    """
    y = _gamma_poisson_data(n, seed)
    with pm.Model(name="gamma_poisson") as model:
        rate = pm.Gamma("rate", alpha=np.float64(a), beta=np.float64(b))
        pm.Poisson("y", rate, observed=y)
    return model, _gamma_poisson_gold(n, a, b, seed).log_z


# --- unknown noise scale: quadrature over sigma of a Gaussian marginal ---------------------------


def normal_halfnormal_sigma_data(n, seed):
    return np.random.default_rng(seed).normal(1.0, 1.5, size=n)


@functools.cache
def _normal_halfnormal_sigma_gold(n, m0, tau, sigma_scale, seed):
    y = normal_halfnormal_sigma_data(n, seed)
    # mu integrated out in closed form
    return log_scale_gold(
        lambda sigma: normal_mean_log_evidence(y, sigma, m0, tau), sigma_scale, np.log(y.std())
    )


def _normal_halfnormal_sigma_log_joint(values, n, m0, tau, sigma_scale, seed):
    mu, sigma = float(values["mu"]), float(values["sigma"])
    y = normal_halfnormal_sigma_data(n, seed)
    return float(
        stats.norm.logpdf(mu, m0, tau)
        + stats.halfnorm.logpdf(sigma, scale=sigma_scale)
        + stats.norm.logpdf(y, mu, sigma).sum()
    )


def normal_halfnormal_sigma(
    n: int = 20, m0: float = 0.0, tau: float = 2.0, sigma_scale: float = 2.0, seed: int = 23
):
    """``y_i ~ N(mu, sigma^2)``, ``mu ~ N(m0, tau^2)``, ``sigma ~ HalfNormal(sigma_scale)``.

    Gold (1-D quadrature): for fixed ``sigma``, ``mu`` integrates out in closed form
    (``y ~ N(m0 1, sigma^2 I + tau^2 11^T)``); the remaining integral over
    ``t = log sigma`` of ``p(y | sigma) HalfNormal(sigma) sigma`` is taken by Gauss-Legendre on
    +-10 Laplace standard deviations around the mode (64 vs 128 nodes, box widened 1.3x).
    """
    y = normal_halfnormal_sigma_data(n, seed)
    with pm.Model(name="normal_halfnormal_sigma") as model:
        mu = pm.Normal("mu", np.float64(m0), np.float64(tau))
        sigma = pm.HalfNormal("sigma", np.float64(sigma_scale))
        pm.Normal("y", mu, sigma, observed=y)
    return model, _normal_halfnormal_sigma_gold(n, m0, tau, sigma_scale, seed).log_z


def regression_halfnormal_sigma_data(n, d, seed):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, d - 1))])
    beta = np.array([0.5, -1.0, 0.3, 0.8])[:d]
    return X, X @ beta + rng.normal(0.0, 0.7, size=n)


@functools.cache
def _regression_halfnormal_sigma_gold(n, d, tau, sigma_scale, seed):
    X, y = regression_halfnormal_sigma_data(n, d, seed)
    # beta integrated out in closed form
    return log_scale_gold(lambda sigma: regression_log_evidence(y, X, sigma, tau), sigma_scale)


def _regression_halfnormal_sigma_log_joint(values, n, d, tau, sigma_scale, seed):
    X, y = regression_halfnormal_sigma_data(n, d, seed)
    beta, sigma = np.asarray(values["beta"], dtype=float), float(values["sigma"])
    return float(
        stats.norm.logpdf(beta, 0.0, tau).sum()
        + stats.halfnorm.logpdf(sigma, scale=sigma_scale)
        + stats.norm.logpdf(y, X @ beta, sigma).sum()
    )


def regression_halfnormal_sigma(
    n: int = 40, d: int = 3, tau: float = 1.0, sigma_scale: float = 1.0, seed: int = 24
):
    """``y ~ N(X beta, sigma^2 I)`` (intercept and ``d - 1`` covariates),
    ``beta ~ N(0, tau^2 I)``, ``sigma ~ HalfNormal(sigma_scale)``.

    Gold (1-D quadrature): ``beta`` integrates out in closed form
    (``y ~ N(0, sigma^2 I + tau^2 X X^T)``, by the eigen-decomposition of ``X^T X``); the
    integral over ``t = log sigma`` is Gauss-Legendre around the mode (64 vs 128 nodes).
    """
    X, y = regression_halfnormal_sigma_data(n, d, seed)
    with pm.Model(name="regression_halfnormal_sigma") as model:
        beta = pm.Normal("beta", np.float64(0.0), np.float64(tau), shape=d)
        sigma = pm.HalfNormal("sigma", np.float64(sigma_scale))
        pm.Normal("y", pm.math.dot(X, beta), sigma, observed=y)
    return model, _regression_halfnormal_sigma_gold(n, d, tau, sigma_scale, seed).log_z


# --- many observations ---------------------------------------------------------------------------


def large_normal_mean_data(n, sigma, seed):
    return np.random.default_rng(seed).normal(0.3, sigma, size=n)


@functools.cache
def _large_normal_mean_gold(n, sigma, tau, seed):
    y = large_normal_mean_data(n, sigma, seed)
    return Gold(float(normal_mean_log_evidence(y, sigma, 0.0, tau)), 0.0)


def _large_normal_mean_log_joint(values, n, sigma, tau, seed):
    y = large_normal_mean_data(n, sigma, seed)
    mu = float(values["mu"])
    return float(stats.norm.logpdf(mu, 0.0, tau) + stats.norm.logpdf(y, mu, sigma).sum())


def large_normal_mean(n: int = 100_000, sigma: float = 1.0, tau: float = 2.0, seed: int = 40):
    """``y_i ~ N(mu, sigma^2)``, ``mu ~ N(0, tau^2)`` with many observations (``n = 1e5``
    gives ``log Z`` near ``-1.42e5``); a sharply peaked one-parameter posterior.

    Gold (closed form by sufficient statistics): ``-n/2 log 2 pi - (n - 1) log sigma
    - 1/2 log(sigma^2 + n tau^2) - 1/2 [S / sigma^2 + n ybar^2 / (sigma^2 + n tau^2)]``,
    ``S = sum_i (y_i - ybar)^2``.
    """
    y = large_normal_mean_data(n, sigma, seed)
    with pm.Model(name=f"large_normal_mean_{n}") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(tau))
        pm.Normal("y", mu, np.float64(sigma), observed=y)
    return model, _large_normal_mean_gold(n, sigma, tau, seed).log_z


CONJUGATE_ENTRIES: tuple[ZooModel, ...] = (
    entry("normal_mean", normal_mean, "closed form", {"conjugate"}),
    entry("linear_regression", linear_regression, "closed form", {"conjugate"}),
    entry("regression_inverse_gamma", regression_inverse_gamma, "closed form", {"bounded", "data"}),
    entry("beta_binomial", beta_binomial, "closed form", {"bounded", "conjugate"}),
    entry("peaked_normal_mean", peaked_normal_mean, "closed form", {"peaked", "conjugate"}),
    entry(
        "dirichlet_categorical",
        dirichlet_categorical,
        "closed form",
        {"simplex", "conjugate"},
        _dirichlet_categorical_gold,
        _dirichlet_categorical_log_joint,
    ),
    entry(
        "dirichlet_multinomial",
        dirichlet_multinomial,
        "closed form",
        {"simplex", "conjugate"},
        _dirichlet_multinomial_gold,
        _dirichlet_multinomial_log_joint,
    ),
    entry(
        "gamma_poisson",
        gamma_poisson,
        "closed form",
        {"bounded", "conjugate"},
        _gamma_poisson_gold,
        _gamma_poisson_log_joint,
    ),
    entry(
        "normal_halfnormal_sigma",
        normal_halfnormal_sigma,
        "quadrature 1-D (log sigma) of a closed-form marginal",
        {"bounded"},
        _normal_halfnormal_sigma_gold,
        _normal_halfnormal_sigma_log_joint,
    ),
    entry(
        "regression_halfnormal_sigma",
        regression_halfnormal_sigma,
        "quadrature 1-D (log sigma) of a closed-form marginal",
        {"bounded"},
        _regression_halfnormal_sigma_gold,
        _regression_halfnormal_sigma_log_joint,
    ),
    entry(
        "large_normal_mean_1e5",
        large_normal_mean,
        "closed form",
        {"large"},
        _large_normal_mean_gold,
        _large_normal_mean_log_joint,
        n=100_000,
    ),
    entry(
        "large_normal_mean_1e6",
        large_normal_mean,
        "closed form",
        {"large"},
        _large_normal_mean_gold,
        _large_normal_mean_log_joint,
        n=1_000_000,
    ),
)
"""The conjugate models of :data:`pm_evidence.zoo.testing.ZOO`.

:meta hide-value:
"""

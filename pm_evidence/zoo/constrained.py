"""Variables on constrained spaces in the zoo: a 2-D Cholesky factor with an LKJ prior
(``pm.LKJCholeskyCov``), an ordered vector (``transform=ordered``) and a zero-sum vector
(``pm.ZeroSumNormal``). Each builder's docstring says which density PyMC defines on that space
(the ordered prior, for one, is not renormalized): that density is what the gold integrates.

Gold values: 3-D Gauss-Legendre quadrature over ``(log sd_1, log sd_2, atanh rho)`` for the
LKJ model (:func:`~pm_evidence.zoo.gold.quadrature`); for the ordered means, the unrestricted
conjugate evidence times the posterior probability of the order, by 1-D Gauss-Legendre
quadrature (:func:`log_prob_ordered3`); in closed form, a multivariate normal density of the
data, for the zero-sum model.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
from scipy import special, stats

from pm_evidence.zoo.entries import ZooModel, entry
from pm_evidence.zoo.gold import (
    LOG_2PI,
    Gold,
    laplace_frame,
    leggauss,
    normal_mean_log_evidence,
    normal_posterior,
    quadrature,
)

__all__ = [
    "CONSTRAINED_ENTRIES",
    "lkj_2d",
    "lkj_2d_log_density",
    "log_prob_ordered3",
    "ordered_means",
    "ordered_means_data",
    "zero_sum_normal",
]


# --- a Cholesky factor with an LKJ prior ---------------------------------------------------------


def _log_sech2(r):
    """``log(1 - tanh(r)^2)`` without cancellation."""
    r = np.abs(r)
    return 2.0 * (np.log(2.0) - r - np.log1p(np.exp(-2.0 * r)))


def _lkj_2d_data(n, seed):
    rng = np.random.default_rng(seed)
    sds, rho = np.array([1.0, 2.0]), 0.5
    cov = np.outer(sds, sds) * np.array([[1.0, rho], [rho, 1.0]])
    return rng.multivariate_normal(np.zeros(2), cov, size=n)


def lkj_2d_log_density(s1, s2, rho, scatter, n, eta, sd_rate):
    """Joint log density in ``(sd_1, sd_2, rho)`` coordinates.

    Prior: ``Exponential(sd_rate)`` on each standard deviation and the 2-D LKJ density of the
    correlation, ``(1 - rho^2)^(eta - 1) / B(1/2, eta)`` on ``(-1, 1)``. Likelihood:
    ``n`` draws of ``N(0, Sigma)`` through the scatter matrix ``S = sum_i y_i y_i^T``.
    """
    one_m_rho2 = 1.0 - rho**2
    log_det = 2 * np.log(s1) + 2 * np.log(s2) + np.log(one_m_rho2)
    trace = (
        scatter[0, 0] / s1**2 - 2 * rho * scatter[0, 1] / (s1 * s2) + scatter[1, 1] / s2**2
    ) / one_m_rho2
    log_lik = -n * LOG_2PI - 0.5 * n * log_det - 0.5 * trace
    log_prior = (
        stats.expon.logpdf(s1, scale=1 / sd_rate)
        + stats.expon.logpdf(s2, scale=1 / sd_rate)
        + (eta - 1) * np.log(one_m_rho2)
        - special.betaln(0.5, eta)
    )
    return log_lik + log_prior


@functools.cache
def _lkj_2d_gold(n, eta, sd_rate, seed):
    Y = _lkj_2d_data(n, seed)
    scatter = Y.T @ Y

    def log_f(u):  # u = (log sd_1, log sd_2, atanh rho); Jacobian sd_1 sd_2 (1 - rho^2)
        t1, t2, r = u.T
        rho = np.tanh(r)
        return (
            lkj_2d_log_density(np.exp(t1), np.exp(t2), rho, scatter, n, eta, sd_rate)
            + t1
            + t2
            + _log_sech2(r)
        )

    x0 = [np.log(Y[:, 0].std()), np.log(Y[:, 1].std()), 0.0]
    return quadrature(log_f, [laplace_frame(log_f, x0)], (48, 64))


def _lkj_2d_log_joint(values, n, eta, sd_rate, seed):
    """Density of the packed Cholesky factor ``(L_11, L_21, L_22)``: with
    ``sd_1 = L_11``, ``sd_2 = |(L_21, L_22)|``, ``rho = L_21 / sd_2``, the map
    ``(sd_1, sd_2, rho) -> L`` has Jacobian ``sd_2 / sqrt(1 - rho^2)``."""
    Y = _lkj_2d_data(n, seed)
    l11, l21, l22 = np.asarray(values["chol"], dtype=float)
    s1, s2 = l11, np.hypot(l21, l22)
    rho = l21 / s2
    density = lkj_2d_log_density(s1, s2, rho, Y.T @ Y, n, eta, sd_rate)
    return float(density + 0.5 * np.log1p(-(rho**2)) - np.log(s2))


def lkj_2d(n: int = 30, eta: float = 2.0, sd_rate: float = 1.0, seed: int = 32):
    """``y_i ~ MvNormal(0, L L^T)`` in 2-D with
    ``L ~ LKJCholeskyCov(n=2, eta, sd_dist=Exponential(sd_rate))``.

    PyMC's density of the packed factor (``_LKJCholeskyCovRV`` logp) is the LKJ density of
    the correlation times ``sd_dist`` of the standard deviations, carried to ``L`` by the
    change of variables; in ``(sd_1, sd_2, rho)`` it is
    ``Exp(sd_1) Exp(sd_2) (1 - rho^2)^(eta - 1) / B(1/2, eta)`` (normalized: the tests
    integrate it to 1).

    Gold (3-D quadrature): Gauss-Legendre over ``(log sd_1, log sd_2, atanh rho)``, +-10
    Laplace standard deviations around the mode (48 vs 64 nodes per axis, widened 1.3x).
    """
    Y = _lkj_2d_data(n, seed)
    with pm.Model(name="lkj_2d") as model:
        chol, _, _ = pm.LKJCholeskyCov(
            "chol",
            n=2,
            eta=np.float64(eta),
            sd_dist=pm.Exponential.dist(np.float64(sd_rate), shape=2),
        )
        pm.MvNormal("y", mu=np.zeros(2), chol=chol, observed=Y)
    return model, _lkj_2d_gold(n, eta, sd_rate, seed).log_z


# --- an ordered vector ---------------------------------------------------------------------------


def ordered_means_data(n_per, sigma, seed):
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(3), n_per)
    return group, rng.normal(np.array([-1.0, 0.5, 0.8])[group], sigma)


def log_prob_ordered3(m, s, n_nodes):
    """``log P(x_1 < x_2 < x_3)`` for independent ``x_j ~ N(m_j, s_j^2)``: Gauss-Legendre
    over ``x_2`` in ``m_2 +- 12 s_2`` of ``N(x_2) Phi((x_2 - m_1) / s_1) Phi((m_3 - x_2) / s_3)``.
    """
    nodes, weights = leggauss(n_nodes)
    x2 = m[1] + 12.0 * s[1] * nodes
    log_terms = (
        stats.norm.logpdf(x2, m[1], s[1])
        + special.log_ndtr((x2 - m[0]) / s[0])
        + special.log_ndtr((m[2] - x2) / s[2])
    )
    return float(special.logsumexp(log_terms + np.log(weights)) + np.log(12.0 * s[1]))


@functools.cache
def _ordered_means_gold(n_per, tau, sigma, seed):
    group, y = ordered_means_data(n_per, sigma, seed)
    log_z0, m, s = 0.0, np.empty(3), np.empty(3)
    for g in range(3):
        log_z0 += normal_mean_log_evidence(y[group == g], sigma, 0.0, tau)
        m[g], v = normal_posterior(y[group == g], sigma, 0.0, tau)
        s[g] = np.sqrt(v)
    fine, coarse = log_prob_ordered3(m, s, 200), log_prob_ordered3(m, s, 100)
    return Gold(float(log_z0 + fine), abs(fine - coarse))


def _ordered_means_log_joint(values, n_per, tau, sigma, seed):
    group, y = ordered_means_data(n_per, sigma, seed)
    x = np.asarray(values["x"], dtype=float)
    if not np.all(np.diff(x) > 0):
        return -np.inf
    return float(stats.norm.logpdf(x, 0.0, tau).sum() + stats.norm.logpdf(y, x[group], sigma).sum())


def ordered_means(n_per: int = 8, tau: float = 3.0, sigma: float = 1.0, seed: int = 38):
    """Three group means with PyMC's ``ordered`` transform: ``x ~ N(0, tau^2 I_3)`` declared
    with ``transform=ordered``, ``y_jk ~ N(x_j, sigma^2)``; two true means are close.

    PyMC's density of ``x`` is the i.i.d. normal density *restricted* to the cone
    ``x_1 < x_2 < x_3`` and **not renormalized** (the transform only adds its Jacobian), so
    the prior has mass ``1/3! = 1/6`` and ``Z`` is the integral over the cone only.

    Gold (closed form + 1-D quadrature): ``Z = Z_0 P_post(x_1 < x_2 < x_3)`` with ``Z_0`` the
    unrestricted evidence (a product of conjugate normal means) and the posterior
    probability of the order taken by 1-D Gauss-Legendre over ``x_2`` (100 vs 200 nodes).
    """
    group, y = ordered_means_data(n_per, sigma, seed)
    with pm.Model(name="ordered_means") as model:
        x = pm.Normal(
            "x",
            np.float64(0.0),
            np.float64(tau),
            shape=3,
            transform=pm.distributions.transforms.ordered,
            initval=np.array([-1.0, 0.0, 1.0]),
        )
        pm.Normal("y", x[group], np.float64(sigma), observed=y)
    return model, _ordered_means_gold(n_per, tau, sigma, seed).log_z


# --- a zero-sum vector ---------------------------------------------------------------------------


def _zero_sum_normal_data(n_groups, n_per, sigma, seed):
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(n_groups), n_per)
    effect = np.linspace(-1.0, 1.0, n_groups)
    return group, rng.normal(0.7 + effect[group], sigma)


@functools.cache
def _zero_sum_normal_gold(n_groups, n_per, s, tau, sigma, seed):
    group, y = _zero_sum_normal_data(n_groups, n_per, sigma, seed)
    G = np.eye(n_groups)[group]  # observation-to-group incidence
    projection = np.eye(n_groups) - np.full((n_groups, n_groups), 1.0 / n_groups)
    cov = sigma**2 * np.eye(y.size) + tau**2 + s**2 * G @ projection @ G.T
    return Gold(float(stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y)), 0.0)


def _zero_sum_normal_log_joint(values, n_groups, n_per, s, tau, sigma, seed):
    """``a`` has density ``N(0, s^2 I_{n-1})`` w.r.t. the (n-1)-volume of the zero-sum plane."""
    group, y = _zero_sum_normal_data(n_groups, n_per, sigma, seed)
    a, mu = np.asarray(values["a"], dtype=float), float(values["mu"])
    log_zsn = -0.5 * np.sum(a**2) / s**2 - 0.5 * (n_groups - 1) * (LOG_2PI + 2 * np.log(s))
    return float(
        log_zsn + stats.norm.logpdf(mu, 0.0, tau) + stats.norm.logpdf(y, mu + a[group], sigma).sum()
    )


def zero_sum_normal(
    n_groups: int = 4,
    n_per: int = 6,
    s: float = 1.0,
    tau: float = 2.0,
    sigma: float = 1.0,
    seed: int = 39,
):
    """``y_ij ~ N(mu + a_j, sigma^2)``, ``mu ~ N(0, tau^2)``, ``a ~ ZeroSumNormal(s)`` of
    length ``n_groups``.

    What PyMC defines: ``zerosumnormal_logp`` is
    ``-|a|^2 / (2 s^2) - (n - 1) log(sqrt(2 pi) s)``, i.e. the isotropic density
    ``N(0, s^2 I_{n-1})`` on the zero-sum plane w.r.t. its own (n-1)-dimensional volume (the
    constant has ``n - 1`` factors, not ``n``). The ``zerosum`` transform maps ``R^{n-1}`` to
    the plane by a Householder-type isometry (its columns are orthonormal) and its log-Jacobian
    is 0, so ``int exp(logp) du`` over the unconstrained ``R^{n-1}`` is this normalized density's
    integral: the prior integrates to 1 and ``a = B z``, ``z ~ N(0, s^2 I_{n-1})`` for an
    orthonormal basis ``B`` of the plane, ``B B^T = I - 11^T / n``.

    Gold (closed form): ``y ~ N(0, sigma^2 I + tau^2 11^T + s^2 G (I - 11^T / n) G^T)``,
    ``G`` the observation-to-group incidence matrix.
    """
    group, y = _zero_sum_normal_data(n_groups, n_per, sigma, seed)
    with pm.Model(name="zero_sum_normal") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(tau))
        a = pm.ZeroSumNormal("a", sigma=np.float64(s), shape=n_groups)
        pm.Normal("y", mu + a[group], np.float64(sigma), observed=y)
    return model, _zero_sum_normal_gold(n_groups, n_per, s, tau, sigma, seed).log_z


CONSTRAINED_ENTRIES: tuple[ZooModel, ...] = (
    entry(
        "lkj_2d",
        lkj_2d,
        "quadrature 3-D",
        {"cholesky", "bounded"},
        _lkj_2d_gold,
        _lkj_2d_log_joint,
    ),
    entry(
        "ordered_means",
        ordered_means,
        "closed form + quadrature 1-D",
        {"ordered"},
        _ordered_means_gold,
        _ordered_means_log_joint,
    ),
    entry(
        "zero_sum_normal",
        zero_sum_normal,
        "closed form",
        {"zerosum"},
        _zero_sum_normal_gold,
        _zero_sum_normal_log_joint,
    ),
)
"""The models of :data:`pm_evidence.zoo.testing.ZOO` with constrained variables.

:meta hide-value:
"""

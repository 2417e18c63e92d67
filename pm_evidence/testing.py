"""PyMC models whose log evidence is known in closed form (tests, benchmarks, your own checks).

Each builder returns ``(model, exact_log_z)``. Distribution parameters are passed as float64
(STYLE habit 9) so that PyTensor does not downcast them.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from scipy import special, stats


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


def mixture_energy_2d():
    """Seed 003's 2-D energy ``U(x) = -log(N([-2,0], I)/2 + N([2,0], 4I)/2) - log(2 pi)``,
    written as a ``pm.Potential`` on flat ``x``: ``Z = int exp(-U) = 2 pi``, ``log Z = 1.8379``."""
    import pytensor.tensor as pt

    with pm.Model(name="mixture_energy") as model:
        x = pm.Flat("x", shape=2)
        d2 = x[1] ** 2
        log_f = pt.logaddexp(
            -((x[0] + 2) ** 2 + d2) / 2 - np.log(2.0),
            -((x[0] - 2) ** 2 + d2) / 8 - np.log(8.0),
        )
        pm.Potential("minus_energy", log_f)
    return model, float(np.log(2 * np.pi))


def gaussian_mixture_10d(separation: float = 5.0, variance: float = 0.5, prior_var: float = 30.0):
    """Seed 004 App. E.1: an equal mixture of two 10-D Gaussians with covariance ``0.5 I``,
    ``separation`` apart along the first axis, with prior (reference) ``N(0, 30 I)``.

    The model is ``x ~ N(0, 30 I)`` plus a potential ``log mixture(x) - log prior(x)``, so that
    prior x likelihood is the normalized mixture: ``log Z = 0`` exactly.
    """
    import pytensor.tensor as pt

    dim = 10
    shift = np.zeros(dim)
    shift[0] = separation
    with pm.Model(name="gaussian_mixture") as model:
        x = pm.Normal("x", np.float64(0.0), np.float64(np.sqrt(prior_var)), shape=dim)
        norm = -0.5 * dim * np.log(2 * np.pi * variance)
        comp0 = norm - pt.sum(x**2) / (2 * variance)
        comp1 = norm - pt.sum((x - shift) ** 2) / (2 * variance)
        log_mixture = pt.logaddexp(comp0, comp1) - np.log(2.0)
        log_prior = -0.5 * dim * np.log(2 * np.pi * prior_var) - pt.sum(x**2) / (2 * prior_var)
        pm.Potential("mixture_over_prior", log_mixture - log_prior)
    return model, 0.0


def binary_field(n: int = 6, coupling: float = 0.4, seed: int = 5):
    """``n`` Bernoulli(1/2) variables with a random pairwise ``pm.Potential``; log Z by
    enumerating all ``2^n`` states."""
    import itertools

    rng = np.random.default_rng(seed)
    weights = np.triu(rng.normal(0, coupling, (n, n)), 1)
    bias = rng.normal(0, 0.5, n)
    states = np.array(list(itertools.product([0, 1], repeat=n)), dtype=float)
    energy = np.einsum("si,ij,sj->s", states, weights, states) + states @ bias
    exact = float(special.logsumexp(energy) - n * np.log(2.0))
    with pm.Model(name="binary_field") as model:
        x = pm.Bernoulli("x", np.float64(0.5), shape=n)
        xf = x.astype("float64")
        pm.Potential("pairwise", xf @ weights @ xf + xf @ bias)
    return model, exact


def categorical_chain(n: int = 6, n_levels: int = 3, coupling: float = 0.8, seed: int = 12):
    """``n`` Categorical variables with ``n_levels`` values each (a Potts-like chain):
    non-uniform prior probabilities ``p``, a unary field ``h[i, x_i]`` and a pairwise term
    ``J[x_i, x_{i+1}]`` between neighbours as a ``pm.Potential``; log Z by enumerating all
    ``n_levels^n`` states."""
    import itertools

    import pytensor.tensor as pt

    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(n_levels, 3.0))
    pairwise = rng.normal(0.0, coupling, (n_levels, n_levels))
    unary = rng.normal(0.0, 0.5, (n, n_levels))
    states = np.array(list(itertools.product(range(n_levels), repeat=n)))
    log_prior = np.log(p)[states].sum(axis=1)
    energy = unary[np.arange(n), states].sum(axis=1) + pairwise[states[:, :-1], states[:, 1:]].sum(
        axis=1
    )
    exact = float(special.logsumexp(log_prior + energy))
    with pm.Model(name="categorical_chain") as model:
        x = pm.Categorical("x", p=p, shape=n)
        pair = pt.as_tensor(pairwise)[x[:-1], x[1:]].sum()
        field = pt.as_tensor(unary)[np.arange(n), x].sum()
        pm.Potential("potts", pair + field)
    return model, exact


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

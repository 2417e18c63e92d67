"""PyMC models whose log evidence is known exactly or to a stated numerical error.

Each builder returns ``(model, exact_log_z)``. Distribution parameters are passed as float64
(STYLE habit 9) so that PyTensor does not downcast them.

The *model zoo* (:data:`ZOO`, :func:`zoo`) lists ordinary PyMC models (simplex, bounded,
truncated, censored, mixture, Cholesky, ordered, zero-sum, discrete, mixed and large ones) with a
gold ``log Z`` computed independently of PyMC: in closed form, by enumeration, or by
Gauss-Legendre quadrature over one to three parameters. Each entry also carries the model's
joint log density written with NumPy/SciPy (``log_joint``), which the tests compare with
PyMC's own ``logp`` at a few points: that is what ties the gold value to the function PyMC
defines. A quadrature gold states its numerical error (:class:`Gold`).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pymc as pm
from scipy import optimize, special, stats

LOG_2PI = float(np.log(2 * np.pi))


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


# ---------------------------------------------------------------------------------------------
# The model zoo. Gold values use NumPy and SciPy only: never PyMC's logp or samplers.
# ---------------------------------------------------------------------------------------------


class Gold(NamedTuple):
    """A gold ``log Z`` and its absolute numerical error in nats.

    ``error`` is 0 for a closed form or an enumeration (exact up to floating-point rounding).
    For quadrature it is the largest change of ``log_z`` seen when the grid is refined and when
    the integration box is widened; for a truncated sum it is a bound on the omitted tail.
    """

    log_z: float
    error: float


def normal_mean_log_evidence(y, sigma, m0, tau):
    """``log int prod_i N(y_i | mu, sigma^2) N(mu | m0, tau^2) dmu`` by sufficient statistics.

    ``y ~ N(m0 1, sigma^2 I + tau^2 11^T)``, whose determinant is
    ``sigma^(2(n-1)) (sigma^2 + n tau^2)``; ``sigma``, ``m0`` and ``tau`` broadcast.
    """
    y = np.asarray(y, dtype=float)
    n = y.size
    if n == 0:
        return np.zeros(np.broadcast_shapes(np.shape(sigma), np.shape(m0), np.shape(tau)))
    ybar = y.mean()
    ss = np.sum((y - ybar) ** 2)
    sigma = np.asarray(sigma, dtype=float)
    v = sigma**2 + n * np.asarray(tau, dtype=float) ** 2
    return (
        -0.5 * n * LOG_2PI
        - (n - 1) * np.log(sigma)
        - 0.5 * np.log(v)
        - 0.5 * (ss / sigma**2 + n * (ybar - m0) ** 2 / v)
    )


def normal_posterior(y, sigma, m0, tau):
    """Mean and variance of ``mu | y`` for ``y_i ~ N(mu, sigma^2)``, ``mu ~ N(m0, tau^2)``."""
    y = np.asarray(y, dtype=float)
    precision = 1.0 / tau**2 + y.size / sigma**2
    return (m0 / tau**2 + y.sum() / sigma**2) / precision, 1.0 / precision


def regression_log_evidence(y, X, sigma, tau):
    """``log N(y | 0, sigma^2 I + tau^2 X X^T)`` for arrays of ``sigma`` (and ``tau``).

    With ``X^T X = V diag(lam) V^T`` and ``b = V^T X^T y`` (Woodbury):
    ``log det = n log sigma^2 + sum_k log(1 + tau^2 lam_k / sigma^2)`` and
    ``y^T C^-1 y = (y^T y - sum_k b_k^2 / (sigma^2 / tau^2 + lam_k)) / sigma^2``.
    """
    lam, V = np.linalg.eigh(X.T @ X)
    b = V.T @ (X.T @ y)
    s2 = np.asarray(sigma, dtype=float)[..., None] ** 2
    t2 = np.asarray(tau, dtype=float)[..., None] ** 2
    n = y.size
    log_det = n * np.log(s2[..., 0]) + np.sum(np.log1p(t2 * lam / s2), axis=-1)
    quad = (y @ y - np.sum(b**2 / (s2 / t2 + lam), axis=-1)) / s2[..., 0]
    return -0.5 * (n * LOG_2PI + log_det + quad)


def log_normal_interval(a, b):
    """``log(Phi(b) - Phi(a))`` for ``a < b``, stable in both tails."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    upper_tail = a > 0  # use the symmetric form Phi(-a) - Phi(-b)
    hi = np.where(upper_tail, special.log_ndtr(-a), special.log_ndtr(b))
    lo = np.where(upper_tail, special.log_ndtr(-b), special.log_ndtr(a))
    return hi + np.log1p(-np.exp(lo - hi))


@functools.cache
def leggauss(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(n_nodes)


def _log_product_rule(log_f, center, matrix, nodes, weights, chunk: int, gaussian: bool) -> float:
    """``log sum_z w(z) f(center + matrix z) |det matrix|`` over the tensor product of 1-D
    ``nodes`` and ``weights``; with ``gaussian`` the rule's weight function ``exp(-|z|^2 / 2)``
    is divided out of ``f`` (Gauss-Hermite over ``R^d``)."""
    center = np.atleast_1d(np.asarray(center, dtype=float))
    matrix = np.atleast_2d(np.asarray(matrix, dtype=float))
    d = center.size
    z = np.stack(np.meshgrid(*([nodes] * d), indexing="ij"), axis=-1).reshape(-1, d)
    log_w = np.sum(
        np.stack(np.meshgrid(*([np.log(weights)] * d), indexing="ij"), axis=-1).reshape(-1, d),
        axis=-1,
    )
    x = center + z @ matrix.T
    values = np.concatenate([log_f(x[i : i + chunk]) for i in range(0, len(x), chunk)])
    if np.any(np.isnan(values)):
        raise FloatingPointError("the integrand returned NaN on the quadrature grid")
    if gaussian:
        log_w = log_w + 0.5 * np.sum(z**2, axis=-1)
    return float(special.logsumexp(values + log_w) + np.linalg.slogdet(matrix)[1])


def legendre_log_integral(
    log_f: Callable[[np.ndarray], np.ndarray],
    center: np.ndarray,
    matrix: np.ndarray,
    n_nodes: int,
    chunk: int = 1 << 17,
) -> float:
    """``log int exp(log_f(x)) dx`` over the parallelotope ``x = center + matrix @ z``,
    ``z in [-1, 1]^d``, by a tensor-product Gauss-Legendre rule with ``n_nodes`` per axis.

    ``log_f`` maps an ``(m, d)`` array of points to ``m`` log values (``-inf`` allowed).
    """
    nodes, weights = leggauss(n_nodes)
    return _log_product_rule(log_f, center, matrix, nodes, weights, chunk, gaussian=False)


def laplace_frame(
    log_f: Callable[[np.ndarray], np.ndarray], x0, half_width: float = 10.0
) -> tuple[np.ndarray, np.ndarray]:
    """A box for :func:`legendre_log_integral` around the mode of ``log_f``: ``half_width``
    standard deviations of its Laplace approximation (mode by BFGS, Hessian by central
    differences) along each axis of the Cholesky factor of the covariance."""
    x0 = np.atleast_1d(np.asarray(x0, dtype=float))
    d = x0.size
    result = optimize.minimize(lambda x: -log_f(x[None])[0], x0, method="BFGS")
    mode = result.x
    h = 1e-4 * np.maximum(1.0, np.abs(mode))
    eye = np.eye(d) * h
    points = [mode]
    for i, j in itertools.product(range(d), repeat=2):
        for si, sj in itertools.product((1, -1), repeat=2):
            points.append(mode + si * eye[i] + sj * eye[j])
    values = log_f(np.array(points))
    f0, rest = values[0], values[1:].reshape(d, d, 4)
    hessian = np.empty((d, d))
    for i, j in itertools.product(range(d), repeat=2):
        pp, pm_, mp, mm = rest[i, j]
        if i == j:  # points mode +- 2h e_i, and the mode itself twice
            hessian[i, i] = (pp - 2 * f0 + mm) / (4 * h[i] ** 2)
        else:
            hessian[i, j] = (pp - pm_ - mp + mm) / (4 * h[i] * h[j])
    cov = np.linalg.inv(-hessian)
    return mode, half_width * np.linalg.cholesky(cov)


def quadrature(
    log_f: Callable[[np.ndarray], np.ndarray],
    boxes: Iterable[tuple[np.ndarray, np.ndarray]],
    n_nodes: tuple[int, int],
    widen: float | None = 1.3,
) -> Gold:
    """Sum of Gauss-Legendre integrals over disjoint boxes ``(center, matrix)``.

    The gold value uses the finer grid ``n_nodes[1]``; the error is the largest change seen
    from the coarser grid ``n_nodes[0]`` and, unless ``widen`` is None, from a box ``widen``
    times larger (mass left outside the box).
    """
    coarse_n, fine_n = n_nodes
    fine, coarse, wide = [], [], []
    for center, matrix in boxes:
        fine.append(legendre_log_integral(log_f, center, matrix, fine_n))
        coarse.append(legendre_log_integral(log_f, center, matrix, coarse_n))
        if widen is not None:
            wide.append(legendre_log_integral(log_f, center, widen * np.asarray(matrix), fine_n))
    log_z = float(special.logsumexp(fine))
    error = abs(log_z - float(special.logsumexp(coarse)))
    if widen is not None:
        error = max(error, abs(log_z - float(special.logsumexp(wide))))
    return Gold(log_z, error)


def log_scale_gold(log_evidence_given_scale, scale_sd: float, start: float = 0.0) -> Gold:
    """Gold ``log Z`` of a model with one scale ``s ~ HalfNormal(scale_sd)`` left once the rest
    is integrated out in closed form (``log_evidence_given_scale(s)``, vectorized over ``s``):
    Gauss-Legendre quadrature over ``t = log s`` (Jacobian ``s``), on the Laplace frame found
    from ``t = start``."""

    def log_f(t):
        s = np.exp(t[:, 0])
        return log_evidence_given_scale(s) + stats.halfnorm.logpdf(s, scale=scale_sd) + t[:, 0]

    return quadrature(log_f, [laplace_frame(log_f, [start])], (64, 128))


def _log_sech2(r):
    """``log(1 - tanh(r)^2)`` without cancellation."""
    r = np.abs(r)
    return 2.0 * (np.log(2.0) - r - np.log1p(np.exp(-2.0 * r)))


# --- simplex and conjugate count models -----------------------------------------------------


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


# --- unknown noise scale: quadrature over sigma of a Gaussian marginal ----------------------


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


# --- generalized linear models: 2-D quadrature over (intercept, slope) ----------------------


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


# --- truncation and censoring ---------------------------------------------------------------


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


# --- label switching and a 2-D covariance ---------------------------------------------------


def label_switching_mixture_data(n_per, separation, sigma, seed):
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [rng.normal(-separation, sigma, size=n_per), rng.normal(separation, sigma, size=n_per)]
    )


def label_switching_mixture_log_density(means, y, sigma, tau):
    """Joint log density at rows ``(m_1, m_2)``:
    ``prod_i [N(y_i | m_1, sigma^2) + N(y_i | m_2, sigma^2)] / 2`` times the priors."""
    z = (y[None, :, None] - means[:, None, :]) / sigma
    comp = -0.5 * z**2 - np.log(sigma) - 0.5 * LOG_2PI  # log N(y_i | m_k, sigma^2), (m, n, 2)
    log_lik = np.sum(special.logsumexp(comp, axis=-1) - np.log(2.0), axis=-1)
    return log_lik + np.sum(stats.norm.logpdf(means, 0.0, tau), axis=-1)


@functools.cache
def _label_switching_mixture_gold(n_per, separation, sigma, tau, seed):
    y = label_switching_mixture_data(n_per, separation, sigma, seed)

    def log_f(means):
        return label_switching_mixture_log_density(means, y, sigma, tau)

    # the two mirror modes, one box each (the boxes are disjoint: see the docstring)
    low, high = y[y < 0].mean(), y[y > 0].mean()
    boxes = [
        laplace_frame(log_f, [low, high], half_width=8.0),
        laplace_frame(log_f, [high, low], half_width=8.0),
    ]
    for (c1, m1), (c2, m2) in itertools.combinations(boxes, 2):
        reach = np.abs(m1).sum(axis=1) + np.abs(m2).sum(axis=1)
        if np.all(np.abs(c1 - c2) < 1.3 * reach):
            raise RuntimeError("the quadrature boxes of the two modes overlap")
    return quadrature(log_f, boxes, (48, 96))


def _label_switching_mixture_log_joint(values, n_per, separation, sigma, tau, seed):
    y = label_switching_mixture_data(n_per, separation, sigma, seed)
    means = np.asarray(values["means"], dtype=float)[None, :]
    return float(label_switching_mixture_log_density(means, y, sigma, tau)[0])


def label_switching_mixture(
    n_per: int = 20, separation: float = 3.0, sigma: float = 1.0, tau: float = 5.0, seed=31
):
    """``y_i ~ 0.5 N(m_1, sigma^2) + 0.5 N(m_2, sigma^2)`` (``pm.NormalMixture``),
    ``m_1, m_2 ~ N(0, tau^2)`` i.i.d.: exchangeable components, so the posterior has two
    mirror modes ``(a, b)`` and ``(b, a)`` for data in two clusters at ``-+separation``.

    Gold (2-D quadrature): Gauss-Legendre over one box of +-8 Laplace standard deviations per
    mode (48 vs 96 nodes, widened 1.3x; the widened boxes are checked to be disjoint, and the
    mass outside them, e.g. both means in one cluster, is below ``exp(-100)`` relative).
    """
    y = label_switching_mixture_data(n_per, separation, sigma, seed)
    with pm.Model(name="label_switching_mixture") as model:
        means = pm.Normal("means", np.float64(0.0), np.float64(tau), shape=2)
        pm.NormalMixture("y", w=np.array([0.5, 0.5]), mu=means, sigma=np.float64(sigma), observed=y)
    return model, _label_switching_mixture_gold(n_per, separation, sigma, tau, seed).log_z


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


# --- discrete latent variables --------------------------------------------------------------

SWITCH_PRIOR_MEANS = (-2.0, 2.0)
SWITCH_PRIOR_SDS = (1.0, 3.0)
_SWITCH_NOISE_SDS = (1.0, 2.0)


def _bernoulli_switch_data(n, seed):
    return np.random.default_rng(seed).normal(0.5, 1.5, size=n)


@functools.cache
def _bernoulli_switch_gold(n, p, seed):
    y = _bernoulli_switch_data(n, seed)
    # given z, mu_z is a conjugate normal mean and the other mean integrates to 1
    terms = [
        np.log(1 - p)
        + normal_mean_log_evidence(
            y, _SWITCH_NOISE_SDS[0], SWITCH_PRIOR_MEANS[0], SWITCH_PRIOR_SDS[0]
        ),
        np.log(p)
        + normal_mean_log_evidence(
            y, _SWITCH_NOISE_SDS[1], SWITCH_PRIOR_MEANS[1], SWITCH_PRIOR_SDS[1]
        ),
    ]
    return Gold(float(special.logsumexp(terms)), 0.0)


def _bernoulli_switch_log_joint(values, n, p, seed):
    y = _bernoulli_switch_data(n, seed)
    z, mu = int(values["z"]), np.asarray(values["mu"], dtype=float)
    return float(
        stats.bernoulli.logpmf(z, p)
        + stats.norm.logpdf(mu, SWITCH_PRIOR_MEANS, SWITCH_PRIOR_SDS).sum()
        + stats.norm.logpdf(y, mu[z], _SWITCH_NOISE_SDS[z]).sum()
    )


def bernoulli_switch(n: int = 20, p: float = 0.3, seed: int = 33):
    """A Bernoulli switch next to continuous means: ``z ~ Bernoulli(p)``,
    ``mu_k ~ N((-2, 2)_k, (1, 3)_k^2)``, ``y_i ~ N(mu_z, (1, 2)_z^2)``.

    Gold (enumeration over ``z`` and closed form over ``mu``):
    ``Z = (1 - p) Z_0 + p Z_1``, ``Z_k`` the conjugate normal-mean evidence of branch ``k``
    (the unused mean integrates to 1).
    """
    y = _bernoulli_switch_data(n, seed)
    with pm.Model(name="bernoulli_switch") as model:
        z = pm.Bernoulli("z", np.float64(p))
        mu = pm.Normal("mu", np.array(SWITCH_PRIOR_MEANS), np.array(SWITCH_PRIOR_SDS), shape=2)
        noise = pm.math.constant(np.array(_SWITCH_NOISE_SDS))
        pm.Normal("y", mu[z], noise[z], observed=y)
    return model, _bernoulli_switch_gold(n, p, seed).log_z


def poisson_latent_count_data(n, shift, sigma, seed):
    return np.random.default_rng(seed).normal(0.3 + shift * 6, sigma, size=n)


@functools.cache
def poisson_latent_count_gold(n, rate, shift, tau, sigma, seed, k_max=400):
    y = poisson_latent_count_data(n, shift, sigma, seed)
    k = np.arange(k_max + 1)
    terms = stats.poisson.logpmf(k, rate) + normal_mean_log_evidence(y, sigma, shift * k, tau)
    log_z = float(special.logsumexp(terms))
    # tail bound: every Z_k <= sup_theta prod_i N(y_i | theta, sigma^2) = L_max
    log_l_max = float(np.sum(stats.norm.logpdf(y, y.mean(), sigma)))
    log_tail = float(stats.poisson.logsf(k_max, rate)) + log_l_max
    return Gold(log_z, float(np.exp(log_tail - log_z)))


def _poisson_latent_count_log_joint(values, n, rate, shift, tau, sigma, seed):
    y = poisson_latent_count_data(n, shift, sigma, seed)
    k, mu = int(values["k"]), float(values["mu"])
    return float(
        stats.poisson.logpmf(k, rate)
        + stats.norm.logpdf(mu, 0.0, tau)
        + stats.norm.logpdf(y, mu + shift * k, sigma).sum()
    )


def poisson_latent_count(
    n: int = 10,
    rate: float = 4.0,
    shift: float = 0.5,
    tau: float = 1.0,
    sigma: float = 1.0,
    seed: int = 34,
):
    """An unbounded discrete latent next to a continuous one: ``k ~ Poisson(rate)``,
    ``mu ~ N(0, tau^2)``, ``y_i ~ N(mu + shift k, sigma^2)``.

    Gold (truncated sum over ``k <= 400`` of ``Poisson(k) Z_k``, ``Z_k`` the conjugate
    normal-mean evidence with prior mean ``shift k``); the error bounds the omitted tail by
    ``P(k > 400) L_max / Z`` with ``L_max`` the maximum likelihood.
    """
    y = poisson_latent_count_data(n, shift, sigma, seed)
    with pm.Model(name="poisson_latent_count") as model:
        k = pm.Poisson("k", np.float64(rate))
        mu = pm.Normal("mu", np.float64(0.0), np.float64(tau))
        pm.Normal("y", mu + np.float64(shift) * k, np.float64(sigma), observed=y)
    return model, poisson_latent_count_gold(n, rate, shift, tau, sigma, seed).log_z


BERNOULLI_ONLY_P = (0.2, 0.5, 0.7)


def _bernoulli_only_success(z):
    """Success probability of the observations given the latent bits ``z`` (last axis)."""
    return 0.15 + 0.7 * np.mean(z, axis=-1)


def bernoulli_only_data(n, seed):
    return np.random.default_rng(seed).binomial(1, 0.6, size=n)


def _bernoulli_only_log_joint(values, n, seed):
    y = bernoulli_only_data(n, seed)
    z = np.asarray(values["z"], dtype=int)
    q = _bernoulli_only_success(z)
    return float(
        stats.bernoulli.logpmf(z, BERNOULLI_ONLY_P).sum() + stats.bernoulli.logpmf(y, q).sum()
    )


@functools.cache
def _bernoulli_only_gold(n, seed):
    states = itertools.product((0, 1), repeat=len(BERNOULLI_ONLY_P))
    terms = [_bernoulli_only_log_joint({"z": np.array(s)}, n, seed) for s in states]
    return Gold(float(special.logsumexp(terms)), 0.0)


def bernoulli_only(n: int = 20, seed: int = 35):
    """All-discrete: ``z_j ~ Bernoulli((0.2, 0.5, 0.7)_j)``, ``y_i ~ Bernoulli(0.15 + 0.7
    mean(z))``.

    Gold (enumeration of the 8 states of ``z``).
    """
    y = bernoulli_only_data(n, seed)
    with pm.Model(name="bernoulli_only") as model:
        z = pm.Bernoulli("z", np.array(BERNOULLI_ONLY_P), shape=len(BERNOULLI_ONLY_P))
        pm.Bernoulli("y", np.float64(0.15) + np.float64(0.7) * z.mean(), observed=y)
    return model, _bernoulli_only_gold(n, seed).log_z


_CATEGORICAL_P1 = (0.2, 0.5, 0.3)
_CATEGORICAL_P2 = (0.1, 0.2, 0.3, 0.4)
_CATEGORICAL_RATES = ((0.5, 1.0, 2.0, 4.0), (1.5, 2.5, 3.5, 5.0), (3.0, 0.8, 6.0, 2.0))


def _categorical_only_data(n, seed):
    return np.random.default_rng(seed).poisson(2.7, size=n)


def _categorical_only_log_joint(values, n, seed):
    y = _categorical_only_data(n, seed)
    c1, c2 = int(values["c1"]), int(values["c2"])
    return float(
        np.log(_CATEGORICAL_P1[c1])
        + np.log(_CATEGORICAL_P2[c2])
        + stats.poisson.logpmf(y, _CATEGORICAL_RATES[c1][c2]).sum()
    )


@functools.cache
def _categorical_only_gold(n, seed):
    states = itertools.product(range(len(_CATEGORICAL_P1)), range(len(_CATEGORICAL_P2)))
    terms = [_categorical_only_log_joint({"c1": a, "c2": b}, n, seed) for a, b in states]
    return Gold(float(special.logsumexp(terms)), 0.0)


def categorical_only(n: int = 15, seed: int = 36):
    """All-discrete: ``c_1 ~ Categorical(0.2, 0.5, 0.3)``, ``c_2 ~ Categorical(0.1, 0.2, 0.3,
    0.4)``, ``y_i ~ Poisson(R[c_1, c_2])`` for a fixed 3 x 4 table of rates ``R``.

    Gold (enumeration of the 12 states).
    """
    y = _categorical_only_data(n, seed)
    with pm.Model(name="categorical_only") as model:
        c1 = pm.Categorical("c1", p=np.array(_CATEGORICAL_P1))
        c2 = pm.Categorical("c2", p=np.array(_CATEGORICAL_P2))
        rates = pm.math.constant(np.array(_CATEGORICAL_RATES))
        pm.Poisson("y", rates[c1, c2], observed=y)
    return model, _categorical_only_gold(n, seed).log_z


# --- data containers, hierarchy, ordered and zero-sum variables, large data ------------------

_GROUPS = ("a", "b", "c")


def data_coords_dims_data(n_per, sigma, seed):
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(len(_GROUPS)), n_per)
    return group, rng.normal(np.array([-1.0, 0.5, 2.0])[group], sigma)


@functools.cache
def _data_coords_dims_gold(n_per, sigma, tau, seed):
    group, y = data_coords_dims_data(n_per, sigma, seed)
    log_z = sum(normal_mean_log_evidence(y[group == g], sigma, 0.0, tau) for g in range(3))
    return Gold(float(log_z), 0.0)


def _data_coords_dims_log_joint(values, n_per, sigma, tau, seed):
    group, y = data_coords_dims_data(n_per, sigma, seed)
    alpha = np.asarray(values["alpha"], dtype=float)
    return float(
        stats.norm.logpdf(alpha, 0.0, tau).sum() + stats.norm.logpdf(y, alpha[group], sigma).sum()
    )


def data_coords_dims(n_per: int = 10, sigma: float = 1.0, tau: float = 2.0, seed: int = 37):
    """Group means written with ``pm.Data``, ``coords`` and ``dims``:
    ``alpha_g ~ N(0, tau^2)`` over dim ``group`` (3 levels), ``y_i ~ N(alpha_{g_i}, sigma^2)``
    over dim ``obs_id``, with the group index and ``y`` as ``pm.Data``.

    Gold (closed form): a sum over groups of conjugate normal-mean evidences.
    """
    group, y = data_coords_dims_data(n_per, sigma, seed)
    coords = {"group": list(_GROUPS), "obs_id": np.arange(y.size)}
    with pm.Model(name="data_coords_dims", coords=coords) as model:
        group_idx = pm.Data("group_idx", group, dims="obs_id")
        y_data = pm.Data("y_data", y, dims="obs_id")
        alpha = pm.Normal("alpha", np.float64(0.0), np.float64(tau), dims="group")
        pm.Normal("y", alpha[group_idx], np.float64(sigma), observed=y_data, dims="obs_id")
    return model, _data_coords_dims_gold(n_per, sigma, tau, seed).log_z


EIGHT_SCHOOLS_Y = (28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0)
EIGHT_SCHOOLS_SIGMA = (15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0)


def hierarchical_log_evidence_given_tau(tau, y, sigma, mu_sd):
    """``log N(y | 0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)`` for an array of ``tau``
    (Sherman-Morrison: ``D + c 11^T`` with ``c = mu_sd^2``)."""
    d = sigma**2 + np.asarray(tau, dtype=float)[..., None] ** 2
    c = mu_sd**2
    s_inv = np.sum(1 / d, axis=-1)
    log_det = np.sum(np.log(d), axis=-1) + np.log1p(c * s_inv)
    quad = np.sum(y**2 / d, axis=-1) - c * np.sum(y / d, axis=-1) ** 2 / (1 + c * s_inv)
    return -0.5 * (y.size * LOG_2PI + log_det + quad)


@functools.cache
def _hierarchical_noncentered_gold(mu_sd, tau_scale):
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    tau_max = 12.0 * tau_scale  # HalfNormal mass beyond: 2 (1 - Phi(12)) ~ 4e-33

    def log_f(tau):
        tau = tau[:, 0]
        return hierarchical_log_evidence_given_tau(tau, y, sigma, mu_sd) + stats.halfnorm.logpdf(
            tau, scale=tau_scale
        )

    gold = quadrature(log_f, [([tau_max / 2], [[tau_max / 2]])], (200, 400), widen=None)
    # omitted tail <= P(tau > tau_max) * sup_tau p(y | tau) / Z
    grid = np.linspace(0.0, tau_max, 2001)
    log_l_max = float(np.max(hierarchical_log_evidence_given_tau(grid, y, sigma, mu_sd)))
    log_tail = float(np.log(2.0) + stats.norm.logsf(12.0)) + log_l_max
    return Gold(gold.log_z, gold.error + float(np.exp(log_tail - gold.log_z)))


def _hierarchical_noncentered_log_joint(values, mu_sd, tau_scale):
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    mu, tau = float(values["mu"]), float(values["tau"])
    raw = np.asarray(values["theta_raw"], dtype=float)
    return float(
        stats.norm.logpdf(mu, 0.0, mu_sd)
        + stats.halfnorm.logpdf(tau, scale=tau_scale)
        + stats.norm.logpdf(raw).sum()
        + stats.norm.logpdf(y, mu + tau * raw, sigma).sum()
    )


def hierarchical_noncentered(mu_sd: float = 5.0, tau_scale: float = 5.0):
    """Eight schools, non-centered: ``mu ~ N(0, mu_sd^2)``, ``tau ~ HalfNormal(tau_scale)``,
    ``theta_raw_j ~ N(0, 1)``, ``y_j ~ N(mu + tau theta_raw_j, sigma_j^2)``, ``J = 8``.

    Gold (1-D quadrature): ``mu`` and ``theta_raw`` integrate out in closed form,
    ``y | tau ~ N(0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)``; the integral over
    ``tau in [0, 12 tau_scale]`` is Gauss-Legendre (200 vs 400 nodes; the integrand is smooth
    in ``tau``, including at 0), plus a bound on the omitted prior tail.
    """
    with pm.Model(name="hierarchical_noncentered") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(mu_sd))
        tau = pm.HalfNormal("tau", np.float64(tau_scale))
        raw = pm.Normal("theta_raw", np.float64(0.0), np.float64(1.0), shape=8)
        pm.Normal(
            "y", mu + tau * raw, np.array(EIGHT_SCHOOLS_SIGMA), observed=np.array(EIGHT_SCHOOLS_Y)
        )
    return model, _hierarchical_noncentered_gold(mu_sd, tau_scale).log_z


def hierarchical_noncentered_posterior_draws(
    rng: np.random.Generator,
    chains: int = 4,
    draws: int = 1000,
    mu_sd: float = 5.0,
    tau_scale: float = 5.0,
) -> dict[str, np.ndarray]:
    """Exact i.i.d. draws of :func:`hierarchical_noncentered`'s posterior, ``(chain, draw)``.

    ``tau | y`` by inverting its CDF on a grid of 400,000 points over ``(0, 12 tau_scale]``
    (the density ``HalfNormal(tau) N(y | 0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)`` is smooth
    and positive at 0); then ``mu | tau, y`` (normal: ``y_j ~ N(mu, sigma_j^2 + tau^2)``) and
    ``theta_raw_j | mu, tau, y`` (normal, precision ``1 + tau^2 / sigma_j^2``). Keyed by the
    model's variable names, for :meth:`~pm_evidence.LogDensity.to_unconstrained` with
    ``batch_ndim=2``.
    """
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    grid = np.linspace(0.0, 12.0 * tau_scale, 400_001)[1:]
    log_p = hierarchical_log_evidence_given_tau(grid, y, sigma, mu_sd)
    log_p = log_p + stats.halfnorm.logpdf(grid, scale=tau_scale)
    cdf = np.cumsum(np.exp(log_p - log_p.max()))
    tau = np.interp(rng.uniform(size=(chains, draws)), cdf / cdf[-1], grid)
    var = sigma**2 + tau[..., None] ** 2
    precision_mu = 1 / mu_sd**2 + np.sum(1 / var, axis=-1)
    mu = np.sum(y / var, axis=-1) / precision_mu + rng.standard_normal(tau.shape) / np.sqrt(
        precision_mu
    )
    precision_raw = 1 + tau[..., None] ** 2 / sigma**2
    mean_raw = tau[..., None] * (y - mu[..., None]) / sigma**2 / precision_raw
    raw = mean_raw + rng.standard_normal(mean_raw.shape) / np.sqrt(precision_raw)
    prefix = "hierarchical_noncentered::"
    return {f"{prefix}mu": mu, f"{prefix}tau": tau, f"{prefix}theta_raw": raw}


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


# --- the registry ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ZooModel:
    """One zoo entry.

    Attributes
    ----------
    name : str
    build : callable
        ``build() -> (model, gold_log_z)`` with the builder's default arguments.
    gold_method : str
        How the gold value is computed ("closed form", "enumeration", "quadrature 2-D", ...).
    tags : frozenset of str
        Properties methods may trip on: "bounded", "simplex", "truncated", "censored",
        "missing", "discrete", "mixed_discrete", "unbounded_discrete", "multimodal",
        "large", "cholesky", "ordered", "zerosum", "data", "potential", "glm", ...
    gold : callable
        ``gold() -> Gold``: the gold ``log Z`` with its numerical error (cached).
    log_joint : callable or None
        ``log_joint(values) -> float``: the joint log density ``log p(y, theta)`` written with
        NumPy/SciPy, at the constrained values of the free variables given by their names
        without the model prefix (e.g. ``{"mu": 0.3, "sigma": 1.2}``). Continuous densities
        are w.r.t. Lebesgue measure on the variable's coordinates, except a simplex (its first
        ``K - 1`` coordinates) and a zero-sum vector (the volume of its plane). None for the
        older models whose gold is computed inside the builder.
    """

    name: str
    build: Callable[[], tuple[pm.Model, float]]
    gold_method: str
    tags: frozenset[str]
    gold: Callable[[], Gold]
    log_joint: Callable[[Mapping[str, np.ndarray]], float] | None = None

    @property
    def gold_error(self) -> float:
        """Absolute numerical error of the gold ``log Z`` (nats)."""
        return self.gold().error


def entry(name, builder, gold_method, tags, gold_fn=None, log_joint_fn=None, **overrides):
    """A registry entry whose gold and log joint use the builder's own default arguments
    (read from its signature, so the three cannot drift apart), updated by ``overrides``."""
    kwargs = {
        k: p.default
        for k, p in inspect.signature(builder).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    kwargs.update(overrides)
    build = functools.partial(builder, **overrides) if overrides else builder
    if gold_fn is None:

        def gold() -> Gold:
            return Gold(build()[1], 0.0)

    else:
        gold = functools.partial(gold_fn, **kwargs)
    log_joint = None if log_joint_fn is None else functools.partial(log_joint_fn, **kwargs)
    return ZooModel(name, build, gold_method, frozenset(tags), gold, log_joint)


ZOO: tuple[ZooModel, ...] = (
    # models whose exact log Z predates the zoo
    entry("normal_mean", normal_mean, "closed form", {"conjugate"}),
    entry("linear_regression", linear_regression, "closed form", {"conjugate"}),
    entry("regression_inverse_gamma", regression_inverse_gamma, "closed form", {"bounded", "data"}),
    entry("beta_binomial", beta_binomial, "closed form", {"bounded", "conjugate"}),
    entry("mixture_energy_2d", mixture_energy_2d, "closed form", {"potential", "multimodal"}),
    entry("gaussian_mixture_10d", gaussian_mixture_10d, "closed form", {"potential", "multimodal"}),
    entry("binary_field", binary_field, "enumeration", {"discrete", "potential"}),
    entry("categorical_chain", categorical_chain, "enumeration", {"discrete", "potential"}),
    entry("peaked_normal_mean", peaked_normal_mean, "closed form", {"peaked", "conjugate"}),
    # the zoo
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
    entry(
        "label_switching_mixture",
        label_switching_mixture,
        "quadrature 2-D (one box per mode)",
        {"multimodal", "mixture"},
        _label_switching_mixture_gold,
        _label_switching_mixture_log_joint,
    ),
    entry(
        "lkj_2d",
        lkj_2d,
        "quadrature 3-D",
        {"cholesky", "bounded"},
        _lkj_2d_gold,
        _lkj_2d_log_joint,
    ),
    entry(
        "bernoulli_switch",
        bernoulli_switch,
        "enumeration + closed form",
        {"discrete", "mixed_discrete"},
        _bernoulli_switch_gold,
        _bernoulli_switch_log_joint,
    ),
    entry(
        "poisson_latent_count",
        poisson_latent_count,
        "truncated sum + closed form",
        {"discrete", "mixed_discrete", "unbounded_discrete"},
        poisson_latent_count_gold,
        _poisson_latent_count_log_joint,
    ),
    entry(
        "bernoulli_only",
        bernoulli_only,
        "enumeration",
        {"discrete"},
        _bernoulli_only_gold,
        _bernoulli_only_log_joint,
    ),
    entry(
        "categorical_only",
        categorical_only,
        "enumeration",
        {"discrete"},
        _categorical_only_gold,
        _categorical_only_log_joint,
    ),
    entry(
        "data_coords_dims",
        data_coords_dims,
        "closed form",
        {"data"},
        _data_coords_dims_gold,
        _data_coords_dims_log_joint,
    ),
    entry(
        "hierarchical_noncentered",
        hierarchical_noncentered,
        "quadrature 1-D (tau) of a closed-form marginal",
        {"bounded", "hierarchical"},
        _hierarchical_noncentered_gold,
        _hierarchical_noncentered_log_joint,
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


def zoo(
    names: Iterable[str] | None = None, tags: Iterable[str] | None = None
) -> tuple[ZooModel, ...]:
    """Zoo entries, optionally only those named in ``names`` and/or carrying any of ``tags``.

    Raises
    ------
    KeyError
        If a name is not in the zoo (the message lists the known names).
    """
    return select_entries(ZOO, names, tags)


def select_entries(
    entries: tuple[ZooModel, ...],
    names: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
) -> tuple[ZooModel, ...]:
    """The ``entries`` named in ``names`` and/or carrying any of ``tags`` (all when both are
    None), in their order.

    Raises
    ------
    KeyError
        If a name is not among the entries (the message lists the known names).
    """
    selected = entries
    if names is not None:
        names = list(names)
        known = [m.name for m in entries]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise KeyError(f"Unknown zoo models {unknown}; known: {sorted(known)}.")
        selected = tuple(m for m in selected if m.name in names)
    if tags is not None:
        wanted = set(tags)
        selected = tuple(m for m in selected if m.tags & wanted)
    return selected


# =============================================================================================
# Models of benchmarks/defaults.py (issue 13), appended: a real-data logistic regression with a
# gold log Z by 5-D Gauss-Hermite quadrature in the Laplace frame.
# =============================================================================================

PIMA_COVARIATES: tuple[str, ...] = ("npreg", "glu", "bmi", "ped")
"""Covariates of :func:`pima_logistic` by default (the smaller model of Friel & Wyse 2012)."""


def _hermite_log_integral(
    log_f: Callable[[np.ndarray], np.ndarray],
    center: np.ndarray,
    matrix: np.ndarray,
    n_nodes: int,
    chunk: int = 1 << 14,
) -> float:
    """``log int_{R^d} exp(log_f(x)) dx`` by a tensor-product Gauss-Hermite rule in the frame
    ``x = center + matrix @ z``:
    ``int f(x) dx = |det matrix| int [f(center + matrix z) exp(|z|^2 / 2)] exp(-|z|^2 / 2) dz``,
    with ``n_nodes`` probabilists' Hermite nodes (weight ``exp(-z^2 / 2)``) per axis.

    Exact for ``f`` Gaussian in the frame; converges fast when ``f`` is close to it (a posterior
    near its Laplace approximation).
    """
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)
    return _log_product_rule(log_f, center, matrix, nodes, weights, chunk, gaussian=True)


def _gauss_hermite(
    log_f: Callable[[np.ndarray], np.ndarray],
    frame: tuple[np.ndarray, np.ndarray],
    n_nodes: tuple[int, int],
    widen: float = 1.25,
) -> Gold:
    """Gauss-Hermite ``log Z`` in the frame ``(center, matrix)`` with ``n_nodes[1]`` nodes per
    axis; the error is the largest change seen from ``n_nodes[0]`` nodes and from the frame
    ``widen`` times wider (a different Gaussian weight: both rules converge to the same integral).
    """
    center, matrix = frame
    coarse_n, fine_n = n_nodes
    log_z = _hermite_log_integral(log_f, center, matrix, fine_n)
    coarse = _hermite_log_integral(log_f, center, matrix, coarse_n)
    wide = _hermite_log_integral(log_f, center, widen * np.asarray(matrix), fine_n)
    return Gold(log_z, max(abs(log_z - coarse), abs(log_z - wide)))


@functools.cache
def _pima_table() -> dict[str, np.ndarray]:
    """The columns of ``pm_evidence/data/pima_diabetes.csv`` (see the README beside it)."""
    from pathlib import Path

    import pandas as pd

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
    return _gauss_hermite(log_f, (mode, chol), (8, 12))


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
    ``log Z = -257.232588``; a 12^5 grid costs about 10 s. The data file, its source and licence are described in
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

"""Gold values of the model zoo: the :class:`Gold` record and the rules that compute a gold
``log Z`` with NumPy and SciPy only, never with PyMC's ``logp`` or samplers.

* Closed-form marginals of Gaussian models: a normal mean with known noise
  (:func:`normal_mean_log_evidence`, :func:`normal_posterior`), a Gaussian linear regression
  (:func:`regression_log_evidence`, through the eigen-decomposition of ``X^T X``), a
  hierarchical normal given its group scale (:func:`hierarchical_log_evidence_given_tau`,
  Sherman-Morrison), and the normal interval probability :func:`log_normal_interval`, stable in
  both tails.
* Quadrature: a tensor-product Gauss-Legendre rule over a parallelotope
  (:func:`legendre_log_integral`), a parallelotope from the Laplace approximation of the
  integrand (:func:`laplace_frame`), the gold with its error from a coarser grid and a wider box
  (:func:`quadrature`), a half-normal scale integrated over ``log s`` once the rest is in closed
  form (:func:`log_scale_gold`), and a tensor-product Gauss-Hermite rule in a Laplace frame
  (:func:`gauss_hermite`) for posteriors close to Gaussian.

A gold from quadrature states its numerical error (:class:`Gold`); a closed form or an
enumeration has error 0. The family modules of the zoo use these rules, and
:data:`pm_evidence.zoo.testing.ZOO` lists their models.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np
from scipy import optimize, special, stats

__all__ = [
    "LOG_2PI",
    "Gold",
    "gauss_hermite",
    "hermite_log_integral",
    "hierarchical_log_evidence_given_tau",
    "laplace_frame",
    "legendre_log_integral",
    "leggauss",
    "log_normal_interval",
    "log_scale_gold",
    "normal_mean_log_evidence",
    "normal_posterior",
    "quadrature",
    "regression_log_evidence",
]

LOG_2PI = float(np.log(2 * np.pi))
"""``log(2 pi)``."""


class Gold(NamedTuple):
    """A gold ``log Z`` and its absolute numerical error in nats.

    ``error`` is 0 for a closed form or an enumeration (exact up to floating-point rounding).
    For quadrature it is the largest change of ``log_z`` seen when the grid is refined and when
    the integration box is widened; for a truncated sum it is a bound on the omitted tail.
    """

    log_z: float
    error: float


# --- closed-form marginals -----------------------------------------------------------------------


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


def hierarchical_log_evidence_given_tau(tau, y, sigma, mu_sd):
    """``log N(y | 0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)`` for an array of ``tau``
    (Sherman-Morrison: ``D + c 11^T`` with ``c = mu_sd^2``)."""
    d = sigma**2 + np.asarray(tau, dtype=float)[..., None] ** 2
    c = mu_sd**2
    s_inv = np.sum(1 / d, axis=-1)
    log_det = np.sum(np.log(d), axis=-1) + np.log1p(c * s_inv)
    quad = np.sum(y**2 / d, axis=-1) - c * np.sum(y / d, axis=-1) ** 2 / (1 + c * s_inv)
    return -0.5 * (y.size * LOG_2PI + log_det + quad)


# --- quadrature ----------------------------------------------------------------------------------


@functools.cache
def leggauss(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on ``[-1, 1]`` (cached)."""
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


def hermite_log_integral(
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


def gauss_hermite(
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
    log_z = hermite_log_integral(log_f, center, matrix, fine_n)
    coarse = hermite_log_integral(log_f, center, matrix, coarse_n)
    wide = hermite_log_integral(log_f, center, widen * np.asarray(matrix), fine_n)
    return Gold(log_z, max(abs(log_z - coarse), abs(log_z - wide)))

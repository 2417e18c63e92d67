"""EM for a Gaussian mixture with full covariances, vectorized over its components.

The exploration (:mod:`pm_evidence.search.exploration`) fits mixtures of up to 32 components
to 1,024-8,192 particles at every rung, several times per rung
(:func:`~pm_evidence.search.mixtures.fit_gaussian_mixture`). scikit-learn's
``GaussianMixture`` runs the same algorithm, but loops over the components in Python and
through SciPy's checked wrappers at every step; in two dimensions most of its time is that
overhead (measured: docs/benchmarks.rst). This module does the same steps on stacked
arrays, with scikit-learn's formulas, starting values and stopping rule, so that the two give
the same fit to rounding (tests/search/test_em.py compares them). The k-means++ seeds are
scikit-learn's (``sklearn.cluster.kmeans_plusplus``), drawn by :func:`kmeans_plusplus_seeds`
with the same random numbers and arithmetic: the same seeds, without scikit-learn's import
(a fraction of a second in every process's first call with an exploration) and its per-call
checks (the test compares the seeds).

With responsibilities ``r_nk``, ``N_k = sum_n r_nk + 10 eps``:

- M-step: ``w_k = N_k / sum_j N_j``, ``mu_k = sum_n r_nk x_n / N_k``,
  ``Sigma_k = sum_n r_nk (x_n - mu_k)(x_n - mu_k)^T / N_k + reg I``;
- E-step: ``log r_nk = log w_k + log N(x_n; mu_k, Sigma_k) - log sum_j w_j N(x_n; mu_j,
  Sigma_j)``, the normal's density through the upper-triangular ``U_k`` with ``U_k U_k^T =
  Sigma_k^-1``: ``log N = -(d log 2 pi + |(x_n - mu_k) U_k|^2) / 2 + sum log diag U_k``;
- stop after ``max_iter`` iterations or once the mean log-likelihood (computed in the E-step,
  before the M-step) changes by less than ``tol``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from pm_evidence.core.utils import log_sum_exp

__all__ = [
    "BLOCK_ELEMENTS",
    "GaussianMixtureFit",
    "component_blocks",
    "em_fit",
    "kmeans_plusplus_seeds",
    "kmeans_plusplus_start",
    "precision_cholesky",
]

# Elements of one (components, points, dim) block: larger mixtures are evaluated a block of
# components at a time (16 MB of doubles; 32 components x 8,192 points x 8 dimensions at once).
BLOCK_ELEMENTS = 2**21


@dataclasses.dataclass(frozen=True)
class GaussianMixtureFit:
    """A fitted mixture: ``weights (k,)``, ``means (k, d)``, ``covariances (k, d, d)``, the
    upper-triangular ``precision_chols (k, d, d)`` (:func:`precision_cholesky`), the mean
    log-likelihood of the points at these parameters, EM's iterations and whether it stopped
    by ``tol``."""

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    precision_chols: np.ndarray
    mean_log_likelihood: float
    n_points: int
    n_iter: int
    converged: bool

    @property
    def n_components(self) -> int:
        return self.weights.size

    def bic(self) -> float:
        """``-2 n mean_log_likelihood + p log n``, ``p = k - 1 + k d + k d (d + 1) / 2`` free
        parameters (scikit-learn's ``GaussianMixture.bic`` on the fitted points)."""
        k, d = self.means.shape
        n_parameters = k - 1 + k * d + k * d * (d + 1) // 2
        n = self.n_points
        return -2.0 * self.mean_log_likelihood * n + n_parameters * math.log(n)


def precision_cholesky(covariances: np.ndarray) -> np.ndarray:
    """The upper-triangular ``U_k = L_k^-T`` (``L_k L_k^T = Sigma_k``), so that ``U_k U_k^T =
    Sigma_k^-1``, for stacked ``covariances (k, d, d)``.

    Raises ``ValueError`` where a covariance is not positive definite (a component collapsed
    onto too few points: more points per component or a larger ``reg`` fixes it)."""
    try:
        chols = np.linalg.cholesky(covariances)
    except np.linalg.LinAlgError as error:
        raise ValueError(
            "EM could not factor a component's covariance (not positive definite): a "
            "component holds too few distinct points; fit fewer components or more points."
        ) from error
    inverse = np.linalg.inv(chols)  # lower-triangular
    return np.tril(inverse).transpose(0, 2, 1)


def component_blocks(k: int, n: int, dim: int):
    """Slices of the components, each of at most ``BLOCK_ELEMENTS`` (component, dim, point)
    elements."""
    size = max(1, BLOCK_ELEMENTS // max(1, n * dim))
    return [slice(start, min(start + size, k)) for start in range(0, k, size)]


def _log_prob(x_t: np.ndarray, means: np.ndarray, precision_chols: np.ndarray) -> np.ndarray:
    """``log N(x_n; mu_k, Sigma_k)``, ``(k, n)``, from the points as columns ``x_t (d, n)``
    (points along the last axis: NumPy then sums the squares over rows, not over a short
    last axis, 8 times faster in two dimensions)."""
    dim, n = x_t.shape
    k = means.shape[0]
    squared = np.empty((k, n))
    for part in component_blocks(k, n, dim):
        u_t = precision_chols[part].transpose(0, 2, 1)
        y = np.matmul(u_t, x_t)
        y -= np.matmul(u_t, means[part, :, None])
        y *= y
        squared[part] = np.sum(y, axis=1)
    log_det = np.sum(np.log(np.diagonal(precision_chols, axis1=1, axis2=2)), axis=1)
    return -0.5 * (dim * math.log(2 * math.pi) + squared) + log_det[:, None]


def _e_step(x_t, weights, means, precision_chols) -> tuple[float, np.ndarray]:
    """The mean log-likelihood and the log responsibilities ``(k, n)``."""
    weighted = _log_prob(x_t, means, precision_chols) + np.log(weights)[:, None]
    log_norm = log_sum_exp(weighted, axis=0)
    with np.errstate(under="ignore"):
        return float(np.mean(log_norm)), weighted - log_norm


def _estimates(x_t, resp, reg_covar: float):
    """``N_k``, means and covariances from responsibilities ``resp (k, n)`` of the points
    ``x_t (d, n)``."""
    dim, n = x_t.shape
    k = resp.shape[0]
    nk = np.sum(resp, axis=1) + 10 * np.finfo(resp.dtype).eps
    means = (resp @ x_t.T) / nk[:, None]
    covariances = np.empty((k, dim, dim))
    for part in component_blocks(k, n, dim):
        diff = x_t[None, :, :] - means[part, :, None]
        weighted = resp[part, None, :] * diff
        covariances[part] = np.matmul(weighted, diff.transpose(0, 2, 1)) / nk[part, None, None]
    covariances[:, np.arange(dim), np.arange(dim)] += reg_covar
    return nk, means, covariances


def kmeans_plusplus_seeds(x: np.ndarray, k: int, seed: int) -> np.ndarray:
    """The rows of ``x (n, d)`` chosen as ``k`` greedy k-means++ seeds (Arthur and Vassilvitskii
    2007, with scikit-learn's ``2 + int(log k)`` candidates per seed): the first seed uniformly
    at random; each next one, of candidates drawn with probability proportional to their
    squared distance ``D(x)^2`` to the nearest seed so far, the one that leaves the smallest sum
    of ``D^2``. The same random numbers (``numpy.random.RandomState(seed)``) and arithmetic as
    ``sklearn.cluster.kmeans_plusplus(x, k, random_state=seed)``, whose indices these are."""
    n = x.shape[0]
    random_state = np.random.RandomState(seed)
    # scikit-learn's sample weights, all ones: kept so that every sum is its dot product (the
    # same rounding, hence the same seeds), not a sum of another order
    weights = np.ones(n)
    n_local_trials = 2 + int(np.log(k))
    squared_norms = np.einsum("ij,ij->i", x, x)

    def squared_distances(rows):  # (len(rows), n), as scikit-learn's _euclidean_distances
        out = -2 * (x[rows] @ x.T)
        out += squared_norms[rows][:, None]
        out += squared_norms[None, :]
        return np.maximum(out, 0, out=out)

    indices = np.full(k, -1, dtype=int)
    indices[0] = random_state.choice(n, p=weights / weights.sum())
    closest = squared_distances(indices[:1])
    potential = closest @ weights
    for c in range(1, k):
        draws = random_state.uniform(size=n_local_trials) * potential
        candidates = np.searchsorted(np.cumsum(weights * closest), draws)
        np.clip(candidates, None, closest.size - 1, out=candidates)
        distances = squared_distances(candidates)
        np.minimum(closest, distances, out=distances)
        potentials = distances @ weights.reshape(-1, 1)
        best = np.argmin(potentials)
        potential, closest = potentials[best], distances[best]
        indices[c] = candidates[best]
    return indices


def kmeans_plusplus_start(x: np.ndarray, k: int, seed: int, reg_covar: float):
    """EM's starting weights, means and precision Cholesky factors from ``k`` k-means++ seeds
    (:func:`kmeans_plusplus_seeds`, scikit-learn's ``kmeans_plusplus`` with
    ``random_state=seed``): each component one seed point of covariance ``reg I``, as in
    ``GaussianMixture(init_params="k-means++")``; the first E-step then assigns each point to
    its nearest seed."""
    indices = kmeans_plusplus_seeds(x, k, seed)
    resp = np.zeros((k, x.shape[0]))
    resp[np.arange(k), indices] = 1.0
    nk, means, covariances = _estimates(np.ascontiguousarray(x.T), resp, reg_covar)
    return nk / x.shape[0], means, precision_cholesky(covariances)


def em_fit(
    x: np.ndarray,
    weights: np.ndarray,
    means: np.ndarray,
    precision_chols: np.ndarray,
    reg_covar: float = 1e-6,
    max_iter: int = 30,
    tol: float = 1e-3,
) -> GaussianMixtureFit:
    """EM from ``weights (k,)``, ``means (k, d)`` and upper-triangular ``precision_chols (k,
    d, d)`` (the module's equations), then one E-step more for the fit's mean
    log-likelihood. ``x (n, d)`` needs ``n >= k``."""
    n = x.shape[0]
    if n < weights.size:
        raise ValueError(
            f"EM needs at least as many points as components; got {n} < {weights.size}."
        )
    if max_iter < 1:
        raise ValueError(f"EM needs max_iter >= 1; got {max_iter}.")
    x_t = np.ascontiguousarray(x.T)
    lower_bound, n_iter, converged = -np.inf, 0, False
    while n_iter < max_iter and not converged:
        previous = lower_bound
        lower_bound, log_resp = _e_step(x_t, weights, means, precision_chols)
        nk, means, covariances = _estimates(x_t, np.exp(log_resp), reg_covar)
        weights = nk / np.sum(nk)
        precision_chols = precision_cholesky(covariances)
        n_iter += 1
        converged = abs(lower_bound - previous) < tol
    mean_log_likelihood, _ = _e_step(x_t, weights, means, precision_chols)
    return GaussianMixtureFit(
        weights, means, covariances, precision_chols, mean_log_likelihood, n, n_iter, converged
    )

"""Mean and covariance of posterior draws, the covariance shrunk by held-out likelihood.

:func:`shrunk_covariance` keeps the leading correlations and shrinks the rest towards its
diagonal, choosing both by two-fold cross-validation; every fitted Gaussian-type reference
(normal, Student-t, warp-3, truncated normal, a one-component mixture) takes its location and
Cholesky factor from it.

References
----------
Schaefer & Strimmer (2005), target D; seed 000 §3 (the efficiency of an importance-type
estimator rests on ``KL(posterior || p0)``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import linalg

from pm_evidence.core.exceptions import EvidenceInputError

# Shrinkage intensities tried by shrunk_covariance (0: the sample covariance; 1: its diagonal).
SHRINKAGE_GRID = (0.0, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0)
# Ranks of the low-rank part tried by shrunk_covariance, in this order while the held-out score
# improves (0: shrinkage of the whole correlation towards the identity).
RANK_GRID = (0, 1, 2, 4, 8, 16, 32)


class ShrunkCovariance(NamedTuple):
    """What :func:`shrunk_covariance` returns.

    Attributes
    ----------
    mean : numpy.ndarray
        ``(dim,)``: the draws' mean.
    covariance : numpy.ndarray
        ``(dim, dim)``: the estimate, of all the draws.
    shrinkage : float
        The chosen ``lambda`` (of :data:`SHRINKAGE_GRID`).
    rank : int
        The chosen number of leading correlation eigenvectors kept whole (of :data:`RANK_GRID`).
    """

    mean: np.ndarray
    covariance: np.ndarray
    shrinkage: float
    rank: int


def _correlation_eigen(draws: np.ndarray):
    """``(D, eigenvalues, eigenvectors)`` of the sample covariance ``S = D R D`` (``D`` the
    standard deviations, ``R`` the correlation), eigenvalues of ``R`` in decreasing order."""
    sample = np.atleast_2d(np.cov(draws, rowvar=False))
    scale = np.sqrt(np.diag(sample))
    values, vectors = np.linalg.eigh(sample / np.outer(scale, scale))
    return scale, values[::-1], vectors[:, ::-1]


def _split_correlation(eigen, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """``(R_k, E_k)``: the part of the correlation ``R`` along its ``rank`` leading
    eigenvectors and the rest, ``R = R_k + E_k``."""
    _, values, vectors = eigen
    leading = (vectors[:, :rank] * values[:rank]) @ vectors[:, :rank].T
    rest = vectors[:, rank:] @ (values[rank:, None] * vectors[:, rank:].T)
    return leading, rest


def _low_rank_shrunk(eigen, rank: int, lam: float) -> np.ndarray:
    """``D [R_k + (1 - lambda) E_k + lambda diag(E_k)] D`` (:func:`_split_correlation`)."""
    leading, rest = _split_correlation(eigen, rank)
    shrunk = leading + (1 - lam) * rest + lam * np.diag(np.diag(rest))
    return shrunk * np.outer(eigen[0], eigen[0])


def _held_out_scores(eigen, mean, held_out, rank: int, lams: np.ndarray) -> np.ndarray:
    r"""Mean Gaussian log-density (up to a constant) of ``held_out`` under
    ``N(mean, D Sigma_lambda D)`` for every ``lambda`` of ``lams`` at once.

    ``Sigma_lambda = R_k + (1 - lambda) E_k + lambda diag(E_k) = (1 - lambda) R + lambda A`` with
    ``A = R_k + diag(E_k)``. With ``A = C C^T`` and ``C^{-1} R C^{-T} = V diag(theta) V^T``,
    ``Sigma_lambda = C V diag((1 - lambda) theta + lambda) V^T C^T``: one Cholesky factor and
    one symmetric eigendecomposition serve the whole grid (a Cholesky factor and a solve per
    ``lambda`` cost far more; measured: docs/benchmarks.rst, Measurements behind the
    defaults). ``-inf`` where ``Sigma_lambda`` is singular.
    """
    scale = eigen[0]
    leading, rest = _split_correlation(eigen, rank)
    correlation = leading + rest
    anchor = leading + np.diag(np.diag(rest))
    try:
        chol = linalg.cholesky(anchor, lower=True)
    except linalg.LinAlgError:
        return np.full(lams.size, -np.inf)
    half = linalg.solve_triangular(chol, correlation, lower=True)
    theta, basis = np.linalg.eigh(linalg.solve_triangular(chol, half.T, lower=True))
    standardized = ((held_out - mean) / scale).T
    projected = basis.T @ linalg.solve_triangular(chol, standardized, lower=True)  # (dim, n)
    diagonal = (1 - lams[:, None]) * theta + lams[:, None]  # (n_lams, dim)
    with np.errstate(divide="ignore", invalid="ignore"):
        mahalanobis = np.mean(projected**2, axis=1) @ (1 / diagonal).T
        log_det = (
            2 * np.sum(np.log(scale))
            + 2 * np.sum(np.log(np.diag(chol)))
            + np.sum(np.log(diagonal), axis=1)
        )
    return np.where(np.all(diagonal > 0, axis=1), -mahalanobis / 2 - log_det / 2, -np.inf)


def shrunk_covariance(draws: np.ndarray) -> ShrunkCovariance:
    r"""Mean and covariance of ``draws (n, dim)``: the leading correlations kept, the rest shrunk
    towards its diagonal, both by how well they predict held-out draws.

    With ``S = D R D`` (``D`` the standard deviations, ``R`` the correlation matrix) and
    ``R = R_k + E_k``, ``R_k`` the part of ``R`` along its ``k`` leading eigenvectors,

    .. math:: \hat\Sigma_{k,\lambda} = D \left[R_k + (1 - \lambda) E_k
              + \lambda \operatorname{diag}(E_k)\right] D,

    a low-rank plus shrunk-residual estimate: ``k = 0`` is ``(1 - lambda) S + lambda diag(S)``
    (Schaefer & Strimmer 2005, target D: each variable keeps its own variance), ``lambda = 1``
    the low-rank plus diagonal (factor-model) covariance. ``lambda`` from
    :data:`SHRINKAGE_GRID` and ``k`` from :data:`RANK_GRID` (increasing, while the score
    improves) are chosen by two-fold cross-validation: fitted to one half of the draws (the
    first and the second half of the flattened array, i.e. different chains or different
    stretches of one), scored by the mean Gaussian log-density of the other half,
    ``-KL(posterior || N(mu, Sigma))`` up to a constant, the quantity an importance-type
    estimator's efficiency rests on (seed 000 §3). With many draws per dimension the sample
    covariance (``k = 0, lambda = 0``) wins; with few, its noise costs ``dim^2 / (4 n)`` nats of
    Kullback-Leibler divergence and shrinkage pays, and where a few directions carry strong
    correlations (a GLMM's intercept against every group effect) keeping them pays too
    (measured: docs/benchmarks.rst, Measurements behind the defaults).

    Returns
    -------
    ShrunkCovariance
        ``(mean, covariance, shrinkage, rank)``.
    """
    n, dim = draws.shape
    mean = draws.mean(axis=0)
    halves = (draws[: n // 2], draws[n // 2 :])
    if n < 8 or not all(np.all(np.var(h, axis=0) > 0) for h in halves):
        # too few draws to split, or a variable constant in one half (a stuck chain): nothing
        # to choose by; the sample covariance (singular if a variable never varies, which the
        # caller reports)
        return ShrunkCovariance(mean, np.atleast_2d(np.cov(draws, rowvar=False)), 0.0, 0)
    fits = [(h.mean(axis=0), _correlation_eigen(h)) for h in halves]
    lams = np.asarray(SHRINKAGE_GRID)

    def scores(rank):
        """The held-out score of every ``lambda`` of the grid at ``rank``, summed over the two
        folds (``-inf`` where the estimate is singular)."""
        total = np.zeros(lams.size)
        for (m, eigen), held_out in zip(fits, reversed(halves), strict=True):
            total += _held_out_scores(eigen, m, held_out, rank, lams)
        return np.where(np.isfinite(total), total, -np.inf)

    best, best_score = (0, 0.0), -np.inf
    for rank in (r for r in RANK_GRID if r < dim):
        at_rank = scores(rank)
        if rank > 0 and not at_rank.max() > best_score:
            break
        if at_rank.max() > best_score:
            best, best_score = (rank, float(lams[int(np.argmax(at_rank))])), at_rank.max()
    rank, lam = best
    covariance = _low_rank_shrunk(_correlation_eigen(draws), rank, lam)
    return ShrunkCovariance(mean, covariance, float(lam), rank)


def fit_location_scale(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and lower Cholesky factor of the covariance of ``draws (..., dim)``, shrunk towards
    its diagonal where held-out draws say so (:func:`shrunk_covariance`)."""
    draws = np.asarray(draws, dtype=float)
    flat = draws.reshape(-1, draws.shape[-1])
    if flat.shape[0] < 4:
        raise EvidenceInputError(
            f"Need at least 4 draws to fit a reference: got {flat.shape[0]} draws of "
            f"dimension {flat.shape[1]}. Draw more posterior samples."
        )
    mean, cov, _, _ = shrunk_covariance(flat)
    try:
        chol = linalg.cholesky(cov, lower=True)
    except linalg.LinAlgError as err:
        raise EvidenceInputError(
            "The posterior draws have a singular covariance (a variable does not vary across "
            "draws, or fewer draws than dimensions with nothing to shrink); a Gaussian "
            "reference cannot be fitted. Check the sampler's output."
        ) from err
    return mean, chol

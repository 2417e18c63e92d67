"""Whitened distances of points to a Gaussian-type reference, in NumPy and as PyTensor graphs.

For a location ``mean`` and a lower Cholesky factor ``L``: the squared Mahalanobis distance
``|L^{-1} (x - mean)|^2``, the precision times the centred point ``(L L^T)^{-1} (x - mean)``,
``L^{-1}`` and the marginal standard deviations ``sqrt(diag(L L^T))``, shared by the normal,
Student-t, truncated-normal and mixture references. A point with a non-finite coordinate is at
distance ``+inf`` and has a zero precision product (the rule of :mod:`pm_evidence.references.base`).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from scipy import linalg

from pm_evidence.references.base import finite_rows


def diagonal_sd(chol: np.ndarray) -> np.ndarray:
    """``sqrt(diag(L L^T))`` for a lower Cholesky factor ``L`` (or a stack of them)."""
    return np.sqrt(np.sum(chol**2, axis=-1))


def _centred_rows(x: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(x - mean)`` as rows ``(n, dim)``, and which rows are finite (``None`` when all are).

    Non-finite rows are replaced by zeros, so that the triangular solves, which refuse
    non-finite input, see finite numbers only; the callers overwrite those rows' results. The
    finite rows are computed exactly as without the mask (bit-identical).
    """
    centred = (x - mean).reshape(-1, mean.size)
    finite = finite_rows(centred)
    if finite.all():
        return centred, None
    return np.where(finite[:, None], centred, 0.0), finite


def mahalanobis_sq(x: np.ndarray, mean: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """``|L^{-1} (x - mean)|^2`` for points ``x (..., dim)``; ``+inf`` at a point with a
    non-finite coordinate (every log-density of it is then ``-inf``: :func:`finite_rows`)."""
    x = np.asarray(x, dtype=float)
    centred, finite = _centred_rows(x, mean)
    z = linalg.solve_triangular(chol, centred.T, lower=True)
    distance = np.sum(z**2, axis=0)
    if finite is not None:
        distance = np.where(finite, distance, np.inf)
    return distance.reshape(x.shape[:-1])


def precision_times_centred(x: np.ndarray, mean: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """``(L L^T)^{-1} (x - mean)`` for points ``x (..., dim)``; zero at a point with a
    non-finite coordinate (:func:`finite_rows`)."""
    x = np.asarray(x, dtype=float)
    centred, finite = _centred_rows(x, mean)
    z = linalg.solve_triangular(chol, centred.T, lower=True)
    out = linalg.solve_triangular(chol, z, lower=True, trans="T").T
    if finite is not None:
        out = np.where(finite[:, None], out, 0.0)
    return out.reshape(x.shape)


def inverse_lower(chol: np.ndarray) -> np.ndarray:
    """``L^{-1}`` of a lower-triangular ``L``."""
    return linalg.solve_triangular(chol, np.eye(chol.shape[0]), lower=True)


def graph_mahalanobis_sq(x, mean, chol_inv):
    """Symbolic ``|L^{-1} (x - mean)|^2`` per row of ``x (n, dim)``."""
    z = pt.dot(x - mean, chol_inv.T)
    return pt.sum(z**2, axis=-1)

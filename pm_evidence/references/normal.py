"""The multivariate normal reference and its warp-3 form.

References
----------
seed 000 §3 (p0 for IS and reverse IS); seed 002 eq. (18.44); Meng & Schilling (2002) for warp-3.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from pm_evidence.references.base import Reference
from pm_evidence.references.shrinkage import fit_location_scale
from pm_evidence.references.whitening import (
    diagonal_sd,
    graph_mahalanobis_sq,
    inverse_lower,
    mahalanobis_sq,
    precision_times_centred,
)


@dataclass(frozen=True, eq=False)
class MultivariateNormalReference(Reference):
    """Multivariate normal ``N(mean, L L^T)`` (``chol`` is the lower Cholesky factor ``L``).

    Parameters
    ----------
    mean : numpy.ndarray, shape (dim,)
        Mean on the flat unconstrained space.
    chol : numpy.ndarray, shape (dim, dim)
        Lower Cholesky factor ``L`` of the covariance ``L L^T``.
    name : str, default "normal"
        Name of the reference (reported as ``diagnostics["reference"]`` by the estimators).
    """

    mean: np.ndarray
    chol: np.ndarray
    name: str = "normal"
    has_gradient: ClassVar[bool] = True

    @classmethod
    def fit(cls, draws: np.ndarray) -> MultivariateNormalReference:
        """Moment-match to draws ``(..., dim)`` (e.g. unconstrained posterior draws)."""
        mean, chol = fit_location_scale(draws)
        return cls(mean=mean, chol=chol)

    @property
    def dim(self) -> int:
        return self.mean.size

    @cached_property
    def _log_det(self) -> float:
        return float(np.sum(np.log(np.diag(self.chol))))

    @cached_property
    def _log_norm(self) -> float:
        return -self._log_det - 0.5 * self.dim * np.log(2 * np.pi)

    def logpdf(self, x):
        return self._log_norm - 0.5 * mahalanobis_sq(x, self.mean, self.chol)

    def grad_logpdf(self, x):
        """Gradient ``-Sigma^{-1} (x - mean)``."""
        return -precision_times_centred(x, self.mean, self.chol)

    def graph_parameters(self):
        """``(mean, L^{-1}, log normalizer)``."""
        return self.mean, inverse_lower(self.chol), np.float64(self._log_norm)

    @staticmethod
    def graph_logpdf(x, mean, chol_inv, log_norm):
        return log_norm - 0.5 * graph_mahalanobis_sq(x, mean, chol_inv)

    def sample(self, rng, n):
        z = rng.standard_normal((n, self.dim))
        return self.mean + z @ self.chol.T

    def marginal_scale(self) -> np.ndarray:
        """``sqrt(diag(L L^T))``."""
        return diagonal_sd(self.chol)


@dataclass(frozen=True, eq=False)
class Warp3Reference(MultivariateNormalReference):
    """Warp-3 bridge reference (Meng & Schilling 2002), written on the original space.

    Warp-3 standardizes the posterior, ``z = L^{-1}(x - mean)``, and symmetrizes it,
    ``q(z) = |L| (f(mean + L z) + f(mean - L z)) / 2``, and bridges ``q`` to ``N(0, I)``.
    Changing variables back to ``x`` gives the equivalent pair used here: the reference
    ``N(mean, L L^T)`` and the symmetrized target ``f_sym(x) = (f(x) + f(reflect(x))) / 2`` with
    ``reflect(x) = 2 mean - x``; ``f_sym`` has the same integral as ``f``. Every function the
    bridge needs at posterior draws is symmetric about ``mean``, so draws of ``f`` serve for
    ``f_sym``. The estimator evaluates the target at both ``x`` and ``reflect(x)``.

    Parameters
    ----------
    mean : numpy.ndarray, shape (dim,)
        Mean of the reference and centre of the reflection ``reflect(x) = 2 mean - x`` (with
        ``reference="warp3"``: the mean of the posterior draws).
    chol : numpy.ndarray, shape (dim, dim)
        Lower Cholesky factor ``L`` of the reference's covariance ``L L^T`` (with
        ``reference="warp3"``: that of the posterior draws).
    name : str, default "warp3"
        Name of the reference (reported as ``diagnostics["reference"]`` by the estimators).
    """

    name: str = "warp3"

    def reflect(self, x: np.ndarray) -> np.ndarray:
        return 2.0 * self.mean - np.asarray(x, dtype=float)

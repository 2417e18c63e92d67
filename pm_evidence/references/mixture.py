"""Mixtures of multivariate normals or Student-t's: the reference that covers every mode found.

The density and its gradient are evaluated in chunks of points, all components of a chunk
whitened by one matrix product (:data:`WHITENED_CHUNK`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np
import pytensor.tensor as pt
from scipy import linalg, special

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import log_sum_exp
from pm_evidence.references.base import Reference, finite_rows
from pm_evidence.references.shrinkage import fit_location_scale
from pm_evidence.references.whitening import diagonal_sd, inverse_lower

# Numbers of whitened points (points x components x dim) a mixture holds at once: its
# evaluation goes in chunks of points so that a chunk's arrays (8 * WHITENED_CHUNK bytes,
# 512 KiB) stay in the CPU's cache, several times faster than whitening all the points at once
# (see docs/benchmarks.rst).
WHITENED_CHUNK = 65_536


@dataclass(frozen=True, eq=False)
class MixtureReference(Reference):
    r"""A mixture of multivariate normals or Student-t's,
    ``q(x) = sum_k w_k q_k(x; mu_k, L_k L_k^T)``.

    The reference that covers every mode an exploration found
    (:func:`~pm_evidence.search.exploration.explore`): one component per mode (or several along a
    curved mode), weighted by the share of the particles it holds. Normalized because each
    component is and the weights sum to one. With ``df`` the components are multivariate
    Student-t's with ``df`` degrees of freedom and scale matrices ``L_k L_k^T``: polynomial
    tails, heavier than the posterior's wherever that decays at least exponentially, so that
    importance weights ``f / q`` stay bounded in the tails.

    Parameters
    ----------
    weights : numpy.ndarray, shape (K,)
        Positive, summing to one.
    means : numpy.ndarray
        ``(K, dim)``.
    chols : numpy.ndarray
        ``(K, dim, dim)``: lower Cholesky factors of the components' covariances (scale
        matrices for ``df``).
    df : float or None
        ``None``: normal components; a positive number: Student-t components.
    name : str, optional
        Default ``"normal_mixture"`` or ``"student_t_mixture"``.
    """

    weights: np.ndarray
    means: np.ndarray
    chols: np.ndarray
    df: float | None = None
    name: str = ""
    has_gradient: ClassVar[bool] = True

    def __post_init__(self):
        w = np.asarray(self.weights, dtype=float)
        if w.ndim != 1 or np.any(w <= 0) or not np.isclose(w.sum(), 1.0):
            raise EvidenceInputError("Mixture weights must be positive and sum to one.")
        if self.df is not None and not self.df > 0:
            raise EvidenceInputError(f"df must be positive or None, got {self.df}.")
        object.__setattr__(self, "weights", w / w.sum())
        if not self.name:
            kind = "normal" if self.df is None else "student_t"
            object.__setattr__(self, "name", f"{kind}_mixture")

    @classmethod
    def from_components(cls, weights, means, covariances, df=None) -> MixtureReference:
        """From weights, means and covariances (each factorized by Cholesky)."""
        chols = np.stack([linalg.cholesky(c, lower=True) for c in np.asarray(covariances)])
        return cls(np.asarray(weights, float), np.asarray(means, float), chols, df)

    @classmethod
    def single(cls, draws: np.ndarray) -> MixtureReference:
        """One normal component moment-matched to ``draws (..., dim)``."""
        mean, chol = fit_location_scale(draws)
        return cls(np.ones(1), mean[None], chol[None])

    def marginal_scale(self) -> np.ndarray:
        """``sqrt(sum_k w_k diag(L_k L_k^T))``: the within-component scale (the spread between
        modes left out: a local move stays within one)."""
        return np.sqrt(self.weights @ diagonal_sd(self.chols) ** 2)

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    @property
    def n_components(self) -> int:
        return self.weights.size

    @cached_property
    def _log_norms(self) -> np.ndarray:
        """``log w_k`` plus each component's log normalizer."""
        d = self.dim
        log_dets = np.sum(np.log(np.diagonal(self.chols, axis1=1, axis2=2)), axis=1)
        if self.df is None:
            constant = -0.5 * d * np.log(2 * np.pi)
        else:
            nu = self.df
            constant = (special.gammaln(0.5 * (nu + d)) - special.gammaln(0.5 * nu)
                        - 0.5 * d * np.log(nu * np.pi))  # fmt: skip
        return np.log(self.weights) - log_dets + constant

    def _kernel(self, m2):
        """Log of a component's unnormalized density at squared Mahalanobis distance ``m2``."""
        if self.df is None:
            return -0.5 * m2
        return -0.5 * (self.df + self.dim) * np.log1p(m2 / self.df)

    @cached_property
    def _chol_inverses(self) -> np.ndarray:
        """``L_k^{-1}``, shape ``(K, dim, dim)``."""
        return np.stack([inverse_lower(c) for c in self.chols])

    @cached_property
    def _whitening(self) -> tuple[np.ndarray, np.ndarray]:
        """``W (dim, K dim)``, the ``L_k^{-T}`` side by side, and ``L_k^{-1} mu_k`` as one row
        ``(K dim,)``: the whitened points of every component are one matrix product,
        ``z_k = L_k^{-1} (x - mu_k) = (x W - b)_k``."""
        inverses = self._chol_inverses
        w = np.transpose(inverses, (2, 0, 1)).reshape(self.dim, -1)
        b = np.einsum("ked,kd->ke", inverses, self.means).reshape(-1)
        return w, b

    @cached_property
    def _whitening_by_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``W^T (K dim, dim)`` and ``b`` as a column ``(K dim, 1)``: :attr:`_whitening` for
        points as columns."""
        w, b = self._whitening
        return np.ascontiguousarray(w.T), b[:, None]

    def _whitened(self, rows: np.ndarray) -> np.ndarray:
        """``z_k = L_k^{-1} (x - mu_k)`` for finite rows ``(n, dim)``, the points along the last
        axis: shape ``(K, dim, n)``. Sums over ``dim`` then add whole rows, where a sum over a
        short last axis of a few numbers is slow (points along the first axis are slower in
        most dimensions: see docs/benchmarks.rst)."""
        w_t, b = self._whitening_by_rows
        return (w_t @ rows.T - b).reshape(self.n_components, self.dim, rows.shape[0])

    @staticmethod
    def _squared_norms(z: np.ndarray) -> np.ndarray:
        """``|z_k|^2`` of whitened points ``(K, dim, n)``: shape ``(K, n)``."""
        return np.add.reduce(z * z, axis=1)

    def _chunks(self, x) -> tuple[np.ndarray, np.ndarray, int]:
        """``x`` as finite rows ``(n, dim)`` (non-finite ones zeroed), which rows were finite,
        and a chunk length that keeps the whitened points of a chunk (``n K dim`` numbers)
        near ``WHITENED_CHUNK``."""
        rows = np.asarray(x, dtype=float).reshape(-1, self.dim)
        finite = finite_rows(rows)
        if not finite.all():
            rows = np.where(finite[:, None], rows, 0.0)
        step = max(1, WHITENED_CHUNK // (self.n_components * self.dim))
        return rows, finite, step

    def mahalanobis_sq(self, x) -> np.ndarray:
        """Squared Mahalanobis distance of ``x`` to each component, shape ``(..., K)``;
        ``+inf`` at a point with a non-finite coordinate."""
        x = np.asarray(x, dtype=float)
        rows, finite, step = self._chunks(x)
        out = np.empty((self.n_components, rows.shape[0]))
        for start in range(0, rows.shape[0], step):
            out[:, start : start + step] = self._squared_norms(
                self._whitened(rows[start : start + step])
            )
        out[:, ~finite] = np.inf
        return np.ascontiguousarray(out.T).reshape(*x.shape[:-1], self.n_components)

    def component_logpdfs(self, x) -> np.ndarray:
        """``log w_k + log q_k(x)``, shape ``(..., K)``."""
        return self._log_norms + self._kernel(self.mahalanobis_sq(x))

    def logpdf(self, x):
        x = np.asarray(x, dtype=float)
        rows, finite, step = self._chunks(x)
        log_q = np.empty(rows.shape[0])
        for start in range(0, rows.shape[0], step):
            m2 = self._squared_norms(self._whitened(rows[start : start + step]))
            log_qk = self._log_norms[:, None] + self._kernel(m2)
            log_q[start : start + step] = log_sum_exp(log_qk, axis=0)
        log_q[~finite] = -np.inf
        return log_q.reshape(x.shape[:-1])[()]

    def responsibilities(self, x) -> np.ndarray:
        """``P(component k | x)``, shape ``(..., K)``."""
        log_q = self.component_logpdfs(x)
        return np.exp(log_q - log_sum_exp(log_q, axis=-1)[..., None])

    def occupancy(self, x, weights=None) -> np.ndarray:
        """The share of the points ``x (n, dim)`` (weighted by ``weights``, default equal)
        whose most probable component is ``k``."""
        nearest = np.argmax(self.component_logpdfs(x), axis=-1)
        counts = np.bincount(nearest, weights=weights, minlength=self.n_components)
        return counts / counts.sum()

    def grad_logpdf(self, x):
        """``-sum_k r_k(x) c_k(x) Sigma_k^{-1} (x - mu_k)``, ``c_k = 1`` for normal components
        and ``(df + dim) / (df + m_k^2)`` for Student-t ones (:meth:`logpdf_and_grad`)."""
        return self.logpdf_and_grad(x)[1]

    def logpdf_and_grad(self, x):
        """``log q(x)`` and its gradient from one whitening per chunk of points:
        with ``z_k = L_k^{-1} (x - mu_k)``, ``m_k^2 = |z_k|^2`` and responsibilities ``r_k``,
        ``grad log q = -sum_k r_k c_k L_k^{-T} z_k`` (:meth:`grad_logpdf`), one matrix product
        ``-(r c z)^T W^T`` with the whitened points as rows ``(K dim, n)``. Zero gradient and
        ``-inf`` at a point with a non-finite coordinate."""
        x = np.asarray(x, dtype=float)
        rows, finite, step = self._chunks(x)
        w, _ = self._whitening
        log_q = np.empty(rows.shape[0])
        grad = np.empty_like(rows)
        for start in range(0, rows.shape[0], step):
            z = self._whitened(rows[start : start + step])  # (K, dim, chunk)
            m2 = self._squared_norms(z)
            log_qk = self._log_norms[:, None] + self._kernel(m2)
            log_q[start : start + step] = log_sum_exp(log_qk, axis=0)
            scale = np.exp(log_qk - log_q[start : start + step])
            if self.df is not None:
                scale = scale * (self.df + self.dim) / (self.df + m2)
            weighted = (scale[:, None, :] * z).reshape(-1, z.shape[2])
            grad[start : start + step] = -(weighted.T @ w.T)
        log_q[~finite] = -np.inf
        grad[~finite] = 0.0
        return log_q.reshape(x.shape[:-1]), grad.reshape(x.shape)

    def graph_parameters(self):
        """``(log w_k + log normalizers, means, L_k^{-1}, df)`` (``df = inf`` for normal
        components)."""
        df = np.float64(np.inf if self.df is None else self.df)
        return self._log_norms, self.means, self._chol_inverses, df

    def padded_graph_parameters(self, n_components: int):
        """:meth:`graph_parameters` of ``n_components >= K`` components, those past the
        ``K``-th of zero weight (``log w = -inf``, the identity's factor): the same density, so
        that a function compiled for a number of components serves every mixture of fewer (a
        device compiles once per shape of its inputs)."""
        log_norms, means, chol_invs, df = self.graph_parameters()
        extra = n_components - self.n_components
        if extra < 0:
            raise ValueError(f"{n_components} components cannot hold {self.n_components}.")
        eye = np.broadcast_to(np.eye(self.dim), (extra, self.dim, self.dim))
        return (
            np.concatenate([log_norms, np.full(extra, -np.inf)]),
            np.concatenate([means, np.zeros((extra, self.dim))]),
            np.concatenate([chol_invs, eye]),
            df,
        )

    @staticmethod
    def graph_logpdf(x, log_norms, means, chol_invs, df):
        z = pt.einsum("nkd,ked->nke", x[:, None, :] - means[None], chol_invs)
        m2 = pt.sum(z**2, axis=-1)
        dim = x.shape[1].astype("float64")
        kernel = pt.switch(pt.isinf(df), -0.5 * m2, -0.5 * (df + dim) * pt.log1p(m2 / df))
        return pt.logsumexp(log_norms + kernel, axis=-1)

    def sample(self, rng, n):
        return self.sample_components(rng, rng.choice(self.n_components, size=n, p=self.weights))

    def sample_components(self, rng, which: np.ndarray) -> np.ndarray:
        """One draw from component ``which[i]`` for every ``i`` (an integer array of
        component indices): ``sample`` with the components chosen by the caller, as AIS
        does where it allocates its chains to the components
        (:mod:`~pm_evidence.path.start_allocation`)."""
        which = np.asarray(which, dtype=int)
        n = which.size
        z = rng.standard_normal((n, self.dim))
        if self.df is not None:
            z = z / np.sqrt(rng.chisquare(self.df, size=n) / self.df)[:, None]
        # each component's rows in one slice (a stable sort keeps their order: the same
        # products as selecting them by mask, without a mask over all rows per component)
        order = np.argsort(which, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(which, minlength=self.n_components))])
        ordered = z[order]
        out = np.empty_like(z)
        for k in np.flatnonzero(bounds[1:] > bounds[:-1]):
            rows = slice(bounds[k], bounds[k + 1])
            out[order[rows]] = self.means[k] + ordered[rows] @ self.chols[k].T
        return out

"""Reference (proposal) distributions p0 on the flat unconstrained space.

Every reference is normalized, has ``logpdf(x)`` for ``x`` of shape ``(..., dim)`` and
``sample(rng, n) -> (n, dim)``. The estimators only ever see ``log f - log p0`` at draws.
At a point with a NaN or infinite coordinate every ``logpdf`` is ``-inf`` and every
``grad_logpdf`` zero (no error): a sampler's proposal that reaches such a point is a rejected,
counted move (:mod:`pm_evidence.tempering.kernels`).

References
----------
seed 000 §3 (p0 for IS and reverse IS); seed 002 eq. (18.44); Meng & Schilling (2002) for warp-3.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, NamedTuple

import numpy as np
from scipy import linalg, special

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import log_sum_exp, renamed_parameters

__all__ = [
    "BernoulliProductReference",
    "CategoricalProductReference",
    "MixtureReference",
    "MultivariateNormalReference",
    "MultivariateStudentTReference",
    "PriorReference",
    "Reference",
    "ShrunkCovariance",
    "SymmetrizedReference",
    "TruncatedNormalReference",
    "Warp3Reference",
    "fit_reference",
]


class Reference:
    """Interface of a normalized reference distribution on the flat unconstrained space.

    A reference with ``has_gradient = True`` implements :meth:`grad_logpdf` (HMC and GWG on a
    geometric path from it need it); the others raise. At a point with a non-finite coordinate
    ``logpdf`` is ``-inf`` and ``grad_logpdf`` zero, computed for the other points as usual.
    """

    name: str = "reference"
    dim: int
    has_gradient: ClassVar[bool] = False

    def logpdf(self, x: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def grad_logpdf(self, x: np.ndarray) -> np.ndarray:
        """Gradient of ``logpdf`` with respect to ``x``, shaped like ``x`` (only where
        ``has_gradient``)."""
        raise EvidenceInputError(
            f"The {self.name!r} reference has no gradient of its log-density (has_gradient=False)."
        )

    def logpdf_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(logpdf(x), grad_logpdf(x))``; a reference whose two share work (a mixture's
        whitened points) computes them together."""
        return self.logpdf(x), self.grad_logpdf(x)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def marginal_scale(self) -> np.ndarray | None:
        """Each coordinate's scale ``(dim,)`` (a standard deviation, or a mixture's
        within-component one), for preconditioning HMC on a path from this reference
        (:class:`~pm_evidence.tempering.path.GeometricPath`); ``None`` where unknown."""
        return None

    def graph_parameters(self) -> tuple[np.ndarray, ...] | None:
        """Numeric inputs of :meth:`graph_logpdf`, or ``None`` when this reference has no
        symbolic log-density (then compiled transitions fall back to NumPy)."""
        return None

    @staticmethod
    def graph_logpdf(x, *parameters):  # pragma: no cover - interface
        """``logpdf`` as a PyTensor graph of a symbolic ``x (n, dim)`` and symbolic parameters
        shaped like :meth:`graph_parameters` (inputs, not constants: one compiled function
        serves every fitted reference of a kind)."""
        raise NotImplementedError


# Numbers of whitened points (points x components x dim) a mixture holds at once: its
# evaluation goes in chunks of points so that the chunk's arrays (8 * WHITENED_CHUNK bytes,
# 512 KiB) stay in the CPU's cache. Measured (issue 35, step 7): logpdf and its gradient at
# 4,096 points of 32 components in 2-D 6.6 -> 1.8 ms against chunks of 2,000,000 (16 MB);
# 2-4x faster at 16,384 points up to 10-D; within 12% of the best chunk tried everywhere.
WHITENED_CHUNK = 65_536
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


def _fit_location_scale(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _diagonal_sd(chol: np.ndarray) -> np.ndarray:
    """``sqrt(diag(L L^T))`` for a lower Cholesky factor ``L`` (or a stack of them)."""
    return np.sqrt(np.sum(chol**2, axis=-1))


def _finite_rows(x: np.ndarray) -> np.ndarray:
    """Whether every coordinate of each point of ``x (..., dim)`` is finite: shape ``(...)``.

    A point with a NaN or infinite coordinate lies outside every reference's support: its
    ``logpdf`` is ``-inf`` and its ``grad_logpdf`` zero, so that a proposal that reaches it
    (a leapfrog trajectory that diverged) is rejected and counted by the kernels rather than
    raising (:mod:`pm_evidence.tempering.kernels`).
    """
    return np.all(np.isfinite(x), axis=-1)


def _centred_rows(x: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(x - mean)`` as rows ``(n, dim)``, and which rows are finite (``None`` when all are).

    Non-finite rows are replaced by zeros, so that the triangular solves, which refuse
    non-finite input, see finite numbers only; the callers overwrite those rows' results. The
    finite rows are computed exactly as without the mask (bit-identical).
    """
    centred = (x - mean).reshape(-1, mean.size)
    finite = _finite_rows(centred)
    if finite.all():
        return centred, None
    return np.where(finite[:, None], centred, 0.0), finite


def _mahalanobis_sq(x: np.ndarray, mean: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """``|L^{-1} (x - mean)|^2`` for points ``x (..., dim)``; ``+inf`` at a point with a
    non-finite coordinate (every log-density of it is then ``-inf``: :func:`_finite_rows`)."""
    x = np.asarray(x, dtype=float)
    centred, finite = _centred_rows(x, mean)
    z = linalg.solve_triangular(chol, centred.T, lower=True)
    distance = np.sum(z**2, axis=0)
    if finite is not None:
        distance = np.where(finite, distance, np.inf)
    return distance.reshape(x.shape[:-1])


def _precision_times_centred(x: np.ndarray, mean: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """``(L L^T)^{-1} (x - mean)`` for points ``x (..., dim)``; zero at a point with a
    non-finite coordinate (:func:`_finite_rows`)."""
    x = np.asarray(x, dtype=float)
    centred, finite = _centred_rows(x, mean)
    z = linalg.solve_triangular(chol, centred.T, lower=True)
    out = linalg.solve_triangular(chol, z, lower=True, trans="T").T
    if finite is not None:
        out = np.where(finite[:, None], out, 0.0)
    return out.reshape(x.shape)


def _zero_nonfinite_rows(x: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """``grad`` with zeros at the points of ``x`` that have a non-finite coordinate (a mixture's
    responsibilities are NaN there, ``-inf - (-inf)``); ``grad`` itself when there are none."""
    finite = _finite_rows(x)
    if finite.all():
        return grad
    return np.where(finite[..., None], grad, 0.0)


def _inverse_lower(chol: np.ndarray) -> np.ndarray:
    """``L^{-1}`` of a lower-triangular ``L``."""
    return linalg.solve_triangular(chol, np.eye(chol.shape[0]), lower=True)


def _graph_mahalanobis_sq(x, mean, chol_inv):
    """Symbolic ``|L^{-1} (x - mean)|^2`` per row of ``x (n, dim)``."""
    import pytensor.tensor as pt

    z = pt.dot(x - mean, chol_inv.T)
    return pt.sum(z**2, axis=-1)


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
        mean, chol = _fit_location_scale(draws)
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
        return self._log_norm - 0.5 * _mahalanobis_sq(x, self.mean, self.chol)

    def grad_logpdf(self, x):
        """Gradient ``-Sigma^{-1} (x - mean)``."""
        return -_precision_times_centred(x, self.mean, self.chol)

    def graph_parameters(self):
        """``(mean, L^{-1}, log normalizer)``."""
        return self.mean, _inverse_lower(self.chol), np.float64(self._log_norm)

    @staticmethod
    def graph_logpdf(x, mean, chol_inv, log_norm):
        return log_norm - 0.5 * _graph_mahalanobis_sq(x, mean, chol_inv)

    def sample(self, rng, n):
        z = rng.standard_normal((n, self.dim))
        return self.mean + z @ self.chol.T

    def marginal_scale(self) -> np.ndarray:
        """``sqrt(diag(L L^T))``."""
        return _diagonal_sd(self.chol)


@dataclass(frozen=True, eq=False)
class TruncatedNormalReference(MultivariateNormalReference):
    r"""``N(mean, L L^T)`` restricted to the ellipsoid ``|L^{-1}(x - mean)|^2 <= r^2`` that holds
    ``mass`` of it (``r^2`` the ``mass`` quantile of ``chi^2_dim``), renormalized:

    .. math:: q(x) = N(x; \mu, \Sigma)\, 1\{(x-\mu)^T\Sigma^{-1}(x-\mu) \le r^2\} / \text{mass}.

    The reference of Gelfand & Dey (1994) for reverse importance sampling: on a compact set
    where the posterior is positive the reverse weights ``q / f`` are bounded, so their
    variance is finite whatever the posterior's tails (with an untruncated normal it is infinite
    wherever the posterior's tails are lighter than the normal's, and reverse IS then
    over-estimates log Z with an SE that does not show it). For reverse IS and bridge-type
    estimators only: the geometric path and plain importance sampling need a reference that is
    positive wherever the posterior is.
    """

    mass: float = 0.95
    name: str = "truncated_normal"
    has_gradient: ClassVar[bool] = False

    @classmethod
    def fit(
        cls, draws: np.ndarray, mass: float = 0.95, scale: float = 1.0
    ) -> TruncatedNormalReference:
        """Moment-match to draws ``(..., dim)``, multiply the covariance by ``scale`` and
        truncate to the ``mass`` ellipsoid."""
        if not (0.0 < mass <= 1.0 and scale > 0.0):
            raise EvidenceInputError(
                f"A truncated normal needs 0 < mass <= 1 and scale > 0; got mass={mass}, "
                f"scale={scale}."
            )
        mean, chol = _fit_location_scale(draws)
        return cls(mean=mean, chol=np.sqrt(scale) * chol, mass=mass)

    @cached_property
    def radius_sq(self) -> float:
        """``r^2``: the ``mass`` quantile of ``chi^2`` with ``dim`` degrees of freedom."""
        from scipy import stats

        return float(stats.chi2.ppf(self.mass, self.dim))

    def logpdf(self, x):
        d2 = _mahalanobis_sq(x, self.mean, self.chol)
        inside = self._log_norm - np.log(self.mass) - 0.5 * d2
        return np.where(d2 <= self.radius_sq, inside, -np.inf)

    def grad_logpdf(self, x):  # pragma: no cover - not a path reference
        raise EvidenceInputError(
            "The truncated normal reference has bounded support; the path methods need a "
            "reference positive wherever the posterior is (use 'normal' or 'student_t')."
        )

    def graph_parameters(self):
        return None

    def sample(self, rng, n):
        """Rejection from the untruncated normal (acceptance ``mass``)."""
        kept = []
        remaining = n
        while remaining > 0:
            z = rng.standard_normal((int(np.ceil(remaining / self.mass)) + 16, self.dim))
            z = z[np.sum(z**2, axis=1) <= self.radius_sq][:remaining]
            kept.append(z)
            remaining -= z.shape[0]
        return self.mean + np.concatenate(kept) @ self.chol.T


@dataclass(frozen=True, eq=False)
class MultivariateStudentTReference(Reference):
    """Multivariate Student-t with ``df`` degrees of freedom, location ``mean``, scale ``L L^T``.

    Heavier tails than the normal: the safer proposal for importance sampling (seed 000 §3:
    IS degrades when p0 is lighter-tailed or more peaked than the target).

    Parameters
    ----------
    mean : numpy.ndarray, shape (dim,)
        Location on the flat unconstrained space.
    chol : numpy.ndarray, shape (dim, dim)
        Lower Cholesky factor ``L`` of the scale matrix ``L L^T`` (the covariance is
        ``L L^T df / (df - 2)`` for ``df > 2``).
    df : float, default 5.0
        Degrees of freedom.
    name : str, default "student_t"
        Name of the reference (reported as ``diagnostics["reference"]`` by the estimators).
    """

    mean: np.ndarray
    chol: np.ndarray
    df: float = 5.0
    name: str = "student_t"
    has_gradient: ClassVar[bool] = True

    @classmethod
    def fit(cls, draws: np.ndarray, df: float = 5.0) -> MultivariateStudentTReference:
        """Match location and covariance to draws; the scale is ``cov * (df - 2) / df``."""
        if df <= 2:
            raise EvidenceInputError(f"df must be > 2 to match a covariance, got {df}.")
        mean, chol = _fit_location_scale(draws)
        return cls(mean=mean, chol=chol * np.sqrt((df - 2) / df), df=float(df))

    @property
    def dim(self) -> int:
        return self.mean.size

    @cached_property
    def _log_norm(self) -> float:
        d, nu = self.dim, self.df
        return float(
            special.gammaln((nu + d) / 2)
            - special.gammaln(nu / 2)
            - 0.5 * d * np.log(nu * np.pi)
            - np.sum(np.log(np.diag(self.chol)))
        )

    def logpdf(self, x):
        maha = _mahalanobis_sq(x, self.mean, self.chol)
        return self._log_norm - 0.5 * (self.df + self.dim) * np.log1p(maha / self.df)

    def grad_logpdf(self, x):
        """Gradient ``-(df + d) / (df + m) Sigma^{-1} (x - mean)``, ``m`` the Mahalanobis square."""
        maha = _mahalanobis_sq(x, self.mean, self.chol)
        factor = (self.df + self.dim) / (self.df + maha)
        return -factor[..., None] * _precision_times_centred(x, self.mean, self.chol)

    def graph_parameters(self):
        """``(mean, L^{-1}, log normalizer, df)``."""
        return (
            self.mean, _inverse_lower(self.chol), np.float64(self._log_norm), np.float64(self.df)
        )  # fmt: skip

    @staticmethod
    def graph_logpdf(x, mean, chol_inv, log_norm, df):
        import pytensor.tensor as pt

        maha = _graph_mahalanobis_sq(x, mean, chol_inv)
        return log_norm - 0.5 * (df + x.shape[-1]) * pt.log1p(maha / df)

    def sample(self, rng, n):
        z = rng.standard_normal((n, self.dim)) @ self.chol.T
        scale = np.sqrt(self.df / rng.chisquare(self.df, size=(n, 1)))
        return self.mean + z * scale

    def marginal_scale(self) -> np.ndarray:
        """``sqrt(diag(L L^T))``, the scale matrix's (the shape, not the variance)."""
        return _diagonal_sd(self.chol)


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
        mean, chol = _fit_location_scale(draws)
        return cls(np.ones(1), mean[None], chol[None])

    def marginal_scale(self) -> np.ndarray:
        """``sqrt(sum_k w_k diag(L_k L_k^T))``: the within-component scale (the spread between
        modes left out: a local move stays within one)."""
        return np.sqrt(self.weights @ _diagonal_sd(self.chols) ** 2)

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
        return np.stack([_inverse_lower(c) for c in self.chols])

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
        last axis of a few numbers is slow: with one BLAS thread, the log-density and its
        gradient of 32 components at 1,024 points in 2-D take 143 and 214 µs against 293 and 436
        with the points along the first axis, the same at 10 and 20 dimensions, and the
        gradient 23 % longer at 50 dimensions and 4 components (docs/benchmarks.rst, issue 35,
        step 9)."""
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
        finite = _finite_rows(rows)
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
        ``-(r c z)^T W^T`` with the whitened points as rows ``(K dim, n)``. Zero gradient and ``-inf`` at a point with a non-finite
        coordinate."""
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

    @staticmethod
    def graph_logpdf(x, log_norms, means, chol_invs, df):
        import pytensor.tensor as pt

        z = pt.einsum("nkd,ked->nke", x[:, None, :] - means[None], chol_invs)
        m2 = pt.sum(z**2, axis=-1)
        dim = x.shape[1].astype("float64")
        kernel = pt.switch(pt.isinf(df), -0.5 * m2, -0.5 * (df + dim) * pt.log1p(m2 / df))
        return pt.logsumexp(log_norms + kernel, axis=-1)

    def sample(self, rng, n):
        which = rng.choice(self.n_components, size=n, p=self.weights)
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


@dataclass(frozen=True, eq=False)
class SymmetrizedReference(Reference):
    r"""A reference averaged over a finite group of volume-preserving maps:
    ``q_G(x) = (1/|G|) sum_g q(g x)``.

    Each ``g`` is an affine map ``x -> A_g x + c_g`` with ``|det A_g| = 1`` and the maps form a
    group, so ``q(g x)`` is the density of ``g^{-1} X`` for ``X ~ q`` and ``q_G`` is a normalized
    mixture: a draw picks ``g`` uniformly and returns ``g X`` (the group is closed under
    inversion). For a target invariant under the group, ``f(g x) = f(x)``, the weights
    ``f / q_G`` are invariant too, so bridge sampling, DS, IS and reverse IS with ``q_G`` are
    valid whether the posterior draws visit one mirror mode or all of them, where ``q`` fitted
    to one mode would count one mode's mass, ``Z / |G|`` (label switching: see
    :mod:`pm_evidence.model.modes`; Frühwirth-Schnatter 2004, eq. (11)).

    Parameters
    ----------
    base : Reference
        The reference ``q`` (e.g. fitted to posterior draws relabelled into one mirror image).
    actions : tuple of callable
        The group's elements as maps of points ``(..., dim)`` (the identity among them), e.g.
        :attr:`pm_evidence.model.modes.SymmetryGroup.actions`; each needs a ``transpose`` method
        (``A_g^T v``) for :meth:`grad_logpdf`.
    name : str, optional
        Default ``"symmetrized_" + base.name``.
    """

    base: Reference
    actions: tuple
    name: str = ""

    def __post_init__(self):
        if not self.actions:
            raise EvidenceInputError("SymmetrizedReference needs at least one group element.")
        if not self.name:
            object.__setattr__(self, "name", f"symmetrized_{self.base.name}")

    @property
    def dim(self) -> int:
        return self.base.dim

    @property
    def size(self) -> int:
        """Number of group elements ``|G|``."""
        return len(self.actions)

    @property
    def has_gradient(self) -> bool:
        """Whether the base reference has a gradient (:meth:`grad_logpdf` needs it)."""
        return self.base.has_gradient

    def _component_logpdfs(self, x) -> np.ndarray:
        """``log q(g x)`` for every ``g``: shape ``(|G|, ...)``."""
        x = np.asarray(x, dtype=float)
        return np.stack([self.base.logpdf(action(x)) for action in self.actions])

    def logpdf(self, x):
        return log_sum_exp(self._component_logpdfs(x), axis=0) - np.log(self.size)

    def grad_logpdf(self, x):
        """``sum_g r_g(x) A_g^T grad log q(g x)`` with responsibilities ``r_g = q(g x) / sum``;
        zero at a point with a non-finite coordinate."""
        x = np.asarray(x, dtype=float)
        log_q = self._component_logpdfs(x)
        with np.errstate(invalid="ignore"):  # -inf - (-inf) at non-finite points, zeroed below
            weights = np.exp(log_q - log_sum_exp(log_q, axis=0))
            grad = np.zeros_like(x)
            for weight, action in zip(weights, self.actions, strict=True):
                grad += weight[..., None] * action.transpose(self.base.grad_logpdf(action(x)))
        return _zero_nonfinite_rows(x, grad)

    def sample(self, rng, n):
        z = self.base.sample(rng, n)
        which = rng.integers(self.size, size=n)
        out = np.empty_like(z)
        for k, action in enumerate(self.actions):
            rows = which == k
            if np.any(rows):
                out[rows] = action(z[rows])
        return out


@dataclass(eq=False)
class PriorReference(Reference):
    """The model's own prior on the unconstrained space: ``log p0(x) = model.varlogp(x)``
    plus :attr:`log_normalizer` (``log K!`` per vector with an ``ordered`` transform, minus the
    log prior mass kept by transforms that cut the prior).

    Only for proper priors that PyMC can draw from (not ``pm.Flat``/``pm.HalfFlat``). Draws are
    forward samples of the free variables mapped through the transforms (``ordered`` variables
    sorted, exact where their components are i.i.d.:
    :class:`~pm_evidence.model.prior.OrderedPrior`; draws outside the image of a transform that
    cuts the prior rejected: :class:`~pm_evidence.model.prior.PriorCut`); densities are
    evaluated batched. Where a cut's mass is estimated from forward draws, its SE
    (:attr:`log_normalizer_se`) is added to that of every estimate from this reference.

    Parameters
    ----------
    target : LogDensity
        The model's log density; ``logpdf`` is its ``log_prior`` and ``sample`` its
        ``sample_prior``.
    name : str, default "prior"
        Name of the reference (reported as ``diagnostics["reference"]`` by the estimators).

    Raises
    ------
    EvidenceInputError
        If a free variable has an improper ``Flat``/``HalfFlat`` prior, an ``ordered``
        transform that sorting cannot draw (components not i.i.d.), or transforms that keep less
        than :data:`~pm_evidence.model.prior.MIN_PRIOR_CUT_MASS` of the forward draws.
    """

    target: object  # LogDensity
    name: str = "prior"
    # no grad_logpdf: a geometric path from the prior takes its gradients from the model's own
    # prior and likelihood terms (GeometricPath.evaluate)
    has_gradient: ClassVar[bool] = False

    def __post_init__(self):
        from pymc.distributions.continuous import FlatRV, HalfFlatRV

        model = self.target.model
        improper = [
            rv.name for rv in model.free_RVs if isinstance(rv.owner.op, FlatRV | HalfFlatRV)
        ]
        if improper:
            raise EvidenceInputError(
                f"The prior is improper for {improper} (Flat/HalfFlat), so it cannot be a "
                f"reference distribution. Use a fitted reference (reference='student_t' or "
                f"'normal'), or give those variables proper priors."
            )
        self.target.prior_ordering.require_sampleable()
        self.target.prior_cut.require_sampleable()

    @property
    def log_normalizer(self) -> float:
        """``log p0 - model.varlogp``: ``sum log K!`` over vectors with an ``ordered`` transform,
        whose sorted forward draws have ``K!`` times PyMC's density
        (:class:`~pm_evidence.model.prior.OrderedPrior`), minus the log prior mass that
        transforms cutting the prior keep (:class:`~pm_evidence.model.prior.PriorCut`), else 0."""
        return self.target.prior_log_normalizer

    @property
    def log_normalizer_se(self) -> float:
        """The SE of :attr:`log_normalizer` (that of a cut's mass estimated from forward draws;
        0 where it is exact)."""
        return self.target.prior_cut.log_mass_se

    @property
    def dim(self) -> int:
        return self.target.dim

    def logpdf(self, x):
        """``model.varlogp(x) + log_normalizer``; ``-inf`` at a point with a non-finite
        coordinate."""
        x = np.asarray(x, dtype=float)
        log_p = self.target.log_prior(x) + self.log_normalizer
        finite = _finite_rows(x)
        return log_p if finite.all() else np.where(finite, log_p, -np.inf)

    def sample(self, rng, n):
        return self.target.sample_prior(rng, n)


@dataclass(frozen=True, eq=False)
class BernoulliProductReference(Reference):
    r"""Independent Bernoulli variables, ``p0(x) = prod_j sigma(l_j)^{x_j} sigma(-l_j)^{1 - x_j}``
    on ``x in {0, 1}^dim``, given by the logits ``l``.

    The uniform distribution (``l = 0``), a mean-field approximation (seed 000 Fig. 2b) and the
    data base rate distribution of RBMs (seed 004 §4.2) are of this form; see
    :mod:`pm_evidence.zoo.energy` for their constructors. ``logpdf`` is ``-inf`` off the binary
    points. ``grad_logpdf`` is that of the relaxed ``sum_j x_j log sigma(l_j) + (1 - x_j)
    log sigma(-l_j)``, i.e. ``l``, for gradient-informed flips.

    Parameters
    ----------
    logits : array_like, shape (dim,)
        Finite logits ``l_j`` of the success probabilities ``sigma(l_j)``; converted to a float
        array. ``from_probabilities`` builds them from (clipped) probabilities.
    name : str, default "bernoulli_product"
        Name of the reference (reported as ``diagnostics["reference"]`` by the estimators).

    Raises
    ------
    EvidenceInputError
        If ``logits`` is not 1-D or has a non-finite entry.
    """

    logits: np.ndarray
    name: str = "bernoulli_product"
    has_gradient: ClassVar[bool] = True  # of the relaxed log-density

    def __post_init__(self):
        logits = np.asarray(self.logits, dtype=float)
        if logits.ndim != 1 or not np.all(np.isfinite(logits)):
            raise EvidenceInputError(
                "BernoulliProductReference needs a 1-D array of finite logits (one per binary "
                "entry); clip probabilities away from 0 and 1 before taking logits."
            )
        object.__setattr__(self, "logits", logits)

    @classmethod
    def from_probabilities(cls, probs, *, clip: float = 1e-3, name: str = "bernoulli_product"):
        """From success probabilities, clipped to ``[clip, 1 - clip]`` so every state keeps
        positive mass (a reference must cover the target's support)."""
        probs = np.clip(np.asarray(probs, dtype=float), clip, 1.0 - clip)
        return cls(special.logit(probs), name=name)

    @property
    def dim(self) -> int:
        return self.logits.size

    def logpdf(self, x):
        x = np.asarray(x, dtype=float)
        binary = np.all((x == 0.0) | (x == 1.0), axis=-1)
        with np.errstate(invalid="ignore"):  # inf - inf off the binary points (set to -inf)
            log_p = np.sum(x * -np.logaddexp(0.0, -self.logits) + (1.0 - x) * -np.logaddexp(
                0.0, self.logits), axis=-1)  # fmt: skip
        return np.where(binary, log_p, -np.inf)

    def grad_logpdf(self, x):
        return np.broadcast_to(self.logits, np.shape(x)).copy()

    def sample(self, rng, n):
        return (rng.random((n, self.dim)) < special.expit(self.logits)).astype(float)


@dataclass(frozen=True, eq=False)
class CategoricalProductReference(Reference):
    r"""Independent categorical entries, ``p0(x) = prod_j P_j(x_j)``, ``x_j in {0..L_j-1}``.

    ``log_probs`` has shape ``(dim, L)`` with ``L = max_j L_j``; row ``j`` holds the log
    probabilities of entry ``j``'s values, ``-inf`` past its ``L_j`` (each row normalized).
    ``logpdf`` is ``-inf`` off the grid of allowed values. :meth:`uniform` gives the uniform
    distribution over every entry's values, the reference of models with Categorical (and
    Bernoulli) free variables under ``reference="uniform"``.

    Parameters
    ----------
    log_probs : array_like, shape (dim, L)
        Log probabilities of each entry's values, ``-inf`` for values an entry does not have;
        every row must be normalized (``logsumexp`` over a row is 0), without NaN or ``+inf``.
    name : str, default "categorical_product"
        Name of the reference (reported as ``diagnostics["reference"]`` by the estimators).

    Raises
    ------
    EvidenceInputError
        If ``log_probs`` is not 2-D, has NaN or ``+inf``, or a row is not normalized.
    """

    log_probs: np.ndarray
    name: str = "categorical_product"

    def __post_init__(self):
        log_probs = np.asarray(self.log_probs, dtype=float)
        if log_probs.ndim != 2 or np.any(np.isnan(log_probs)) or np.any(log_probs == np.inf):
            raise EvidenceInputError(
                "CategoricalProductReference needs log probabilities of shape (dim, L) without "
                "NaN or +inf (-inf marks a value an entry does not have)."
            )
        if not np.allclose(special.logsumexp(log_probs, axis=1), 0.0, atol=1e-10):
            raise EvidenceInputError(
                "Each row of CategoricalProductReference.log_probs must be normalized "
                "(logsumexp over a row = 0)."
            )
        object.__setattr__(self, "log_probs", log_probs)

    @classmethod
    def uniform(cls, levels) -> CategoricalProductReference:
        """Uniform over ``0..L_j-1`` for each entry, from the numbers of values ``levels``."""
        levels = np.asarray(levels, dtype=int)
        if levels.ndim != 1 or np.any(levels < 1):
            raise EvidenceInputError("levels must be a 1-D array of positive integers.")
        values = np.arange(levels.max())
        log_probs = np.where(values < levels[:, None], -np.log(levels)[:, None], -np.inf)
        return cls(log_probs, name="uniform")

    @property
    def dim(self) -> int:
        return self.log_probs.shape[0]

    def logpdf(self, x):
        x = np.asarray(x, dtype=float)
        n_levels = self.log_probs.shape[1]
        allowed = (x == np.round(x)) & (x >= 0) & (x < n_levels)
        index = np.where(allowed, x, 0).astype(int)
        terms = np.take_along_axis(
            np.broadcast_to(self.log_probs, (*x.shape[:-1], *self.log_probs.shape)),
            index[..., None],
            axis=-1,
        )[..., 0]
        return np.where(np.all(allowed, axis=-1), terms.sum(axis=-1), -np.inf)

    def sample(self, rng, n):
        cumulative = np.cumsum(np.exp(self.log_probs), axis=1)  # (dim, L)
        u = rng.random((n, self.dim, 1))
        values = (cumulative[None] <= u * cumulative[None, :, -1:]).sum(axis=2)
        return np.minimum(values, self.log_probs.shape[1] - 1).astype(float)


REFERENCE_NAMES = ("prior", "normal", "student_t", "warp3", "truncated_normal")
# References that are zero where the posterior may be positive: fine for reverse IS and the
# bridge-type estimators, wrong for importance sampling and the geometric path.
BOUNDED_REFERENCE_NAMES = ("truncated_normal",)


@renamed_parameters(kind="reference")
def fit_reference(reference, target, draws: np.ndarray | None) -> Reference:
    """Build a reference by name (``"prior"``, ``"normal"``, ``"student_t"``, ``"warp3"``,
    ``"truncated_normal"``).

    A :class:`Reference` instance is returned unchanged (after a dimension check). The first
    parameter was ``kind`` before (deprecated: a ``FutureWarning``).
    """
    if isinstance(reference, Reference):
        if reference.dim != target.dim:
            raise EvidenceInputError(
                f"The reference has dimension {reference.dim} but the model's unconstrained "
                f"vector has dimension {target.dim}."
            )
        return reference
    if reference == "prior":
        return PriorReference(target)
    if reference not in REFERENCE_NAMES:
        raise EvidenceInputError(
            f"Requested reference {reference!r} but it must be one of "
            f"{list(REFERENCE_NAMES)} or a Reference instance."
        )
    target.require_continuous(f"reference={reference!r}")
    if draws is None:
        raise EvidenceInputError(
            f"Reference {reference!r} is fitted to posterior draws; none given."
        )
    if reference == "normal":
        return MultivariateNormalReference.fit(draws)
    if reference == "student_t":
        return MultivariateStudentTReference.fit(draws)
    if reference == "truncated_normal":
        return TruncatedNormalReference.fit(draws)
    mean, chol = _fit_location_scale(draws)
    return Warp3Reference(mean=mean, chol=chol)

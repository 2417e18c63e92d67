"""The normal reference truncated to an ellipsoid: Gelfand & Dey's reference for reverse IS.

References
----------
Gelfand & Dey (1994), for reverse importance sampling.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np
from scipy import stats

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.references.normal import MultivariateNormalReference
from pm_evidence.references.shrinkage import fit_location_scale
from pm_evidence.references.whitening import mahalanobis_sq


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
        mean, chol = fit_location_scale(draws)
        return cls(mean=mean, chol=np.sqrt(scale) * chol, mass=mass)

    @cached_property
    def radius_sq(self) -> float:
        """``r^2``: the ``mass`` quantile of ``chi^2`` with ``dim`` degrees of freedom."""
        return float(stats.chi2.ppf(self.mass, self.dim))

    def logpdf(self, x):
        d2 = mahalanobis_sq(x, self.mean, self.chol)
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

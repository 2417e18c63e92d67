"""The model's own prior on the unconstrained space as a reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pymc.distributions.continuous import FlatRV, HalfFlatRV

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.references.base import Reference, finite_rows


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
        finite = finite_rows(x)
        return log_p if finite.all() else np.where(finite, log_p, -np.inf)

    def sample(self, rng, n):
        return self.target.sample_prior(rng, n)

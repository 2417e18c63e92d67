"""Reference (proposal) distributions p0 on the flat unconstrained space.

Every reference is normalized, has ``logpdf(x)`` for ``x`` of shape ``(..., dim)`` and
``sample(rng, n) -> (n, dim)``. The estimators only ever see ``log f - log p0`` at draws.
At a point with a NaN or infinite coordinate every ``logpdf`` is ``-inf`` and every
``grad_logpdf`` zero (no error): a sampler's proposal that reaches such a point is a rejected,
counted move (:mod:`pm_evidence.tempering.kernels`).

One module a job: ``base`` (the :class:`Reference` interface and its rule for non-finite
points), ``shrinkage`` (mean and shrunk covariance of posterior draws), ``whitening``
(Mahalanobis distances and precision products), ``normal`` (the normal and warp-3),
``student_t``, ``truncated`` (the truncated normal), ``mixture``, ``symmetrized`` (a reference
averaged over a symmetry group), ``prior`` (the model's prior), ``discrete`` (Bernoulli and
categorical products) and ``fitting`` (a reference built by name).

References
----------
seed 000 §3 (p0 for IS and reverse IS); seed 002 eq. (18.44); Meng & Schilling (2002) for warp-3.
"""

from pm_evidence.references.base import Reference
from pm_evidence.references.discrete import (
    BernoulliProductReference,
    CategoricalProductReference,
)
from pm_evidence.references.fitting import (
    BOUNDED_REFERENCE_NAMES,
    REFERENCE_NAMES,
    fit_reference,
)
from pm_evidence.references.mixture import WHITENED_CHUNK, MixtureReference
from pm_evidence.references.normal import MultivariateNormalReference, Warp3Reference
from pm_evidence.references.prior import PriorReference
from pm_evidence.references.shrinkage import (
    RANK_GRID,
    SHRINKAGE_GRID,
    ShrunkCovariance,
    shrunk_covariance,
)
from pm_evidence.references.student_t import MultivariateStudentTReference
from pm_evidence.references.symmetrized import SymmetrizedReference
from pm_evidence.references.truncated import TruncatedNormalReference

__all__ = [
    "BOUNDED_REFERENCE_NAMES",
    "RANK_GRID",
    "REFERENCE_NAMES",
    "SHRINKAGE_GRID",
    "WHITENED_CHUNK",
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
    "shrunk_covariance",
]

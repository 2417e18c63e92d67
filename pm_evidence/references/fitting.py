"""A reference built by name (``"prior"``, ``"normal"``, ``"student_t"``, ...) for a model."""

from __future__ import annotations

import numpy as np

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import renamed_parameters
from pm_evidence.references.base import Reference
from pm_evidence.references.normal import MultivariateNormalReference, Warp3Reference
from pm_evidence.references.prior import PriorReference
from pm_evidence.references.shrinkage import fit_location_scale
from pm_evidence.references.student_t import MultivariateStudentTReference
from pm_evidence.references.truncated import TruncatedNormalReference

REFERENCE_NAMES = ("prior", "normal", "student_t", "warp3", "truncated_normal")
# References that are zero where the posterior may be positive: fine for reverse IS and the
# bridge-type estimators, wrong for importance sampling and the geometric path.
BOUNDED_REFERENCE_NAMES = ("truncated_normal",)


@renamed_parameters(kind="reference")
def fit_reference(reference, target, draws: np.ndarray | None) -> Reference:
    """Build a reference by name (``"prior"``, ``"normal"``, ``"student_t"``, ``"warp3"``,
    ``"truncated_normal"``).

    A :class:`Reference` instance is returned unchanged (after a dimension check). ``kind=``
    is accepted as a deprecated name of the first parameter, with a ``FutureWarning``.
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
    mean, chol = fit_location_scale(draws)
    return Warp3Reference(mean=mean, chol=chol)

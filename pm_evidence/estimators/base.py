"""The record every estimator core returns, and input checks they share."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pm_evidence.core.exceptions import NonFiniteLogDensityError


class Estimate(NamedTuple):
    """An estimate of ``log Z`` with its standard error and scalar diagnostics."""

    log_z: float
    se: float
    diagnostics: dict


def as_log_weights(values, *, what: str, allow_neg_inf: bool) -> np.ndarray:
    """Validate an array of log weights (or log-density differences).

    NaN and ``+inf`` are always errors. ``-inf`` (zero weight) is allowed only where a draw may
    legitimately fall outside the target's support (draws from a reference).
    """
    values = np.asarray(values, dtype=float)
    bad = np.isnan(values) | (values == np.inf)
    if not allow_neg_inf:
        bad |= values == -np.inf
    if np.any(bad):
        n_bad = int(bad.sum())
        raise NonFiniteLogDensityError(
            f"{n_bad} of {values.size} {what} are not finite "
            f"({'NaN or inf' if not allow_neg_inf else 'NaN or +inf'}). The log-density must be "
            f"finite at every draw of the target; check the model for numerical problems "
            f"(e.g. a likelihood that overflows) or drop the offending draws."
        )
    return values


def as_two_samples(log_l_target, log_l_reference) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``log f - log p0`` at target draws (finite) and reference draws (``-inf`` ok)."""
    return (
        as_log_weights(log_l_target, what="log weights at target draws", allow_neg_inf=False),
        as_log_weights(log_l_reference, what="log weights at reference draws", allow_neg_inf=True),
    )

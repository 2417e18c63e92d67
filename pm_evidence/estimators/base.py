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

    ``+inf`` is always an error. ``-inf`` (zero weight) is allowed only where a draw may
    legitimately fall outside the target's support (draws from a reference, annealed chains);
    there a NaN is a zero weight too: a point where the model's log density is NaN (a model
    evaluated at the edge of its support, where a bound meets another) has zero density. The
    estimators count such weights (:func:`nan_weight_diagnostics`). At draws of the target
    itself, NaN and ``-inf`` are errors.
    """
    values = np.asarray(values, dtype=float)
    bad = values == np.inf
    if allow_neg_inf:
        values = np.where(np.isnan(values), -np.inf, values)
    else:
        bad |= np.isnan(values) | (values == -np.inf)
    if np.any(bad):
        n_bad = int(bad.sum())
        raise NonFiniteLogDensityError(
            f"{n_bad} of {values.size} {what} are not finite "
            f"({'NaN or inf' if not allow_neg_inf else '+inf'}). The log-density must be "
            f"finite at every draw of the target; check the model for numerical problems "
            f"(e.g. a likelihood that overflows) or drop the offending draws."
        )
    return values


def as_two_samples(log_l_target, log_l_reference) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``log f - log p0`` at target draws (finite) and reference draws (``-inf`` ok)."""
    return (
        as_log_weights(log_l_target, what="log weights at target draws", allow_neg_inf=False),
        as_log_weights(log_l_reference, what="log weights at reference draws", allow_neg_inf=True),
    )  # NaN at reference draws: zero weights, counted by nan_weight_diagnostics


def nan_weight_diagnostics(values) -> dict:
    """``n_nan_log_weights`` (taken as zero weights by :func:`as_log_weights`) and their share
    of ``values``, for an estimator's diagnostics."""
    values = np.asarray(values, dtype=float)
    n_nan = int(np.isnan(values).sum())
    return {"n_nan_log_weights": n_nan, "nan_log_weight_fraction": n_nan / max(values.size, 1)}

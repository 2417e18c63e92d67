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

    Where a draw may legitimately fall outside the target's support (draws from a reference,
    annealed chains: ``allow_neg_inf``), ``-inf`` is a zero weight, and so are NaN and ``+inf``:
    a model's log density is NaN where it is evaluated at the edge of its support (a bound
    meeting another), and ``+inf`` where it overflows far in the tails (an LKJ prior's
    standard deviations of ``e^70``, whose density is in truth ``exp(-e^70)``). The estimators
    count such weights (:func:`nonfinite_weight_diagnostics`) and warn where they are more than
    a negligible share. At draws of the target itself, NaN and ``+-inf`` are errors.
    """
    values = np.asarray(values, dtype=float)
    if allow_neg_inf:
        return np.where(np.isnan(values) | (values == np.inf), -np.inf, values)
    bad = ~np.isfinite(values)
    if np.any(bad):
        raise NonFiniteLogDensityError(
            f"{int(bad.sum())} of {values.size} {what} are not finite (NaN or inf). The "
            f"log-density must be finite at every draw of the target; check the model for "
            f"numerical problems (e.g. a likelihood that overflows) or drop the offending draws."
        )
    return values


def as_two_samples(log_l_target, log_l_reference) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``log f - log p0`` at target draws (finite) and reference draws (``-inf`` ok)."""
    return (
        as_log_weights(log_l_target, what="log weights at target draws", allow_neg_inf=False),
        as_log_weights(log_l_reference, what="log weights at reference draws", allow_neg_inf=True),
    )  # NaN or +inf at reference draws: zero weights, counted by nonfinite_weight_diagnostics


def nonfinite_weight_diagnostics(values) -> dict:
    """``n_nonfinite_log_weights`` (NaN or ``+inf``, taken as zero weights by
    :func:`as_log_weights`) and their share of ``values``, for an estimator's diagnostics."""
    values = np.asarray(values, dtype=float)
    n_bad = int((np.isnan(values) | (values == np.inf)).sum())
    return {
        "n_nonfinite_log_weights": n_bad,
        "nonfinite_log_weight_fraction": n_bad / max(values.size, 1),
    }

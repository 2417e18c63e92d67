"""Bridge sampling's reference by default: the fitted normal or its warp-3, whichever a pilot
predicts the smaller error for at the same number of model evaluations.

Warp-3 (Meng & Schilling 2002; :class:`~pm_evidence.references.Warp3Reference`) bridges the
fitted normal ``g = N(mu, Sigma)`` to the symmetrized target
``f_sym(x) = (f(x) + f(2 mu - x)) / 2``, which has the same integral ``Z`` and no skewness. On a
skewed posterior that shrinks both sides of the error; but each of its reference draws costs two
evaluations of the model, and on a symmetric posterior it gains nothing. So the default measures
both on one pilot:

* ``p = min(N1, N2)`` draws from ``g`` (``N1`` posterior draws held out for the estimate,
  ``N2`` the normal's reference draws), ``f`` at them and at their reflections, and ``f`` at the
  reflections of the ``N1`` posterior draws;
* the error each bridge would have at an equal number of evaluations,
  :func:`~pm_evidence.estimators.predicted_re2`: the normal with ``N2`` reference draws
  (``N2`` evaluations), warp-3 with ``max(p, (N2 - N1) / 2)`` (two per draw, plus the ``N1``
  reflections);
* the smaller prediction wins, and the pilot's draws are the first of its reference draws.

The normal's cost rises by the ``p + N1`` evaluations at reflections (``2 / 16`` of its own by
default); warp-3, where it wins, costs what the normal would have. The pilot's predicted ratio
of the two SEs follows the ratio of full runs' SEs closely enough to pick the better one
(measured: docs/benchmarks.rst, Measurements behind the defaults).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pm_evidence.core.exceptions import OverlapError
from pm_evidence.estimators import bridge_core, predicted_re2
from pm_evidence.model.draws import (
    check_reference_log_weights,
    log_weights,
    reference_log_weights,
    target_log_weights,
)
from pm_evidence.model.log_density import LogDensity
from pm_evidence.references import MultivariateNormalReference, Warp3Reference

__all__ = ["BridgeReferenceChoice", "choose_bridge_reference", "more_reference_log_weights"]


@dataclass(frozen=True)
class BridgeReferenceChoice:
    """The reference bridge sampling uses by default, and what the choice already evaluated.

    Attributes
    ----------
    reference : MultivariateNormalReference
        The fitted normal, or its :class:`~pm_evidence.references.Warp3Reference`.
    log_weights_target : numpy.ndarray
        ``log f - log g`` at the held-out posterior draws (``log f_sym - log g`` for warp-3).
    log_weights_pilot : numpy.ndarray
        The same at the pilot's reference draws: the first of the estimate's reference draws.
    n_reference : int
        The chosen reference's number of reference draws, the pilot's included.
    diagnostics : dict
        ``reference_choice`` (``"normal"`` or ``"warp3"``), ``predicted_se_normal``,
        ``predicted_se_warp3`` and ``n_pilot``.
    """

    reference: MultivariateNormalReference
    log_weights_target: np.ndarray
    log_weights_pilot: np.ndarray
    n_reference: int
    diagnostics: dict


# What is left when neither of bridge's references overlaps the posterior draws (both tried).
OVERLAP_LEFT_TO_TRY = (
    "The draws are likely far from normal (several modes, chains in different places: see "
    "R-hat) or too few. Left to try: more posterior draws, or a method that does not fit its "
    "reference to these draws: method='auto' (AIS from tempering from the prior) or "
    "method='ais' with reference='prior'."
)


def choose_bridge_reference(
    target: LogDensity,
    normal: MultivariateNormalReference,
    posterior_draws: np.ndarray,
    log_weights_normal: np.ndarray,
    rng: np.random.Generator,
    n_reference: int,
    n_target_effective: float | None = None,
) -> BridgeReferenceChoice:
    """The fitted normal or its warp-3, whichever the pilot predicts the smaller error for at
    equal cost (see the module's text).

    Parameters
    ----------
    target : LogDensity
    normal : MultivariateNormalReference
        The normal fitted to the first halves of the chains.
    posterior_draws : numpy.ndarray
        The held-out posterior draws the estimate uses, ``(chain, draw, dim)``.
    log_weights_normal : numpy.ndarray
        ``log f - log g`` at them for the normal ``g``, ``(chain, draw)``.
    rng : numpy.random.Generator
        Draws the pilot's reference draws.
    n_reference : int
        The normal's number of reference draws.
    n_target_effective : float, optional
        As for :func:`~pm_evidence.estimators.bridge_core`.

    Returns
    -------
    BridgeReferenceChoice
    """
    warp3 = Warp3Reference(mean=normal.mean, chol=normal.chol)
    n_target = log_weights_normal.size
    n_pilot = int(min(n_target, n_reference))
    n_warp3 = int(max(n_pilot, (n_reference - n_target) // 2))
    log_f = log_weights_normal + normal.logpdf(posterior_draws)  # not evaluated again
    pilot = normal.sample(rng, n_pilot)
    log_f_pilot = target.log_density(pilot)

    def pilot_weights(reference):
        lw = log_weights(target, pilot, reference, log_f=log_f_pilot)
        return check_reference_log_weights(lw, reference)

    lw_warp3, n_nonfinite = target_log_weights(target, posterior_draws, warp3, log_f)
    candidates = {
        "normal": (normal, log_weights_normal, pilot_weights(normal), n_reference),
        "warp3": (warp3, lw_warp3, pilot_weights(warp3), n_warp3),
    }
    predicted, no_overlap = {}, {}
    for name, (_, lw_target, lw_pilot, n) in candidates.items():
        try:
            pilot_estimate = bridge_core(lw_target, lw_pilot, n_target_effective=n_target_effective)
        except OverlapError as err:  # this candidate cannot bridge; the other may
            predicted[name], no_overlap[name] = np.inf, str(err)
            continue
        predicted[name] = predicted_re2(
            lw_target, lw_pilot, pilot_estimate.log_z, n, n_target_effective
        )
    if len(no_overlap) == len(candidates):
        raise OverlapError(
            f"Bridge sampling found no reference that overlaps the posterior draws: its pilot "
            f"tried the normal fitted to the first halves of the chains and its warp-3 "
            f"(reference='normal' and 'warp3'), and the classifier separates each from the "
            f"draws ({no_overlap['normal']}). {OVERLAP_LEFT_TO_TRY}"
        )
    chosen = "warp3" if predicted["warp3"] < predicted["normal"] else "normal"
    reference, lw_target, lw_pilot, n = candidates[chosen]
    diagnostics = {
        "reference_choice": chosen,
        "n_nonfinite_reflections": n_nonfinite if chosen == "warp3" else 0,
        "predicted_se_normal": float(np.sqrt(predicted["normal"])),
        "predicted_se_warp3": float(np.sqrt(predicted["warp3"])),
        "n_pilot": n_pilot,
    }
    return BridgeReferenceChoice(reference, lw_target, lw_pilot, n, diagnostics)


def more_reference_log_weights(
    target: LogDensity, choice: BridgeReferenceChoice, rng: np.random.Generator, n: int
) -> np.ndarray:
    """``n`` reference draws' log weights for the chosen reference: the pilot's first, then new
    draws (:func:`~pm_evidence.model.draws.reference_log_weights`)."""
    have = choice.log_weights_pilot[:n]
    if n <= have.size:
        return have
    more = reference_log_weights(target, choice.reference, rng, n - have.size)
    return np.concatenate([have, more])

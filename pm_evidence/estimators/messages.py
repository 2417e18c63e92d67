"""Checks on draws and weights, and the warnings they give.

A check that fails gives a message: :func:`flag` issues it as a :class:`UserWarning` (at the
user's line) and the estimator keeps it in the result's ``warnings`` (``Evidence.reliable`` is
then False).
"""

from __future__ import annotations

import numpy as np
from arviz_stats.base import array_stats

from pm_evidence.core.utils import RHAT_MAX, good_pareto_k, max_rhat, warn_user
from pm_evidence.estimators import Estimate

__all__ = [
    "LOW_ESS",
    "MIN_DRAWS_ESS",
    "draws_bulk_ess",
    "draws_ess_messages",
    "flag",
    "nonfinite_weight_messages",
    "posterior_messages",
    "se_messages",
    "weight_messages",
]

# Weight ESS below this many draws makes IS / reverse IS unreliable.
LOW_ESS = 30
# A larger share of NaN or +inf log weights (zero weights: points where the model's log density
# is NaN or overflows) is a warning; below it the mass they stand for is negligible against the SE.
NEGLIGIBLE_NONFINITE_SHARE = 1e-3
# Posterior draws with a smaller bulk ESS are flagged (draws_ess_messages).
MIN_DRAWS_ESS = 100


# A check that fails gives a message: it is issued as a UserWarning and kept in the result's
# ``warnings`` (``Evidence.reliable`` is then False).
def flag(messages) -> tuple[str, ...]:
    """Issue every message as a :class:`UserWarning` and return them for the result."""
    messages = tuple(m for m in messages if m)
    for message in messages:
        warn_user(message)
    return messages


def posterior_messages(target, x: np.ndarray, *, relabelled: bool = False) -> list[str]:
    """Warnings about posterior draws ``(chain, draw, dim)``: R-hat above ``RHAT_MAX``.

    ``relabelled``: the draws were relabelled into one mirror image of a symmetric posterior
    (``pm_evidence.model.modes.relabel``), so chains in different mirror modes agree.
    """
    if x.shape[0] * x.shape[1] < 8:
        return []
    rhat, worst = max_rhat(x)
    if not rhat > RHAT_MAX:
        return []
    where = " after relabelling them into one mirror image" if relabelled else ""
    return [(
        f"The posterior draws have R-hat {rhat:.3f} > {RHAT_MAX}{where} at "
        f"{target.coordinate_names[worst]} (rank-normalized split R-hat; Vehtari et al. 2021 "
        f"recommend 1.01): the {x.shape[0]} chains do not agree (not converged, or in "
        f"different modes), so estimates built on them, and any reference fitted to them, "
        f"may miss posterior mass. Draw more (tune, draws) or check the model."
    )]  # fmt: skip


def draws_ess_messages(target, x: np.ndarray) -> list[str]:
    """A warning where posterior draws ``(chain, draw, dim)`` hold fewer than
    ``MIN_DRAWS_ESS`` effective draws (the smallest bulk ESS over the coordinates), for the
    estimators whose estimate is made from them (the ``"posterior"`` family).

    Every estimator on posterior draws fits its reference to the first half of every chain and
    estimates from the second (or reads all of them): with fewer than 100 effective draws the
    reference's mean and covariance are rough, and the SE, computed from the draws' own
    autocorrelation, is itself unreliable (Vehtari et al. 2021, §4: the ESS estimate needs
    about 100 effective draws per chain to be trusted), so a small SE proves nothing.
    """
    ess = draws_bulk_ess(x)
    if ess >= MIN_DRAWS_ESS:
        return []
    worst = f"{ess:.1f}" if np.isfinite(ess) else "not computable"
    return [
        f"The posterior draws hold too few effective draws: the smallest bulk ESS over the "
        f"coordinates is {worst} (< {MIN_DRAWS_ESS}) of {x.shape[0]} x {x.shape[1]} draws. "
        f"The reference is fitted to half of them and the estimate made from the rest, so both "
        f"log Z and its SE (computed from the draws' own autocorrelation) are unreliable "
        f"below {MIN_DRAWS_ESS} effective draws. Draw more (pm.sample() at its defaults gives "
        f"4 x 1,000), or pass no idata."
    ]


def draws_bulk_ess(x: np.ndarray) -> float:
    """The smallest rank-normalized bulk ESS over the coordinates of ``x (chain, draw, dim)``
    (``arviz_stats``); NaN where it cannot be computed (too few draws)."""
    if x.shape[1] < 4:
        return float("nan")
    with np.errstate(all="ignore"):
        ess = np.asarray(
            array_stats.ess(np.asarray(x, dtype=float), chain_axis=0, draw_axis=1),
            dtype=float,
        )
    constant = np.ptp(x, axis=(0, 1)) == 0  # a constant coordinate has no error to measure
    ess = ess[~constant]
    return float(np.min(ess)) if ess.size and np.all(np.isfinite(ess)) else float("nan")


def weight_messages(
    diagnostics: dict, what: str, consequence: str, *, ess_key: str = "ess", n: int | None = None
) -> list[str]:
    """Low weight ESS (below ``LOW_ESS``) and a Pareto k-hat above
    :func:`~pm_evidence.core.utils.good_pareto_k` of importance-type weights."""
    messages = nonfinite_weight_messages(diagnostics, what)
    ess = diagnostics.get(ess_key, np.nan)
    if ess < LOW_ESS:
        messages.append(
            f"{what} have an effective sample size of only {ess:.1f} (below {LOW_ESS}): "
            f"{consequence}"
        )
    khat = diagnostics.get("pareto_k", np.nan)
    n = n if n is not None else diagnostics.get("n_chains", 0)
    if n and khat > good_pareto_k(n):
        messages.append(
            f"{what} have Pareto k-hat {khat:.2f} > {good_pareto_k(n):.2f} (the threshold "
            f"min(1 - 1/log10(n), 0.7) of Vehtari et al. 2024 for n = {n}): their mean rests on "
            f"a few large weights, so {consequence}"
        )
    return messages


def nonfinite_weight_messages(diagnostics: dict, what: str) -> list[str]:
    """A warning where more than ``NEGLIGIBLE_NONFINITE_SHARE`` of the weights were NaN or
    ``+inf`` (taken as zero: ``n_nonfinite_log_weights``)."""
    share = diagnostics.get("nonfinite_log_weight_fraction", 0.0)
    if not share > NEGLIGIBLE_NONFINITE_SHARE:
        return []
    return [
        f"{what}: {diagnostics['n_nonfinite_log_weights']} ({100 * share:.2g} %) are not finite, "
        f"where the model's log density is NaN (at the edge of a variable's support, where "
        f"bounds meet, or where an operation is outside its domain: the log of a negative "
        f"number, a Cholesky factor of a matrix that is not positive definite) or +inf (an "
        f"overflow far in the tails); they count as zero weights, so log Z misses whatever mass "
        f"lies there. Check the model's density near its bounds (a bound that depends on "
        f"another variable) and make it -inf, not NaN, outside them."
    ]


def se_messages(estimate: Estimate) -> list[str]:
    """A standard error that is not finite (e.g. an effective sample size ArviZ could not
    compute) is reported, not replaced."""
    if np.isfinite(estimate.se):
        return []
    return [
        f"The standard error is {estimate.se} (not finite): the precision of log Z is unknown "
        f"(an effective sample size or variance could not be computed from these draws)."
    ]

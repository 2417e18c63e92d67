"""Estimator cores: pure functions of log-density arrays, one family per module.

Each core takes ``log f - log p0`` (or both terms) at draws and returns an :class:`Estimate`;
the model-facing functions in :mod:`pm_evidence.posterior.api` draw the samples and call these.
"""

from pm_evidence.estimators.base import Estimate
from pm_evidence.estimators.bridge import (
    bridge_core,
    fruhwirth_schnatter_re2,
    fruhwirth_schnatter_terms,
    predicted_re2,
)
from pm_evidence.estimators.combinations import COMBINATION_RULES, combine_is_ris_core
from pm_evidence.estimators.discriminance import discriminance_core
from pm_evidence.estimators.importance import (
    chi_square_to_target,
    importance_core,
    reverse_importance_core,
)
from pm_evidence.estimators.ratio_matching import RatioMatchingSolution, solve_ratio_matching
from pm_evidence.estimators.variational import (
    draw_sumo_lengths,
    elbo_core,
    iwae_core,
    sumo_core,
    sumo_values,
)

__all__ = [
    "COMBINATION_RULES",
    "Estimate",
    "RatioMatchingSolution",
    "bridge_core",
    "chi_square_to_target",
    "combine_is_ris_core",
    "discriminance_core",
    "draw_sumo_lengths",
    "elbo_core",
    "fruhwirth_schnatter_re2",
    "fruhwirth_schnatter_terms",
    "importance_core",
    "iwae_core",
    "predicted_re2",
    "reverse_importance_core",
    "solve_ratio_matching",
    "sumo_core",
    "sumo_values",
]

"""pm_evidence: marginal likelihoods (log evidence) and Bayes factors for PyMC models."""

from pm_evidence.api import (
    METHODS,
    bridge_sampling,
    combine_is_ris,
    discriminance_sampling,
    importance_sampling,
    is_ris_combination,
    marginal_likelihood,
    reverse_importance_sampling,
)
from pm_evidence.compare import bayes_factor, compare, post_prob
from pm_evidence.evidence import Evidence
from pm_evidence.exceptions import (
    ConvergenceError,
    EvidenceInputError,
    NonFiniteLogDensityError,
    OverlapError,
)
from pm_evidence.plots import plot_evidence
from pm_evidence.references import (
    MultivariateNormalReference,
    MultivariateStudentTReference,
    PriorReference,
    Reference,
    Warp3Reference,
)
from pm_evidence.smc import from_smc
from pm_evidence.target import LogDensity

__version__ = "0.1.0"

__all__ = [
    "METHODS",
    "ConvergenceError",
    "Evidence",
    "EvidenceInputError",
    "LogDensity",
    "MultivariateNormalReference",
    "MultivariateStudentTReference",
    "NonFiniteLogDensityError",
    "OverlapError",
    "PriorReference",
    "Reference",
    "Warp3Reference",
    "bayes_factor",
    "bridge_sampling",
    "combine_is_ris",
    "compare",
    "discriminance_sampling",
    "from_smc",
    "importance_sampling",
    "is_ris_combination",
    "marginal_likelihood",
    "plot_evidence",
    "post_prob",
    "reverse_importance_sampling",
]

"""pm_evidence: marginal likelihoods (log evidence) and Bayes factors for PyMC models."""

from pm_evidence import path_estimators
from pm_evidence.api import (
    BridgeOptions,
    PosteriorOptions,
    PosteriorPlan,
    bridge_sampling,
    combine_is_ris,
    discriminance_sampling,
    importance_sampling,
    is_ris_combination,
    make_posterior_plan,
    reverse_importance_sampling,
)
from pm_evidence.api_tempering import (
    annealed_discriminance_sampling,
    annealed_importance_sampling,
    mbar,
    rao_blackwellized_tempered_sampling,
    reverse_annealed_importance_sampling,
    thermodynamic_integration,
)
from pm_evidence.compare import bayes_factor, compare, post_prob
from pm_evidence.evidence import Evidence, EvidenceSet, from_datatree
from pm_evidence.exceptions import (
    ConvergenceError,
    EstimationFailedError,
    EvidenceInputError,
    NonFiniteLogDensityError,
    OverlapError,
)
from pm_evidence.marginal import marginal_likelihood
from pm_evidence.parallel import ModelComparison, ModelFailure, compare_models
from pm_evidence.plan import PathOptions, PathPlan, make_plan
from pm_evidence.plots import (
    plot_bayes_factor,
    plot_evidence,
    plot_occupancy,
    plot_transition_matrix,
)
from pm_evidence.references import (
    BernoulliProductReference,
    CategoricalProductReference,
    MultivariateNormalReference,
    MultivariateStudentTReference,
    PriorReference,
    Reference,
    Warp3Reference,
)
from pm_evidence.registry import METHODS, PATH_METHODS
from pm_evidence.runs import (
    AnnealingOptions,
    AnnealingRun,
    TemperingOptions,
    TemperingRun,
    run_annealing,
    run_reverse_annealing,
    run_tempering,
)
from pm_evidence.smc import from_smc
from pm_evidence.target import LogDensity
from pm_evidence.tracking import LogZTracker
from pm_evidence.version import __version__ as __version__

__all__ = [
    "METHODS",
    "PATH_METHODS",
    "AnnealingOptions",
    "AnnealingRun",
    "BernoulliProductReference",
    "BridgeOptions",
    "CategoricalProductReference",
    "ConvergenceError",
    "EstimationFailedError",
    "Evidence",
    "EvidenceInputError",
    "EvidenceSet",
    "LogDensity",
    "LogZTracker",
    "ModelComparison",
    "ModelFailure",
    "MultivariateNormalReference",
    "MultivariateStudentTReference",
    "NonFiniteLogDensityError",
    "OverlapError",
    "PathOptions",
    "PathPlan",
    "PosteriorOptions",
    "PosteriorPlan",
    "PriorReference",
    "Reference",
    "TemperingOptions",
    "TemperingRun",
    "Warp3Reference",
    "annealed_discriminance_sampling",
    "annealed_importance_sampling",
    "bayes_factor",
    "bridge_sampling",
    "combine_is_ris",
    "compare",
    "compare_models",
    "discriminance_sampling",
    "from_datatree",
    "from_smc",
    "importance_sampling",
    "is_ris_combination",
    "make_plan",
    "make_posterior_plan",
    "marginal_likelihood",
    "mbar",
    "path_estimators",
    "plot_bayes_factor",
    "plot_evidence",
    "plot_occupancy",
    "plot_transition_matrix",
    "post_prob",
    "rao_blackwellized_tempered_sampling",
    "reverse_annealed_importance_sampling",
    "reverse_importance_sampling",
    "run_annealing",
    "run_reverse_annealing",
    "run_tempering",
    "thermodynamic_integration",
]

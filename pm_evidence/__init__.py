"""pm_evidence: marginal likelihoods (log evidence) and Bayes factors for PyMC models."""

import importlib.abc
import importlib.util
import sys

from pm_evidence.compare import bayes_factor, post_prob
from pm_evidence.core.evidence import Evidence, EvidenceSet, from_datatree
from pm_evidence.core.exceptions import (
    ConvergenceError,
    EstimationFailedError,
    EvidenceInputError,
    NonFiniteLogDensityError,
    OverlapError,
)
from pm_evidence.core.version import __version__ as __version__
from pm_evidence.interop.bambi import from_bambi
from pm_evidence.interop.pymc_smc import from_smc
from pm_evidence.marginal import marginal_likelihood
from pm_evidence.model.log_density import LogDensity
from pm_evidence.parallel import ModelComparison, ModelFailure, compare, compare_models
from pm_evidence.path import path_estimators
from pm_evidence.path.api import (
    annealed_discriminance_sampling,
    annealed_importance_sampling,
    mbar,
    rao_blackwellized_tempered_sampling,
    reverse_annealed_importance_sampling,
    thermodynamic_integration,
)
from pm_evidence.path.plan import PathOptions, PathPlan, make_plan
from pm_evidence.path.runs import (
    AnnealingOptions,
    AnnealingRun,
    TemperingOptions,
    TemperingRun,
    run_annealing,
    run_reverse_annealing,
    run_tempering,
)
from pm_evidence.path.tracking import LogZTracker
from pm_evidence.plots import (
    plot_bayes_factor,
    plot_evidence,
    plot_occupancy,
    plot_prior_robustness,
    plot_transition_matrix,
)
from pm_evidence.posterior.api import (
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
from pm_evidence.robustness import prior_robustness

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
    "from_bambi",
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
    "plot_prior_robustness",
    "plot_transition_matrix",
    "post_prob",
    "prior_robustness",
    "rao_blackwellized_tempered_sampling",
    "reverse_annealed_importance_sampling",
    "reverse_importance_sampling",
    "run_annealing",
    "run_reverse_annealing",
    "run_tempering",
    "thermodynamic_integration",
]


# old module path -> its place in the layer folders
OLD_MODULE_PATHS = {
    "exceptions": "core.exceptions",
    "utils": "core.utils",
    "progress": "core.progress",
    "version": "core.version",
    "method_bias": "core.method_bias",
    "evidence": "core.evidence",
    "messages": "estimators.messages",
    "target": "model.log_density",
    "model.target": "model.log_density",
    "adapter": "model",
    "adapter.batched": "model.batched",
    "adapter.fingerprint": "model.fingerprint",
    "adapter.graphs": "model.graphs",
    "adapter.layout": "model.layout",
    "adapter.maps": "model.maps",
    "adapter.model_checks": "model.model_checks",
    "adapter.prior": "model.prior",
    "api_tempering": "path.api",
    "options": "core.options",
    "smc": "interop.pymc_smc",
    "modes": "model.modes",
    "draws": "model.draws",
    "api": "posterior.api",
    "bridge_reference": "posterior.bridge_reference",
    "reverse_reference": "posterior.reverse_reference",
    "plan": "path.plan",
    "runs": "path.runs",
    "path_estimators": "path.path_estimators",
    "tracking": "path.tracking",
    "exploration": "search.exploration",
    "term_check": "search.term_check",
    "testing": "zoo.testing",
    "zoo_highdim": "zoo.highdim",
    "zoo_multimodal": "zoo.multimodal",
    "energy": "zoo.energy",
}


class _OldPath(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Modules that moved into the layer folders stay importable by their old paths, as
    aliases of the same module objects, made when first imported (``import
    pm_evidence.draws`` gives :mod:`pm_evidence.model.draws`; old pickles load). Import only:
    ``python -m`` takes the new paths."""

    def find_spec(self, fullname, path, target=None):
        old = fullname.removeprefix("pm_evidence.")
        if fullname.startswith("pm_evidence.") and old in OLD_MODULE_PATHS:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(
            f"pm_evidence.{OLD_MODULE_PATHS[spec.name.removeprefix('pm_evidence.')]}"
        )

    def exec_module(self, module):
        """The module was executed under its new path."""


# first in line: ``pm_evidence.adapter`` is the package ``pm_evidence.model``, so the path finder
# would find ``pm_evidence.adapter.graphs`` there and run the module a second time
if not any(type(finder).__name__ == "_OldPath" for finder in sys.meta_path):  # once a process
    sys.meta_path.insert(0, _OldPath())


def __getattr__(name: str):
    """``pm_evidence.draws`` and the other old module paths as attributes of the package too
    (imported on first use), as they were before they moved."""
    if name in OLD_MODULE_PATHS:
        return importlib.import_module(f"pm_evidence.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

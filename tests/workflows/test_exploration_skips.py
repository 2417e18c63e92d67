"""Which zoo models ``auto`` does not explore from the prior, and why.

Every skip names its reason (``pm_evidence.auto.exploration_skipped``). The reasons that are
real: discrete variables (RTS and AIS start from the prior themselves), an improper prior (no
forward draws), more parameters than a cloud of particles can fit a mixture to. A prior with
its own support (a ``CustomDist`` under an ``Interval``, a cut normal, an ordered vector) is no
reason: those models are explored.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from pm_evidence.auto import exploration_skipped
from pm_evidence.model.log_density import as_target
from pm_evidence.zoo.funnels import FUNNEL_ZOO
from pm_evidence.zoo.highdim import HIGHDIM_ZOO
from pm_evidence.zoo.multimodal import MULTIMODAL_ZOO
from pm_evidence.zoo.support import SUPPORT_ZOO
from pm_evidence.zoo.testing import ZOO

REAL_REASONS = {
    "discrete": "the model has discrete variables",
    "improper": "The prior is improper",
    "dimension": "parameters > ",
}

SKIPPED = {
    "mixture_energy_2d": "improper",  # a Potential on a Flat x
    "binary_field": "discrete",
    "categorical_chain": "discrete",
    "bernoulli_switch": "discrete",
    "poisson_latent_count": "discrete",
    "bernoulli_only": "discrete",
    "categorical_only": "discrete",
    "change_point": "discrete",
    "hierarchical_normal_200": "dimension",
    "hierarchical_normal_1000": "dimension",
    "poisson_glmm": "dimension",
    "logistic_regression_wide": "dimension",
    "latent_gp_regression": "dimension",
}


@functools.cache
def _targets() -> dict:
    targets = {}
    for entry in (*ZOO, *MULTIMODAL_ZOO, *HIGHDIM_ZOO, *SUPPORT_ZOO, *FUNNEL_ZOO):
        model, _ = entry.build()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an improper prior's own warning
            targets[entry.name] = as_target(model)
    return targets


@pytest.mark.filterwarnings("ignore:Cannot cache compiled function")
def test_the_zoo_models_auto_does_not_explore_are_those_with_a_real_reason():
    reasons = {name: exploration_skipped(t, {}) for name, t in _targets().items()}
    reasons = {name: reason for name, reason in reasons.items() if reason}
    assert set(reasons) == set(SKIPPED), reasons
    for name, reason in reasons.items():
        assert REAL_REASONS[SKIPPED[name]] in reason, (name, reason)


@pytest.mark.filterwarnings("ignore:Cannot cache compiled function")
def test_every_explored_zoo_model_has_finite_prior_draws():
    """The exploration starts from draws of the prior: on every zoo model it explores, they
    have finite coordinates and a finite prior density (a draw rounded onto its support's
    edge is moved inside, ``LogDensity.sample_prior``), so it cannot stop on them."""
    rng = np.random.default_rng(7)
    for name, target in _targets().items():
        if name in SKIPPED:
            continue
        x = target.sample_prior(rng, 1000)
        assert np.all(np.isfinite(x)), name
        assert np.all(np.isfinite(target.log_prior(x))), name

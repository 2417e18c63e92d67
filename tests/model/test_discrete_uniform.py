"""DiscreteUniform variables (values ``lower..upper``) are moved by Gibbs sweeps over their
values, as Bernoulli and Categorical ones are (a change point is an ordinary PyMC model)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pm_evidence as pme
from pm_evidence.model.log_density import as_target


def _shifted_switch():
    """``k ~ DiscreteUniform(3, 7)``, ``y_i ~ N(k, 1)``: log Z by enumeration."""
    y = np.array([5.3, 4.1, 6.0, 5.6, 4.8])
    with pm.Model() as model:
        k = pm.DiscreteUniform("k", lower=np.int64(3), upper=np.int64(7))
        pm.Normal("y", k, np.float64(1.0), observed=y)
    ks = np.arange(3, 8)
    log_lik = np.array([stats.norm(k, 1.0).logpdf(y).sum() for k in ks])
    return model, float(special.logsumexp(log_lik) - np.log(ks.size))


def test_layout_reads_the_range_of_a_discrete_uniform():
    model, _ = _shifted_switch()
    target = as_target(model)
    assert target.finite_levels.tolist() == [5]
    assert target.lowest_values.tolist() == [3]
    assert not target.binary_mask.any()  # two values but not 0/1 would not be "binary"


@pytest.mark.parametrize("method", ["rts", "ais"])
def test_discrete_uniform_at_defaults_matches_enumeration(method):
    model, gold = _shifted_switch()
    ev = pme.marginal_likelihood(model, method=method, random_seed=1, progressbar=False)
    assert ev.reliable
    assert abs(ev.log_z - gold) < 4 * ev.se

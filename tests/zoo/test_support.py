"""Gold values of the zoo of priors with their own support (``pm_evidence.zoo.support``).

* The function each gold integrates is PyMC's: ``model.logp(jacobian=False)`` equals the entry's
  ``log_joint`` (NumPy/SciPy) at random points of the unconstrained space.
* A second scheme: the circular orbit's gold (Gauss-Legendre in ``(log P, log(1 + s))``) against
  the trapezoid rule in ``(P, s)`` over the posterior's window; the cut normals' against
  Gauss-Legendre and adaptive quadrature.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from pm_evidence.zoo import support
from pm_evidence.zoo.support import SUPPORT_ZOO
from tests.zoo_support import assert_log_joint_is_pymc_logp


@pytest.mark.parametrize("entry", SUPPORT_ZOO, ids=lambda e: e.name)
def test_log_joint_is_pymc_logp(entry):
    assert_log_joint_is_pymc_logp(entry, n_points=4)


def test_circular_rv_gold_agrees_with_the_trapezoid_rule_in_period_and_jitter():
    """``int p(P) p(s) m(P, s)`` by the trapezoid rule over ``P in [11.1, 11.6]``, ``s in [0, 6]``
    (the posterior is 11.352 +- 0.05 and 1.5 +- 0.4; the 2-D rule puts 1e-6 of the mass
    outside); agreement to 1e-4 nats."""
    t, v, err = support.rv_data(40, 65)
    periods = np.linspace(11.1, 11.6, 4001)
    jitters = np.linspace(0.0, 6.0, 241)
    log_m = support.circular_log_marginal(
        np.log(periods)[:, None], jitters[None, :], t, v, err
    )  # fmt: skip
    log_prior = (
        -np.log(periods)[:, None] - np.log(np.log(30.0))
        - np.log(jitters + 1.0)[None, :] - np.log(np.log(21.0))
    )  # fmt: skip
    f = np.exp(log_m + log_prior - log_m.max())
    value = np.log(integrate.trapezoid(integrate.trapezoid(f, jitters, axis=1), periods))
    gold = SUPPORT_ZOO[2].gold()
    assert value + log_m.max() == pytest.approx(gold.log_z, abs=1e-4)
    assert gold.error < 1e-4


def test_cut_normal_golds_agree_with_a_second_rule():
    y, sigma = support.CUT_Y, 1.0
    nodes, weights = np.polynomial.legendre.leggauss(60)  # on (-1, 1): the cut itself
    log_lik = stats.norm.logpdf(np.asarray(y)[:, None], nodes, sigma).sum(axis=0)
    cut = special.logsumexp(stats.norm.logpdf(nodes) + log_lik, b=weights)
    assert cut == pytest.approx(SUPPORT_ZOO[0].gold().log_z, abs=1e-10)
    hierarchical = special.logsumexp(stats.norm.logpdf(nodes, 0, np.sqrt(2)) + log_lik, b=weights)
    assert hierarchical == pytest.approx(SUPPORT_ZOO[1].gold().log_z, abs=1e-10)

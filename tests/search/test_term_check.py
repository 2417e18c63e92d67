"""The check of an estimate against the modes of the terms of the model's log-sum-exps
(``pm_evidence.search.term_check``): a mode no posterior draw visited is found, its mass estimated, and
an estimate that leaves it out is flagged; visited modes and models without a log-sum-exp are
left alone."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pm_evidence as pme
from pm_evidence.core.evidence import Evidence
from pm_evidence.model.log_density import as_target
from pm_evidence.search.term_check import (
    UnvisitedModes,
    unvisited_term_modes,
    with_unvisited_warning,
)
from pm_evidence.zoo import multimodal as zoo_multimodal


@pytest.fixture(scope="module")
def trap():
    """The 5-D unequal-modes trap: ``e^2 [0.3 N(+1, 0.05^2 I) + 0.7 N(-1, I)]`` on
    ``Uniform(-10, 10)^5``; the narrow mode's mass, prior density included, is
    ``0.3 e^2 / 20^5`` (each normal's mass inside the box is 1 to 1e-18)."""
    model, gold = zoo_multimodal.unequal_modes()
    return as_target(model), gold


def _draws_near(target, centre: float, sd: float, n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(centre, sd, (n, target.dim))
    return target.to_unconstrained({"unequal_modes_5d::x": x}, batch_ndim=1)


def test_a_mode_no_draw_visited_is_found_with_its_laplace_mass(trap):
    target, gold = trap
    wide_only = _draws_near(target, -1.0, 1.0, 400, seed=0)
    found = unvisited_term_modes(target, wide_only, np.random.default_rng(1))
    assert found.modes.shape == (1, 5)
    x = target.to_constrained(found.modes[0])["unequal_modes_5d::x"]
    np.testing.assert_allclose(x, 1.0, atol=1e-3)
    # the Laplace mass of a normal mode is exact up to the logit Jacobian's curvature over it
    assert found.log_masses[0] == pytest.approx(np.log(0.3) + 2.0 - 5 * np.log(20.0), abs=0.01)
    # an estimate that left it out (the wide mode's log Z) misses 30% of the evidence
    without = gold - np.log(1.0 / 0.7)
    assert found.missed_share(without) == pytest.approx(0.3, abs=0.01)
    both = np.concatenate([wide_only, _draws_near(target, 1.0, 0.05, 200, seed=2)])
    assert unvisited_term_modes(target, both, np.random.default_rng(1)).modes.shape == (0, 5)


def test_a_mixture_written_out_has_the_same_terms_as_with_logaddexp(trap):
    """``log(0.3 exp(a) + 0.7 exp(b))`` written out is found as a log-sum-exp with the terms
    ``a + log 0.3`` and ``b + log 0.7``: the same surrogates as the zoo's ``pt.logaddexp``."""
    target, _ = trap
    with pm.Model() as written_out:
        x = pm.Uniform("x", -10.0, 10.0, shape=5)
        narrow = pt.sum(pm.logp(pm.Normal.dist(1.0, 0.05), x))
        wide = pt.sum(pm.logp(pm.Normal.dist(-1.0, 1.0), x))
        pm.Potential("modes", 2.0 + pt.log(0.3 * pt.exp(narrow) + 0.7 * pt.exp(wide)))
    other = as_target(written_out)
    assert other.term_counts == (2,)
    points = np.concatenate(
        [_draws_near(target, -1.0, 1.0, 8, seed=3), _draws_near(target, 1.0, 0.05, 8, seed=4)]
    )
    for k in (-1, 0, 1):
        for a, b in zip(
            target.log_density_with_terms(points, [k]),
            other.log_density_with_terms(points, [k]),
            strict=True,
        ):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-8)


def test_the_warning_is_on_the_result_and_only_above_the_missed_share():
    ev = Evidence(log_z=0.0, se=0.01, method="bridge")
    small = UnvisitedModes(np.zeros((1, 2)), np.array([np.log(0.01)]))
    assert with_unvisited_warning(ev, small).reliable  # 1% of the evidence: below 2%
    large = UnvisitedModes(np.zeros((1, 2)), np.array([np.log(0.5)]))
    with pytest.warns(UserWarning, match="missed a mode"):
        flagged = with_unvisited_warning(ev, large)
    assert not flagged.reliable
    assert flagged.diagnostics["unvisited_mode_share"] == pytest.approx(1 / 3)
    assert "method='auto'" in flagged.warnings[-1]
    assert UnvisitedModes(np.zeros((0, 2)), np.zeros(0)).missed_share(0.0) == 0.0


def test_a_model_without_a_log_sum_exp_is_not_searched():
    with pm.Model() as model:
        pm.Normal("y", pm.Normal("m", 0.0, 1.0), 1.0, observed=[0.1, 0.2])
    target = as_target(model)
    found = unvisited_term_modes(target, np.zeros((10, 1)), np.random.default_rng(0))
    assert found.modes.shape == (0, 1) and found.n_evaluations == 0


def test_bridge_at_defaults_on_the_trap_is_flagged_not_confidently_wrong():
    """``method="bridge"`` reads NUTS draws, which never visit the narrow mode: its estimate is
    0.357 low at SE 0.0006. It was ``reliable=True``; the term check flags it, with the share
    it misses (0.30)."""
    model, gold = zoo_multimodal.unequal_modes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = pme.marginal_likelihood(model, method="bridge", random_seed=1, progressbar=False)
    assert abs(ev.log_z - gold) > 0.3  # the miss itself (no method on NUTS draws can help it)
    assert not ev.reliable
    assert ev.diagnostics["unvisited_mode_share"] == pytest.approx(0.3, abs=0.02)
    assert any("missed a mode" in w for w in ev.warnings)

"""The evaluation budget of annealing and tempering runs (issue 21 part 6): ``max_evaluations``
beside ``target_se`` and the count caps, one rule, and why a run stopped on every result."""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.path import path_estimators
from pm_evidence.zoo.testing import normal_mean


@pytest.fixture(scope="module")
def plan():
    model, _ = normal_mean()
    return pme.make_plan(
        pme.LogDensity(model), pme.PathOptions(reference="prior"), random_seed=11,
        progressbar=False,
    )  # fmt: skip


def _anneal(plan, seed=2, **options):
    options = pme.AnnealingOptions(**{"first_batch": 40, "n_rungs": 30, **options})
    return pme.run_annealing(plan, options, rng=np.random.default_rng(seed), progressbar=False)


def _temper(plan, seed=1, **options):
    defaults = {"n_chains": 50, "min_sweeps": 50, "n_init_sweeps": 20, "max_init_iterations": 2}
    options = pme.TemperingOptions(**{**defaults, **options})
    return pme.run_tempering(plan, options, rng=np.random.default_rng(seed), progressbar=False)


def test_annealing_stops_at_the_budget_and_says_so(plan):
    per_chain = 99 * plan.kernel.evaluations_per_step  # 99 transitions of each chain
    budget = 300 * per_chain + 7
    run = _anneal(plan, target_se=1e-4, max_evaluations=budget, n_rungs=100)
    ev = path_estimators.ais(run)
    assert run.sampler.log_weights.size == 300  # cut to the budget
    assert run.sampler.n_evaluations == 300 * per_chain <= budget
    d = ev.diagnostics
    assert d["stopped_by"] == "max_evaluations" and d["max_evaluations"] == budget
    assert d["target_se_reached"] is False and d["se_reached"] == ev.se > 1e-4
    assert d["n_evaluations"] == run.sampler.n_evaluations
    assert ev.reliable  # an SE above target_se is honest, not a warning


def test_annealing_caps_are_one_rule(plan):
    by_chains = _anneal(plan, target_se=1e-4, max_chains=60, max_evaluations=10**9)
    assert by_chains.stopped_by == "max_chains" and by_chains.sampler.log_weights.size == 60
    reached = _anneal(plan, target_se=0.05)
    assert reached.stopped_by == "target_se" and reached.target_se_reached
    fixed = _anneal(plan, n_chains=30, max_evaluations=10)  # an explicit n_chains is exact
    assert fixed.stopped_by == "fixed" and fixed.sampler.log_weights.size == 30
    assert fixed.se_reached is None
    # the first batch always runs, whatever the budget
    tiny = _anneal(plan, target_se=1e-4, max_evaluations=10)
    assert tiny.stopped_by == "max_evaluations" and tiny.sampler.log_weights.size == 40


def test_a_budget_that_does_not_bind_changes_nothing(plan):
    with_budget = path_estimators.ais(_anneal(plan, target_se=0.02))
    without = path_estimators.ais(_anneal(plan, target_se=0.02, max_evaluations=None))
    assert with_budget.log_z == without.log_z and with_budget.se == without.se
    assert without.diagnostics["max_evaluations"] is None


def test_tempering_stops_at_the_budget_initial_iterations_included(plan):
    per_sweep = 50 * plan.kernel.evaluations_per_step
    first = _temper(plan, target_se=1e-4, max_evaluations=10**9, max_sweeps=50)
    initial = first.sampler.n_evaluations - 50 * per_sweep  # the initial iterations' share
    budget = initial + 130 * per_sweep + 3
    run = _temper(plan, target_se=1e-4, max_evaluations=budget)
    ev = path_estimators.rts(run)
    d = ev.diagnostics
    assert d["stopped_by"] == "max_evaluations" and d["n_sweeps"] == 130
    assert d["n_evaluations"] == initial + 130 * per_sweep <= budget
    assert d["se_reached"] == ev.se and ev.reliable
    assert first.stopped_by == "max_sweeps"


def test_budget_shortens_the_first_stretch_to_half_of_min_sweeps(plan):
    run = _temper(plan, target_se=1e-4, max_evaluations=1)
    assert run.stopped_by == "max_evaluations"
    assert round(run.sampler.n_iterations.sum() / 50) == 25  # min_sweeps // 2
    assert run.sampler.n_evaluations > 1  # passed by what a run needs, and visible


def test_budget_is_validated():
    with pytest.raises(pme.EvidenceInputError, match="max_evaluations must be a positive"):
        pme.AnnealingOptions(max_evaluations=0)
    with pytest.raises(pme.EvidenceInputError, match="max_evaluations must be a positive"):
        pme.TemperingOptions(max_evaluations=2.5)
    assert pme.TemperingOptions(max_evaluations=None).max_evaluations is None


def test_annealing_stops_where_its_weights_are_too_heavy_tailed_for_any_budget():
    """A reference far narrower than the posterior and three rungs: AIS's weights have a Pareto
    k-hat above 1, beyond what max_chains chains can make reliable (10^(1/(1 - k)) draws, Vehtari
    et al. 2024), so the run grows at most tenfold per batch, stops at HEAVY_TAIL_CHAINS with
    ``stopped_by="heavy_tails"`` instead of running max_chains, and the result is flagged."""
    model, _ = normal_mean()
    target = pme.LogDensity(model)
    narrow = pme.MultivariateNormalReference(np.zeros(target.dim), 0.01 * np.eye(target.dim))
    plan = pme.make_plan(
        target, pme.PathOptions(reference=narrow), random_seed=3, progressbar=False
    )  # fmt: skip
    run = _anneal(plan, first_batch=100, n_rungs=3, target_se=1e-4, max_chains=20_000)
    with pytest.warns(UserWarning, match="Pareto k-hat"):
        ev = path_estimators.ais(run)
    assert run.stopped_by == "heavy_tails"
    assert 1000 <= run.sampler.log_weights.size <= 1100
    assert ev.diagnostics["pareto_k"] > 1 - 1 / np.log10(20_000)
    assert not ev.reliable and any("Pareto k-hat" in w for w in ev.warnings)

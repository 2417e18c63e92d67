"""Kernels as built objects and the samplers' explicit state (issue 22 part 4).

* a run's result does not depend on the runs made before it on the same plan: HMC's choice
  between its NumPy and its compiled transition is counted per run, not per path;
* a kernel carries its step, its evaluations per transition and its acceptance target;
* records of consecutive pieces of a run merge into the record of one run;
* a reference declares whether it has a gradient (``has_gradient``);
* ``LogZTracker`` builds its options as a ``TemperingOptions``.
"""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.path.runs import AnnealingOptions, TemperingOptions, run_annealing, run_tempering
from pm_evidence.path.tracking import LogZTracker
from pm_evidence.references import (
    CategoricalProductReference,
    MultivariateNormalReference,
    MultivariateStudentTReference,
    PriorReference,
    Reference,
    SymmetrizedReference,
    TruncatedNormalReference,
    fit_reference,
)
from pm_evidence.tempering import kernels
from pm_evidence.tempering.compiled import hmc_transition_function
from pm_evidence.tempering.kernels import make_kernel, transition
from pm_evidence.tempering.path import GeometricPath
from pm_evidence.tempering.samplers import (
    AnnealingSamplerSettings,
    TemperingChains,
    TemperingSamplerSettings,
    anneal,
    temper,
)
from pm_evidence.zoo import energy
from pm_evidence.zoo.testing import normal_mean


@pytest.fixture(scope="module")
def target():
    model, _ = normal_mean()
    return pme.LogDensity(model)


@pytest.fixture(scope="module")
def plan(target):
    return pme.make_plan(
        target, pme.PathOptions(reference="prior"), random_seed=11, progressbar=False
    )


# ---------------------------------------------------------------------- runs are independent
# points a run moves before HMC takes its compiled transition, lowered from 2 million so that
# short runs switch part-way (this plan's pilot moves 4,096 points)
FEW_POINTS = 5_000


def _ais(plan):
    """200 chains x 29 rungs: 5,800 points."""
    return run_annealing(
        plan, AnnealingOptions(n_chains=200, n_rungs=30, target_se=None),
        rng=np.random.default_rng(2), progressbar=False,
    )  # fmt: skip


def _rts(plan, n_chains=50, n_sweeps=100, seed=3):
    """50 chains, 20 sweeps per initial iteration, then 100 sweeps: over 6,000 points."""
    return run_tempering(
        plan, TemperingOptions(n_chains=n_chains, n_sweeps=n_sweeps, n_init_sweeps=20,
                               target_se=None),
        rng=np.random.default_rng(seed), progressbar=False,
    )  # fmt: skip


def test_a_run_gives_the_same_numbers_whatever_ran_before_on_the_plan(plan, monkeypatch):
    """The runs are repeated in the other order after a long run on the same plan. With the
    old counter of points per path (pilot and earlier runs included) the repeated AIS run
    started on the compiled transition where the first had started on NumPy: the same draws
    up to rounding, and log weights that differed by up to 1e-13 (measured on this test's
    runs), so the exact equality below failed. Now each run counts its own points from 0."""
    monkeypatch.setattr(kernels, "FUSE_AFTER_POINT_TRANSITIONS", FEW_POINTS)
    assert hmc_transition_function(plan.path, plan.kernel.n_leapfrog) is not None
    ais_first, rts_first = _ais(plan), _rts(plan)  # each switches to compiled HMC part-way
    assert ais_first.sampler.points_moved == 200 * 29 > FEW_POINTS
    assert rts_first.sampler.points_moved > FEW_POINTS
    # a long run on the same plan: all but its first 1,000 points moved by compiled HMC
    _rts(plan, n_chains=200, n_sweeps=300, seed=4)
    rts_later, ais_later = _rts(plan), _ais(plan)
    np.testing.assert_array_equal(ais_later.sampler.log_weights, ais_first.sampler.log_weights)
    np.testing.assert_array_equal(ais_later.sampler.final.x, ais_first.sampler.final.x)
    for name in ("c_sum", "rb_delta_sum", "count", "transitions"):
        np.testing.assert_array_equal(
            getattr(rts_later.sampler, name), getattr(rts_first.sampler, name)
        )
    np.testing.assert_array_equal(rts_later.sampler.final.x, rts_first.sampler.final.x)
    assert pme.path_estimators.rts(rts_later).log_z == pme.path_estimators.rts(rts_first).log_z


# ---------------------------------------------------------------------- built kernels
def test_a_kernel_carries_its_step_cost_and_target(target):
    hmc = make_kernel("hmc", target, n_leapfrog=3)
    assert (hmc.name, hmc.evaluations_per_step, hmc.target_accept) == ("hmc", 3, 0.651)
    assert hmc.needs_grad and hmc.adaptive
    rwm = make_kernel("rwm", target)
    assert (rwm.evaluations_per_step, rwm.target_accept, rwm.needs_grad) == (1, 0.3, False)
    mrf = pme.LogDensity(energy.grid_mrf(2, 2, sigma_p=0.5, seed=0).to_pymc())
    blocked = make_kernel("gibbs", mrf, blocks=[[0, 3], [1, 2]])
    # binary entries: one other value each, plus one evaluation per block of two at the end
    assert (blocked.evaluations_per_step, blocked.target_accept) == (4 + 2, 1.0)
    assert not blocked.adaptive and len(blocked.blocks) == 2


def test_transition_is_the_kernels_step(target):
    """``transition`` adds only the compiled/NumPy choice; below the threshold it is the step
    with ``compiled=False``."""
    path = GeometricPath(target, PriorReference(target))
    kernel = make_kernel("hmc", target)
    state = path.sample_reference(np.random.default_rng(0), 20, with_grad=True)
    beta, step_size = np.full(20, 0.5), np.full(20, 0.3)
    new, accepted, nonfinite = kernel.step(np.random.default_rng(1), path, state, beta, step_size)
    via = transition(kernel, np.random.default_rng(1), path, state, beta, step_size, 0)
    for a, b in zip(new, via[0], strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(accepted, via[1])
    np.testing.assert_array_equal(nonfinite, via[2])
    assert accepted.any()


# ---------------------------------------------------------------------- records merge
def test_two_stretches_merge_into_the_record_of_one_run(plan):
    """100 sweeps in one call and 60 + 40 from where the first stopped use the same random
    numbers: the merged record is the one run's (sums up to the order of addition)."""
    ladder = plan.ladder("linear", 6, 1e-4, 6)
    log_r, log_zhat = np.full(6, -np.log(6)), ladder.log_z_pilot
    state = plan.path.sample_reference(np.random.default_rng(0), 30, with_grad=True)
    start = TemperingChains(state, np.arange(30) % 6)
    record = TemperingSamplerSettings(100, record=True, progressbar=False)
    args = (plan.path, plan.kernel, ladder, log_r, log_zhat)
    whole = temper(np.random.default_rng(5), *args, start, record)
    rng = np.random.default_rng(5)
    first = temper(rng, *args, start, TemperingSamplerSettings(60, record=True, progressbar=False))
    second = temper(
        rng, *args, first.chains, TemperingSamplerSettings(40, record=True, progressbar=False)
    )
    merged = first.merge(second)
    assert merged.points_moved == whole.points_moved == 100 * 30
    for name in ("count", "n_iterations", "transitions", "nonfinite", "delta_draws",
                 "rung_draws", "final_rung"):  # fmt: skip
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name))
    np.testing.assert_array_equal(merged.final.x, whole.final.x)
    for name in ("c_sum", "rb_delta_sum", "count_delta_sum"):
        np.testing.assert_allclose(getattr(merged, name), getattr(whole, name), rtol=1e-12)
    # acceptance: the stretches' per-rung rates averaged with weights 60 and 40 (their sweeps)
    np.testing.assert_allclose(merged.acceptance, 0.6 * first.acceptance + 0.4 * second.acceptance)
    np.testing.assert_allclose(merged.c_hat, whole.c_hat, rtol=1e-12)
    np.testing.assert_allclose(merged.c_hat.sum(), 1.0, rtol=1e-12)


def test_annealing_batches_merge_along_the_chains(plan):
    ladder = plan.ladder("linear", 5, 1e-4, 5)
    rng = np.random.default_rng(1)
    settings = AnnealingSamplerSettings(store=True, progressbar=False)
    batches = []
    for n in (10, 30):
        state = plan.path.sample_reference(rng, n, with_grad=True)
        moved = batches[-1].points_moved if batches else 0
        batches.append(anneal(rng, plan.path, plan.kernel, ladder, state, settings,
                              points_moved=moved))  # fmt: skip
    merged = batches[0].merge(batches[1])
    assert merged.log_weights.shape == (40,) and merged.delta.shape == (5, 40)
    assert merged.points_moved == 40 * 4
    np.testing.assert_allclose(
        merged.acceptance, (10 * batches[0].acceptance + 30 * batches[1].acceptance) / 40
    )
    assert merged.n_evaluations == batches[0].n_evaluations + batches[1].n_evaluations


def test_reversed_ladder_runs_from_one_to_zero(plan):
    ladder = plan.ladder("linear", 5, 1e-4, 5)
    back = ladder.reversed()
    np.testing.assert_array_equal(back.betas, ladder.betas[::-1])
    np.testing.assert_array_equal(back.step_size, ladder.step_size[::-1])


def test_the_former_names_still_read_with_a_warning(plan, target):
    """One name per concept (issue 22 part 5): the step size is ``step_size`` on the ladder,
    ``log_step_size`` on the pilot; a kernel's name is ``name``; ``PathPlan.ladder`` takes
    ``ladder=`` and ``fit_reference`` ``reference=``. The former names still work for one
    release, each with a FutureWarning naming the new one, and give the same values."""
    ladder = plan.ladder("linear", 5, 1e-4, 5)
    with pytest.warns(FutureWarning, match=r"Ladder.tuning is deprecated .* Ladder.step_size"):
        np.testing.assert_array_equal(ladder.tuning, ladder.step_size)
    with pytest.warns(
        FutureWarning, match=r"Pilot.log_tuning is deprecated .* Pilot.log_step_size"
    ):
        np.testing.assert_array_equal(plan.pilot.log_tuning, plan.pilot.log_step_size)
    with pytest.warns(FutureWarning, match=r"Kernel.kind is deprecated .* Kernel.name"):
        assert plan.kernel.kind == plan.kernel.name == "hmc"
    with pytest.warns(FutureWarning, match=r"Kernel.continuous_kind is deprecated"):
        assert plan.kernel.continuous_kind == plan.kernel.continuous_name == "hmc"
    with pytest.warns(FutureWarning, match=r"PathPlan.ladder\(kind=...\) is deprecated .* "
                      r"pass ladder='linear'"):  # fmt: skip
        old = plan.ladder(kind="linear", n_rungs=5, beta_min=1e-4, default_rungs=5)
    new = plan.ladder(ladder="linear", n_rungs=5, beta_min=1e-4, default_rungs=5)
    for other in (old, new):
        np.testing.assert_array_equal(other.betas, ladder.betas)
        np.testing.assert_array_equal(other.step_size, ladder.step_size)
    draws = np.random.default_rng(0).normal(size=(200, target.dim))
    with pytest.warns(FutureWarning, match=r"fit_reference\(kind=...\) is deprecated"):
        before = fit_reference(kind="normal", target=target, draws=draws)
    after = fit_reference(reference="normal", target=target, draws=draws)
    np.testing.assert_array_equal(before.logpdf(draws), after.logpdf(draws))


# ---------------------------------------------------------------------- references
def test_references_declare_their_gradient():
    draws = np.random.default_rng(0).normal(size=(200, 2))
    x = draws[:3]
    with_gradient = [
        MultivariateNormalReference.fit(draws),
        MultivariateStudentTReference.fit(draws),
        pme.BernoulliProductReference(np.zeros(2)),
    ]
    for ref in with_gradient:
        assert ref.has_gradient and ref.grad_logpdf(x).shape == x.shape
    without = [TruncatedNormalReference.fit(draws), CategoricalProductReference.uniform([3, 3])]
    for ref in without:
        assert not ref.has_gradient
        with pytest.raises(EvidenceInputError):
            ref.grad_logpdf(x)
    identity = _Identity()
    assert SymmetrizedReference(with_gradient[0], (identity,)).has_gradient


class _Identity:
    def __call__(self, x):
        return x

    def transpose(self, v):
        return v


class _NoGradient(Reference):
    """A normal without a gradient (as a user's reference might be)."""

    name = "no_gradient"
    dim = 1

    def logpdf(self, x):
        return -0.5 * np.asarray(x)[..., 0] ** 2 - 0.5 * np.log(2 * np.pi)

    def sample(self, rng, n):
        return rng.standard_normal((n, 1))


def test_hmc_path_refuses_a_reference_without_gradient(target):
    path = GeometricPath(target, _NoGradient())
    path.evaluate(np.zeros((2, 1)))  # log-densities alone are fine
    with pytest.raises(EvidenceInputError, match="has_gradient=False"):
        path.evaluate(np.zeros((2, 1)), with_grad=True)


# ---------------------------------------------------------------------- tracker options
def test_tracker_options_are_tempering_options():
    with pytest.raises(EvidenceInputError, match="n_chains"):
        LogZTracker(energy.random_rbm(3, 2, seed=0).to_pymc(name="t"), n_chains=0)


def test_relaxed_terms_of_a_model_that_averages_its_binary_variables():
    """``z.mean()`` of a Bernoulli vector sums integers; the relaxed log-density of
    Gibbs-with-gradients (z real) reduces in floats and equals the model's at 0/1 points."""
    from pm_evidence import LogDensity
    from pm_evidence.zoo.testing import zoo

    (entry,) = zoo(["bernoulli_only"])
    model, _ = entry.build()
    target = LogDensity(model, backend="numba")
    x = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    relaxed = target.evaluate_with_relaxed_grad(x)
    exact = target.evaluate(x)
    np.testing.assert_allclose(relaxed[0], exact[0], rtol=1e-12)
    np.testing.assert_allclose(relaxed[1], exact[1], rtol=1e-12)
    assert np.all(np.isfinite(relaxed[3])) and np.any(relaxed[3] != 0.0)

"""The plan / run / follow-up design of the path methods (issue 13 parts 1, 3 and 6).

* a method gives the same number alone and in a list, in any order (stage random streams);
* the standard errors of RTS, TI, MBAR and ADS match the spread of repeated runs on one plan;
* the pilot measures the thermodynamic length, and ladders are placed at equal length;
* ``target_se`` decides how long a run goes;
* ``method="auto"`` returns the better-supported of a pair and flags a disagreement.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate

import pm_evidence as pme
from pm_evidence.core.evidence import Evidence
from pm_evidence.marginal import check_precision, cross_checked
from pm_evidence.path import path_estimators
from pm_evidence.tempering.pilot import ladder_from_pilot, length_at
from pm_evidence.zoo.testing import normal_mean

SMALL = {"n_chains": 50, "n_sweeps": 150, "n_init_sweeps": 20, "draws": 300, "tune": 300}


@pytest.fixture(scope="module")
def case():
    model, exact = normal_mean()
    return model, exact, pme.LogDensity(model)


@pytest.fixture(scope="module")
def plan(case):
    _, _, target = case
    return pme.make_plan(
        target, pme.PathOptions(reference="prior"), random_seed=11, progressbar=False
    )


# ---------------------------------------------------------------------- stage streams
def test_a_method_gives_the_same_number_alone_and_in_a_list_in_any_order(case):
    _, _, target = case
    options = {**SMALL, "target_se": None, "n_rungs": 30}
    run = {"random_seed": 5, "progressbar": False}
    forward = pme.marginal_likelihood(
        target, method=["ais", "rts", "bridge", "ti"], **options, **run
    )
    backward = pme.marginal_likelihood(
        target, method=["ti", "bridge", "rts", "ais"], **options, **run
    )
    for name in forward:
        assert forward[name].log_z == backward[name].log_z
        assert forward[name].se == backward[name].se
    alone = pme.marginal_likelihood(target, method="rts", **options, **run)
    assert alone.log_z == forward["rts"].log_z
    # the public function of the method is the same computation
    direct = pme.annealed_importance_sampling(
        target, n_chains=50, n_rungs=30, target_se=None, draws=300, tune=300, **run
    )
    assert direct.log_z == forward["ais"].log_z


def test_stage_streams_are_fixed_by_the_seed_and_independent_of_each_other():
    a, b = pme.utils.stage_rngs(3), pme.utils.stage_rngs(3)
    assert a["tempering"].random() == b["tempering"].random()
    assert a["annealing"].random() != a["tempering"].random()
    seq = np.random.SeedSequence(9)
    pme.utils.stage_rngs(seq)
    assert seq.n_children_spawned == 0  # the caller's sequence is not advanced


# ---------------------------------------------------------------------- SE vs spread
N_REPEATS = 40


def _spread_and_se(estimates: list[Evidence]) -> tuple[float, float]:
    values = np.array([e.log_z for e in estimates])
    return float(values.std(ddof=1)), float(np.sqrt(np.mean([e.se**2 for e in estimates])))


def _assert_se_matches_spread(estimates):
    # the sample SD of R values has relative standard error ~1/sqrt(2 (R - 1)); allow 3 of them
    sd, se = _spread_and_se(estimates)
    slack = 3 / np.sqrt(2 * (N_REPEATS - 1))
    assert 1 - slack < sd / se < 1 + slack, (sd, se)


def test_tempered_standard_errors_match_the_spread_of_repeated_runs(case, plan):
    _, exact, _ = case
    options = pme.TemperingOptions(n_chains=50, n_sweeps=200, record=True, target_se=None)
    estimates = {"rts": [], "ti": [], "mbar": []}
    for seed in range(N_REPEATS):
        run = pme.run_tempering(plan, options, rng=np.random.default_rng(seed), progressbar=False)
        estimates["rts"].append(path_estimators.rts(run))
        estimates["ti"].append(path_estimators.ti(run))
        estimates["mbar"].append(path_estimators.mbar(run))
    for name, values in estimates.items():
        _assert_se_matches_spread(values)
        mean = np.mean([e.log_z for e in values])
        sd, _ = _spread_and_se(values)
        assert abs(mean - exact) < 4 * sd / np.sqrt(N_REPEATS) + 0.005, name


def test_ads_standard_error_matches_the_spread_of_repeated_runs(case, plan):
    options = pme.AnnealingOptions(n_chains=100, n_rungs=40, target_se=None)
    runs = [
        pme.run_annealing(plan, options, rng=np.random.default_rng(100 + s), progressbar=False)
        for s in range(N_REPEATS)
    ]
    _assert_se_matches_spread([path_estimators.ads(r) for r in runs])
    _assert_se_matches_spread([path_estimators.ais(r) for r in runs])


# ---------------------------------------------------------------------- pilot and ladders
def _exact_length(case) -> float:
    """``int_0^1 sd_beta[log L] d beta`` for the conjugate normal mean (prior reference)."""
    model, _, _ = case
    y = np.asarray(model.rvs_to_values[model.observed_RVs[0]].data)
    n, sigma, tau = y.size, 1.0, 2.0

    def sd(beta):
        precision = 1 / tau**2 + beta * n / sigma**2
        mean = beta * y.sum() / sigma**2 / precision
        s2, d = 1 / precision, mean - y.mean()
        a = n / (2 * sigma**2)  # log L = const - a (mu - ybar)^2
        return a * np.sqrt(2 * s2**2 + 4 * d**2 * s2)

    return integrate.quad(sd, 0, 1, limit=200, points=[1e-4, 1e-3, 1e-2, 1e-1])[0]


def test_pilot_measures_the_thermodynamic_length(case, plan):
    exact = _exact_length(case)
    assert abs(plan.length - exact) < 0.15 * exact, (plan.length, exact)
    assert plan.pilot.betas[0] == 0.0 and plan.pilot.betas[-1] == 1.0
    assert np.all(np.diff(plan.pilot.betas) > 0)


def test_adaptive_ladder_is_at_equal_length(plan):
    betas, step_size, log_z = ladder_from_pilot(plan.pilot, 12)
    assert betas[0] == 0.0 and betas[-1] == 1.0 and np.all(np.diff(betas) > 0)
    np.testing.assert_allclose(np.diff(length_at(plan.pilot, betas)), plan.length / 11, rtol=1e-6)
    assert np.all(step_size > 0) and log_z[0] == 0.0
    ladder = plan.ladder("adaptive", None, 1e-4, default_rungs=7)
    assert ladder.n_rungs == 7 and "equal thermodynamic length" in ladder.how


# ---------------------------------------------------------------------- budget
def test_target_se_decides_how_long_the_tempered_run_goes(case, plan):
    options = pme.TemperingOptions(n_chains=50, target_se=0.02, min_sweeps=50)
    run = pme.run_tempering(plan, options, rng=np.random.default_rng(1), progressbar=False)
    ev = path_estimators.rts(run)
    assert run.target_se_reached and ev.se <= 0.02
    assert ev.diagnostics["n_sweeps"] > 50  # it had to extend the run
    capped = pme.run_tempering(
        plan, pme.TemperingOptions(n_chains=50, target_se=1e-4, min_sweeps=50, max_sweeps=100),
        rng=np.random.default_rng(1), progressbar=False,
    )  # fmt: skip
    assert capped.target_se_reached is False
    assert path_estimators.rts(capped).diagnostics["target_se_reached"] is False


def test_target_se_adds_annealing_chains(plan):
    options = pme.AnnealingOptions(first_batch=40, n_rungs=30, target_se=0.01)
    run = pme.run_annealing(plan, options, rng=np.random.default_rng(2), progressbar=False)
    ev = path_estimators.ais(run)
    assert run.target_se_reached and ev.se <= 0.01 and ev.diagnostics["n_chains"] > 40


def test_follow_ups_refuse_the_wrong_run(plan):
    run = pme.run_annealing(
        plan, pme.AnnealingOptions(n_chains=20, n_rungs=10, target_se=None),
        rng=np.random.default_rng(0), progressbar=False,
    )  # fmt: skip
    with pytest.raises(pme.EvidenceInputError, match="TemperingRun"):
        path_estimators.rts(run)
    with pytest.raises(pme.EvidenceInputError, match="run_reverse_annealing"):
        path_estimators.raise_(run)


def test_unknown_options_name_what_is_accepted(case):
    _, _, target = case
    with pytest.raises(pme.EvidenceInputError, match="accepted"):
        pme.marginal_likelihood(target, method="rts", n_sweep=10, progressbar=False)
    with pytest.raises(pme.EvidenceInputError, match="n_chains must be a positive"):
        pme.TemperingOptions(n_chains=0)


# ---------------------------------------------------------------------- method="auto"
def _ev(log_z, se, method, warnings=()):
    return Evidence(log_z=log_z, se=se, method=method, warnings=warnings)


def test_cross_check_returns_the_better_supported_and_flags_a_disagreement():
    agree = cross_checked(_ev(1.00, 0.01, "bridge"), _ev(1.02, 0.02, "ais"))
    assert agree.method == "bridge" and agree.reliable
    assert agree.diagnostics["auto_other_method"] == "ais"
    assert agree.diagnostics["auto_z"] == pytest.approx(0.02 / np.hypot(0.01, 0.02))
    flagged_primary = cross_checked(_ev(1.0, 0.01, "bridge", ("low ESS",)), _ev(1.0, 0.02, "ais"))
    assert flagged_primary.method == "ais"  # an unflagged result beats a smaller SE
    with pytest.warns(UserWarning, match="disagree by"):
        apart = cross_checked(_ev(1.0, 0.01, "bridge"), _ev(1.7, 0.01, "ais"))
    assert not apart.reliable and "disagree by" in apart.warnings[-1]


def test_the_cross_check_stops_at_the_precision_of_the_estimate_it_checks():
    # AIS checking a bridge estimate of SE 0.03 stops at SE 0.03, not the default 0.005
    loose = check_precision("ais", {"draws": 500}, _ev(1.0, 0.03, "bridge"))
    assert loose["annealing"].target_se == 0.03 and loose["draws"] == 500
    # a precise estimate, a user's own annealing options, or a tempered check: unchanged
    tight = {"draws": 500}
    assert check_precision("ais", tight, _ev(1.0, 0.001, "bridge")) is tight
    given = {"target_se": 0.01}
    assert check_precision("ais", given, _ev(1.0, 0.03, "bridge")) is given
    assert check_precision("rts", tight, _ev(1.0, 0.03, "bridge")) is tight


def test_auto_is_the_default_and_says_what_it_compared(case):
    _, exact, target = case
    ev = pme.marginal_likelihood(target, random_seed=2, progressbar=False, draws=500, tune=500)
    assert ev.method == "bridge" or ev.method == "ais"
    assert ev.diagnostics["auto_pair"] == "bridge checked by ais"
    assert abs(ev.log_z - exact) < 4 * ev.se + 0.02
    assert ev.diagnostics["auto_z"] < 4

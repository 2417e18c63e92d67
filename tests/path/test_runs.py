"""The plan / run / follow-up design of the path methods (issue 13 parts 1, 3 and 6).

* a method gives the same number alone and in a list, in any order (stage random streams);
* the standard errors of RTS, TI, MBAR and ADS match the spread of repeated runs on one plan;
* ``target_se`` decides how long a run goes;
* follow-ups refuse the wrong run, and unknown options name what is accepted.

The pilot and its ladders are tested in ``tests/tempering/test_pilot.py``, ``method="auto"`` in
``tests/test_marginal.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.core.evidence import Evidence
from pm_evidence.path import path_estimators

SMALL = {"n_chains": 50, "n_sweeps": 150, "n_init_sweeps": 20, "draws": 300, "tune": 300}


# ---------------------------------------------------------------------- stage streams
def test_a_method_gives_the_same_number_alone_and_in_a_list_in_any_order(normal_mean_target):
    _, _, target = normal_mean_target
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


def test_tempered_standard_errors_match_the_spread_of_repeated_runs(
    normal_mean_target, normal_mean_plan
):
    _, exact, _ = normal_mean_target
    options = pme.TemperingOptions(n_chains=50, n_sweeps=200, record=True, target_se=None)
    estimates = {"rts": [], "ti": [], "mbar": []}
    for seed in range(N_REPEATS):
        run = pme.run_tempering(
            normal_mean_plan, options, rng=np.random.default_rng(seed), progressbar=False
        )
        estimates["rts"].append(path_estimators.rts(run))
        estimates["ti"].append(path_estimators.ti(run))
        estimates["mbar"].append(path_estimators.mbar(run))
    for name, values in estimates.items():
        _assert_se_matches_spread(values)
        mean = np.mean([e.log_z for e in values])
        sd, _ = _spread_and_se(values)
        assert abs(mean - exact) < 4 * sd / np.sqrt(N_REPEATS) + 0.005, name


def test_ads_standard_error_matches_the_spread_of_repeated_runs(
    normal_mean_target, normal_mean_plan
):
    options = pme.AnnealingOptions(n_chains=100, n_rungs=40, target_se=None)
    runs = [
        pme.run_annealing(
            normal_mean_plan, options, rng=np.random.default_rng(100 + s), progressbar=False
        )
        for s in range(N_REPEATS)
    ]
    _assert_se_matches_spread([path_estimators.ads(r) for r in runs])
    _assert_se_matches_spread([path_estimators.ais(r) for r in runs])


# ---------------------------------------------------------------------- budget
def test_target_se_decides_how_long_the_tempered_run_goes(normal_mean_target, normal_mean_plan):
    options = pme.TemperingOptions(n_chains=50, target_se=0.02, min_sweeps=50)
    run = pme.run_tempering(
        normal_mean_plan, options, rng=np.random.default_rng(1), progressbar=False
    )
    ev = path_estimators.rts(run)
    assert run.target_se_reached and ev.se <= 0.02
    assert ev.diagnostics["n_sweeps"] > 50  # it had to extend the run
    capped = pme.run_tempering(
        normal_mean_plan, pme.TemperingOptions(n_chains=50, target_se=1e-4, min_sweeps=50, max_sweeps=100),
        rng=np.random.default_rng(1), progressbar=False,
    )  # fmt: skip
    assert capped.target_se_reached is False
    assert path_estimators.rts(capped).diagnostics["target_se_reached"] is False


def test_target_se_adds_annealing_chains(normal_mean_plan):
    options = pme.AnnealingOptions(first_batch=40, n_rungs=30, target_se=0.01)
    run = pme.run_annealing(
        normal_mean_plan, options, rng=np.random.default_rng(2), progressbar=False
    )
    ev = path_estimators.ais(run)
    assert run.target_se_reached and ev.se <= 0.01 and ev.diagnostics["n_chains"] > 40


def test_follow_ups_refuse_the_wrong_run(normal_mean_plan):
    run = pme.run_annealing(
        normal_mean_plan, pme.AnnealingOptions(n_chains=20, n_rungs=10, target_se=None),
        rng=np.random.default_rng(0), progressbar=False,
    )  # fmt: skip
    with pytest.raises(pme.EvidenceInputError, match="TemperingRun"):
        path_estimators.rts(run)
    with pytest.raises(pme.EvidenceInputError, match="run_reverse_annealing"):
        path_estimators.raise_(run)


def test_unknown_options_name_what_is_accepted(normal_mean_target):
    _, _, target = normal_mean_target
    with pytest.raises(pme.EvidenceInputError, match="accepted"):
        pme.marginal_likelihood(target, method="rts", n_sweep=10, progressbar=False)
    with pytest.raises(pme.EvidenceInputError, match="n_chains must be a positive"):
        pme.TemperingOptions(n_chains=0)


def test_the_next_ais_batch_is_sized_from_the_smoothed_tail():
    """One large weight among a few hundred doubles the weights' raw SE; the Pareto-smoothed
    SE that sizes the next batch barely moves, and on light-tailed weights the two agree."""
    from pm_evidence.estimators.annealed import ais_core
    from pm_evidence.path.runs import smoothed_log_z_se

    log_w = np.random.default_rng(3).normal(0.0, 0.8, size=800)
    raw, smoothed = ais_core(log_w).se, smoothed_log_z_se(log_w)
    assert smoothed == pytest.approx(raw, rel=0.2)
    spiked = np.append(log_w, log_w.max() + 3.0)
    assert ais_core(spiked).se > 1.5 * raw
    assert smoothed_log_z_se(spiked) < 1.2 * smoothed

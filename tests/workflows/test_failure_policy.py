"""Issue 13, parts 2, 5 and 7: the path methods' adaptive default reference and warnings kept on
the results instead of silent fallbacks (the array-level checks of those parts are in
``tests/core/test_utils.py``, ``tests/estimators/test_multistate.py`` and
``tests/estimators/test_path_cores.py``).

The checks reuse the session fixture of ``normal_mean`` (compiled once) or build a one-variable
model, and use small runs.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.stats import norm

import pm_evidence as pme
from pm_evidence.model.log_density import LogDensity
from pm_evidence.path.path_estimators import occupancy_messages
from pm_evidence.path.plan import auto_reference

SMALL_AIS = {"n_chains": 50, "n_rungs": 100, "progressbar": False}
SMALL_TEMPERED = {"n_chains": 40, "n_rungs": 20, "n_sweeps": 200, "progressbar": False}


def assert_within_se(ev, exact, slack=0.02):
    err = ev.log_z - exact
    assert abs(err) < 4 * ev.se + slack, f"{ev.method}: error {err:.4f}, se {ev.se:.4f}"


def _flat_draws(case) -> np.ndarray:
    return LogDensity.for_model(case.model).posterior_to_unconstrained(case.idata)


def test_occupancy_far_below_its_target_is_flagged():
    betas = np.linspace(0, 1, 5)
    log_r = np.full(5, -np.log(5))
    n_iterations = np.full(4, 100.0)

    def run(c_sum):  # c_hat as TemperingTrace.c_hat computes it (seed 004 eq. (9))
        c_hat = c_sum.sum(axis=0) / n_iterations.sum()
        return SimpleNamespace(sampler=SimpleNamespace(betas=betas, log_r=log_r, c_hat=c_hat))

    c_sum = np.full((4, 5), 20.0)
    assert occupancy_messages(run(c_sum)) == []
    c_sum[:, 2], c_sum[:, 0] = 4.0, 36.0  # rung 2 at 0.2 of its target
    message = occupancy_messages(run(c_sum))
    assert len(message) == 1 and "rung 2" in message[0] and "0.20 times" in message[0]


# ---------------------------------------------------------------------- model level
def test_default_reference_is_a_fitted_one_when_data_dominate(normal_mean_case):
    case = normal_mean_case
    ev = pme.annealed_importance_sampling(case.model, idata=case.idata, random_seed=1, **SMALL_AIS)
    d = ev.diagnostics
    assert d["reference"] == "normal"  # the posterior is normal
    assert "overlaps it best" in d["reference_reason"]
    assert d["reference_ess_normal"] > d["reference_ess_student_t"] > 10 * d["reference_ess_prior"]
    assert_within_se(ev, case.exact)
    target = LogDensity.for_model(case.model)
    reference, reason, overlap = auto_reference(target, _flat_draws(case))
    assert reference.name == "normal" and reason == ev.diagnostics["reference_reason"]
    assert set(overlap) == {
        "reference_ess_prior",
        "reference_ess_normal",
        "reference_ess_student_t",
    }


def test_prior_is_kept_where_it_overlaps_as_well():
    """No data worth the name: posterior = prior, and the prior is the default reference."""
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0))
        pm.Normal("y", mu, np.float64(100.0), observed=np.array([0.3]))
    target = LogDensity.for_model(model)
    rng = np.random.default_rng(5)
    draws = target.sample_prior(rng, 2000).reshape(2, 1000, 1)  # exact posterior draws, nearly
    reference, reason, overlap = auto_reference(target, draws)
    assert reference.name == "prior" and reason.startswith("prior:")
    assert overlap["reference_ess_prior"] >= max(
        overlap["reference_ess_normal"], overlap["reference_ess_student_t"]
    )


def test_r_hat_of_the_draws_and_the_raise_start_are_warnings_on_results(normal_mean_case):
    case = normal_mean_case
    draws = _flat_draws(case).copy()
    draws[0] += 0.5  # the first chain sits elsewhere: R-hat well above 1.01
    with pytest.warns(UserWarning, match="R-hat"):
        results = pme.marginal_likelihood(
            case.model, method=["ais", "raise"], idata=draws, random_seed=2, **SMALL_AIS
        )
    for ev in results.values():
        assert not ev.reliable
        assert any("R-hat" in w and "1.01" in w for w in ev.warnings)
    assert any("not exact posterior draws" in w for w in results["raise"].warnings)
    assert not any("not exact posterior draws" in w for w in results["ais"].warnings)


def test_low_ess_of_annealing_weights_is_kept_on_the_result(normal_mean_case):
    case = normal_mean_case
    with pytest.warns(UserWarning, match="effective sample size"):
        ev = pme.annealed_importance_sampling(
            case.model, reference="prior", ladder="linear", n_rungs=3, n_chains=40,
            target_se=None, random_seed=3, progressbar=False,
        )  # fmt: skip
    assert not ev.reliable
    assert any("effective sample size of only" in w for w in ev.warnings)
    assert ev.diagnostics["pareto_k"] > 0


def test_unconverged_rts_initial_iterations_are_kept_on_the_result(normal_mean_case):
    case = normal_mean_case
    with pytest.warns(UserWarning, match="initial iterations"):
        # 60 geometric rungs from beta = 1e-4: the pilot's log Z_beta, interpolated between its
        # few rungs, is poor at small beta, and one initial iteration cannot fix it
        ev = pme.rao_blackwellized_tempered_sampling(
            case.model, reference="prior", ladder="geometric", max_init_iterations=1,
            n_init_sweeps=30, random_seed=4, **{**SMALL_TEMPERED, "n_rungs": 60},
        )  # fmt: skip
    assert any("initial iterations did not reach" in w for w in ev.warnings)


def test_improper_prior_uses_the_fitted_reference_and_says_log_z_is_no_evidence():
    """x ~ Flat with a N(1, 1) potential: the integral is sqrt(2 pi), but it is no marginal
    likelihood (its value depends on the flat prior's arbitrary scale)."""
    with pm.Model() as model:
        x = pm.Flat("x")
        pm.Potential("bump", -0.5 * (x - 1.0) ** 2)
    with pytest.warns(UserWarning, match="improper"):
        ev = pme.annealed_importance_sampling(
            model, random_seed=6, draws=500, tune=500, chains=2, **SMALL_AIS
        )
    assert ev.diagnostics["reference"] == "normal"  # the posterior is N(1, 1)
    assert "prior cannot be a reference" in ev.diagnostics["reference_reason"]
    assert any("improper" in w and "Bayes factor" in w for w in ev.warnings)
    assert not ev.reliable
    assert_within_se(ev, 0.5 * np.log(2 * np.pi))


def test_ti_flags_reference_draws_outside_the_target_support():
    """x ~ N(0, 1) cut to x < 1: 16% of prior draws have f = 0. TI misses log P(x < 1) and is
    flagged; RTS and MBAR on the same run include it."""
    with pm.Model() as model:
        x = pm.Normal("x", np.float64(0.0), np.float64(1.0))
        pm.Potential("cut", pt.switch(pt.lt(x, 1.0), 0.0, -np.inf))
    exact = float(norm.logcdf(1.0))
    results = pme.marginal_likelihood(
        model, method=["rts", "ti", "mbar"], reference="prior", random_seed=7, **SMALL_TEMPERED
    )
    assert any("Delta = -inf" in w for w in results["ti"].warnings)
    assert results["ti"].diagnostics["n_reference_draws_outside_support"] > 0
    for method in ("rts", "mbar"):
        assert_within_se(results[method], exact)
        assert not any("Delta = -inf" in w for w in results[method].warnings)

"""Path estimators as pure functions, on exact i.i.d. draws of a Gaussian path (no sampler).

p0 = N(0, s0^2 I), f = C exp(-|x|^2 / (2 s1^2)): every f_beta is Gaussian and can be drawn
exactly, so the estimators are checked without any MCMC error.
"""

from __future__ import annotations

import numpy as np
import pytest

from pm_evidence.core.exceptions import EvidenceInputError, OverlapError
from pm_evidence.estimators.annealed import (
    ads_binary_core,
    ads_multinomial_core,
    ais_core,
    raise_core,
)
from pm_evidence.estimators.tempered import mbar_core, rts_core, rts_log_z, ti_core

S0, S1, LOG_C, DIM = 3.0, 0.5, 2.0, 3
EXACT = LOG_C + DIM * np.log(np.sqrt(2 * np.pi) * S1)
BETAS = np.linspace(0, 1, 12) ** 2
N = 200


def _delta(x):
    log_f = LOG_C - 0.5 * np.sum(x**2, -1) / S1**2
    log_p0 = -0.5 * np.sum(x**2, -1) / S0**2 - DIM * np.log(np.sqrt(2 * np.pi) * S0)
    return log_f - log_p0


def _exact_draws(rng):
    precision = (1 - BETAS) / S0**2 + BETAS / S1**2
    return np.stack([_delta(rng.normal(size=(N, DIM)) / np.sqrt(p)) for p in precision])


def test_mbar_matches_pymbar_on_same_draws():
    pymbar = pytest.importorskip("pymbar")
    delta = _exact_draws(np.random.default_rng(1))
    rung = np.repeat(np.arange(BETAS.size), N)
    ours = mbar_core(delta.ravel(), rung, BETAS, unit=np.tile(np.arange(N), BETAS.size))
    reduced_potentials = -BETAS[:, None] * delta.ravel()[None, :]
    theirs = pymbar.MBAR(reduced_potentials, np.full(BETAS.size, N))
    log_z_theirs = -theirs.compute_free_energy_differences()["Delta_f"][0, -1]
    assert abs(ours.log_z - log_z_theirs) < 1e-8


def test_multinomial_ads_with_equal_weights_is_mbar_with_equal_counts():
    delta = _exact_draws(np.random.default_rng(2))
    ads = ads_multinomial_core(delta, np.zeros_like(delta), BETAS)
    rung = np.repeat(np.arange(BETAS.size), N)
    ours = mbar_core(delta.ravel(), rung, BETAS, unit=np.tile(np.arange(N), BETAS.size))
    assert abs(ads.log_z - ours.log_z) < 1e-8
    assert abs(ads.se - ours.se) < 1e-8


def test_standard_errors_match_the_spread_of_repeated_runs():
    """The sandwich / linearized SEs against the SD of 150 independent repetitions."""
    rng = np.random.default_rng(3)
    rung = np.repeat(np.arange(BETAS.size), N)
    unit = np.tile(np.arange(N), BETAS.size)
    values = {"mbar": [], "ads_binary": [], "ti": [], "ti_corrected": []}
    ses = {k: [] for k in values}
    for _ in range(150):
        delta = _exact_draws(rng)
        for name, est in (
            ("mbar", mbar_core(delta.ravel(), rung, BETAS, unit=unit)),
            ("ads_binary", ads_binary_core(delta, np.zeros_like(delta), BETAS)),
            ("ti", ti_core(BETAS, np.ones((N, BETAS.size)), delta.T, rule="trapezoid")),
            ("ti_corrected", ti_core(BETAS, np.ones((N, BETAS.size)), delta.T,
                                     rule="trapezoid", corrected=True, delta2_sum=(delta**2).T)),
        ):  # fmt: skip
            values[name].append(est.log_z)
            ses[name].append(est.se)
    for name in values:
        sd, mean_se = np.std(values[name], ddof=1), np.mean(ses[name])
        # SD of a sample SD from 150 runs is ~6%; allow 25%
        assert abs(mean_se / sd - 1) < 0.25, (name, sd, mean_se)
    # MBAR, binary ADS and TI with the variance-corrected trapezoid rule are consistent: bias
    # well inside the SE of the mean of 150 runs
    for name in ("mbar", "ads_binary", "ti_corrected"):
        assert abs(np.mean(values[name]) - EXACT) < 4 * np.std(values[name]) / np.sqrt(150) + 0.01
    # TI on this coarse ladder has a discretization bias its SE does not cover (documented):
    # clearly non-zero against the SE of the mean of 150 runs
    assert abs(np.mean(values["ti"]) - EXACT) > 4 * np.mean(ses["ti"]) / np.sqrt(150)


def test_corrected_ti_rule_is_exact_for_a_cubic_integrand():
    """The Euler-Maclaurin (cubic Hermite) rule integrates a cubic mean curve exactly on any
    ladder when the slopes are the variances; the plain trapezoid rule does not."""
    betas = np.array([0.0, 0.05, 0.2, 0.45, 0.7, 1.0])
    mean, slope = betas**3, 3 * betas**2  # E_beta[Delta] and Var_beta[Delta] = d mean / d beta
    weights = np.ones((2, betas.size))
    delta2 = mean**2 + slope
    corrected = ti_core(
        betas, weights, weights * mean, rule="trapezoid", corrected=True, delta2_sum=weights * delta2
    )
    plain = ti_core(betas, weights, weights * mean, rule="trapezoid")
    assert corrected.log_z == pytest.approx(0.25, abs=1e-12)
    assert abs(plain.log_z - 0.25) > 1e-2
    with pytest.raises(EvidenceInputError, match="delta2_sum"):
        ti_core(betas, weights, weights * mean, rule="trapezoid", corrected=True)


def test_ais_core_is_log_mean_exp_with_kish_ess():
    log_w = np.log(np.array([1.0, 2.0, 3.0, 6.0]))
    est = ais_core(log_w)
    assert est.log_z == pytest.approx(np.log(3.0))
    assert est.diagnostics["ess"] == pytest.approx(12.0**2 / 50.0)


def test_rts_log_z_eq12_and_count_estimator():
    log_r = np.log(np.full(3, 1 / 3))
    log_zhat = np.array([0.0, 1.0, 2.0])
    c_hat = np.array([0.2, 0.3, 0.5])
    expected = log_zhat[2] + np.log(0.5 / 0.2)
    assert rts_log_z(c_hat, log_r, log_zhat)[-1] == pytest.approx(expected)
    c_sum = np.array([[2.0, 3.0, 5.0], [2.0, 3.0, 5.0]])
    est = rts_core(c_sum, np.array([10.0, 10.0]), log_r, log_zhat)
    assert est.log_z == pytest.approx(expected)
    assert est.se == pytest.approx(0.0, abs=1e-12)  # identical units: no spread




def test_all_zero_annealing_weights_raise_overlap_error():
    for core in (ais_core, raise_core):
        with pytest.raises(OverlapError, match="no estimate of log Z"):
            core(np.full(20, -np.inf))
    ok = ais_core(np.r_[np.full(19, -np.inf), 0.0])  # one chain with weight: an estimate
    assert ok.log_z == pytest.approx(-np.log(20))


def test_a_few_nan_ais_weights_are_zero_weights_counted_and_not_a_warning():
    """3 NaN log weights in 12,769 (a model NaN at the edge of its support): the estimate is
    that of the same weights with those three at zero; counted; no warning below 0.1 %."""
    from pm_evidence.estimators.messages import weight_messages

    rng = np.random.default_rng(7)
    log_w = rng.normal(0.0, 0.5, size=12_769)
    with_nan = log_w.copy()
    with_nan[[5, 500, 5000]] = np.nan
    zeroed = log_w.copy()
    zeroed[[5, 500, 5000]] = -np.inf
    estimate = ais_core(with_nan)
    assert estimate.log_z == ais_core(zeroed).log_z and estimate.se == ais_core(zeroed).se
    assert estimate.diagnostics["n_nonfinite_log_weights"] == 3
    assert weight_messages(estimate.diagnostics, "The AIS weights", "") == []
    many = log_w.copy()
    many[:200] = np.nan  # 1.6 %
    messages = weight_messages(ais_core(many).diagnostics, "The AIS weights", "")
    assert len(messages) == 1 and "200 (1.6 %) are not finite" in messages[0]


def test_a_positive_infinite_ais_weight_is_a_zero_weight_counted():
    """``+inf``: a log density that overflows far in the tails (an LKJ prior's standard
    deviations of ``e^70``, in truth of density ``exp(-e^70)``) at an annealed chain's start:
    a zero weight, counted with the NaNs."""
    estimate = ais_core(np.array([0.0, np.inf, 1.0, np.nan]))
    assert estimate.log_z == ais_core(np.array([0.0, -np.inf, 1.0, -np.inf])).log_z
    assert estimate.diagnostics["n_nonfinite_log_weights"] == 2


def test_a_non_finite_log_weight_at_draws_of_the_target_is_an_error():
    from pm_evidence.core.exceptions import NonFiniteLogDensityError
    from pm_evidence.estimators.base import as_two_samples

    for bad in (np.inf, np.nan, -np.inf):
        with pytest.raises(NonFiniteLogDensityError, match=r"1 of 3 log weights at target"):
            as_two_samples(np.array([0.0, bad, 1.0]), np.zeros(3))

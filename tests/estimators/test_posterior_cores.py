"""Estimator cores on exact i.i.d. draws: golden values, seed 000 Example 1, SE honesty."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from pm_evidence.core.exceptions import ConvergenceError, EvidenceInputError, OverlapError
from pm_evidence.estimators import (
    Estimate,
    bridge_core,
    combine_is_ris_core,
    discriminance_core,
    importance_core,
    reverse_importance_core,
    solve_ratio_matching,
)

LOG_Z_STD_NORMAL = 0.5 * np.log(2 * np.pi)  # f(x) = exp(-x^2/2)


def gaussian_log_weights(rng, sigma0, n_target, n_reference, sigma=1.0):
    """log f - log p0 for f = exp(-x^2 / (2 sigma^2)), p0 = N(0, sigma0^2), exact draws of both."""

    def log_l(x):
        log_f = -0.5 * (x / sigma) ** 2
        log_p0 = -0.5 * (x / sigma0) ** 2 - np.log(sigma0) - 0.5 * np.log(2 * np.pi)
        return log_f - log_p0

    x1 = rng.normal(0, sigma, size=n_target)
    x0 = rng.normal(0, sigma0, size=n_reference)
    return log_l(x1), log_l(x0), np.log(sigma) + LOG_Z_STD_NORMAL


# ---------------------------------------------------------------- golden values of the cores
def test_importance_core_golden():
    lw = np.array([0.0, np.log(2.0), np.log(3.0), -np.inf])
    est = importance_core(lw)
    assert est.log_z == pytest.approx(np.log(6.0 / 4.0), abs=1e-14)
    w = np.array([1.0, 2.0, 3.0, 0.0])
    assert est.se == pytest.approx(np.std(w, ddof=1) / (2.0 * w.mean()), abs=1e-14)
    assert est.diagnostics["ess_reference"] == pytest.approx(36.0 / 14.0, abs=1e-12)


def test_reverse_importance_core_golden():
    lw = np.log(np.array([[1.0, 2.0, 4.0, 8.0]]))
    est = reverse_importance_core(lw)
    assert est.log_z == pytest.approx(
        -np.log(np.mean(1 / np.array([1.0, 2.0, 4.0, 8.0]))), abs=1e-14
    )


def test_bracket_and_iteration_solve_the_same_equation(rng):
    lt, lr, _ = gaussian_log_weights(rng, 2.0, 700, 1300)
    a = solve_ratio_matching(lt, lr, solver="bracket", tol=1e-13)
    b = solve_ratio_matching(lt, lr, solver="iterate", tol=1e-13)
    assert a.log_c == pytest.approx(b.log_c, abs=1e-10)


def test_the_bridge_iteration_converges_at_any_log_z():
    """The Meng-Wong iteration at ``log Z`` of -1.4e6 to -1.4e8 (a normal mean with a million
    observations is at -1.4e6), where consecutive doubles are 2.3e-10 to 3e-8 apart: it
    converges to the default tolerance, 1e-10, and gives the answer at 0 shifted, to the
    doubles' resolution there. Iterating on ``log c`` itself, its iterates alternated between
    two neighbouring doubles and never converged (on these draws, from -1.4e7 on)."""
    lt, lr, _ = gaussian_log_weights(np.random.default_rng(0), 2.0, 700, 1300)
    at_zero = bridge_core(lt, lr)
    for shift in (-1.4e6, -1.4e7, -1.4e8):
        resolution = 8 * np.spacing(abs(shift))
        far = bridge_core(lt + shift, lr + shift)
        assert far.log_z - shift == pytest.approx(at_zero.log_z, abs=resolution)
        assert far.se == pytest.approx(at_zero.se, rel=1e-6)
        iterated = solve_ratio_matching(lt + shift, lr + shift, solver="iterate").log_c
        bracketed = solve_ratio_matching(lt + shift, lr + shift, solver="bracket").log_c
        assert iterated == pytest.approx(bracketed, abs=resolution)


def test_row_solver_matches_the_weighted_bracket_solver(rng):
    """ADS's vectorized Newton solver against brentq on the same weighted equations, rows with
    good and poor overlap, unequal sizes and zero weights (-inf log ratios) included."""
    from pm_evidence.estimators.ratio_matching import solve_weighted_ratio_matching_rows

    rows = []
    for sigma0, shift in [(1.0, 0.0), (2.0, 3.0), (0.3, -8.0), (5.0, 40.0)]:
        lt, lr, _ = gaussian_log_weights(rng, sigma0, 500, 500)
        lw_t, lw_r = rng.normal(0, 1.0, 500), rng.normal(0, 2.0, 500)
        lr[:7], lw_r[:7] = -np.inf, -np.inf
        rows.append((lt + shift, lr + shift, lw_t, lw_r))
    lt, lr, lw_t, lw_r = (np.array(column) for column in zip(*rows, strict=True))

    def normalize(lw):
        return np.exp(lw - logsumexp(lw, axis=1, keepdims=True))

    log_c, pi_t, pi_r = solve_weighted_ratio_matching_rows(lt, lr, normalize(lw_t), normalize(lw_r))
    for m in range(len(rows)):
        ref = solve_ratio_matching(
            lt[m], lr[m], log_weights_target=lw_t[m], log_weights_reference=lw_r[m],
            tol=1e-13, min_overlap=0.0,
        )  # fmt: skip
        assert log_c[m] == pytest.approx(ref.log_c, abs=1e-9)
        np.testing.assert_allclose(pi_t[m], ref.pi_target, atol=1e-9)
        np.testing.assert_allclose(pi_r[m], ref.pi_reference, atol=1e-9)


def test_ds_and_bridge_agree_on_same_draws(rng):
    """Discriminance sampling and the optimal bridge are one estimating equation (seed 000 §2)."""
    lt, lr, _ = gaussian_log_weights(rng, 1.7, 1000, 600)
    ds = discriminance_core(lt, lr)
    br = bridge_core(lt, lr, tol=1e-13)
    assert ds.log_z == pytest.approx(br.log_z, abs=1e-10)
    # both SEs estimate the same asymptotic variance (equal in the limit; see the docstrings)
    assert ds.se == pytest.approx(br.se, rel=0.1)


def test_ratio_matching_equation_holds_at_root(rng):
    lt, lr, _ = gaussian_log_weights(rng, 0.6, 400, 900)
    est = discriminance_core(lt, lr)
    n1, n0 = lt.size, lr.size
    pooled = np.concatenate([lt, lr])
    pi = 1 / (1 + np.exp(-(pooled + np.log(n1 / n0) - est.log_z)))
    assert pi.sum() == pytest.approx(n1, abs=1e-8)  # seed 000 eq. (3), unequal sizes


# ---------------------------------------------------------------- invariances
def test_adding_a_constant_shifts_log_z(rng):
    lt, lr, _ = gaussian_log_weights(rng, 1.3, 500, 500)
    for core in (discriminance_core, bridge_core):
        base, shifted = core(lt, lr), core(lt + 250.0, lr + 250.0)  # log Z of hundreds of nats
        assert shifted.log_z - base.log_z == pytest.approx(250.0, abs=1e-8)
        assert shifted.se == pytest.approx(base.se, rel=1e-6)
    assert importance_core(lr + 250.0).log_z - importance_core(lr).log_z == pytest.approx(250.0)
    assert reverse_importance_core(lt[None] + 250).log_z == pytest.approx(
        reverse_importance_core(lt[None]).log_z + 250.0
    )


def test_permuting_draws_changes_nothing(rng):
    lt, lr, _ = gaussian_log_weights(rng, 1.3, 500, 500)
    a = discriminance_core(lt, lr)
    b = discriminance_core(rng.permutation(lt), rng.permutation(lr))
    assert a.log_z == pytest.approx(b.log_z, abs=1e-10)
    assert importance_core(lr).log_z == pytest.approx(importance_core(lr[::-1]).log_z, abs=1e-12)


# ---------------------------------------------------------------- seed 000 Example 1 / Fig. 1
def repeated_errors(sigma0, reps=300, n=1000, seed=0):
    rng = np.random.default_rng(seed)
    errors = {"is": [], "ris": [], "ds": [], "ds_se": []}
    for _ in range(reps):
        lt, lr, exact = gaussian_log_weights(rng, sigma0, n, n)
        errors["is"].append(importance_core(lr).log_z - exact)
        errors["ris"].append(reverse_importance_core(lt).log_z - exact)
        # as in the paper's comparison, DS uses only half of each sample
        ds = discriminance_core(lt[: n // 2], lr[: n // 2])
        errors["ds"].append(ds.log_z - exact)
        errors["ds_se"].append(ds.se)
    return {k: np.asarray(v) for k, v in errors.items()}


def test_example1_is_fails_for_small_sigma0_ris_for_large():
    """seed 000 Example 1 / Fig. 1: IS degrades (and under-estimates) when p0 is too peaked,
    reverse IS (over-estimating) when p0 is too wide; DS stays accurate for both."""
    peaked, wide = repeated_errors(0.4), repeated_errors(4.0)
    mse = {
        k: {s: np.mean(v[k] ** 2) for s, v in (("peaked", peaked), ("wide", wide))}
        for k in ("is", "ris", "ds")
    }
    # IS: infinite variance for sigma0 < 1/sqrt(2); biased low
    assert mse["is"]["peaked"] > 10 * mse["ds"]["peaked"]
    assert np.mean(peaked["is"]) < -0.05
    # reverse IS: infinite variance for sigma0 > sqrt(2); biased high
    assert mse["ris"]["wide"] > 10 * mse["ds"]["wide"]
    assert np.mean(wide["ris"]) > 0.05
    # DS: accurate in both regimes with half the draws
    for errors in (peaked, wide):
        assert abs(np.mean(errors["ds"])) < 4 * np.std(errors["ds"]) / np.sqrt(errors["ds"].size)
        assert np.sqrt(np.mean(errors["ds"] ** 2)) < 0.1


@pytest.mark.parametrize("sigma0", [0.4, 1.5, 4.0])
def test_ds_standard_error_matches_repeated_runs(sigma0):
    errors = repeated_errors(sigma0, reps=300, seed=1)
    empirical_sd = np.std(errors["ds"], ddof=1)
    reported = np.mean(errors["ds_se"])
    # the sd over 300 runs is itself uncertain by about 1/sqrt(2 * 299) = 4%
    assert reported == pytest.approx(empirical_sd, rel=0.15)


def test_ds_unequal_sample_sizes_accurate():
    rng = np.random.default_rng(5)
    ests, ses = [], []
    for _ in range(200):
        lt, lr, exact = gaussian_log_weights(rng, 2.5, 300, 3000)
        est = discriminance_core(lt, lr)
        ests.append(est.log_z - exact)
        ses.append(est.se)
    ests = np.asarray(ests)
    assert abs(ests.mean()) < 4 * ests.std() / np.sqrt(ests.size)
    assert np.mean(ses) == pytest.approx(ests.std(ddof=1), rel=0.15)


# ---------------------------------------------------------------- combinations (seed 000 §6)
def test_combination_rules():
    a, b = Estimate(1.0, 0.1, {}), Estimate(2.0, 0.2, {})
    assert combine_is_ris_core(a, b, "average").log_z == pytest.approx(1.5)
    w = combine_is_ris_core(a, b, "weighted")
    assert w.log_z == pytest.approx((1.0 / 0.01 + 2.0 / 0.04) / (1 / 0.01 + 1 / 0.04))
    s = combine_is_ris_core(a, b, "selection")
    assert s.log_z == 1.0 and s.diagnostics["selected"] == "is"
    with pytest.raises(EvidenceInputError, match="must be one of"):
        combine_is_ris_core(a, b, "median")


# ---------------------------------------------------------------- failures are loud
def test_no_overlap_raises():
    lt = np.full(100, 50.0) + np.linspace(0, 1, 100)  # target draws: l huge
    lr = np.full(100, -50.0) - np.linspace(0, 1, 100)  # reference draws: l tiny
    with pytest.raises(OverlapError, match="do not overlap"):
        discriminance_core(lt, lr)


def test_bridge_non_convergence_raises(rng):
    lt, lr, _ = gaussian_log_weights(rng, 3.0, 500, 500)
    with pytest.raises(ConvergenceError, match="did not converge in 2 iterations"):
        bridge_core(lt, lr, maxiter=2, tol=1e-14)


def test_nan_log_weights_raise():
    from pm_evidence.core.exceptions import NonFiniteLogDensityError

    with pytest.raises(NonFiniteLogDensityError, match="not finite"):
        reverse_importance_core(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(NonFiniteLogDensityError):
        discriminance_core(np.array([0.0, -np.inf]), np.array([0.0, 1.0]))


def test_log_mean_exp_of_large_values():
    lw = np.array([700.0, 701.0, 702.0])  # exp overflows float64
    assert importance_core(lw).log_z == pytest.approx(logsumexp(lw) - np.log(3))

"""Issue 13, parts 2, 5 and 7: the path methods' adaptive default reference, warnings kept on the
results instead of silent fallbacks, and MBAR's exact multistate solver on the rungs it has.

Array-level checks need no model; model-level ones reuse the session fixture of ``normal_mean``
(compiled once) or build a one-variable model, and use small runs.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.special import logsumexp, softmax
from scipy.stats import norm

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError, OverlapError
from pm_evidence.core.utils import good_pareto_k, max_rhat, mcmc_ess, pareto_khat
from pm_evidence.estimators.annealed import ais_core, raise_core
from pm_evidence.estimators.multistate import _Objective, solve_multistate
from pm_evidence.estimators.tempered import mbar_core
from pm_evidence.model.log_density import LogDensity
from pm_evidence.path.path_estimators import _occupancy_messages
from pm_evidence.path.plan import auto_reference

SMALL_AIS = {"n_chains": 50, "n_rungs": 100, "progressbar": False}
SMALL_TEMPERED = {"n_chains": 40, "n_rungs": 20, "n_sweeps": 200, "progressbar": False}


def assert_within_se(ev, exact, slack=0.02):
    err = ev.log_z - exact
    assert abs(err) < 4 * ev.se + slack, f"{ev.method}: error {err:.4f}, se {ev.se:.4f}"


def _flat_draws(case) -> np.ndarray:
    return LogDensity.for_model(case.model).posterior_to_unconstrained(case.idata)


# ---------------------------------------------------------------------- array level
def test_mcmc_ess_is_nan_where_arviz_has_no_value():
    chains = np.tile([0.0, 1.0, np.inf, 2.0], (2, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(mcmc_ess(chains))
    assert mcmc_ess(np.ones((2, 50))) == 100.0  # constant: no variance to estimate


def test_all_zero_annealing_weights_raise_overlap_error():
    for core in (ais_core, raise_core):
        with pytest.raises(OverlapError, match="no estimate of log Z"):
            core(np.full(20, -np.inf))
    ok = ais_core(np.r_[np.full(19, -np.inf), 0.0])  # one chain with weight: an estimate
    assert ok.log_z == pytest.approx(-np.log(20))


def test_pareto_khat_separates_light_and_heavy_tails():
    rng = np.random.default_rng(0)
    light = rng.normal(0.0, 0.3, 1000)  # log-normal weights with small spread
    heavy = np.log(rng.pareto(1 / 0.9, 1000) + 1.0)  # Pareto weights with tail index k = 0.9
    assert pareto_khat(light) < good_pareto_k(1000) < pareto_khat(heavy)
    assert good_pareto_k(100) == pytest.approx(0.5)
    assert good_pareto_k(10**6) == pytest.approx(0.7)
    assert np.isnan(pareto_khat(light[:10]))


def test_max_rhat_flags_chains_in_different_places():
    rng = np.random.default_rng(1)
    draws = rng.normal(size=(4, 500, 3))
    assert max_rhat(draws)[0] < 1.01
    draws[0, :, 2] += 1.0
    rhat, worst = max_rhat(draws)
    assert rhat > 1.01 and worst == 2


def _dense_objective(delta, betas, omega, nu, a):
    logits = a + np.multiply.outer(delta, betas)
    logits[:, betas == 0] = a[betas == 0]  # 0 * (-inf) = 0
    p = softmax(logits, axis=1)
    value = omega @ logsumexp(logits, axis=1) - nu @ a
    hessian = np.diag(omega @ p) - (p * omega[:, None]).T @ p
    return value, (omega @ p - nu)[1:], hessian[1:, 1:]


def _dense_projections(delta, betas, a, v):
    with np.errstate(invalid="ignore"):  # 0 * (-inf), replaced below
        logits = a + np.multiply.outer(delta, betas)
    logits[:, betas == 0] = a[betas == 0]
    return softmax(logits, axis=1) @ v


def test_binned_multistate_sums_equal_the_direct_sums():
    """The quadrature points of the dense bins, the kept draws of the sparse ones and the -inf
    draws together give F, its gradient, Hessian and Hessian-vector products of the plain formula,
    and the per-draw projections p_i . v, to rounding."""
    rng = np.random.default_rng(2)
    betas = np.r_[0.0, np.geomspace(1e-3, 1.0, 11)]
    delta = np.r_[rng.normal(-5.0, 3.0, 30_000), rng.uniform(-400.0, 10.0, 40), [-np.inf] * 5]
    omega = rng.random(delta.size)
    omega /= omega.sum()
    rung = rng.integers(betas.size, size=delta.size)
    nu = np.bincount(rung, weights=omega, minlength=betas.size)
    objective = _Objective(delta, betas, omega, nu)
    quadrature = objective.quadrature
    assert quadrature.n_nodes > 0 and quadrature.direct.size > 0  # both paths are exercised
    assert objective.points.size < delta.size / 5
    for scale in (0.0, 3.0, 30.0):
        a = np.r_[0.0, rng.normal(0.0, scale, betas.size - 1)]
        value, grad, hessian = _dense_objective(delta, betas, omega, nu, a)
        ours_value, ours_grad = objective.value_and_grad(a[1:])
        v = rng.normal(size=betas.size - 1)
        assert ours_value == pytest.approx(value, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(ours_grad, grad, atol=1e-12)
        np.testing.assert_allclose(objective.hessian(a[1:]), hessian, atol=1e-13)
        np.testing.assert_allclose(objective.hessp(a[1:], v), hessian @ v, atol=1e-13)
        v_full = np.r_[0.0, v]
        plain = _dense_projections(delta, betas, a, v_full)
        plain[omega == 0] = 0.0
        np.testing.assert_allclose(
            objective.projections(a[1:], v_full, delta.size), plain, atol=1e-12
        )


@pytest.mark.parametrize("far", [False, True])
def test_quadrature_points_reproduce_sums_and_values_of_smooth_functions(far):
    """The reduction behind MBAR: for functions analytic on the scale of the bins, the points'
    weighted sums equal the draws' and the interpolants give the values at every draw, whether
    the cells are numbered densely or (draws spread over more than 2^24 cells) by np.unique."""
    from pm_evidence.estimators.multistate import DENSE_CELL_SPAN, _QuadraturePoints

    rng = np.random.default_rng(5)
    delta = np.r_[rng.normal(-30.0, 4.0, 20_000), rng.uniform(-60.0, 0.0, 50)]
    if far:  # a few draws 3e6 nats away: over 2^24 cells of width 1/16
        delta = np.r_[delta, -3e6 + rng.normal(0.0, 1.0, 30)]
    omega = rng.random(delta.size)
    width = 1.0 / 16
    assert (np.ptp(delta) / width > DENSE_CELL_SPAN) == far
    quadrature = _QuadraturePoints(delta, omega, width)
    assert quadrature.points.size < delta.size / 4
    for g in (np.cos, lambda x: np.sin(0.7 * x) + 0.1 * x, lambda x: 1 / (1 + np.exp(-(x + 30)))):
        plain = omega @ g(delta)
        ours = quadrature.weights @ g(quadrature.points)
        assert ours == pytest.approx(plain, rel=1e-12, abs=1e-12 * np.sum(omega))
        values = quadrature.at_draws(g(quadrature.points))
        np.testing.assert_allclose(values, g(delta), rtol=1e-12, atol=1e-12)


def _gaussian_path_draws(rng, betas, n_per_rung, s0=3.0, s1=0.5, dim=3):
    """Exact draws of every f_beta on p0 = N(0, s0^2 I) -> f = N(0, s1^2 I) (log Z = 0)."""
    precision = (1 - betas) / s0**2 + betas / s1**2
    radius2 = rng.chisquare(dim, size=(betas.size, n_per_rung)) / precision[:, None]
    delta = -0.5 * radius2 / s1**2 + 0.5 * radius2 / s0**2 + dim * np.log(s0 / s1)
    return delta


def test_mbar_drops_empty_rungs_and_equals_mbar_without_them():
    rng = np.random.default_rng(3)
    betas = np.linspace(0.0, 1.0, 8) ** 2
    delta = _gaussian_path_draws(rng, betas, 150)
    rung = np.repeat(np.arange(betas.size), 150)
    unit = np.tile(np.arange(150), betas.size)
    keep = rung != 4  # rung 4 never visited
    dropped = mbar_core(delta.ravel()[keep], rung[keep], betas, unit=unit[keep])
    shorter = np.delete(betas, 4)
    relabel = np.where(rung[keep] > 4, rung[keep] - 1, rung[keep])
    direct = mbar_core(delta.ravel()[keep], relabel, shorter, unit=unit[keep])
    assert dropped.log_z == pytest.approx(direct.log_z, abs=1e-12)
    assert dropped.se == pytest.approx(direct.se, rel=1e-9)
    assert dropped.diagnostics["n_dropped_rungs"] == 1
    assert dropped.diagnostics["first_dropped_rung"] == 4
    assert abs(dropped.log_z) < 4 * dropped.se  # log Z = 0
    with pytest.raises(EvidenceInputError, match="both ends"):
        mbar_core(delta.ravel()[rung < 7], rung[rung < 7], betas)


def test_multistate_solution_has_zero_score_from_a_cold_start():
    """3e4 draws spread over 6e5 nats (binned and direct sums), 100 rungs, Newton from a = 0:
    the solution's score by the plain formula is zero to rounding."""
    rng = np.random.default_rng(4)
    betas = np.r_[0.0, np.geomspace(1e-4, 1.0, 99)]
    rung = rng.integers(betas.size, size=30_000)
    delta = _gaussian_path_draws(rng, betas, 300, s0=10.0, s1=0.05, dim=10)[
        rung, np.arange(rung.size) % 300
    ]
    sol = solve_multistate(delta, rung, betas, unit=np.arange(rung.size) % 100)
    nu = np.bincount(rung, minlength=betas.size) / rung.size
    a = np.log(nu) - np.log(nu[0]) - sol.log_z
    score = np.zeros(betas.size)
    for block in np.array_split(np.arange(rung.size), 10):
        score += softmax(a + np.multiply.outer(delta[block], betas), axis=1).sum(0) / rung.size
    assert np.max(np.abs(score - nu)) < 1e-11
    assert abs(sol.log_z[-1]) < 4 * sol.se


def test_occupancy_far_below_its_target_is_flagged():
    betas = np.linspace(0, 1, 5)
    log_r = np.full(5, -np.log(5))
    n_iterations = np.full(4, 100.0)

    def run(c_sum):  # c_hat as TemperingTrace.c_hat computes it (seed 004 eq. (9))
        c_hat = c_sum.sum(axis=0) / n_iterations.sum()
        return SimpleNamespace(sampler=SimpleNamespace(betas=betas, log_r=log_r, c_hat=c_hat))

    c_sum = np.full((4, 5), 20.0)
    assert _occupancy_messages(run(c_sum)) == []
    c_sum[:, 2], c_sum[:, 0] = 4.0, 36.0  # rung 2 at 0.2 of its target
    message = _occupancy_messages(run(c_sum))
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

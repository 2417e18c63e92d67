"""MBAR's exact multistate solver (``pm_evidence.estimators.multistate``): binned sums equal to the direct
ones, quadrature points, empty rungs dropped, a zero score from a cold start."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from pm_evidence.core.exceptions import ConvergenceError
from pm_evidence.estimators.multistate import MultistateObjective, solve_multistate
from pm_evidence.estimators.tempered import mbar_core
from pm_evidence.run_methods import is_stage_failure


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
    objective = MultistateObjective(delta, betas, omega, nu)
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
    from pm_evidence.estimators.multistate import DENSE_CELL_SPAN, QuadraturePoints

    rng = np.random.default_rng(5)
    delta = np.r_[rng.normal(-30.0, 4.0, 20_000), rng.uniform(-60.0, 0.0, 50)]
    if far:  # a few draws 3e6 nats away: over 2^24 cells of width 1/16
        delta = np.r_[delta, -3e6 + rng.normal(0.0, 1.0, 30)]
    omega = rng.random(delta.size)
    width = 1.0 / 16
    assert (np.ptp(delta) / width > DENSE_CELL_SPAN) == far
    quadrature = QuadraturePoints(delta, omega, width)
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
    # a run that never reached beta = 1: its failure (a list of methods goes on without it)
    with pytest.raises(ConvergenceError, match="both ends") as failed:
        mbar_core(delta.ravel()[rung < 7], rung[rung < 7], betas)
    assert is_stage_failure(failed.value)


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

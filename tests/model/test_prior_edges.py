"""Forward draws of the prior rounded onto the edge of their support
(``ValueMaps.moved_off_edges``, ``LogDensity.sample_prior``).

``theta ~ Beta(mu kappa, (1 - mu) kappa)`` with a small ``kappa`` has draws within ``1e-17`` of 0
or 1, which floats store as 0.0 or 1.0, where ``logit`` is infinite; a Dirichlet with a small
concentration has exact zeros. Such a draw is moved to the nearest float inside, where the
density is finite, instead of stopping the exploration from the prior (which made ``auto``
leave it out and flag an ordinary hierarchical beta-binomial model on every seed).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pm_evidence as pme
from pm_evidence import LogDensity
from pm_evidence.zoo.funnels import beta_binomial_centered


def _draws_and_rows(target, n, seed):
    values = target.prior.draw(np.random.default_rng(seed), n)
    flat, _ = target.maps.unconstrained_rows(values, batch_ndim=1)
    return values, flat


def test_beta_draws_on_the_edge_move_to_the_nearest_float_inside():
    model, _ = beta_binomial_centered()
    target = LogDensity(model)
    values, flat = _draws_and_rows(target, 4000, seed=3)
    moved_flat, moved = target.maps.moved_off_edges(values, flat)
    on_edge = ~np.all(np.isfinite(flat), axis=1)
    assert on_edge.sum() > 10  # about 1 % of the prior's draws
    np.testing.assert_array_equal(moved, on_edge)
    np.testing.assert_array_equal(moved_flat[~moved], flat[~moved])  # the others as they were
    assert np.all(np.isfinite(moved_flat))
    theta = values["beta_binomial_centered::theta"][moved]
    new_theta = target.to_constrained(moved_flat[moved])["beta_binomial_centered::theta"]
    # mapped back through logit and its inverse, to within their rounding: the other entries
    # unchanged, those at 1.0 within a float or two below it, those at 0.0 below 1e-300
    edge = (theta == 0.0) | (theta == 1.0)
    np.testing.assert_allclose(new_theta[~edge], theta[~edge], rtol=1e-12, atol=1e-15)
    assert np.all((1.0 - new_theta[theta == 1.0] >= 0.0) & (1.0 - new_theta[theta == 1.0] < 3e-16))
    assert np.all((new_theta[theta == 0.0] >= 0.0) & (new_theta[theta == 0.0] < 1e-300))
    assert np.all(np.isfinite(target.log_density(moved_flat[moved])))


def test_sample_prior_moves_edge_draws_and_reports_their_share():
    model, _ = beta_binomial_centered()
    target = LogDensity(model)
    x = target.sample_prior(np.random.default_rng(1), 3000)
    assert x.shape == (3000, target.dim) and np.all(np.isfinite(x))
    assert np.all(np.isfinite(target.log_prior(x)))
    assert 0.002 < target.prior_edge_share < 0.05  # 1.1 % on its fixed stream


def test_a_dirichlets_zeros_move_up():
    with pm.Model() as model:
        a = pm.Exponential("a", 10.0)
        p = pm.Dirichlet("p", a * np.ones(4))
        pm.Multinomial("y", 30, p, observed=[10, 5, 15, 0])
    target = LogDensity(model)
    values, flat = _draws_and_rows(target, 2000, seed=1)
    assert (values["p"] == 0.0).any(axis=1).mean() > 0.05
    moved_flat, moved = target.maps.moved_off_edges(values, flat)
    assert np.all(np.isfinite(moved_flat)) and moved.any()
    p = target.to_constrained(moved_flat[moved])["p"]
    np.testing.assert_allclose(p, values["p"][moved], atol=1e-300, rtol=1e-12)
    assert np.all(p > 0.0)
    assert target.prior_edge_share > 0.05
    assert np.all(np.isfinite(target.log_density(target.sample_prior(np.random.default_rng(2), 500))))


def test_a_value_outside_a_cut_is_not_moved():
    """A transform that cuts the prior (a normal under ``Interval(-1, 1)``): a draw outside is
    outside, to be rejected, not moved."""
    from pymc.distributions.transforms import Interval

    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0, transform=Interval(-1.0, 1.0))
    target = LogDensity(model)
    values, flat = _draws_and_rows(target, 200, seed=4)
    moved_flat, moved = target.maps.moved_off_edges(values, flat, skip=("x",))
    assert not moved.any() and np.isnan(moved_flat).sum() == np.isnan(flat).sum() > 0


@pytest.mark.parametrize("seed", [1])
def test_auto_at_defaults_gets_the_hierarchical_beta_binomial(seed):
    """Before, the exploration from the prior stopped on the edge draws and ``auto`` flagged
    every seed; now the result is reliable, within 4 of its SEs of the gold (quadrature), and
    says that prior draws were moved."""
    model, gold = beta_binomial_centered()
    ev = pme.marginal_likelihood(model, random_seed=seed, progressbar=False)
    assert ev.reliable and not ev.warnings
    assert abs(ev.log_z - gold) < 4 * ev.se
    assert ev.diagnostics["prior_draws_on_edge"] > 0.0


def test_gamma_draws_at_zero_move_to_the_smallest_float():
    """``Gamma(alpha, alpha / mu)`` with a small ``alpha`` draws rates below ``1e-308``, stored
    as 0.0 where ``log`` is ``-inf``: moved to the smallest positive float, ``log`` of it
    finite, the other draws untouched."""
    with pm.Model() as model:
        alpha = pm.Exponential("alpha", 1 / 5.0)
        rate = pm.Gamma("rate", alpha=alpha, beta=alpha, shape=25)
        pm.Poisson("y", rate, observed=np.arange(25) % 4)
    target = LogDensity(model)
    values, flat = _draws_and_rows(target, 4000, seed=5)
    at_zero = values["rate"] == 0.0
    assert at_zero.any()
    moved_flat, moved = target.maps.moved_off_edges(values, flat)
    np.testing.assert_array_equal(moved, at_zero.any(axis=1))
    new_rate = target.to_constrained(moved_flat)["rate"]
    assert np.all(new_rate[at_zero] == np.nextafter(0.0, 1.0))
    np.testing.assert_allclose(new_rate[~at_zero], values["rate"][~at_zero], rtol=1e-12)
    assert np.all(np.isfinite(target.log_density(moved_flat)))

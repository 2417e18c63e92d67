"""Funnels found in posterior draws (:mod:`pm_evidence.model.funnel_map`): the test finds
Neal's funnel and nothing in posteriors without one, the map is a bijection with the stated
Jacobian and gradient, and batched HMC's draws in its coordinates reach the neck that the
first draws miss, so that ``auto`` at defaults gets the funnel's log Z."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from arviz_stats.base import array_stats
from scipy import special, stats

import pm_evidence as pme
from pm_evidence.model.batched_hmc import BatchedHMCSettings, sample_batched_hmc
from pm_evidence.model.funnel_map import (
    FUNNEL_MAX_RHAT,
    FUNNEL_MIN_RATIO,
    FUNNEL_OTHERS_MAX_RHAT,
    FunnelMap,
    fit_funnel_map,
)
from pm_evidence.model.log_density import as_target
from pm_evidence.model.mapped_density import MappedDensity
from pm_evidence.zoo.multimodal import funnel_box
from tests.model.mapped_terms import assert_terms_gradients


def _funnel_draws(rng, n=4000, dim=5):
    """Exact draws of Neal's funnel, ``v ~ N(0, 3^2)``, ``x_i | v ~ N(0, e^v)``, as
    ``(chain, draw, dim)``."""
    v = rng.normal(0.0, 3.0, size=n)
    x = rng.standard_normal((n, dim - 1)) * np.exp(v / 2)[:, None]
    return np.column_stack([v, x]).reshape(4, n // 4, dim)


def test_finds_neals_funnel_with_its_slopes():
    funnel = fit_funnel_map(_funnel_draws(np.random.default_rng(1)))
    assert funnel is not None
    assert funnel.driven.tolist() == [1, 2, 3, 4]
    assert funnel.driver.tolist() == [0, 0, 0, 0]
    # log sd(x_i | v) = v / 2: the slopes of the bins' log spreads (each bin's MAD about its
    # own median, 100 draws a bin) are within 0.1 of it
    assert np.all(np.abs(funnel.slope - 0.5) < 0.1)


@pytest.mark.parametrize(
    "draws",
    [
        # a normal with correlation 0.95: the location follows, the spread does not
        lambda rng: rng.multivariate_normal(
            np.zeros(3), [[1, 0.95, 0.5], [0.95, 1, 0.5], [0.5, 0.5, 1]], size=4000
        ),
        # a Student-t of 3 degrees of freedom: the spread grows with |x_u|, not along x_u
        lambda rng: stats.multivariate_t(np.zeros(3), np.eye(3), df=3).rvs(4000, random_state=rng),
        # a spread that changes by a quarter of FUNNEL_MIN_RATIO over the driver's bins
        lambda rng: np.column_stack(
            [
                u := rng.uniform(-1, 1, 4000),
                rng.standard_normal(4000) * np.exp(np.log(FUNNEL_MIN_RATIO / 4) / 1.8 * u),
            ]
        ),
    ],
    ids=["correlated_normal", "student_t", "mild_heteroscedastic"],
)
def test_no_funnel_where_the_spread_does_not_follow_a_coordinate(draws):
    x = draws(np.random.default_rng(2))
    assert fit_funnel_map(x.reshape(4, -1, x.shape[-1])) is None


def _modes_along_a_driver(rng, offsets, top=1.5, spread=0.7):
    """Eight chains at their own levels of the first coordinate (from ``top`` to ``-top``, each
    spread by ``spread``), the second's spread following it as in a funnel (``e^u``), each
    chain about its own location ``offsets[c]``: ``(chain, draw, dim)``."""
    levels = np.linspace(top, -top, len(offsets))
    u = levels[:, None] + spread * rng.standard_normal((len(offsets), 1000))
    x = np.asarray(offsets)[:, None] + rng.standard_normal(u.shape) * np.exp(u)
    return np.stack([u, x], axis=-1)


def test_modes_joined_along_a_driver_are_not_a_funnel():
    """Chains that agree give a map, also where they sit at such different depths of the
    funnel that their spreads differ by a factor of 400 (the tail R-hat above
    ``FUNNEL_MAX_RHAT``, the bulk R-hat 1); the same spreads with the chains at the driver's
    low end each in a mode of its own (an orbit's period aliases at low amplitude) give none:
    the driven coordinate's bulk R-hat is far above ``FUNNEL_MAX_RHAT``."""
    agreeing = fit_funnel_map(_modes_along_a_driver(np.random.default_rng(5), [0] * 8))
    assert agreeing is not None and agreeing.driven.tolist() == [1]
    deep = _modes_along_a_driver(np.random.default_rng(5), [0] * 8, top=3.0, spread=0.4)
    assert array_stats.rhat(deep, chain_axis=0, draw_axis=1)[1] > FUNNEL_MAX_RHAT  # tail
    assert array_stats.rhat(deep, chain_axis=0, draw_axis=1, method="z_scale")[1] < 1.05
    assert fit_funnel_map(deep) is not None
    apart = _modes_along_a_driver(np.random.default_rng(5), [0, 0, 0, 0, -8, 8, -16, 16])
    assert array_stats.rhat(apart, chain_axis=0, draw_axis=1, method="z_scale")[1] > 2.0
    assert fit_funnel_map(apart) is None
    # modes closer together, as the two-planet orbit's chains (its bulk R-hat 1.31)
    near = _modes_along_a_driver(np.random.default_rng(5), [0, 0, 0, 0, -2, 2, -3, 3])
    near_rhat = array_stats.rhat(near, chain_axis=0, draw_axis=1, method="z_scale")[1]
    assert FUNNEL_MAX_RHAT < near_rhat < 1.5
    assert fit_funnel_map(near) is None


def test_a_funnel_beside_chains_apart_is_not_mapped():
    """A funnel whose chains agree, beside a third coordinate where they sit in modes of their
    own (an orbit's period aliases): the map would not join those modes, so none is made; the
    same third coordinate with the chains together keeps the map."""
    rng = np.random.default_rng(5)
    funnel = _modes_along_a_driver(rng, [0] * 8)
    together = rng.standard_normal((*funnel.shape[:2], 1))
    apart = together + np.array([0, 0, 0, 0, -4, 4, -8, 8])[:, None, None]
    assert fit_funnel_map(np.concatenate([funnel, together], axis=-1)) is not None
    draws = np.concatenate([funnel, apart], axis=-1)
    rhat = array_stats.rhat(draws, chain_axis=0, draw_axis=1, method="z_scale")
    assert rhat[1] < FUNNEL_MAX_RHAT < FUNNEL_OTHERS_MAX_RHAT < rhat[2]
    assert fit_funnel_map(draws) is None


@pytest.fixture(scope="module")
def funnel():
    return FunnelMap(
        driven=np.array([1, 2, 3]), driver=np.array([0, 0, 4]),
        slope=np.array([0.5, 0.4, -0.3]), center=np.array([0.2, 0.2, -1.0]),
        location=np.array([0.1, -0.2, 0.3]),
    )  # fmt: skip


def test_the_map_is_a_bijection_with_the_stated_jacobian(funnel):
    rng = np.random.default_rng(3)
    y = rng.standard_normal((6, 5))
    assert np.allclose(funnel.to_map(funnel.to_model(y)), y, rtol=1e-13, atol=1e-13)
    h = 1e-6
    for point in y:
        columns = [
            (funnel.to_model(point + h * e) - funnel.to_model(point - h * e)) / (2 * h)
            for e in np.eye(5)
        ]
        _, log_det = np.linalg.slogdet(np.column_stack(columns))
        assert log_det == pytest.approx(funnel.log_jacobian(point[None])[0], abs=1e-8)


class _Funnel:
    """Neal's funnel in NumPy as the adapter's four terms: prior ``v ~ N(0, 3^2)``,
    likelihood ``sum_i log N(x_i | 0, e^v)``."""

    dim = 5

    def terms_grad_function(self, x):
        v, rest = x[:, 0], x[:, 1:]
        log_prior = stats.norm.logpdf(v, 0.0, 3.0)
        log_lik = stats.norm.logpdf(rest, 0.0, np.exp(v / 2)[:, None]).sum(axis=1)
        g_prior = np.zeros_like(x)
        g_prior[:, 0] = -v / 9.0
        g_lik = np.zeros_like(x)
        g_lik[:, 0] = -(rest.shape[1] / 2) + 0.5 * np.sum(rest**2, axis=1) * np.exp(-v)
        g_lik[:, 1:] = -rest * np.exp(-v)[:, None]
        return log_prior, log_lik, g_prior, g_lik


def test_the_mapped_density_and_its_gradient(funnel):
    """``log f_Y = log f(x(y)) + log |det dx/dy|`` and its gradient by central differences."""
    mapped = MappedDensity(_Funnel(), funnel)
    rng = np.random.default_rng(4)
    y = rng.standard_normal((4, 5))
    log_prior, log_lik, _, _ = mapped.terms_grad_function(y)
    direct = _Funnel().terms_grad_function(funnel.to_model(y))
    assert np.allclose(log_prior, direct[0] + funnel.log_jacobian(y))
    assert np.allclose(log_lik, direct[1])
    assert_terms_gradients(mapped, y, atol=1e-6)


@pytest.fixture(scope="module")
def box():
    return funnel_box()


def _share_below(draws, v_cut):
    """The draws' share of ``v < v_cut`` (``v`` the box's first coordinate, ``U(-10, 10)``
    in logit coordinates) and its Monte Carlo SE from the indicator's ESS."""
    below = (-10 + 20 * special.expit(draws[..., 0]) < v_cut).astype(float)
    share = below.mean()
    ess = float(array_stats.ess(below, chain_axis=0, draw_axis=1))
    return share, np.sqrt(share * (1 - share) / ess)


def test_batched_hmc_reaches_the_funnels_neck(box):
    """Below ``v = -5`` the funnel in a box holds 5.03% of its mass (quadrature over ``v``):
    the draws in the map's coordinates hold that share within 4 of its SE; the first run's
    draws, with one step size per chain, hold less than half of it."""
    model, _ = box
    target = as_target(model)
    gold = 0.0503  # P(v < -5): N(v | 0, 9) erf(20 e^{-v/2} / sqrt 2)^9 on [-10, 10]
    drawn = {}
    for funnel_map in (False, True):
        settings = BatchedHMCSettings(funnel_map=funnel_map)
        drawn[funnel_map] = sample_batched_hmc(
            target, np.random.default_rng(9), settings, progressbar=False
        )
    share, se = _share_below(drawn[True][0], -5.0)
    assert abs(share - gold) < 4 * se
    assert _share_below(drawn[False][0], -5.0)[0] < gold / 2
    stats_ = drawn[True][1]
    assert stats_.funnel_map == "funnel_box_10d::x_interval__ (9 coordinates) by " + (
        "funnel_box_10d::v_interval__"
    )
    assert stats_.evaluations > drawn[False][1].evaluations  # both runs counted
    assert drawn[False][1].funnel_map == "none"


def test_auto_at_defaults_gets_the_funnel_in_a_box(box):
    """The funnel's gold: quadrature over ``v`` (checked by Monte Carlo in
    ``tests/zoo/test_multimodal.py``)."""
    model, gold = box
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the result is not flagged
        ev = pme.marginal_likelihood(model, random_seed=1, progressbar=False)
    assert ev.reliable
    assert abs(ev.log_z - gold) < max(4 * ev.se, 0.05)
    assert ev.diagnostics["draws_funnel_map"].startswith("funnel_box_10d::x_interval__")

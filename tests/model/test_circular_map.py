"""Periodic coordinates moved on circles (:mod:`pm_evidence.model.circular_map`): the test
finds a phase whose posterior straddles the ends of its interval and nothing else, the map
keeps the integral (2-D quadrature over the plane against the exact ``Z``), its gradient is
the density's, and ``auto`` at defaults gets a von Mises posterior's exact log Z."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import integrate, special

from pm_evidence.model.batched_hmc import BatchedHMCSettings, sample_batched_hmc
from pm_evidence.model.circular_map import (
    RADIUS_SD,
    CircularMap,
    find_circular_map,
    log_radius_normalizer,
)
from pm_evidence.model.log_density import as_target
from pm_evidence.model.mapped_density import MappedDensity
from tests.model.mapped_terms import (
    assert_means_within_mc_error,
    assert_terms_gradients,
    auto_within_its_se,
)

KAPPA, CENTER = 4.0, 0.1  # the von Mises' concentration and mean: mass across 0 = 2 pi


def von_mises_model():
    """``phi ~ Uniform(0, 2 pi)``, ``pm.Potential(kappa cos(phi - mu))``, a normal ``b``
    beside it: ``Z = I_0(kappa)`` (the uniform's ``1 / 2 pi`` against the von Mises'
    ``2 pi I_0(kappa)``), so ``log Z = log I_0(4)``."""
    with pm.Model() as model:
        phi = pm.Uniform("phi", 0.0, 2 * np.pi)
        pm.Normal("b", 0.0, 1.0)
        pm.Potential("von_mises", KAPPA * pt.cos(phi - CENTER))
    return model, float(np.log(special.i0(KAPPA)))


@pytest.fixture(scope="module")
def von_mises():
    model, log_z = von_mises_model()
    return as_target(model), model, log_z


def _points(rng, n=16):
    return rng.normal(0.0, 1.0, size=(n, 2))


def test_finds_the_phase_and_not_the_normal(von_mises):
    target, _, _ = von_mises
    circle = find_circular_map(target, _points(np.random.default_rng(1)))
    assert circle is not None
    assert [target.coordinate_names[k] for k in circle.coordinates] == ["phi_interval__"]


@pytest.mark.parametrize("center", [0.0, np.pi])
def test_a_sharp_phase_is_found_at_the_seam_and_opposite_it(center):
    """A von Mises of concentration 1,000 (a phase measured to 0.03 rad) with its mode where
    the interval's ends meet, or opposite: one-sided slopes of the first order would differ
    there by the curvature times the step; the second-order ones agree."""
    with pm.Model() as model:
        phi = pm.Uniform("phi", 0.0, 2 * np.pi)
        pm.Potential("von_mises", 1000.0 * pt.cos(phi - center))
    target = as_target(model)
    points = 2 * np.pi * np.random.default_rng(5).uniform(0.4, 0.6, size=(16, 1))
    points = np.log(points / (2 * np.pi)) - np.log1p(-points / (2 * np.pi))  # logits
    assert find_circular_map(target, points).coordinates.tolist() == [0]


def test_a_funnel_map_on_a_circles_coordinates_has_the_densitys_gradient(von_mises):
    """The two maps composed as batched HMC composes them: a funnel fitted to the circle's
    coordinates, rescaling the normal ``b`` by the circle's ``w_2``."""
    from pm_evidence.model.funnel_map import FunnelMap

    target, _, _ = von_mises
    circle = CircularMap(np.array([0]), 2)
    funnel = FunnelMap(
        driven=np.array([1]), driver=np.array([2]), slope=np.array([0.7]),
        center=np.array([0.1]), location=np.array([0.2]),
    )  # fmt: skip
    composed = MappedDensity(MappedDensity(target, circle), funnel)
    y = funnel.to_map(circle.to_map(np.random.default_rng(6).normal(0.0, 1.5, size=(5, 2))))
    assert_terms_gradients(composed, y * np.array([1.1, 1.0, 0.9]), atol=1e-5)


def test_a_periodic_density_is_moved_on_its_circle_wherever_its_mass_is():
    """``40 cos(pi x)`` on ``[-1, 1]``: periodic, its mass in the middle, its seam 80 nats
    below the mode (the test does not ask where the mass is)."""
    with pm.Model() as model:
        x = pm.Uniform("x", -1.0, 1.0)
        pm.Potential("p", 40.0 * pt.cos(np.pi * x))
    target = as_target(model)
    points = np.random.default_rng(2).normal(0.0, 0.3, size=(16, 1))
    assert find_circular_map(target, points).coordinates.tolist() == [0]


@pytest.mark.parametrize(
    "potential",
    [
        lambda x: -4.0 * x**2,  # symmetric about the middle: equal at the ends, opposite slopes
        lambda x: 2.0 * x,  # different at the ends
    ],
    ids=["symmetric", "one_sided"],
)
def test_no_circle_where_the_ends_do_not_meet_smoothly(potential):
    with pm.Model() as model:
        x = pm.Uniform("x", -1.0, 1.0)
        pm.Potential("p", potential(x))
    target = as_target(model)
    points = np.random.default_rng(2).normal(0.0, 0.3, size=(16, 1))
    assert find_circular_map(target, points) is None


def test_the_map_keeps_the_integral(von_mises):
    """``int f_Y dy`` over the plane (2-D quadrature, ``b`` fixed at 0) equals ``int f dz``
    over the logit coordinate: the map's Jacobian and the radius's normalizer are exact."""
    target, _, log_z = von_mises
    circle = CircularMap(np.array([0]), 2)
    mapped = MappedDensity(target, circle)

    def f_y(w1, w2):
        y = np.array([[w1, 0.0, w2]])
        terms = mapped.terms_grad_function(y)
        return float(np.exp(terms[0][0] + terms[1][0]))

    # polar: r dr dtheta; the normal b at 0 gives log N(0 | 0, 1) = -log sqrt(2 pi)
    value, _ = integrate.dblquad(
        lambda r, theta: f_y(r * np.cos(theta), r * np.sin(theta)) * r,
        -np.pi, np.pi, 0.0, 1.0 + 10 * RADIUS_SD, epsabs=1e-12, epsrel=1e-10,
    )  # fmt: skip
    assert np.log(value) == pytest.approx(log_z - 0.5 * np.log(2 * np.pi), abs=1e-7)
    c, _ = integrate.quad(lambda r: np.exp(-((r - 1) ** 2) / (2 * RADIUS_SD**2)) * r, 0, np.inf)
    assert log_radius_normalizer(RADIUS_SD) == pytest.approx(np.log(c), abs=1e-12)


def test_round_trip_and_gradient(von_mises):
    target, _, _ = von_mises
    circle = CircularMap(np.array([0]), 2)
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 2.0, size=(5, 2))
    assert np.allclose(circle.to_model(circle.to_map(x)), x, atol=1e-12)
    mapped = MappedDensity(target, circle)
    y = circle.to_map(x) * np.array([1.2, 1.0, 1.2])  # off radius 1
    assert_terms_gradients(mapped, y, atol=1e-5)


def test_batched_hmc_draws_the_von_mises_on_its_circle(von_mises):
    """The draws' circular mean and mean resultant length against the von Mises'
    (``I_1(kappa) / I_0(kappa)``), within 4 Monte Carlo SEs from the draws' ESS."""
    target, _, _ = von_mises
    draws, stats = sample_batched_hmc(
        target, np.random.default_rng(4), BatchedHMCSettings(), progressbar=False
    )
    assert stats.circular_map == "phi_interval__"
    phi = 2 * np.pi * special.expit(draws[..., 0])
    assert_means_within_mc_error(
        ((np.cos(phi - CENTER), special.i1(KAPPA) / special.i0(KAPPA)),
         (np.sin(phi - CENTER), 0.0))
    )  # fmt: skip
    assert stats.extensions == 0


def test_auto_at_defaults_gets_the_von_mises_log_z(von_mises):
    _, model, log_z = von_mises
    ev = auto_within_its_se(model, log_z)
    assert ev.diagnostics["draws_circular_map"] == "phi_interval__"

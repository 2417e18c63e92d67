"""A phase sheared by the angle of two other coordinates (:mod:`pm_evidence.model.shear_map`):
the map keeps the density's values and volume, its gradient is the density's, the test finds
a ridge's pair and sign and nothing where there is no ridge, and batched HMC and ``auto`` at
defaults draw a ridge's posterior and get its exact log Z."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from pm_evidence.model.batched_hmc import BatchedHMCSettings, sample_batched_hmc
from pm_evidence.model.circular_map import CircularMap
from pm_evidence.model.log_density import as_target
from pm_evidence.model.mapped_density import MappedDensity
from pm_evidence.model.shear_map import (
    SHEAR_MIN_SPREAD,
    ShearMap,
    find_shear_map,
    phase_spread,
)
from pm_evidence.zoo.support import phase_ridge
from tests.model.mapped_terms import (
    assert_means_within_mc_error,
    assert_terms_gradients,
    auto_within_its_se,
)

KAPPA, CENTER, SD = 50.0, 0.4, 0.5  # the mean longitude's concentration and mean; h's, k's SD
NAMES = ("phase_ridge::phi_interval__", "phase_ridge::h", "phase_ridge::k")
SHEARED = f"{NAMES[0]} by the angle of ({NAMES[1]}, {NAMES[2]})"


@pytest.fixture(scope="module")
def ridge():
    model, log_z = phase_ridge(KAPPA, CENTER, SD)
    return as_target(model), model, log_z


# the model's coordinates (phi, h, k) on the circle: (w_1, h, k, w_2); phi's plane (0, 3)
SHEAR = ShearMap(np.array([[0, 3]]), np.array([[1, 2]]), np.array([1.0]))


def test_round_trip_unit_jacobian_and_the_same_values(ridge):
    target, _, _ = ridge
    circle = CircularMap(np.array([0]), 3)
    rng = np.random.default_rng(1)
    y = rng.normal(0.0, 1.0, size=(6, 4))
    assert np.allclose(SHEAR.to_map(SHEAR.to_model(y)), y, atol=1e-12)
    h = 1e-6
    for point in y:
        columns = [
            (SHEAR.to_model(point + h * e) - SHEAR.to_model(point - h * e)) / (2 * h)
            for e in np.eye(4)
        ]
        assert np.linalg.det(np.column_stack(columns)) == pytest.approx(1.0, abs=1e-8)
    circled = MappedDensity(target, circle)
    sheared = MappedDensity(circled, SHEAR)
    for before, after in zip(
        circled.terms_grad_function(SHEAR.to_model(y))[:2],
        sheared.terms_grad_function(y)[:2],
        strict=True,
    ):
        assert np.allclose(before, after, atol=1e-12)


def test_the_gradient_is_the_densitys(ridge):
    target, _, _ = ridge
    sheared = MappedDensity(MappedDensity(target, CircularMap(np.array([0]), 3)), SHEAR)
    y = np.random.default_rng(2).normal(0.0, 1.0, size=(5, 4))
    assert_terms_gradients(sheared, y, atol=1e-5)


def _window(rng, longitude_sd: float, tied: bool, n=100, chains=8):
    """Draws ``(n, chains, 4)`` as the circle holds them: ``theta = lambda - atan2(k, h)``
    where ``tied`` (a ridge), else ``lambda`` alone, with ``lambda ~ N(0.4, longitude_sd)``."""
    h, k, other = rng.normal(0.0, SD, size=(3, n, chains))
    theta = CENTER + longitude_sd * rng.normal(size=(n, chains))
    if tied:
        theta = theta - np.arctan2(k, h)
    return np.stack([np.cos(theta), h, k, np.sin(theta)], axis=-1), other


def test_the_test_finds_the_ridges_pair_and_sign():
    window, other = _window(np.random.default_rng(3), 0.15, tied=True)
    window = np.concatenate([window, other[..., None]], axis=-1)  # a fifth coordinate
    found = find_shear_map(window, np.array([[0, 3]]), np.array([1, 2, 4]))
    assert found is not None
    assert found.pairs.tolist() == [[1, 2]] and found.signs.tolist() == [-1.0]
    assert found.describe(["phi", "h", "k", "phi[sin]", "z"]) == "phi by the angle of (h, k)"
    sheared = found.to_map(window)
    assert phase_spread(np.arctan2(sheared[..., 3], sheared[..., 0])) < 0.02


@pytest.mark.parametrize(
    ("longitude_sd", "tied"), [(1.5, False), (0.1, False)], ids=["spread", "narrow"]
)
def test_no_shear_without_a_ridge(longitude_sd, tied):
    """A spread phase that follows no pair, and a phase too narrow to need a map."""
    window, _ = _window(np.random.default_rng(4), longitude_sd, tied)
    theta = np.arctan2(window[..., 3], window[..., 0])
    assert (phase_spread(theta) < SHEAR_MIN_SPREAD) == (longitude_sd < 1)
    assert find_shear_map(window, np.array([[0, 3]]), np.array([1, 2])) is None


def test_batched_hmc_draws_the_ridge_on_its_sheared_circle(ridge):
    """The mean longitude's circular moments against the von Mises' and ``h``'s standard
    deviation against its prior's, within 4 Monte Carlo SEs from the draws' ESS; the shear
    takes fewer leapfrog steps than the circle alone."""
    target, _, _ = ridge
    draws, stats = sample_batched_hmc(
        target, np.random.default_rng(5), BatchedHMCSettings(), progressbar=False
    )
    assert stats.shear_map == SHEARED
    phi = 2 * np.pi * special.expit(draws[..., 0])
    longitude = phi + np.arctan2(draws[..., 2], draws[..., 1]) - CENTER
    resultant = special.i1(KAPPA) / special.i0(KAPPA)
    checks = ((np.cos(longitude), resultant), (np.sin(longitude), 0.0),
              (draws[..., 1] ** 2, SD**2))  # fmt: skip
    assert_means_within_mc_error(checks)
    _, circle_only = sample_batched_hmc(
        target, np.random.default_rng(5), BatchedHMCSettings(shear_map=False), progressbar=False
    )
    assert circle_only.shear_map == "none"
    assert stats.evaluations < circle_only.evaluations


def test_auto_at_defaults_gets_the_ridges_log_z(ridge):
    _, model, log_z = ridge
    ev = auto_within_its_se(model, log_z)
    assert ev.diagnostics["draws_shear_map"] == SHEARED

"""Climbs from spread particles (pm_evidence.search.climbing.spread_climbed_modes) and the
deferral they allow (pm_evidence.search.missed_mass.deferred_for_missed_mass), on a 2-D
posterior with a narrow, high mode that no particle visited but whose basin is wide: a standard
normal times ``exp(A exp(-|x - m|^2 / (2 s^2)))``. Its exact log Z comes from a fine grid
(the mode's width about ``s / sqrt(A)``, far wider than the grid's spacing)."""

from __future__ import annotations

import numpy as np
import pytest

from pm_evidence.core.utils import log_sum_exp
from pm_evidence.references import MixtureReference
from pm_evidence.search.climbing import SPREAD_CLIMBS, spread_climbed_modes
from pm_evidence.search.exploration import Exploration
from pm_evidence.search.missed_mass import (
    CLIMBED_TEST_ESS,
    deferred_for_missed_mass,
    missed_mass,
)

PEAK, HEIGHT, WIDTH = np.array([2.5, 0.0]), 12.0, 1.0


def bumped(height):
    """``(log_f, log_f_and_grad)`` of the posterior with a bump of ``height`` (0: the standard
    normal alone, normalized)."""

    def log_f(x):
        bump = height * np.exp(-np.sum((x - PEAK) ** 2, axis=1) / (2 * WIDTH**2))
        return -0.5 * np.sum(x**2, axis=1) - np.log(2 * np.pi) + bump

    def log_f_and_grad(x):
        bump = height * np.exp(-np.sum((x - PEAK) ** 2, axis=1) / (2 * WIDTH**2))
        return log_f(x), -x - bump[:, None] * (x - PEAK) / WIDTH**2

    return log_f, log_f_and_grad


def exact_log_z(height) -> float:
    """``log Z`` on a grid of spacing 0.004 over [-8, 8]^2 (the bump's mode is about 0.3 wide)."""
    axis = np.linspace(-8.0, 8.0, 4001)
    step = axis[1] - axis[0]
    log_f, _ = bumped(height)
    total = -np.inf
    for row in np.array_split(axis, 40):  # in strips, to keep the grid's memory small
        xx, yy = np.meshgrid(row, axis, indexing="ij")
        total = np.logaddexp(total, log_sum_exp(log_f(np.column_stack([xx.ravel(), yy.ravel()]))))
    return float(total + 2 * np.log(step))


def first_pass(rng):
    """A first pass whose particles (512 standard normal draws) never saw the bump: its
    mixture, one normal fitted to them, a poor reference where the bump holds the mass."""
    particles = rng.normal(size=(512, 2))
    mixture = MixtureReference.from_components(
        [1.0], particles.mean(axis=0)[None], np.cov(particles.T)[None]
    )
    return Exploration(
        particles, mixture, np.array([0.0, 1.0]), 0.0, np.ones(2), np.ones((2, 1)), 1000,
        reweighting_ess=0.02, reference_df=None,
    )  # fmt: skip


def test_climbs_from_the_particles_find_the_bump_no_particle_visited():
    """From the particles spread over the standard normal, the climbs that start in the bump's
    basin reach its mode; one component is added there (the later climbs to it are covered),
    none at the standard normal's own mode, which the mixture fits."""
    rng = np.random.default_rng(0)
    first = first_pass(rng)
    log_f, log_f_and_grad = bumped(HEIGHT)
    starts = first.particles[:SPREAD_CLIMBS]
    pool = (first.particles, log_f(first.particles))
    mixture, added, n_eval = spread_climbed_modes(first.mixture, starts, pool, log_f_and_grad)
    assert added == 1 and mixture.n_components == 2 and n_eval > SPREAD_CLIMBS
    mode = mixture.means[1]
    assert np.linalg.norm(mode - PEAK) < 0.2  # the mode is pulled a little toward the origin
    assert np.all(np.linalg.eigvalsh(mixture.chols[1] @ mixture.chols[1].T) < 0.1)  # narrow


def test_no_mode_is_added_where_the_mixture_already_fits_the_posterior():
    """Without the bump, every climb reaches the standard normal's mode, which the mixture
    covers: nothing is added."""
    rng = np.random.default_rng(1)
    first = first_pass(rng)
    log_f, log_f_and_grad = bumped(0.0)
    pool = (first.particles, log_f(first.particles))
    mixture, added, _ = spread_climbed_modes(
        first.mixture, first.particles[:SPREAD_CLIMBS], pool, log_f_and_grad
    )
    assert added == 0 and mixture is first.mixture


def test_the_second_pass_is_deferred_once_the_climbs_found_the_mass():
    """The first pass's own test does not fire (its mixture has no component at the bump, so
    no mass lies in a component the particles did not visit); with the climbed component it
    does: the second pass is deferred, the mixture holds the bump at its importance share,
    and the test's log Z agrees with the exact one within 4 of its SEs."""
    rng = np.random.default_rng(2)
    first = first_pass(rng)
    log_f, log_f_and_grad = bumped(HEIGHT)
    assert not missed_mass(first, log_f, np.random.default_rng(4)).missed
    deferred = deferred_for_missed_mass(first, log_f, log_f_and_grad, rng, 4096, [first.mixture])
    assert deferred.second_pass_deferred and deferred.missed_mass.missed
    assert deferred.n_climbed_modes == 1 and deferred.n_evaluations > first.n_evaluations + 4096
    found = deferred.missed_mass
    w = np.exp(found.log_weights - found.log_weights.max())
    se = np.std(w) / np.mean(w) / np.sqrt(w.size)  # delta method: SE of log mean w
    gold = exact_log_z(HEIGHT)
    assert gold > 3.0  # the bump holds over 95% of the mass
    assert abs(found.log_z - gold) < 4 * se
    assert found.unvisited_share > 0.9 and found.ess >= CLIMBED_TEST_ESS


def test_without_the_bump_the_first_pass_is_returned_for_the_second_pass():
    """Nothing missed and nothing climbed: the first pass comes back as it was (the same
    mixture), not deferred, its evaluations counting the climbs."""
    rng = np.random.default_rng(3)
    first = first_pass(rng)
    log_f, log_f_and_grad = bumped(0.0)
    kept = deferred_for_missed_mass(first, log_f, log_f_and_grad, rng, 4096, [first.mixture])
    assert not kept.second_pass_deferred and kept.missed_mass is None
    assert kept.mixture is first.mixture and kept.n_climbed_modes == 0
    assert kept.n_evaluations > first.n_evaluations
    assert exact_log_z(0.0) == pytest.approx(0.0, abs=1e-6)

"""The test of whether the exploration's particles missed mass its mixture found
(pm_evidence.search.missed_mass), on a posterior of two normals in 2-D whose exact log Z is 0:
a broad mode holding 5% of the mass and a narrow one, 10 units away, holding 95%."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pm_evidence.references import MixtureReference
from pm_evidence.search.coverage import compare_coverage
from pm_evidence.search.exploration import Exploration
from pm_evidence.search.missed_mass import (
    MISSED_NATS,
    UNVISITED_SHARE,
    missed_mass,
    resampled_starts,
)

BROAD, NARROW = np.array([0.0, 0.0]), np.array([10.0, 0.0])
MASSES = np.array([0.05, 0.95])
NARROW_SD = 0.1


def log_f(x):
    """``log f`` of the posterior (normalized: ``log Z = 0``)."""
    return np.logaddexp(
        np.log(MASSES[0]) + stats.multivariate_normal(BROAD, np.eye(2)).logpdf(x),
        np.log(MASSES[1]) + stats.multivariate_normal(NARROW, NARROW_SD**2 * np.eye(2)).logpdf(x),
    )


def exploration(particles, smc_log_z):
    """An exploration whose mixture has a component at each mode (the narrow one as a climb
    adds it, at the guessed weight 1 / K) and whose weights importance sampling did not set."""
    mixture = MixtureReference.from_components(
        [0.5, 0.5], np.stack([BROAD, NARROW]), np.stack([np.eye(2), NARROW_SD**2 * np.eye(2)])
    )
    return Exploration(
        particles, mixture, np.array([0.0, 1.0]), smc_log_z, np.ones(2), np.ones((2, 2)), 0,
        reference_df=None, weights_estimated=False,
    )  # fmt: skip


def test_particles_in_the_minor_mode_missed_the_mass_and_the_draws_start_where_it_is():
    """All particles in the broad mode (5% of the mass; the SMC's log Z is then about
    log 0.05): importance sampling from the mixture finds log Z = 0 within its own SE, says the
    particles missed mass, gives each component its share, and the resampled starts lie in the
    narrow mode about 95% of the time."""
    rng = np.random.default_rng(0)
    particles = rng.normal(BROAD, 1.0, (512, 2))
    found = missed_mass(exploration(particles, np.log(0.05)), log_f, rng)
    w = np.exp(found.log_weights)
    se = np.std(w) / np.mean(w) / np.sqrt(w.size)  # delta method: SE of log mean w
    assert abs(found.log_z) < 4 * se
    assert found.log_z - found.smc_log_z > MISSED_NATS
    assert found.unvisited_share == pytest.approx(found.shares[1]) and found.missed
    np.testing.assert_allclose(found.shares, MASSES, atol=4 * np.sqrt(0.05 * 0.95 / found.ess))
    assert found.diagnostics()["exploration_particles_missed_mass"] is True

    starts = resampled_starts(found, np.random.default_rng(1), 64)
    in_narrow = np.linalg.norm(starts - NARROW, axis=1) < 6 * NARROW_SD
    assert starts.shape == (64, 2)
    assert abs(in_narrow.mean() - 0.95) < 4 * np.sqrt(0.05 * 0.95 / 64)


@pytest.mark.parametrize("smc_log_z", [0.0, np.log(0.05)])
def test_particles_in_both_modes_missed_no_mode(smc_log_z):
    """Particles as posterior draws, in both modes: not missed, so the particles keep starting
    the draws; also where the SMC's log Z is low (a funnel's under-filled neck): the mass is
    in components the particles visited."""
    rng = np.random.default_rng(2)
    n_narrow = rng.binomial(512, MASSES[1])
    particles = np.concatenate([
        rng.normal(BROAD, 1.0, (512 - n_narrow, 2)),
        rng.normal(NARROW, NARROW_SD, (n_narrow, 2)),
    ])  # fmt: skip
    found = missed_mass(exploration(particles, smc_log_z), log_f, rng)
    assert found.unvisited_share < UNVISITED_SHARE
    assert not found.missed


def test_the_coverage_reads_the_importance_shares_where_the_particles_missed_mass():
    """Draws in the narrow mode alone: against the particles' shares (all in the broad mode)
    they missed everything the exploration found; against the importance shares they missed
    the broad mode's 5%, which is what they missed."""
    rng = np.random.default_rng(3)
    explored = exploration(rng.normal(BROAD, 1.0, (512, 2)), np.log(0.05))
    found = missed_mass(explored, log_f, rng)
    draws = rng.normal(NARROW, NARROW_SD, (2000, 2))
    assert compare_coverage(explored, draws).missed_by_draws == pytest.approx(1.0, abs=1e-6)
    by_importance = compare_coverage(explored, draws, shares=found.shares)
    assert by_importance.missed_by_draws == pytest.approx(found.shares[0])
    assert abs(by_importance.missed_by_draws - MASSES[0]) < 0.02


def test_no_draw_of_finite_density_found_nothing():
    """A posterior whose density is not finite at any draw of the mixture: nothing found, so
    nothing missed (and no division by zero)."""
    rng = np.random.default_rng(4)
    explored = exploration(rng.normal(BROAD, 1.0, (64, 2)), 0.0)
    found = missed_mass(explored, lambda x: np.full(len(x), np.nan), rng, n=256)
    assert found.log_z == -np.inf and not found.missed and found.ess == 0.0



def test_auto_starts_the_draws_where_the_particles_missed_the_mass():
    """``method="auto"``'s draws stage given the test's result: batched HMC's chains start at
    the resampled importance draws, so the draws sit in the narrow mode that holds 95% of the
    mass, where the particles (all in the broad mode) would have started them in the other;
    the coverage then reads the importance shares (the broad mode's 5% missed, not 100%)."""
    import pymc as pm
    import pytensor.tensor as pt

    from pm_evidence.auto import draws_coverage, draws_stage
    from pm_evidence.model.log_density import LogDensity

    def log_normal(x, mean, sd):
        return -0.5 * pt.sum(((x - mean) / sd) ** 2) - np.log(2 * np.pi * sd**2)

    with pm.Model() as model:  # a wide normal prior times the two modes
        x = pm.Normal("x", 0.0, 30.0, shape=2)
        pm.Potential("modes", pt.logaddexp(
            np.log(MASSES[0]) + log_normal(x, BROAD, 1.0),
            np.log(MASSES[1]) + log_normal(x, NARROW, NARROW_SD),
        ))  # fmt: skip
    target = LogDensity(model)
    rng = np.random.default_rng(5)
    explored = exploration(rng.normal(BROAD, 1.0, (512, 2)), -20.0)  # log Z is about -8.9
    found = missed_mass(explored, target.log_density, rng)
    assert found.missed

    plan = draws_stage(target, None, 1, False, {}, explored, found)
    assert plan.facts["draws_starts"].startswith("importance draws")
    draws = np.asarray(plan.draws).reshape(-1, 2)
    chains = np.asarray(plan.draws).shape[0]  # each chain stays in the mode it started in
    in_narrow = np.mean(np.linalg.norm(draws - NARROW, axis=1) < 6 * NARROW_SD)
    assert in_narrow > MASSES[1] - 4 * np.sqrt(MASSES[0] * MASSES[1] / chains)
    assert compare_coverage(explored, draws).missed_by_draws > 0.9  # the particles' shares
    assert draws_coverage(explored, plan, found).missed_by_draws < 0.1

"""What the draws found outside every component of the exploration's mixture is weighed by its
posterior mass, not counted by draws (issue 36, part 2)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pm_evidence.search.coverage import MIN_OUTSIDE_DRAWS, outside_mass_share

LOG_Z = 3.0


def _log_density(eps: float):
    """``f = Z ((1 - eps) N(0, 1) + eps N(10, 0.1^2))``: a local mode at 10 holding ``eps``."""

    def log_f(x):
        x = np.asarray(x)[..., 0]
        main = np.log1p(-eps) + stats.norm(0.0, 1.0).logpdf(x)
        local = np.log(eps) + stats.norm(10.0, 0.1).logpdf(x)
        return LOG_Z + np.logaddexp(main, local)

    return log_f


@pytest.mark.parametrize("eps", [1e-9, 1e-3, 0.3])
def test_a_chain_in_a_local_mode_counts_by_the_modes_mass(eps):
    rng = np.random.default_rng(4)
    stuck = rng.normal(10.0, 0.1, size=(1, 400, 1))  # one chain in the local mode
    mixing = rng.normal(0.0, 1.0, size=(3, 400, 1))  # three in the main one
    chains = np.concatenate([stuck, mixing])
    outside = np.zeros(chains.shape[:2], dtype=bool)
    outside[0] = True  # the stuck chain is outside every component; a quarter of the draws
    share = outside_mass_share(chains, outside, _log_density(eps), LOG_Z)
    # reciprocal importance sampling with a normal of half the draws' variance: the relative
    # error of 1 / mean(q / f) over 400 independent draws is a few percent
    assert share == pytest.approx(eps, rel=0.1)


def test_a_few_draws_outside_count_by_their_share_of_the_draws():
    chains = np.random.default_rng(5).normal(size=(4, 100, 2))
    outside = np.zeros((4, 100), dtype=bool)
    outside[1, : MIN_OUTSIDE_DRAWS - 1] = True
    share = outside_mass_share(chains, outside, lambda x: np.zeros(len(x)), 0.0)
    assert share == pytest.approx((MIN_OUTSIDE_DRAWS - 1) / 400)


def test_the_largest_chain_counts_not_the_sum():
    """Two chains stuck in the same local mode estimate the same mass once."""
    rng = np.random.default_rng(6)
    chains = np.concatenate([rng.normal(10.0, 0.1, size=(2, 400, 1)), rng.normal(size=(2, 400, 1))])
    outside = np.zeros(chains.shape[:2], dtype=bool)
    outside[:2] = True
    share = outside_mass_share(chains, outside, _log_density(0.01), LOG_Z)
    assert share == pytest.approx(0.01, rel=0.1)


def test_draws_outside_the_mixture_join_it_with_their_mass():
    """A posterior with two modes in 2-D, 0.3 and 0.7 of the mass (``Z = 1``), a mixture that
    found only the first, and posterior draws from both: ``with_draws_outside`` adds
    components at the second mode's draws, and importance sampling from the union is right
    (from the first mixture alone it would be ``log 0.3`` low, the draws' mode missing); draws
    all inside the mixture add nothing."""
    from pm_evidence.references import MixtureReference
    from pm_evidence.search.mixtures import with_draws_outside

    centres, shares = np.array([[-4.0, 0.0], [4.0, 1.0]]), np.array([0.3, 0.7])

    def log_f(x):
        return np.logaddexp(
            np.log(shares[0]) + stats.multivariate_normal(centres[0]).logpdf(x),
            np.log(shares[1]) + stats.multivariate_normal(centres[1]).logpdf(x),
        )

    rng = np.random.default_rng(5)
    first = MixtureReference(np.ones(1), centres[:1], np.eye(2)[None] * 1.1)
    draws = np.concatenate([
        rng.normal(centres[0], 1.0, size=(4, 200, 2)), rng.normal(centres[1], 1.0, size=(12, 200, 2))
    ])  # fmt: skip
    union, added = with_draws_outside(first, draws, log_f, rng, 4096)
    assert added >= 1 and union.n_components == 1 + added
    near = np.linalg.norm(union.means - centres[1], axis=1) < 0.5
    assert abs(union.weights[near].sum() - 0.7) < 0.05
    x = union.sample(rng, 20_000)
    log_w = log_f(x) - union.logpdf(x)
    log_z = np.logaddexp.reduce(log_w) - np.log(log_w.size)
    se = (
        np.std(np.exp(log_w - log_w.max()))
        / np.mean(np.exp(log_w - log_w.max()))
        / np.sqrt(log_w.size)
    )
    assert abs(log_z) < 4 * se + 1e-3
    inside = rng.normal(centres[0], 1.0, size=(16, 200, 2))
    same, none = with_draws_outside(first, inside, log_f, rng, 4096)
    assert none == 0 and same is first


def test_guessed_weights_are_not_read_as_mass_the_draws_missed():
    """A component added at a climbed mode has weight ``1 / K`` until importance sampling
    weighs it. Where that could not (``weighed_by_importance``: no update made or chosen, and
    the weights not nearly flat), the coverage check compares the draws with the particles'
    shares, not with that guess: a component no particle and no draw visited is no mode the
    draws missed; with weights importance sampling set, the same component is."""
    from pm_evidence.references import MixtureReference
    from pm_evidence.search.coverage import compare_coverage
    from pm_evidence.search.exploration import Exploration
    from pm_evidence.search.mixtures import weighed_by_importance

    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 30.0]])
    mixture = MixtureReference.from_components(
        [1 / 3, 1 / 3, 1 / 3], means, np.stack([np.eye(2)] * 3)
    )
    particles = np.concatenate(
        [rng.normal(means[0], 1.0, (300, 2)), rng.normal(means[1], 1.0, (100, 2))]
    )
    draws = np.concatenate(
        [rng.normal(means[0], 1.0, (600, 2)), rng.normal(means[1], 1.0, (200, 2))]
    )

    def explored(estimated):
        return Exploration(
            particles, mixture, np.array([0.0, 1.0]), 0.0, np.ones(2), np.ones((2, 3)), 0,
            weights_estimated=estimated,
        )  # fmt: skip

    guessed = compare_coverage(explored(False), draws)
    np.testing.assert_allclose(guessed.exploration_shares, [0.75, 0.25, 0.0], atol=0.01)
    assert guessed.missed_by_draws < 1e-100  # the particles' share of the guessed component
    weighed = compare_coverage(explored(True), draws)
    assert weighed.missed_by_draws == pytest.approx(1 / 3)
    # weights set by importance sampling: an update returned, or the given mixture confirmed
    # by nearly flat weights; not where the given mixture came back with heavy ones
    other = MixtureReference.from_components([0.5, 0.5], means[:2], np.stack([np.eye(2)] * 2))
    assert weighed_by_importance(mixture, other, 0.3)
    assert weighed_by_importance(mixture, mixture, 0.96)
    assert not weighed_by_importance(mixture, mixture, 0.5)
    assert not weighed_by_importance(mixture, mixture, float("nan"))


def test_guessed_components_hold_a_defensive_share_of_ais_reference():
    """Where importance sampling could not weigh the mixture, the components the particles did
    not visit keep a share of AIS's reference, ``DEFENSIVE_SHARE`` of it together where their
    guessed weights held more (AIS's chains still reach a climbed mode, without half of them
    spent where the posterior has no mass); the visited ones share the rest in their
    proportions. Weights importance sampling set are the reference's as they are."""
    from pm_evidence.references import MixtureReference
    from pm_evidence.search.exploration import DEFENSIVE_SHARE, Exploration

    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 30.0], [30.0, 30.0]])
    mixture = MixtureReference.from_components(
        [0.3, 0.2, 0.25, 0.25], means, np.stack([np.eye(2)] * 4)
    )
    particles = np.concatenate(
        [rng.normal(means[0], 1.0, (300, 2)), rng.normal(means[1], 1.0, (100, 2))]
    )

    def reference(estimated):
        return Exploration(
            particles, mixture, np.array([0.0, 1.0]), 0.0, np.ones(2), np.ones((2, 4)), 0,
            reference_df=None, weights_estimated=estimated,
        ).reference()  # fmt: skip

    defended = reference(False)
    np.testing.assert_allclose(defended.weights[2:], [DEFENSIVE_SHARE / 2] * 2)
    np.testing.assert_allclose(defended.weights[:2], (1 - DEFENSIVE_SHARE) * np.array([0.6, 0.4]))
    np.testing.assert_array_equal(defended.means, mixture.means)
    np.testing.assert_array_equal(reference(True).weights, mixture.weights)


def test_minor_modes_missed_together_are_a_miss_however_they_are_split():
    """Draws that stayed in the main mode of five miss the four minor ones, each holding 1.5%
    of the mass (under ``MISSED_SHARE`` alone, 6% together): the coverage check reports the 6%,
    as it does for one missed component of 6%."""
    from pm_evidence.references import MixtureReference
    from pm_evidence.search.coverage import MISSED_SHARE, compare_coverage
    from pm_evidence.search.exploration import Exploration

    rng = np.random.default_rng(1)
    means = np.array([[0.0, 0.0], [10.0, 0.0], [-10.0, 0.0], [0.0, 10.0], [0.0, -10.0]])
    weights = np.array([0.94, 0.015, 0.015, 0.015, 0.015])
    draws = rng.normal(means[0], 1.0, (2000, 2))

    def coverage(w):
        mixture = MixtureReference.from_components(
            w, means[: w.size], np.stack([np.eye(2)] * w.size)
        )
        explored = Exploration(
            draws, mixture, np.array([0.0, 1.0]), 0.0, np.ones(2), np.ones((2, w.size)), 0
        )
        return compare_coverage(explored, draws)

    assert max(weights[1:]) < MISSED_SHARE
    assert coverage(weights).missed_by_draws == pytest.approx(0.06, abs=1e-6)
    assert coverage(np.array([0.94, 0.06])).missed_by_draws == pytest.approx(0.06, abs=1e-6)



def _three_modes(shares):
    """``f = Z sum_k p_k N(c_k, 0.5^2 I)`` in 2-D at ``c = (0, 0), (8, 0), (-8, 0)`` (modes
    A, B, C), ``log Z = LOG_Z``."""
    centres = np.array([[0.0, 0.0], [8.0, 0.0], [-8.0, 0.0]])

    def log_f(x):
        terms = [
            np.log(p) + stats.multivariate_normal(c, 0.25 * np.eye(2)).logpdf(x)
            for p, c in zip(shares, centres, strict=True)
        ]
        return LOG_Z + np.logaddexp.reduce(terms, axis=0)

    return log_f, centres


@pytest.mark.parametrize("shares", [(0.06, 0.93, 0.01), (0.4, 0.4, 0.2)])
def test_missed_components_are_judged_as_a_share_of_all_the_mass_found(shares):
    """The exploration found modes A and C (its shares are of their mass, ``Z_e``), the draws
    found A and B, B outside every component: C's share of ``Z`` is its share of ``Z_e`` times
    ``Z_e / (Z_e + M_B)``. Where B holds 93% of ``Z``, C's seventh of ``Z_e`` is 1% of ``Z``
    and the draws missed nothing that counts; where B holds 40%, C's 20% is a miss."""
    from types import SimpleNamespace

    from pm_evidence.references import MixtureReference
    from pm_evidence.search.coverage import MISSED_SHARE, compare_coverage

    p_a, p_b, p_c = shares
    log_f, centres = _three_modes(shares)
    found = p_a + p_c  # Z_e / Z
    mixture = MixtureReference(
        np.array([p_a, p_c]) / found, centres[[0, 2]], np.stack([0.5 * np.eye(2)] * 2)
    )
    explored = SimpleNamespace(
        mixture=mixture, weights_estimated=True, particle_shares=mixture.weights
    )
    rng = np.random.default_rng(3)
    in_b = round(16 * p_b / (p_a + p_b))  # chains in B, the rest in A, as the mass is
    draws = np.concatenate([
        rng.normal(centres[1], 0.5, size=(in_b, 400, 2)),
        rng.normal(centres[0], 0.5, size=(16 - in_b, 400, 2)),
    ])  # fmt: skip
    log_z_found = LOG_Z + np.log(found)
    weights_only = compare_coverage(explored, draws, log_density=log_f, log_z=log_z_found)
    assert weights_only.missed_by_draws == pytest.approx(p_c / found)  # no rng: the shares
    values = np.array([
        compare_coverage(
            explored, draws, log_density=log_f, log_z=log_z_found, rng=np.random.default_rng(s)
        ).missed_by_draws
        for s in range(8)
    ])  # fmt: skip
    # B's draws are a normal's, so q fits B and the weights f / q are nearly constant: the
    # share is C's share of Z within the spread of repeated runs (the smallest batch's mean is
    # low in M, so the share errs high, never far low)
    assert abs(values.mean() - p_c) < 4 * values.std(ddof=1) + 0.02 * p_c
    assert values.min() > 0.95 * p_c
    assert (values >= MISSED_SHARE).all() == (p_c >= MISSED_SHARE)


def test_too_few_draws_outside_weigh_nothing():
    """Where at most ``dim + 1`` draws lie outside, no normal can be fitted to them: the ratio
    is 0, and the missed components are judged by the exploration's shares alone."""
    from pm_evidence.references import MixtureReference
    from pm_evidence.search.coverage import found_outside_ratio

    mixture = MixtureReference(np.ones(1), np.zeros((1, 2)), np.eye(2)[None])
    log_f, centres = _three_modes((0.4, 0.4, 0.2))
    few = np.random.default_rng(2).normal(centres[1], 0.5, size=(3, 2))
    assert found_outside_ratio(mixture, few, log_f, LOG_Z, np.random.default_rng(0)) == 0.0
    many = np.random.default_rng(2).normal(centres[1], 0.5, size=(400, 2))
    ratio = found_outside_ratio(mixture, many, log_f, LOG_Z, np.random.default_rng(0))
    assert 0.95 * 0.4 < ratio <= 0.4 * 1.02  # B's mass over Z, from below

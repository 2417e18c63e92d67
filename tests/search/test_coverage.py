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

"""The ELBO / IWAE / SUMO cores of seed 003 (``pm_evidence.estimators.variational``)."""

from __future__ import annotations

import numpy as np
import pytest

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.estimators import (
    draw_sumo_lengths,
    elbo_core,
    iwae_core,
    sumo_core,
    sumo_values,
)


def test_sumo_formula_on_short_rows():
    """With K = 1 the series stops after one increment: SUMO = IWAE_2 = log mean(w1, w2)."""
    lw = np.array([0.3, -1.0, 2.0, 0.5, 0.1, -0.7, 1.2])
    lengths = np.array([2, 2, 3])
    values = sumo_values(lw, lengths)
    np.testing.assert_allclose(values[:2], [np.logaddexp(0.3, -1.0) - np.log(2),
                                            np.logaddexp(2.0, 0.5) - np.log(2)])  # fmt: skip
    iwae = [
        0.1,
        np.logaddexp(0.1, -0.7) - np.log(2),
        np.logaddexp.reduce([0.1, -0.7, 1.2]) - np.log(3),
    ]
    np.testing.assert_allclose(
        values[2], iwae[0] + 1 * (iwae[1] - iwae[0]) + 2 * (iwae[2] - iwae[1])
    )
    with pytest.raises(EvidenceInputError, match="add up"):
        sumo_values(lw, [2, 2])


def test_sumo_lengths_have_the_roulette_tail():
    k = draw_sumo_lengths(np.random.default_rng(1), 200_000)
    assert k.min() >= 1
    for j in (1, 2, 5, 20):
        p = np.mean(k >= j)
        assert abs(p - 1 / j) < 4 * np.sqrt(p * (1 - p) / k.size) + 1e-12


def test_elbo_iwae_sumo_against_a_lognormal_weight():
    """log w ~ N(mu, s^2): log E[w] = mu + s^2/2 exactly, E[ELBO] = mu, E[IWAE_k] in between."""
    rng = np.random.default_rng(5)
    mu, s = 0.4, 0.8
    exact = mu + s**2 / 2
    elbo = elbo_core(rng.normal(mu, s, 50_000))
    assert abs(elbo.log_z - mu) < 4 * elbo.se
    iwae = iwae_core(rng.normal(mu, s, 50_000), 5)
    assert elbo.log_z + 4 * elbo.se < iwae.log_z < exact - 4 * iwae.se  # biased low, less so
    lengths = draw_sumo_lengths(rng, 100_000) + 1
    sumo = sumo_core(sumo_values(rng.normal(mu, s, int(lengths.sum())), lengths))
    assert abs(sumo.log_z - exact) < 4 * sumo.se
    assert sumo.diagnostics["max_share"] < 0.5

"""Diagnostics of the leaf (``pm_evidence.core.utils``): MCMC ESS, Pareto k-hat, R-hat, and its
log-sum-exp."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import special

from pm_evidence.core.utils import good_pareto_k, log_sum_exp, max_rhat, mcmc_ess, pareto_khat


def test_log_sum_exp_equals_scipys_on_every_edge_case():
    """The NumPy log-sum-exp that the mixtures, bridge and coverage use gives what
    ``scipy.special.logsumexp`` gives, to rounding: huge and tiny values, slices of ``-inf``,
    ``+inf`` and NaN, along either axis or over everything; an empty slice gives ``-inf``."""
    rng = np.random.default_rng(3)
    values = rng.normal(scale=300.0, size=(7, 5)) + 4e5
    values[1] = -np.inf
    values[2, 3] = -np.inf
    values[3, 0] = np.inf
    values[4, 2] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing leaks: no overflow or invalid-value warning
        for axis in (0, 1, -1, None):
            ours, theirs = log_sum_exp(values, axis=axis), special.logsumexp(values, axis=axis)
            np.testing.assert_allclose(ours, theirs, rtol=1e-15, atol=0)
            assert np.shape(ours) == np.shape(theirs)
        assert log_sum_exp(np.empty(0)) == -np.inf
        np.testing.assert_array_equal(log_sum_exp(np.empty((3, 0)), axis=1), np.full(3, -np.inf))


def test_mcmc_ess_is_nan_where_arviz_has_no_value():
    chains = np.tile([0.0, 1.0, np.inf, 2.0], (2, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(mcmc_ess(chains))
    assert mcmc_ess(np.ones((2, 50))) == 100.0  # constant: no variance to estimate


def test_pareto_khat_separates_light_and_heavy_tails():
    rng = np.random.default_rng(0)
    light = rng.normal(0.0, 0.3, 1000)  # log-normal weights with small spread
    heavy = np.log(rng.pareto(1 / 0.9, 1000) + 1.0)  # Pareto weights with tail index k = 0.9
    assert pareto_khat(light) < good_pareto_k(1000) < pareto_khat(heavy)
    assert good_pareto_k(100) == pytest.approx(0.5)
    assert good_pareto_k(10**6) == pytest.approx(0.7)
    assert np.isnan(pareto_khat(light[:10]))


def test_max_rhat_flags_chains_in_different_places():
    rng = np.random.default_rng(1)
    draws = rng.normal(size=(4, 500, 3))
    assert max_rhat(draws)[0] < 1.01
    draws[0, :, 2] += 1.0
    rhat, worst = max_rhat(draws)
    assert rhat > 1.01 and worst == 2

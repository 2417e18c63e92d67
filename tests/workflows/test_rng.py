"""Randomness is passed in: seeds reproduce, the global NumPy RNG is untouched."""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme

LOW_ESS_WARNING = "effective sample size of only"  # the prior is a poor proposal for this model


def test_global_numpy_rng_untouched(normal_mean_case):
    state = np.random.get_state()  # noqa: NPY002 (checking the legacy global RNG is the point)
    pme.discriminance_sampling(normal_mean_case.model, idata=normal_mean_case.idata, random_seed=1)
    with pytest.warns(UserWarning, match=LOW_ESS_WARNING):
        pme.importance_sampling(
            normal_mean_case.model, reference="prior", random_seed=1, n_reference=200
        )
    after = np.random.get_state()  # noqa: NPY002
    assert state[0] == after[0] and np.array_equal(state[1], after[1]) and state[2:] == after[2:]


def test_same_seed_same_result(normal_mean_case):
    kw = {"idata": normal_mean_case.idata, "random_seed": 42}
    a = pme.bridge_sampling(normal_mean_case.model, **kw)
    b = pme.bridge_sampling(normal_mean_case.model, **kw)
    assert a.log_z == b.log_z and a.se == b.se
    c = pme.bridge_sampling(normal_mean_case.model, idata=normal_mean_case.idata, random_seed=43)
    assert c.log_z != a.log_z


def test_prior_draws_reproducible(normal_mean_case):
    kw = {"reference": "prior", "n_reference": 100}
    with pytest.warns(UserWarning, match=LOW_ESS_WARNING):
        a = pme.importance_sampling(normal_mean_case.model, random_seed=3, **kw)
    with pytest.warns(UserWarning, match=LOW_ESS_WARNING):
        b = pme.importance_sampling(normal_mean_case.model, random_seed=3, **kw)
    assert a.log_z == b.log_z
    # a Generator seeds the stage streams with one draw: equal generators, equal results
    with pytest.warns(UserWarning, match=LOW_ESS_WARNING):
        c, d = (
            pme.importance_sampling(
                normal_mean_case.model, random_seed=np.random.default_rng(3), **kw
            )
            for _ in range(2)
        )
    assert c.log_z == d.log_z

"""Every method at its defaults (no options) on models with an exact or gold log Z (issue 13).

Each result is within 4 of its own standard errors (plus a small slack for the gold's and the
float32 parts of PyMC's log-densities) or carries a warning (``reliable`` False): no confident
wrong number. One list call per model shares the NUTS draws and the path plan, which changes no
result (tests/test_plan_and_runs.py shows a method gives the same number alone).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.stats import norm

import pm_evidence as pme
from pm_evidence.zoo import testing

ALL = [m for m in pme.METHODS if m != "auto"]
SLACK = 0.02


def _check(results, exact):
    for name, ev in results.items():
        assert ev.reliable is False or abs(ev.log_z - exact) < 4 * ev.se + SLACK, (
            name, ev.log_z - exact, ev.se,
        )  # fmt: skip


@pytest.mark.slow  # about 40 s (cold compile); the mirror modes at defaults: test_multimodality.py
def test_label_switching_mixture_at_defaults():
    """Two exchangeable components (two mirror modes; gold by 2-D quadrature): bridge, DS, IS
    and RIS (tests/test_multimodality.py has each on three seeds), and the path methods from a
    fitted reference, used to lose one mode (-log 2)."""
    model, gold = testing.label_switching_mixture()
    methods = ["bridge", "ais", "raise", "ads", "rts", "ti", "mbar"]
    results = pme.marginal_likelihood(model, method=methods, random_seed=1, progressbar=False)
    _check(results, gold)
    for name in ("bridge", "rts", "ais"):
        assert results[name].reliable, name
        assert abs(results[name].log_z - gold) < 4 * results[name].se + SLACK
        assert results[name].diagnostics["symmetrized"] is True


@pytest.mark.slow  # about 2 minutes; run by `pytest -m slow` and benchmarks/defaults.py covers it
def test_peaked_posterior_at_defaults():
    """20-D normal mean, n = 1000 per dimension, prior N(0, 10^2): the prior is a poor
    reference; at the old defaults AIS was off by -16 nats and RTS by -55 (se 0.7)."""
    model, exact = testing.peaked_normal_mean()
    path = ["ais", "raise", "ads", "rts", "ti", "mbar", "bridge"]
    results = pme.marginal_likelihood(model, method=path, random_seed=2, progressbar=False)
    _check(results, exact)
    for name in ("ais", "rts", "bridge"):
        assert results[name].reliable and results[name].se < 0.02, name


def test_support_narrower_than_the_reference_at_defaults():
    """x ~ N(0, 1) cut to x < 1 (log Z = log Phi(1)): reference draws beyond the cut have
    f = 0; TI misses log P(f > 0) and must say so, RTS and MBAR include it."""
    with pm.Model() as model:
        x = pm.Normal("x", np.float64(0.0), np.float64(1.0))
        pm.Potential("cut", pt.switch(pt.lt(x, 1.0), 0.0, -np.inf))
    exact = float(norm.logcdf(1.0))
    path = ["ais", "rts", "ti", "mbar"]
    results = pme.marginal_likelihood(model, method=path, random_seed=3, progressbar=False)
    _check(results, exact)
    for name in ("rts", "mbar", "ais"):
        assert results[name].reliable, name
    with pytest.raises(pme.EvidenceInputError, match="ADS classifies"):  # a clear refusal
        pme.marginal_likelihood(model, method="ads", random_seed=3, progressbar=False)


@pytest.mark.parametrize("seed", [0])
def test_auto_on_an_ordinary_model(seed):
    model, exact = testing.linear_regression(n=50, d=5)
    ev = pme.marginal_likelihood(model, random_seed=seed, progressbar=False)
    assert ev.reliable and abs(ev.log_z - exact) < 4 * ev.se + SLACK
    assert ev.diagnostics["auto_z"] < 4

"""Tracking log Z during training (seed 004 eq. (24)) and set-up cost accounting (the ELBO / IWAE /
SUMO cores of seed 003 are tested in ``tests/estimators/test_variational.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.estimators.tempered import rts_log_z, rts_partial_update
from pm_evidence.path.tracking import LogZTracker
from pm_evidence.zoo import energy


# ---------------------------------------------------------------------- eq. (24)
def test_partial_update_interpolates_towards_the_rts_estimate():
    rng = np.random.default_rng(0)
    log_zhat = np.concatenate([[0.0], rng.normal(size=4)])
    c_hat = rng.dirichlet(np.ones(5))
    log_r = np.log(np.full(5, 0.2))
    full = rts_log_z(c_hat, log_r, log_zhat)
    np.testing.assert_allclose(rts_partial_update(log_zhat, c_hat, log_r, 1.0), full)
    np.testing.assert_allclose(
        rts_partial_update(log_zhat, c_hat, log_r, 0.2), 0.8 * log_zhat + 0.2 * full
    )
    # occupancies equal to the prior r: Zhat is already right and stays put
    np.testing.assert_allclose(rts_partial_update(log_zhat, np.exp(log_r), log_r, 0.3), log_zhat)
    with pytest.raises(EvidenceInputError, match="alpha"):
        rts_partial_update(log_zhat, c_hat, log_r, 0.0)


def test_tracker_follows_a_changing_rbm():
    """Parameters change through pm.Data; the tracked log Z settles on the new exact value."""
    first = energy.random_rbm(6, 4, scale=0.5, seed=1)
    second = energy.random_rbm(6, 4, scale=0.8, seed=2)
    model = first.to_pymc(name="tracked", mutable=True)
    to_model = -first.size * np.log(2.0)
    tracker = LogZTracker(
        model, kernel="gibbs", reference="uniform", n_chains=100, n_rungs=20, random_seed=3
    )
    assert abs(tracker.log_z - (first.exact_log_z() + to_model)) < 0.1
    energy.set_rbm_parameters(model, second)
    for _ in range(30):
        tracker.update(n_sweeps=10, alpha=0.2)
    settled = np.array(tracker.history[-15:])
    exact = second.exact_log_z() + to_model
    # the last values are correlated draws around the target: compare their mean with their
    # own spread (an SD, not an SE: conservative for correlated values)
    assert abs(settled.mean() - exact) < 4 * settled.std(ddof=1) + 0.02
    assert abs(exact - (first.exact_log_z() + to_model)) > 10 * settled.std(ddof=1)
    assert tracker.n_evaluations > 30 * 10 * 100


def test_set_rbm_parameters_needs_a_mutable_model():
    rbm = energy.random_rbm(3, 2, seed=0)
    with pytest.raises(EvidenceInputError, match="mutable=True"):
        energy.set_rbm_parameters(rbm.to_pymc(name="fixed"), rbm)


def test_setup_evaluations_are_counted():
    rbm = energy.random_rbm(5, 3, seed=4)
    model = rbm.to_pymc(name="costs")
    ais = pme.annealed_importance_sampling(
        model, kernel="gibbs", n_chains=20, n_rungs=10, random_seed=0, progressbar=False
    )
    pilot = ais.diagnostics["n_setup_evaluations"]  # the pilot places the rungs
    assert pilot > 0
    raise_ = pme.reverse_annealed_importance_sampling(
        model, kernel="gibbs", n_chains=20, n_rungs=10, draws=30, tune=7, random_seed=0,
        progressbar=False,
    )  # fmt: skip
    per_step = 8  # single-site Gibbs: one evaluation per entry (the flipped point)
    # the same pilot (same seed and stream) plus the burn-in of 30 chains
    assert raise_.diagnostics["n_setup_evaluations"] == pilot + 30 * (1 + 7 * per_step)
    rts = pme.rao_blackwellized_tempered_sampling(
        model, kernel="gibbs", n_chains=20, n_rungs=10, n_sweeps=20, random_seed=0,
        progressbar=False,
    )  # fmt: skip
    assert rts.diagnostics["n_setup_evaluations"] > 0  # the pilot gives RTS its first Zhat

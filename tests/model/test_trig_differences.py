"""Sines and cosines of differences by angle addition (``pm_evidence.model.trig_differences``):
the constants it recognizes, the same values and gradients as the model's own graph on a
quasi-periodic kernel and on PyMC's ``Periodic``, and the sines per entry gone."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.graph.traversal import apply_ancestors
from pytensor.scalar import basic as ps
from pytensor.tensor.elemwise import Elemwise

import pm_evidence.model.graphs as graphs
from pm_evidence import LogDensity
from pm_evidence.model.packed_covariance import packing_indices
from pm_evidence.model.trig_differences import (
    MIN_DIFFERENCES,
    difference_vector,
    sines_of_differences,
)
from pm_evidence.zoo.support import periodic_gp


def _times(n: int, seed: int = 3) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).uniform(0.0, 300.0, size=n))


def test_differences_are_recognized_as_a_matrix_and_packed():
    t = _times(20)
    lag = np.pi * (t[:, None] - t[None, :])
    u, form = difference_vector(lag)
    assert form == "matrix"
    np.testing.assert_allclose(u[:, None] - u[None, :], lag, atol=1e-12 * np.abs(lag).max())
    assert abs(u.max() + u.min()) < 1e-9  # centered: the arguments no larger than needed
    u, form = difference_vector(lag[:, :, None])  # PyMC's Periodic: a trailing axis
    assert form == "matrix"
    at = packing_indices(20)
    u, form = difference_vector(lag.reshape(-1)[at.lower])
    assert form == "packed"
    np.testing.assert_allclose(u[at.rows] - u[at.cols], lag.reshape(-1)[at.lower], atol=1e-9)


def test_other_constants_are_not_taken_for_differences():
    t = _times(20)
    lag = t[:, None] - t[None, :]
    assert difference_vector(np.abs(lag)) is None  # distances, not differences
    assert difference_vector(lag + np.eye(20)) is None
    noisy = lag.copy()
    noisy[5, 7] += 1e-6 * np.abs(lag).max()
    assert difference_vector(noisy) is None
    assert difference_vector(np.random.default_rng(0).normal(size=210)) is None  # packed size
    assert difference_vector(np.arange(209.0)) is None  # not a packed size
    small = np.subtract.outer(np.arange(4.0), np.arange(4.0))
    assert small.size < MIN_DIFFERENCES and difference_vector(small) is None


def _quasi_periodic(n: int) -> pm.Model:
    """The quasi-periodic kernel of radial-velocity work, on lags computed in NumPy."""
    rng = np.random.default_rng(5)
    t = _times(n)
    lag = t[:, None] - t[None, :]
    with pm.Model() as model:
        amplitude = pm.HalfNormal("amplitude", 2.0)
        decay = pm.Uniform("decay", 10.0, 100.0)
        period = pm.Uniform("period", 5.0, 35.0)
        jitter = pm.HalfNormal("jitter", 1.0)
        kernel = amplitude**2 * pt.exp(
            -(lag**2) / (2 * decay**2) - 2 * pt.sin(np.pi * lag / period) ** 2
        )
        cov = kernel + pt.diag(0.5 + jitter**2 + 0 * t)
        pm.MvNormal("y", 0.0, cov=cov, observed=rng.normal(size=n))
    return model


def _largest_trig(outputs) -> int:
    """Entries of the largest sine or cosine in ``outputs``."""
    sizes = [
        int(np.prod(node.outputs[0].type.shape))
        for node in apply_ancestors(outputs)
        if isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, ps.Sin | ps.Cos)
    ]
    return max(sizes, default=0)


@pytest.mark.parametrize(
    "build", [_quasi_periodic, lambda n: periodic_gp(n)[0]], ids=["by_hand", "pymc_periodic"]
)
def test_the_same_values_and_gradients_with_n_sines_instead_of_one_per_entry(build, monkeypatch):
    n = 40
    model = build(n)
    rewritten = LogDensity(model)
    # the sines per entry (n (n + 1) / 2 packed, or n^2) are gone, n of them are left
    assert _largest_trig(graphs.term_passes([model.varlogp, model.datalogp])) == n
    monkeypatch.setattr(graphs, "sines_of_differences", list)
    as_written = LogDensity(model)
    assert _largest_trig(graphs.term_passes([model.varlogp, model.datalogp])) >= n * (n + 1) // 2
    x = rewritten.sample_prior(np.random.default_rng(1), 32)
    value, grad = rewritten.log_density_and_grad(x)
    value_0, grad_0 = as_written.log_density_and_grad(x)
    assert np.all(np.isfinite(value_0))
    np.testing.assert_allclose(value, value_0, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(grad, grad_0, rtol=1e-8, atol=1e-8)


def test_a_sine_of_a_parameter_times_data_that_are_not_differences_is_left_alone():
    t = _times(80)
    with pm.Model() as model:
        frequency = pm.HalfNormal("frequency", 1.0)
        pm.Normal("y", pt.sin(frequency * t), 1.0, observed=np.zeros(80))
    (term,) = sines_of_differences([model.datalogp])
    assert _largest_trig([term]) == 80


def test_on_jax_the_sines_stay_as_the_model_writes_them(monkeypatch):
    """On JAX the model's own sines ran faster (docs/benchmarks.rst): its graph is the one
    without the rewrite, Numba's the one with it."""
    pytest.importorskip("jax")
    model = _quasi_periodic(40)
    on_numba = LogDensity(model).gradient_graph_size
    on_jax = LogDensity(model, backend="jax").gradient_graph_size
    monkeypatch.setattr(graphs, "sines_of_differences", list)
    assert on_numba != on_jax
    assert LogDensity(model).gradient_graph_size == on_jax

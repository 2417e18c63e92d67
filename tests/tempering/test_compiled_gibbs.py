"""A Gibbs sweep on the device (``pm_evidence.tempering.compiled_gibbs``) is the CPU's sweep
(``pm_evidence.tempering.kernels.gibbs_step``) up to rounding: with the same uniforms, the same
moves, states and flags, for blocks of one entry and of several, binary and categorical
entries, and inside the compound kernel of a model with continuous entries. No GPU is needed:
a JAX adapter whose backend says it runs on one."""

from __future__ import annotations

import numpy as np
import pytest

from pm_evidence.model.backend import Backend
from pm_evidence.model.log_density import LogDensity
from pm_evidence.references import PriorReference
from pm_evidence.tempering import kernels
from pm_evidence.tempering.compiled_gibbs import gibbs_sweep_function
from pm_evidence.tempering.path import GeometricPath
from pm_evidence.zoo import testing as exact_models

pytest.importorskip("jax")


def _paths(model):
    """The prior path of ``model`` on a stand-in GPU (JAX) and on the CPU (Numba)."""
    device = LogDensity(model, backend="jax")
    device.backend = Backend("jax", "cuda:0 (stand-in)", "jax")
    host = LogDensity(model, backend="numba")
    return (GeometricPath(t, PriorReference(t)) for t in (device, host))


def _same_sweeps(model, blocks, levels, lowest, n=60, sweeps=3):
    device_path, host_path = _paths(model)
    assert gibbs_sweep_function(device_path, blocks, levels, lowest) is not None
    assert gibbs_sweep_function(host_path, blocks, levels, lowest) is None
    start = host_path.sample_reference(np.random.default_rng(3), n)
    beta = np.random.default_rng(4).uniform(0.0, 1.0, n)
    beta[:5] = 0.0  # the reference alone
    outs = []
    for path in (device_path, host_path):
        rng, state, moved_any = np.random.default_rng(11), start, np.zeros(n, dtype=bool)
        for _ in range(sweeps):
            state, moved, nonfinite = kernels.gibbs_step(
                rng, path, state, beta, blocks, levels, lowest, compiled=True
            )
            moved_any |= moved
        outs.append((state, moved_any, nonfinite))
    (d_state, d_moved, d_bad), (h_state, h_moved, h_bad) = outs
    np.testing.assert_array_equal(d_state.x, h_state.x)
    np.testing.assert_allclose(d_state.log_p0, h_state.log_p0, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(d_state.delta, h_state.delta, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(d_moved, h_moved)
    np.testing.assert_array_equal(d_bad, h_bad)
    return h_moved


def test_binary_sites_in_single_blocks_and_in_one_block():
    model, _ = exact_models.binary_field(n=5)
    target = LogDensity(model)
    levels, lowest = target.finite_levels, target.lowest_values
    singles = tuple(np.array([j]) for j in range(target.dim))
    assert _same_sweeps(model, singles, levels, lowest).any()
    # two blocks of several sites (not conditionally independent here: the comparison is of
    # the two implementations of the same kernel, not of its invariance)
    pairs = (np.array([0, 2, 4]), np.array([1, 3]))
    assert _same_sweeps(model, pairs, levels, lowest).any()


def test_categorical_entries_with_three_values():
    model, _ = exact_models.categorical_chain(n=4)
    target = LogDensity(model)
    singles = tuple(np.array([j]) for j in range(target.dim))
    assert _same_sweeps(model, singles, target.finite_levels, target.lowest_values).any()


def test_more_blocks_than_the_device_unrolls_stay_on_the_cpu(monkeypatch):
    from pm_evidence.tempering import compiled_gibbs

    model, _ = exact_models.binary_field(n=5)
    device_path, _ = _paths(model)
    singles = tuple(np.array([j]) for j in range(5))
    monkeypatch.setattr(compiled_gibbs, "MAX_DEVICE_BLOCKS", 4)
    target = device_path.target
    assert compiled_gibbs.gibbs_sweep_function(
        device_path, singles, target.finite_levels, target.lowest_values
    ) is None


def test_the_compound_kernels_sweep_on_the_device():
    """HMC on the continuous entries (on the CPU: a masked move), then the discrete entry's
    sweep on the device: the same chains as on the CPU."""
    model, _ = exact_models.bernoulli_switch()
    device_path, host_path = _paths(model)
    n = 40
    start = host_path.sample_reference(np.random.default_rng(3), n, with_grad=True)
    beta = np.random.default_rng(4).uniform(0.0, 1.0, n)
    step = np.full(n, 0.3)
    finals = []
    for path in (device_path, host_path):
        kernel = kernels.make_kernel("hmc+gibbs", path.target, n_leapfrog=3)
        rng, state = np.random.default_rng(5), start
        for _ in range(4):
            state, accepted, _ = kernel.step(rng, path, state, beta, step, compiled=True)
        finals.append((state, accepted))
    (d_state, d_acc), (h_state, h_acc) = finals
    swept_on_device = [k for k in device_path.target.compiled_transitions if k[0] == "gibbs_sweep"]
    assert swept_on_device and not host_path.target.compiled_transitions
    discrete = host_path.target.discrete_mask
    assert len(set(h_state.x[:, discrete].ravel())) == 2  # the switch takes both values
    np.testing.assert_array_equal(d_state.x[:, discrete], h_state.x[:, discrete])
    np.testing.assert_allclose(d_state.x, h_state.x, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(d_acc, h_acc)

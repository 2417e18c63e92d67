"""The engine of the model's compiled functions (pm_evidence.model.backend): Numba or JAX, the
same values on both, a few compiled shapes on JAX, a clear error (or, for "auto", a recorded
fallback) where PyTensor cannot compile an operation to JAX."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor import wrap_py

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.model import backend as backend_module
from pm_evidence.model.backend import Backend, bucket_rows, resolve_backend, rows_per_call
from pm_evidence.model.batched import BlockedFunction
from pm_evidence.model.log_density import LogDensity, as_target
from pm_evidence.zoo.testing import zoo

pytest.importorskip("jax")


def test_unknown_backend_is_refused_with_the_choices():
    with pytest.raises(EvidenceInputError, match=r"backend must be one of \['auto', 'numba'"):
        resolve_backend("cuda")


def test_auto_is_numba_where_jax_sees_no_accelerator(monkeypatch):
    monkeypatch.setattr(backend_module, "accelerator_plugins", lambda: ())
    chosen = resolve_backend("auto")
    assert (chosen.name, chosen.device, chosen.requested) == ("numba", "cpu", "auto")
    assert resolve_backend("jax").name == "jax"
    assert resolve_backend("jax").device.startswith("cpu")  # JAX's CPU on this machine


def test_auto_is_jax_where_jax_sees_an_accelerator(monkeypatch):
    monkeypatch.setattr(backend_module, "sees_accelerator", lambda: True)
    assert resolve_backend("auto") == Backend("jax", backend_module.jax_device(), "auto")


def test_rows_are_bucketed_to_powers_of_two_within_a_block():
    assert [bucket_rows(n, 1024) for n in (1, 16, 17, 100, 1000, 1024, 5000)] == [
        16, 16, 32, 128, 1024, 1024, 5000,
    ]  # fmt: skip
    assert bucket_rows(40, 48) == 48  # never beyond the block
    numba, gpu = Backend("numba", "cpu", "auto"), Backend("jax", "cuda:0", "auto")
    assert rows_per_call(1024, numba, 10) == 1024
    assert rows_per_call(1024, Backend("jax", "cpu:0", "jax"), 10) == 1024
    assert rows_per_call(1024, gpu, 10) == 2**16
    assert rows_per_call(2, gpu, 10**6) == 134  # 2**27 numbers per block


def test_padded_calls_compile_few_shapes_and_return_the_rows_asked_for():
    shapes = []

    def fn(a, b):
        shapes.append(a.shape[0])
        return [a.sum(axis=1) + b, a * 2.0]

    blocked = BlockedFunction(fn, block_size=64, padded=True)
    for n in (3, 5, 9, 16, 30, 64, 100, 150):
        a = np.arange(n * 2, dtype=float).reshape(n, 2)
        b = np.arange(n, dtype=float)
        out = blocked(a, b)
        np.testing.assert_array_equal(out[0], a.sum(axis=1) + b)
        np.testing.assert_array_equal(out[1], a * 2.0)
    assert set(shapes) == {16, 32, 64}  # 100 rows: 64 + 36 -> 64; 150: 64 + 64 + 22 -> 32


@pytest.mark.parametrize(
    "name",
    ["linear_regression", "dirichlet_categorical", "lkj_2d", "categorical_chain", "ordered_means"],
)
def test_jax_gives_numba_values_and_gradients(name):
    (entry,) = zoo([name])
    model, _ = entry.build()
    numba, jax = LogDensity(model, backend="numba"), LogDensity(model, backend="jax")
    assert jax.backend.name == "jax" and numba.backend.name == "numba"
    rng = np.random.default_rng(1)
    x = numba.sample_prior(rng, 37)
    # float64 on both; the LKJ prior's term differs by about 1e-8 between PyTensor's own JAX
    # and default modes (model.logp compiled in each), 10,000 times below the default SE
    tolerance = 1e-7 if name == "lkj_2d" else 1e-9
    np.testing.assert_allclose(jax.evaluate(x), numba.evaluate(x), rtol=tolerance, atol=tolerance)
    if numba.has_gradient:
        for a, b in zip(jax.evaluate_with_grad(x), numba.evaluate_with_grad(x), strict=True):
            np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)


def _model_with_an_operation_jax_lacks():
    @wrap_py(itypes=[pt.dscalar], otypes=[pt.dscalar])
    def squared(mu):
        return np.asarray(mu**2)

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", squared(mu), 1.0, observed=[0.3, 0.5])
    return model


def test_jax_names_the_operation_it_cannot_compile_and_the_fix():
    model = _model_with_an_operation_jax_lacks()
    target = LogDensity(model, backend="jax")
    with pytest.raises(EvidenceInputError, match=r"(?s)cannot compile.*squared.*backend='numba'"):
        target.log_density(np.zeros((4, 1)))


def test_auto_falls_back_to_numba_and_the_result_says_why(monkeypatch):
    monkeypatch.setattr(backend_module, "sees_accelerator", lambda: True)
    model = _model_with_an_operation_jax_lacks()
    ev = pme.marginal_likelihood(
        model, method="is", reference="prior", random_seed=1, progressbar=False
    )
    assert ev.diagnostics["backend"] == "numba"
    assert "squared" in ev.diagnostics["backend_fallback"]


def test_the_result_records_backend_and_device_and_an_adapter_keeps_its_own():
    (entry,) = zoo(["normal_mean"])
    model, _ = entry.build()
    ev = pme.marginal_likelihood(model, method="bridge", random_seed=1, progressbar=False,
                                 backend="jax")  # fmt: skip
    assert ev.diagnostics["backend"] == "jax"
    assert ev.diagnostics["device"].startswith("cpu")
    numba = as_target(model, "numba")
    assert as_target(model, "jax") is not numba  # one adapter per backend, kept on the model
    assert as_target(model, "numba") is numba
    with pytest.raises(EvidenceInputError, match="compiles on 'numba'"):
        as_target(numba, "jax")


def _model_jax_cannot_trace():
    """A split at sizes given as data (an integer ``pm.Data``): JAX needs them as constants
    while it traces, and data are inputs of the compiled function (PyTensor's own JAX mode
    fails too)."""
    with pm.Model() as model:
        n = pm.Data("n", np.array(1))
        x = pm.Normal("x", 0.0, 1.0, shape=2)
        first, _ = pt.split(x, pt.stack([n, 2 - n]), n_splits=2)
        pm.Normal("y", pt.sum(first), 1.0, observed=np.array([0.3]))
    return model


def test_a_zero_sum_normal_over_named_dims_runs_on_jax():
    """Its gradient splits an array at sizes computed from the value's shape, which the dims
    leave unknown in the graph: given one point's shapes as static ones, PyTensor's rewrites
    make those sizes constants, as JAX needs (the same values as Numba's)."""
    with pm.Model(coords={"g": range(3)}) as model:
        z = pm.ZeroSumNormal("z", sigma=1.0, dims="g")
        pm.Normal("y", z[np.array([0, 1, 2, 0, 1, 2])], 1.0, observed=np.linspace(0, 1, 6))
    x = np.random.default_rng(0).normal(size=(5, 2))
    on_jax = LogDensity(model, backend="jax").evaluate_with_grad(x)
    on_numba = LogDensity(model, backend="numba").evaluate_with_grad(x)
    for a, b in zip(on_jax, on_numba, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_graph_jax_cannot_trace_is_refused_when_compiled_not_at_a_call():
    target = LogDensity(_model_jax_cannot_trace(), backend="jax")
    with pytest.raises(EvidenceInputError, match="JAX cannot trace"):
        target.evaluate_with_grad(np.zeros((4, 2)))


def test_the_fallback_moves_every_function_and_keeps_the_block_size(monkeypatch):
    monkeypatch.setattr(backend_module, "sees_accelerator", lambda: True)
    target = LogDensity(_model_jax_cannot_trace(), backend="auto", block_size=8)
    assert target.backend.name == "jax"
    x = np.zeros((5, 2))
    log_f = target.log_density(x)  # the gradient function falls back while compiling
    assert target.backend.name == "numba" and "JAX cannot trace" in target.backend.fallback
    assert target.block_size == 8
    assert not target.terms_grad_function.padded
    np.testing.assert_allclose(
        log_f, LogDensity(target.source_model, backend="numba").log_density(x)
    )


def test_auto_and_jax_adapters_are_kept_apart(monkeypatch):
    """On a GPU machine, "auto" may move to Numba and "jax" must not: a model asked for both
    keeps one adapter for each, and "numba" shares the CPU's."""
    monkeypatch.setattr(backend_module, "sees_accelerator", lambda: True)
    model = _model_with_an_operation_jax_lacks()
    auto = LogDensity.for_model(model, "auto")
    auto.log_density(np.zeros((2, 1)))
    assert auto.backend.name == "numba"
    with pytest.raises(EvidenceInputError, match="cannot compile"):
        LogDensity.for_model(model, "jax").log_density(np.zeros((2, 1)))
    assert LogDensity.for_model(model, "auto") is auto
    assert LogDensity.for_model(model, "numba") is not auto


def test_data_replaced_with_set_data_is_seen_on_jax():
    with pm.Model() as model:
        y = pm.Data("y", np.array([0.1, 0.4, -0.2]))
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("obs", mu, 1.0, observed=y, shape=y.shape)
    jax_target = LogDensity(model, backend="jax")
    numba_target = LogDensity(model, backend="numba")
    x = np.array([[0.0], [0.5]])
    before = jax_target.log_density(x)
    pm.set_data({"y": np.array([1.0, 2.0, 3.0, 4.0])}, model=model)
    after = jax_target.log_density(x)
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, numba_target.log_density(x), rtol=1e-12)


def test_jax_without_jax_installed_is_refused_with_the_install_line(monkeypatch):
    real_find_spec = backend_module.importlib.util.find_spec
    monkeypatch.setattr(
        backend_module.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "jax" else real_find_spec(name, *a),
    )
    with pytest.raises(EvidenceInputError, match=r'needs JAX: pip install "pm_evidence\[jax\]"'):
        backend_module.check_backend("jax")
    backend_module.check_backend("numba")  # nothing to check
    with pytest.raises(EvidenceInputError, match="backend must be one of"):
        backend_module.check_backend("gpu")


@pytest.mark.parametrize("name", ["hierarchical_noncentered", "bernoulli_switch", "lkj_2d"])
def test_values_left_on_the_device_are_the_values_brought_back(name):
    """``resident=True``: the model's own JAX functions called on rows (NumPy's or the
    device's) leave their outputs there, the per-variable inputs split and the gradients
    joined on the device (zeros at discrete entries): the same numbers as the host's call."""
    from pm_evidence.model.backend import is_on_device, to_device

    (entry,) = zoo([name])
    target = LogDensity(entry.build()[0], backend="jax")
    x = target.initial_point_flat()[None, :] + np.random.default_rng(0).normal(0, 0.1, (37, target.dim))
    x[:, target.discrete_mask] = np.round(np.abs(x[:, target.discrete_mask]))
    on_host = target.evaluate_with_grad(x)
    for rows in (x, to_device(x)):
        left = target.evaluate_with_grad(rows, resident=True)
        assert all(is_on_device(a) for a in left)
        for a, b in zip(left, on_host, strict=True):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12, atol=1e-12)
    values = target.evaluate(to_device(x), via_gradient=False, resident=True)
    for a, b in zip(values, target.evaluate(x, via_gradient=False), strict=True):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12, atol=1e-12)

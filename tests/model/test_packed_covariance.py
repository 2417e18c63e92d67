"""A factorized covariance built entry by entry, computed on its lower triangle only
(``pm_evidence.model.packed_covariance``): the same values and gradients as PyMC's own, the
kernel's operations on ``n (n + 1) / 2`` entries, and nothing computed twice."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.traversal import apply_ancestors
from pytensor.scalar import basic as ps
from pytensor.tensor.elemwise import Elemwise

from pm_evidence import LogDensity
from pm_evidence.model.compile_mode import without_c_compiler
from pm_evidence.model.graphs import term_passes
from pm_evidence.model.packed_covariance import (
    MIN_PACKED_SIZE,
    lower_triangle_covariances,
    packing_indices,
)


def _quasi_periodic_model(n: int = 12) -> pm.Model:
    """``y ~ MvNormal(m, K + diag(err^2 + s^2))`` with a quasi-periodic kernel of the lags
    ``t_i - t_j`` (antisymmetric: the kernel makes them symmetric), as radial-velocity work
    writes it."""
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0.0, 30.0, size=n))
    err = rng.uniform(0.5, 1.0, size=n)
    lag = t[:, None] - t[None, :]
    with pm.Model() as model:
        amplitude = pm.HalfNormal("amplitude", 2.0)
        decay = pm.Uniform("decay", 5.0, 50.0)
        period = pm.Uniform("period", 5.0, 15.0)
        jitter = pm.HalfNormal("jitter", 1.0)
        mean = pm.Normal("mean", 0.0, 1.0)
        kernel = amplitude**2 * pt.exp(
            -(lag**2) / (2 * decay**2) - 2 * pt.sin(np.pi * lag / period) ** 2
        )
        cov = kernel + pt.diag(err**2 + jitter**2)
        pm.MvNormal("y", mean, cov=cov, observed=rng.normal(size=n))
    return model


def _matern_model(n: int = 12) -> pm.Model:
    """PyMC's own Gaussian process: a Matern 5/2 kernel of ``ls``-scaled inputs (its
    distances from a matrix product of the inputs) and a noise term, ``gp.Marginal``."""
    rng = np.random.default_rng(4)
    X = np.sort(rng.uniform(0.0, 10.0, size=n))[:, None]
    with pm.Model() as model:
        ls = pm.Gamma("ls", 2.0, 1.0)
        eta = pm.HalfNormal("eta", 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.Matern52(1, ls))
        gp.marginal_likelihood("y", X=X, y=np.sin(X[:, 0]) + rng.normal(size=n), sigma=sigma)
    return model


def _scaled_model(n: int = 12) -> pm.Model:
    """``y ~ MvNormal(0, K + 0.25 I)`` with ``K_ij = s_i s_j exp(-(t_i - t_j)^2 / 2)``: a
    scale per input, so that a column and a row of parameters enter the kernel."""
    rng = np.random.default_rng(7)
    t = np.sort(rng.uniform(0.0, 6.0, size=n))
    lag = t[:, None] - t[None, :]
    with pm.Model() as model:
        scales = pm.HalfNormal("scales", 1.0, shape=n)
        kernel = scales[:, None] * scales[None, :] * pt.exp(-(lag**2) / 2)
        pm.MvNormal("y", np.zeros(n), cov=kernel + 0.25 * np.eye(n), observed=rng.normal(size=n))
    return model


def _elementwise_sizes(outputs, scalar_op) -> set:
    """The shapes of the outputs of the elementwise ``scalar_op`` nodes of ``outputs``' graph
    that are not scalars (the parameters' own transforms)."""
    return {
        node.outputs[0].type.shape
        for node in apply_ancestors(outputs)
        if isinstance(node.op, Elemwise)
        and isinstance(node.op.scalar_op, scalar_op)
        and node.outputs[0].ndim > 0
    }


def _assert_pymcs_values_and_gradients(model, seed: int) -> None:
    target = LogDensity(model)
    x = target.sample_prior(np.random.default_rng(seed), 6)
    log_density, grad = target.log_density_and_grad(x)
    with without_c_compiler():
        logp = model.compile_logp(mode="FAST_COMPILE")
        dlogp = model.compile_dlogp(mode="FAST_COMPILE")
    start = model.initial_point()
    sizes = [np.size(start[v.name]) for v in model.value_vars]  # in the flat vector's order
    splits = np.cumsum(sizes)[:-1]
    points = [
        {v.name: piece.reshape(np.shape(start[v.name])) for v, piece in zip(
            model.value_vars, np.split(row, splits), strict=True
        )}
        for row in x
    ]  # fmt: skip
    np.testing.assert_allclose(log_density, [logp(p) for p in points], rtol=1e-11)
    np.testing.assert_allclose(grad, [dlogp(p) for p in points], rtol=1e-8, atol=1e-10)


def test_packing_and_unpacking_give_back_a_symmetric_matrix():
    """``unpack(pack(A))`` is ``A`` for a symmetric ``A``, and the lower triangle of ``A``
    spread over both for any other; the diagonal's packed indices hold the diagonal."""
    n = 7
    at = packing_indices(n)
    a = np.random.default_rng(0).normal(size=(n, n))
    symmetric = a + a.T
    assert at.lower.size == n * (n + 1) // 2
    np.testing.assert_array_equal(symmetric.ravel()[at.lower][at.full].reshape(n, n), symmetric)
    from_lower = np.tril(a) + np.tril(a, -1).T
    np.testing.assert_array_equal(a.ravel()[at.lower][at.full].reshape(n, n), from_lower)
    np.testing.assert_array_equal(a.ravel()[at.lower][at.diagonal], np.diag(a))
    np.testing.assert_array_equal(a[at.rows, at.cols], a.ravel()[at.lower])


@pytest.mark.parametrize(
    "build, scalar_op",
    [(_quasi_periodic_model, ps.Exp), (_matern_model, ps.Exp), (_scaled_model, ps.Mul)],
)
def test_a_gaussian_process_takes_its_kernel_on_the_lower_triangle_with_pymcs_values(
    build, scalar_op
):
    """The quasi-periodic kernel of radial-velocity work, PyMC's ``gp.Marginal`` with a
    Matern kernel and a kernel with a scale per input: their exponentials are taken on the
    ``n (n + 1) / 2`` packed entries, not on ``n x n`` matrices, and the log density and its
    gradient are PyMC's at prior draws. (The last kernel's exponential is of the data alone, a
    constant: its operation at each point is the product of the scales.)"""
    n = 12
    model = build(n)
    passes = term_passes([model.varlogp, model.datalogp])
    sizes = _elementwise_sizes(passes, scalar_op)
    assert (n * (n + 1) // 2,) in sizes and (n, n) not in sizes
    _assert_pymcs_values_and_gradients(model, seed=1)


def test_a_kernel_read_elsewhere_is_not_computed_twice():
    """Where something else reads the kernel's matrix (here its sum), the kernel stays an
    ``n x n`` matrix, computed once as before, and the covariance takes its entries from it:
    no exponential of packed entries is added. The covariance itself, read by anything, is
    packed; the values are the same."""
    n = 10
    rng = np.random.default_rng(6)
    lag = np.subtract.outer(*(2 * [np.sort(rng.uniform(0, 5, size=n))]))
    scale, noise = pt.scalar("scale"), pt.vector("noise", shape=(n,))
    kernel = pt.exp(-(lag**2) / scale)
    cov = kernel + pt.diag(noise)
    factor_sum = pt.log(pt.diagonal(pt.linalg.cholesky(cov))).sum()
    for reads_kernel, exp_shapes in ((True, {(n, n)}), (False, {(n * (n + 1) // 2,)})):
        outputs = [factor_sum, kernel.sum() if reads_kernel else cov.sum()]
        packed = lower_triangle_covariances(outputs)
        assert _elementwise_sizes(packed, ps.Exp) == exp_shapes
        values = (2.0, rng.uniform(1.0, 2.0, size=n))
        before, after = (
            pytensor.function([scale, noise], graphs, on_unused_input="ignore")(*values)
            for graphs in (outputs, packed)
        )
        np.testing.assert_allclose(after, before, rtol=1e-13)


def test_a_small_or_unfactorized_matrix_is_left_as_it_is():
    """Below ``MIN_PACKED_SIZE`` nothing is packed, and a matrix that no factorization reads
    is never packed."""
    small = _quasi_periodic_model(MIN_PACKED_SIZE - 1)
    passes = term_passes([small.varlogp, small.datalogp])
    assert _elementwise_sizes(passes, ps.Exp) == {(MIN_PACKED_SIZE - 1,) * 2}
    a = pt.matrix("a", shape=(10, 10))
    (total,) = lower_triangle_covariances([pt.exp(a).sum()])
    assert _elementwise_sizes([total], ps.Exp) == {(10, 10)}


def test_the_jax_backend_computes_the_same_values_and_gradients():
    """The packing is PyTensor operations, so the JAX backend compiles it as Numba does."""
    pytest.importorskip("jax")
    model = _quasi_periodic_model()
    on_numba, on_jax = LogDensity(model, backend="numba"), LogDensity(model, backend="jax")
    x = on_numba.sample_prior(np.random.default_rng(5), 5)
    for got, expected in zip(
        on_jax.log_density_and_grad(x), on_numba.log_density_and_grad(x), strict=True
    ):
        np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-11)


def _parameter_gathers(outputs, n: int) -> list:
    """The entry-takings by constant indices of length-``n`` vectors (one entry per input) that
    depend on the model's values."""
    from pytensor.graph.traversal import graph_inputs
    from pytensor.tensor.subtensor import AdvancedSubtensor

    found = []
    for node in apply_ancestors(outputs):
        if isinstance(node.op, AdvancedSubtensor) and node.inputs[0].type.shape == (n,):
            leaves = graph_inputs([node.inputs[0]])
            if any(not isinstance(v, pytensor.graph.basic.Constant) for v in leaves):
                found.append(node)
    return found


def test_a_stationary_kernels_scaled_inputs_are_taken_at_the_constants():
    """PyMC's Matern kernel on one input packs ``X / ls`` and its square at the packed rows and
    columns, whose gradient scatters ``n (n + 1) / 2`` entries back into ``n``; with
    ``gathered_constant_expressions`` the entries are taken of ``X`` (a constant) and no
    entry-taking of a vector that depends on the parameters is left. The log density is the
    same to the last bit, its gradient to rounding, and both are PyMC's. A model without such
    entry-taking keeps its graphs as they are (the same objects)."""
    from pm_evidence.model.packed_covariance import gathered_constant_expressions

    n = 12
    model = _matern_model(n)
    packed = lower_triangle_covariances([model.varlogp, model.datalogp])
    canonical = pytensor.graph.rewriting.utils.rewrite_graph(packed, include=("canonicalize",))
    assert _parameter_gathers(canonical, n)
    gathered = gathered_constant_expressions(packed)
    assert not _parameter_gathers(gathered, n)
    values = [v for v in model.value_vars]
    x = {v: np.float64(0.3 * k - 0.2) for k, v in enumerate(values)}
    before, after = (
        pytensor.function(values, graphs, on_unused_input="ignore")(*x.values())
        for graphs in (canonical, gathered)
    )
    np.testing.assert_array_equal(after, before)
    _assert_pymcs_values_and_gradients(model, seed=2)
    plain = _quasi_periodic_model()
    terms = [plain.varlogp, plain.datalogp]
    assert gathered_constant_expressions(terms) is terms

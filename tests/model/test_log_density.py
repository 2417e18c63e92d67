"""The target adapter against hand-written numpy log-densities, and its maps."""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special, stats

from pm_evidence import LogDensity
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.model.compile_mode import without_c_compiler
from pm_evidence.zoo import testing as exact_models

A, B, V0 = 3.0, 2.0, 1.0


def reference_logp(model):
    """PyMC's own log density on its Python VM (``FAST_COMPILE``), a reference: nothing to
    compile for numba, and no C for the inner functions of its log-sum-exps
    (``without_c_compiler``)."""
    with without_c_compiler():
        return model.compile_logp(mode="FAST_COMPILE")


def reference_dlogp(model, **kwargs):
    """PyMC's own gradient, built as :func:`reference_logp` is."""
    with without_c_compiler():
        return model.compile_dlogp(mode="FAST_COMPILE", **kwargs)


def assert_equals_pymc(model, target, x):
    """``target``'s log-density and gradient at the rows of ``x`` equal PyMC's own
    (a model of one vector-valued free variable)."""
    logp, grad = target.log_density_and_grad(x)
    points = [{target.layout[0].value_name: row} for row in x]
    logp_fn = reference_logp(model)
    np.testing.assert_allclose(logp, [logp_fn(p) for p in points], rtol=1e-12)
    dlogp = reference_dlogp(model)
    np.testing.assert_allclose(grad, [dlogp(p) for p in points], rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def ig_target():
    model, _ = exact_models.regression_inverse_gamma(a=A, b=B, v0=V0)
    return LogDensity.for_model(model)


def numpy_log_terms(target, x):
    """Hand-written log prior (with the log-transform Jacobian) and log likelihood."""
    model = target.model
    X = model["regression_inverse_gamma::X"].get_value()
    y = model.rvs_to_values[model["regression_inverse_gamma::y"]].data
    log_sigma2, beta = x[..., 0], x[..., 1:]
    sigma2 = np.exp(log_sigma2)
    log_prior = (
        stats.invgamma(A, scale=B).logpdf(sigma2)
        + log_sigma2  # Jacobian of sigma2 = exp(u)
        + stats.norm(0, np.sqrt(sigma2 * V0)[..., None]).logpdf(beta).sum(-1)
    )
    mean = beta @ X.T
    log_lik = stats.norm(mean, np.sqrt(sigma2)[..., None]).logpdf(y).sum(-1)
    return log_prior, log_lik


def test_layout_and_names(ig_target):
    assert ig_target.dim == 4
    assert ig_target.var_names == [
        "regression_inverse_gamma::sigma2",
        "regression_inverse_gamma::beta",
    ]
    assert ig_target.coordinate_names[0] == "regression_inverse_gamma::sigma2_log__"
    assert not ig_target.has_discrete


def test_log_density_matches_numpy(ig_target, rng):
    x = rng.normal(size=(3, 7, ig_target.dim)) * 0.5
    log_prior, log_lik = ig_target.evaluate(x)
    assert log_prior.shape == (3, 7)
    np_prior, np_lik = numpy_log_terms(ig_target, x)
    np.testing.assert_allclose(log_prior, np_prior, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(log_lik, np_lik, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ig_target.log_density(x), np_prior + np_lik, rtol=1e-10)


def test_batched_equals_model_compile_logp(ig_target, rng):
    x = rng.normal(size=(5, ig_target.dim)) * 0.5
    logp_fn = ig_target.model.compile_logp()
    loop = [
        logp_fn(
            {v.value_name: xi[v.start : v.stop].reshape(v.value_shape) for v in ig_target.layout}
        )
        for xi in x
    ]
    np.testing.assert_allclose(ig_target.log_density(x), loop, rtol=1e-12)


def test_gradient_matches_finite_differences(ig_target, rng):
    x = rng.normal(size=(2, ig_target.dim)) * 0.3
    logp, grad = ig_target.log_density_and_grad(x)
    np.testing.assert_allclose(logp, ig_target.log_density(x), rtol=1e-12)
    eps = 1e-6
    for j in range(ig_target.dim):
        step = np.zeros(ig_target.dim)
        step[j] = eps
        fd = (ig_target.log_density(x + step) - ig_target.log_density(x - step)) / (2 * eps)
        np.testing.assert_allclose(grad[:, j], fd, rtol=1e-5, atol=1e-5)


def test_maps_round_trip(ig_target, rng):
    x = rng.normal(size=(4, 6, ig_target.dim))
    values = ig_target.to_constrained(x)
    sigma2 = values["regression_inverse_gamma::sigma2"]
    np.testing.assert_allclose(sigma2, np.exp(x[..., 0]))
    assert values["regression_inverse_gamma::beta"].shape == (4, 6, 3)
    np.testing.assert_allclose(ig_target.to_unconstrained(values, batch_ndim=2), x, atol=1e-12)


def test_python_linker_runs_each_operation_on_whole_arrays(rng):
    """``PYTHON_LINKER`` (the prior draws and the flat-to-named maps) leaves elementwise
    operations unfused: the Python linker runs a fused ``Composite`` one element at a time in
    Python (4,096 prior draws of 400 bounded parameters took 40 s, their maps 16 s and 47 s;
    unfused, 0.2 s in all). The maps of such a model are the transforms' own formulas (to the
    rounding of PyTensor's sigmoid)."""
    import pytensor
    from pytensor.scalar import Composite
    from pytensor.tensor.elemwise import Elemwise

    from pm_evidence.model.compile_mode import PYTHON_LINKER

    x = pt.vector("x")
    fn = pytensor.function([x], 2.0 * (pt.log(x) - pt.log1p(-x)) + 1.0, mode=PYTHON_LINKER)
    nodes = fn.maker.fgraph.toposort()
    assert not [n for n in nodes if isinstance(n.op, Elemwise)
                and isinstance(n.op.scalar_op, Composite)]  # fmt: skip

    with pm.Model() as model:
        pm.Beta("p", np.float64(2), np.float64(3), shape=200)
        pm.Uniform("u", np.float64(-1), np.float64(2), shape=200)
    target = LogDensity(model)
    x = target.sample_prior(rng, 4096)
    values = target.to_constrained(x)
    np.testing.assert_allclose(values["p"], special.expit(x[:, :200]), rtol=1e-10)
    np.testing.assert_allclose(
        values["u"], -1 + 3 * special.expit(x[:, 200:]), rtol=1e-10, atol=1e-15
    )
    np.testing.assert_allclose(target.to_unconstrained(values), x, rtol=1e-9, atol=1e-9)


def test_posterior_to_unconstrained(inverse_gamma_case):
    target = LogDensity.for_model(inverse_gamma_case.model)
    x = target.posterior_to_unconstrained(inverse_gamma_case.idata)
    post = inverse_gamma_case.idata.posterior
    assert x.shape == (post.sizes["chain"], post.sizes["draw"], 4)
    np.testing.assert_allclose(
        np.exp(x[..., 0]), post["regression_inverse_gamma::sigma2"].values, rtol=1e-12
    )


def test_dependent_interval_transform_and_potential(rng):
    """Bounds that depend on another variable, and a pm.Potential, are both handled."""
    with pm.Model() as model:
        a = pm.Normal("a", np.float64(0.0), np.float64(1.0))
        u = pm.Uniform("u", lower=a, upper=a + np.float64(3.0))
        pm.Potential("pot", -0.5 * u**2)
        pm.Normal("y", u, np.float64(1.0), observed=np.array([0.3, -0.1]))
    target = LogDensity(model)
    x = rng.normal(size=(5, 2))
    a_val = x[:, 0]
    u_val = a_val + 3.0 / (1 + np.exp(-x[:, 1]))
    jac = np.log(3.0) - np.logaddexp(0, -x[:, 1]) - np.logaddexp(0, x[:, 1])
    prior = stats.norm.logpdf(a_val) - np.log(3.0) + jac
    lik = stats.norm.logpdf(np.array([0.3, -0.1])[None], u_val[:, None]).sum(-1) - 0.5 * u_val**2
    log_prior, log_lik = target.evaluate(x)
    np.testing.assert_allclose(log_prior, prior, rtol=1e-10)
    np.testing.assert_allclose(log_lik, lik, rtol=1e-10)
    values = target.to_constrained(x)
    np.testing.assert_allclose(values["u"], u_val)
    np.testing.assert_allclose(target.to_unconstrained(values), x, atol=1e-10)


def test_adapter_is_compiled_once_per_model(ig_target):
    assert LogDensity.for_model(ig_target.model) is ig_target


def test_wrong_point_shape(ig_target):
    with pytest.raises(EvidenceInputError, match="last dimension 4"):
        ig_target.log_density(np.zeros((3, 5)))


def test_one_input_per_variable_equals_pymc_on_every_value_shape(rng):
    """The compiled functions take one input per value variable (a matrix, a vector, a scalar,
    an integer): split from flat rows and joined back, values and gradients equal PyMC's own
    unbatched functions, and the discrete entries get gradient 0."""
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=(2, 3))
        sigma = pm.HalfNormal("sigma", 1.0)
        k = pm.Bernoulli("k", 0.3)
        b = pm.Normal("b", 0.0, 2.0, shape=2)
        mean = w.sum(axis=1) + b + k
        pm.Normal("y", mean, sigma, observed=[0.3, -1.2])
    target = LogDensity(model)
    assert [v.value_shape for v in target.layout] == [(2, 3), (), (), (2,)]
    x = rng.normal(size=(5, target.dim))
    x[:, 7] = rng.integers(0, 2, size=5)  # k's entry holds its values, 0. or 1.
    # PyMC's own functions on its Python VM: references, nothing to compile for numba
    logp_fn = reference_logp(model)
    dlogp_fn = reference_dlogp(model, vars=[w, sigma, b])
    points = [
        {"w": row[:6].reshape(2, 3), "sigma_log__": row[6], "k": int(row[7]), "b": row[8:]}
        for row in x
    ]
    log_prior, log_lik, grad_prior, grad_lik = target.evaluate_with_grad(x)
    np.testing.assert_allclose(log_prior + log_lik, [logp_fn(p) for p in points], rtol=1e-12)
    grad = grad_prior + grad_lik
    np.testing.assert_allclose(
        np.delete(grad, 7, axis=1), [dlogp_fn(p) for p in points], rtol=1e-10, atol=1e-12
    )
    np.testing.assert_array_equal(grad[:, 7], 0.0)
    np.testing.assert_allclose(target.evaluate(x)[0], log_prior, rtol=1e-14)


def test_values_come_from_the_one_gradient_function_where_there_is_one(ig_target, rng):
    """By default values are read from the value-and-gradient function (one compile per
    model), exactly; the value-only function agrees to rounding. A model whose graph has no
    gradient (a Bessel function of a free variable) evaluates with the value-only one."""
    x = rng.normal(size=(7, ig_target.dim))
    assert ig_target.has_gradient
    by_default = ig_target.evaluate(x)
    np.testing.assert_array_equal(by_default, ig_target.evaluate(x, via_gradient=True))
    np.testing.assert_allclose(by_default, ig_target.evaluate(x, via_gradient=False), rtol=1e-13)
    with pm.Model() as model:
        nu = pm.HalfNormal("nu", 1.0)
        pm.Potential("bessel", pt.log(pt.iv(nu, 2.0)))
    target = LogDensity(model)
    assert not target.has_gradient
    u = rng.normal(size=(4, 1))
    logp = reference_logp(model)
    np.testing.assert_allclose(
        target.log_density(u), [logp({"nu_log__": ui[0]}) for ui in u], rtol=1e-12
    )


def test_compiled_constants_are_c_contiguous(ig_target):
    """PyTensor folds the design matrix's transpose into a Fortran-ordered constant; the
    compiled functions hold C-ordered copies (numba compiles one implementation per layout)."""
    fgraph = ig_target.terms_grad_function.fn.function.maker.fgraph
    constants = [
        var.data for var in fgraph.variables
        if isinstance(var, pt.TensorConstant) and var.data.ndim > 1
    ]  # fmt: skip
    assert constants  # the design matrix and its transpose
    assert all(c.flags.c_contiguous for c in constants)


def test_compiled_graph_has_no_shape_checks_and_contiguous_products(ig_target, rng):
    """The gradient of a regression with its design matrix in ``pm.Data`` carries a
    ``SpecifyShape`` and products of transposes: compiled, the check is an unchecked
    ``AssumedShape`` and every computed operand of a product is a ``ContiguousCopy``; values
    and gradients still equal PyMC's own (FAST_COMPILE: no rewrite of ours)."""
    from pytensor.tensor.math import Dot
    from pytensor.tensor.shape import SpecifyShape

    from pm_evidence.model.compile_mode import AssumedShape, ContiguousCopy

    nodes = ig_target.terms_grad_function.fn.function.maker.fgraph.toposort()
    assert not any(isinstance(n.op, SpecifyShape) for n in nodes)
    assert any(isinstance(n.op, AssumedShape) for n in nodes)
    products = [n for n in nodes if isinstance(n.op, Dot)]
    assert products
    for product in products:
        for operand in product.inputs:
            assert operand.owner is None or isinstance(operand.owner.op, ContiguousCopy)
    x = rng.normal(size=(5, ig_target.dim)) * 0.5
    _, grad = ig_target.log_density_and_grad(x)
    model = ig_target.model
    dlogp = reference_dlogp(model)
    names = [v.name for v in model.value_vars]
    points = [dict(zip(names, (row[0], row[1:]), strict=True)) for row in x]
    np.testing.assert_allclose(grad, [dlogp(p) for p in points], rtol=1e-10, atol=1e-12)


def test_a_mixtures_reductions_are_fused(rng):
    """The gradient of a mixture's log-density in its location sums over observations and
    components with an ``ExpandDims`` between the two sums; compiled, no reduction stands
    alone (one fused loop), and values and gradients equal PyMC's own."""
    from pytensor.tensor.elemwise import CAReduce

    from pm_evidence.zoo.multimodal import trimodal_mixture

    model, _ = trimodal_mixture()
    target = LogDensity(model)
    nodes = target.terms_grad_function.fn.function.maker.fgraph.toposort()
    assert not [n for n in nodes if isinstance(n.op, CAReduce)]
    x = rng.normal(0.0, 3.0, size=(6, 1))
    logp, grad = target.log_density_and_grad(x)
    points = [{model.value_vars[0].name: row[0]} for row in x]
    logp_fn = reference_logp(model)
    np.testing.assert_allclose(logp, [logp_fn(p) for p in points], rtol=1e-12)
    dlogp = reference_dlogp(model)
    np.testing.assert_allclose(grad[:, 0], [dlogp(p)[0] for p in points], rtol=1e-10, atol=1e-12)


def test_a_dirichlets_gradient_splits_all_rows_at_once(rng):
    """The gradient of a Dirichlet's simplex transform splits an array whose split sizes
    vectorization left with a batch dimension of length one; compiled, the split is slices of
    all rows along their second axis (``SHARED_BLOCKWISE_INPUTS``, then ``SPLITS_AS_SLICES``),
    not a ``Blockwise`` loop over rows nor Numba's ``Split``; the sums and
    maxima of the split and joined arrays are fused loops (``FUSION_ANCHORS``), with no
    stand-alone reduction and no identity copy left; the likelihood's take along the
    categories is a masked sum, no indexing; and values and gradients equal PyMC's own."""
    from pytensor.scalar.basic import Identity
    from pytensor.tensor.basic import Split
    from pytensor.tensor.blockwise import Blockwise, BlockwiseWithCoreShape
    from pytensor.tensor.elemwise import CAReduce, Elemwise
    from pytensor.tensor.subtensor import Subtensor

    model, _ = exact_models.dirichlet_categorical()
    target = LogDensity(model)
    nodes = target.terms_grad_function.fn.function.maker.fgraph.apply_nodes
    # (the Numba linker wraps a Blockwise left in the graph as BlockwiseWithCoreShape)
    assert not [n for n in nodes if isinstance(n.op, Blockwise | BlockwiseWithCoreShape)]
    assert not [n for n in nodes if isinstance(n.op, Split)]
    assert len([n for n in nodes if isinstance(n.op, Subtensor)]) >= 2
    assert not [n for n in nodes if isinstance(n.op, CAReduce)]
    assert not [
        n for n in nodes if isinstance(n.op, Elemwise) and isinstance(n.op.scalar_op, Identity)
    ]
    # the Categorical likelihood's take_along_axis is a masked sum (slices_as_masks): no
    # advanced indexing is left
    assert _leading_advanced_axes(target.terms_grad_function.fn.function.maker.fgraph) == []
    assert_equals_pymc(model, target, rng.normal(size=(6, target.dim)))


def test_an_ordered_transforms_cumulative_sums_are_fused_loops(rng):
    """An ``ordered`` vector's transform and its gradient take cumulative sums along the
    vector, of known length (its deltas a mask: ``slices_as_masks``); compiled, each is a
    masked sum in a fused loop (``CUMSUMS_AS_SUMS``), no ``CumOp`` is left, and values and
    gradients equal PyMC's own."""
    from pytensor.tensor.extra_ops import CumOp

    model, _ = exact_models.ordered_means()
    target = LogDensity(model)
    nodes = target.terms_grad_function.fn.function.maker.fgraph.apply_nodes
    assert not [n for n in nodes if isinstance(n.op, CumOp)]
    x = np.concatenate([rng.normal(size=(5, target.dim)), [[40.0, -3.0, 2.0]]])
    assert_equals_pymc(model, target, x)


def test_cumulative_sums_along_short_axes_become_masked_sums(rng):
    """``CUMSUMS_AS_SUMS`` on every axis of an array (the same numbers as ``np.cumsum``, with
    infinities and NaN), in single precision too; an axis longer than ``MAX_CUMSUM_AS_SUM`` keeps
    its ``CumOp``. Evaluated on the Python linker: nothing to compile (NumPy adds more than 8
    terms pairwise, Numba's fused loop in order, so the axes here are short)."""
    from pytensor.graph.fg import FunctionGraph
    from pytensor.tensor.extra_ops import CumOp

    from pm_evidence.model.compile_mode import (
        CUMSUMS_AS_SUMS,
        MAX_CUMSUM_AS_SUM,
        PYTHON_LINKER,
    )

    x = pt.tensor("x", dtype="float64", shape=(2, 4, 3))
    x32 = pt.tensor("x32", dtype="float32", shape=(5,))
    long = pt.tensor("long_x", dtype="float64", shape=(MAX_CUMSUM_AS_SUM + 1,))
    outputs = [pt.cumsum(x, axis=a) for a in (0, 1, 2, -1)] + [pt.cumsum(x32), pt.cumsum(long)]
    fgraph = FunctionGraph([x, x32, long], outputs, clone=False)
    CUMSUMS_AS_SUMS.rewrite(fgraph)
    left = [n for n in fgraph.apply_nodes if isinstance(n.op, CumOp)]
    assert [n.inputs[0] for n in left] == [long]
    values = rng.normal(size=(2, 4, 3))
    values[0, 1, 2], values[1, 2, 0], values[1, 0, 1] = -np.inf, np.inf, np.nan
    values32 = rng.normal(size=5).astype("float32")
    long_values = rng.normal(size=MAX_CUMSUM_AS_SUM + 1)
    fn = pytensor.function([x, x32, long], fgraph.outputs, mode=PYTHON_LINKER)
    results = fn(values, values32, long_values)
    expected = [np.cumsum(values, axis=a) for a in (0, 1, 2, -1)]
    expected += [np.cumsum(values32), np.cumsum(long_values)]
    for result, want in zip(results, expected, strict=True):
        assert result.dtype == want.dtype
        np.testing.assert_array_equal(result, want)


def _leading_advanced_axes(fgraph) -> list:
    """The first indexed axis of each advanced indexing (read or update) in ``fgraph``."""
    from pytensor.tensor.subtensor import AdvancedIncSubtensor, AdvancedSubtensor

    return [
        next(a for a, entry in enumerate(n.op.idx_list) if not isinstance(entry, slice))
        for n in fgraph.apply_nodes
        if isinstance(n.op, AdvancedSubtensor | AdvancedIncSubtensor)
    ]


def test_advanced_indices_move_to_the_leading_axes(rng):
    """``ADVANCED_INDICES_FIRST``: reads and updates (``inc`` with repeated indices, ``set``)
    whose integer arrays follow full slices index the leading axes instead, through
    ``DimShuffle`` views, and give NumPy's numbers (negative, repeated and broadcast indices; an
    update that broadcasts from the right); a bounded slice, a non-consecutive pair and an index
    on the first axis are left as they are. On the Python linker: nothing to compile."""
    from pytensor.compile.mode import Mode
    from pytensor.graph.fg import FunctionGraph

    from pm_evidence.model.compile_mode import ADVANCED_INDICES_FIRST

    x = pt.tensor("x", dtype="float64", shape=(3, 4, 5))
    y = pt.tensor("y", dtype="float64", shape=(3, 4, 5))
    i = np.array([2, -1, 0, 2])
    row, col = np.zeros((1, 1), dtype="int64"), np.array([[4], [0], [4]])
    moved = [
        x[:, i],
        x[:, row, col],
        x[:, :, i],
        pt.inc_subtensor(x[:, i], y),
        pt.set_subtensor(x[:, row, col], y[0, 0, :1]),
        pt.inc_subtensor(x[:, :, i], y[:, :, :4]),
    ]
    z = pt.tensor("z", dtype="float64", shape=(2, 3, 4, 5))
    kept = [x[1:, i], x[i], z[:, i[:2], :, i[2:]]]
    fgraph = FunctionGraph([x, y, z], moved + kept, clone=False)
    before = _leading_advanced_axes(fgraph)
    ADVANCED_INDICES_FIRST.rewrite(fgraph)
    assert sorted(_leading_advanced_axes(fgraph)) == sorted([0] * 6 + [1, 0, 1]) != sorted(before)
    xv, yv = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 4, 5))
    zv = rng.normal(size=(2, 3, 4, 5))
    fn = pytensor.function([x, y, z], fgraph.outputs, mode=Mode(linker="py", optimizer=None))
    results = fn(xv, yv, zv)
    inc_i, set_rc, inc_last = xv.copy(), xv.copy(), xv.copy()
    np.add.at(inc_i, (slice(None), i), yv)
    set_rc[:, row, col] = yv[0, 0, :1]
    np.add.at(inc_last, (slice(None), slice(None), i), yv[:, :, :4])
    expected = [xv[:, i], xv[:, row, col], xv[:, :, i], inc_i, set_rc, inc_last]
    expected += [xv[1:, i], xv[i], zv[:, i[:2], :, i[2:]]]
    for result, want in zip(results, expected, strict=True):
        assert result.shape == want.shape
        np.testing.assert_array_equal(result, want)


def test_an_in_place_indexed_update_stays_in_place_on_the_leading_axes(rng):
    """Compiled (Numba), an in-place ``inc_subtensor(z[:, idx], y)`` of a computed ``z``
    indexes the leading axes of a view of ``z`` and is still in place
    (``ADVANCED_INDICES_FIRST`` after PyTensor's in-place rewrites), with NumPy's numbers
    (``np.add.at``: the repeated index adds twice)."""
    from pytensor.tensor.subtensor import AdvancedIncSubtensor

    from pm_evidence.model.compile_mode import model_function

    x = pt.matrix("x", shape=(None, 4))
    y = pt.matrix("y", shape=(None, 3))
    i = np.array([3, 0, 3])
    fn = model_function([x, y], pt.inc_subtensor(pt.exp(x)[:, i], y))
    [node] = [n for n in fn.maker.fgraph.apply_nodes if isinstance(n.op, AdvancedIncSubtensor)]
    assert node.op.idx_list == (0,) and node.op.inplace
    xv, yv = rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    expected = np.exp(xv)
    np.add.at(expected, (slice(None), i), yv)
    np.testing.assert_allclose(fn(xv, yv), expected, rtol=1e-14)


def test_a_64_bit_integer_sum_is_anchored_like_a_float_one():
    """``FUSION_ANCHORS`` on an ``int64`` sum (the count of a row of Bernoulli values:
    ``bernoulli_only``'s ``z.mean()``) reads it through an identity, as a float sum, and leaves an
    ``int32`` sum (summed as ``int64``); the compiled model's values at its 8 states equal
    PyMC's own."""
    from pytensor.graph.fg import FunctionGraph
    from pytensor.tensor.elemwise import CAReduce, Elemwise

    from pm_evidence.model.compile_mode import FUSION_ANCHORS

    x64 = pt.tensor("x64", dtype="int64", shape=(None, 3))
    x32 = pt.tensor("x32", dtype="int32", shape=(None, 3))
    fgraph = FunctionGraph([x64, x32], [x64.sum(axis=1), x32.sum(axis=1)], clone=False)
    FUSION_ANCHORS.rewrite(fgraph)
    read = {
        n.outputs[0].dtype + "<-" + n.inputs[0].dtype: n.inputs[0].owner
        for n in fgraph.apply_nodes
        if isinstance(n.op, CAReduce)
    }
    assert isinstance(read["int64<-int64"].op, Elemwise)  # the identity anchor
    assert read["int64<-int32"] is None  # x32 itself

    model, _ = exact_models.bernoulli_only()
    target = LogDensity(model)
    states = np.array(list(itertools.product((0, 1), repeat=target.dim)), dtype=float)
    logp_fn = reference_logp(model)
    expected = [logp_fn({target.layout[0].value_name: s.astype("int64")}) for s in states]
    np.testing.assert_allclose(target.log_density(states), expected, rtol=1e-12)


def test_an_array_indexed_by_batched_indices_is_indexed_without_a_loop(rng):
    """``INDEXING_BY_BATCHED_INDICES``: vectorized over rows of integer indices, ``p[i, j]``
    (scalar indices) and ``p[idx]`` (a vector of indices) of a constant ``p`` are Blockwise loops;
    rewritten, they are ``p``'s advanced indexing by the batched indices, with NumPy's numbers
    (negative indices included); an indexing after a slice stays a loop. On the Python linker:
    nothing to compile. (The zoo's Categorical models' values at all their states are checked
    against enumeration in tests/zoo/test_energy.py.)"""
    from pytensor.compile.mode import Mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.replace import vectorize_graph
    from pytensor.tensor.blockwise import Blockwise

    from pm_evidence.model.compile_mode import INDEXING_BY_BATCHED_INDICES

    p = pt.constant(rng.normal(size=(3, 4)))
    i, j = pt.lscalar("i"), pt.lscalar("j")
    idx = pt.lvector("idx")
    rows_i, rows_j = pt.lvector("rows_i"), pt.lvector("rows_j")
    rows_idx = pt.lmatrix("rows_idx")
    core = [p[i, j], p[idx], p[:, idx]]
    batched = vectorize_graph(core, {i: rows_i, j: rows_j, idx: rows_idx})
    inputs = [rows_i, rows_j, rows_idx]
    fgraph = FunctionGraph(inputs, batched, clone=False)
    assert sum(isinstance(n.op, Blockwise) for n in fgraph.apply_nodes) == 3
    INDEXING_BY_BATCHED_INDICES.rewrite(fgraph)
    left = [n for n in fgraph.apply_nodes if isinstance(n.op, Blockwise)]
    assert [n.outputs[0] for n in left] == [fgraph.outputs[2]]
    iv, jv = np.array([0, 2, -1, 1]), np.array([3, -2, 0, 1])
    idxv = np.array([[0, 1], [2, 2], [-1, 0], [1, 0]])
    fn = pytensor.function(inputs, fgraph.outputs, mode=Mode(linker="py", optimizer=None))
    pv = p.data
    expected = [pv[iv, jv], pv[idxv], np.stack([pv[:, r] for r in idxv])]
    for result, want in zip(fn(iv, jv, idxv), expected, strict=True):
        np.testing.assert_array_equal(result, want)


def test_splits_with_constant_sizes_become_slices(rng):
    """``SPLITS_AS_SLICES``: a ``Split`` whose sizes are constants that add up to the static
    length of its axis becomes slices with the same values (an empty part included); sizes known
    only at run time, or that do not add up (``Split``'s own error then), are left as they
    are. On the Python linker: nothing to compile."""
    from pytensor.compile.mode import Mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.tensor.basic import Split

    from pm_evidence.model.compile_mode import SPLITS_AS_SLICES

    x = pt.tensor("x", dtype="float64", shape=(4, 6))
    sizes = pt.tensor("sizes", dtype="int64", shape=(2,))
    parts = [
        *pt.split(x, [2, 0, 4], axis=1),
        *pt.split(x, [1, 3], axis=0),
        *pt.split(x, sizes, n_splits=2, axis=1),
        *pt.split(x, [2, 2], axis=1),
    ]
    fgraph = FunctionGraph([x, sizes], parts, clone=False)
    SPLITS_AS_SLICES.rewrite(fgraph)
    left = [n for n in fgraph.apply_nodes if isinstance(n.op, Split)]
    assert {tuple(n.outputs) for n in left} == {tuple(parts[5:7]), tuple(parts[7:])}
    xv = rng.normal(size=(4, 6))
    fn = pytensor.function([x, sizes], fgraph.outputs[:7], mode=Mode(linker="py", optimizer=None))
    expected = [xv[:, :2], xv[:, 2:2], xv[:, 2:], xv[:1], xv[1:], xv[:, :5], xv[:, 5:]]
    for result, want in zip(fn(xv, np.array([5, 1])), expected, strict=True):
        np.testing.assert_array_equal(result, want)


def test_parameter_checks_become_one_and_of_their_conditions(rng):
    """PyMC's ``check_parameters`` stacks its conditions (``all([all(c_1), ...])``); the
    compiled graph has them as one ``and`` instead (no ``Join``, ``MakeVector`` or ``All``
    node, each slow to compile for numba once vectorized), with the same values, ``-inf``
    where a check fails."""
    model, _ = exact_models.beta_binomial()
    target = LogDensity(model)
    x = rng.normal(size=(6, target.dim))
    logp = reference_logp(model)
    name = target.layout[0].value_name
    np.testing.assert_allclose(target.log_density(x), [logp({name: xi[0]}) for xi in x], rtol=1e-12)
    ops = {
        type(node.op).__name__
        for node in target.terms_grad_function.fn.function.maker.fgraph.apply_nodes
    }
    assert not ops & {"Join", "MakeVector", "All"}, ops
    with pm.Model() as walled:
        a = pm.Normal("a", 0.0, 1.0)
        pm.Binomial("k", n=5, p=a, observed=[2, 3])  # p outside [0, 1] fails the check
    total = LogDensity(walled)
    log_f = total.log_density(np.array([[-0.5], [0.5], [1.5]]))
    assert np.isneginf(log_f[0]) and np.isfinite(log_f[1]) and np.isneginf(log_f[2])


def test_a_tagged_cholesky_factor_is_used_without_its_decomposition(rng):
    """``MvNormal(chol=L)`` with ``L ~ LKJCholeskyCov`` takes ``cholesky(L @ L.T)``, which PyMC
    tags for PyTensor to rewrite to ``L``; the model's graphs and their gradients have no
    ``Cholesky`` left (the gradient would go through the decomposition's), with PyMC's own
    values and gradients. A covariance PyMC does not tag keeps its decomposition."""
    from pytensor.graph.traversal import ancestors
    from pytensor.tensor.linalg.decomposition.cholesky import Cholesky

    from pm_evidence.model.compile_mode import python_linker_function
    from pm_evidence.model.graphs import flat_graphs

    def choleskys(outputs):
        ops = [v.owner.op for v in ancestors(outputs) if v.owner is not None]
        return [op for op in ops if isinstance(getattr(op, "core_op", op), Cholesky)]

    model, _ = exact_models.lkj_2d()
    name = model.value_vars[0].name  # the packed factor, 3 entries
    graphs = flat_graphs(model, {name: np.zeros(3)})  # (model.initial_point compiles a Scan)
    outputs = graphs.with_grads()
    assert not choleskys(outputs)
    terms = python_linker_function([graphs.x], outputs)
    logp, dlogp = reference_logp(model), reference_dlogp(model)
    for row in rng.normal(scale=0.5, size=(4, 3)):
        log_prior, log_lik, grad_prior, grad_lik = terms(row)
        np.testing.assert_allclose(log_prior + log_lik, logp({name: row}), rtol=1e-12)
        np.testing.assert_allclose(grad_prior + grad_lik, dlogp({name: row}), rtol=1e-10)

    with pm.Model() as untagged:
        scale = pm.HalfNormal("scale", 1.0)
        cov = scale**2 * np.array([[1.0, 0.3], [0.3, 2.0]])
        pm.MvNormal("y", mu=np.zeros(2), cov=cov, observed=rng.normal(size=(5, 2)))
    point = {untagged.value_vars[0].name: np.zeros(())}
    assert choleskys(flat_graphs(untagged, point).with_grads())


@pytest.mark.parametrize("ascending", [True, False])
def test_an_ordered_transforms_slices_are_masks(rng, ascending):
    """PyMC's ``ordered`` transform writes its first entry and the ``exp`` of its deltas into an
    empty array, and its Jacobian sums a slice; on a (2, 4) value, the model's graphs and their
    gradients have no such write left (``slices_as_masks``; a descending order keeps those of
    its reversal's gradients), with PyMC's own values and gradients, where a first entry or a
    delta is so large that its ``exp`` overflows too."""
    from pytensor.graph.traversal import apply_ancestors
    from pytensor.tensor.subtensor import IncSubtensor, get_constant_idx

    from pm_evidence.model.compile_mode import python_linker_function
    from pm_evidence.model.graphs import flat_graphs

    def is_reversal(node):
        index = get_constant_idx(node.op.idx_list, [node.inputs[0], *node.inputs[2:]])
        return index[-1] == slice(None, None, -1)

    with pm.Model() as model:
        order = pm.distributions.transforms.Ordered(ascending=ascending)
        start = np.sort(rng.normal(size=(2, 4)))
        x = pm.Normal("x", 0.0, 3.0, size=(2, 4), transform=order, initval=start)
        pm.Normal("y", x, 1.0, observed=rng.normal(size=(2, 4)))
    name = model.value_vars[0].name
    graphs = flat_graphs(model, {name: np.zeros((2, 4))})
    outputs = graphs.with_grads_by_variable(graphs.values)
    writes = [n for n in apply_ancestors(outputs) if isinstance(n.op, IncSubtensor)]
    assert all(is_reversal(n) for n in writes) and bool(writes) != ascending
    terms = python_linker_function(graphs.values, outputs)
    logp, dlogp = reference_logp(model), reference_dlogp(model)
    rows = rng.normal(size=(4, 2, 4))
    rows[1, 0, 0] = 800.0  # exp(800) overflows; the first entry's is never used
    rows[2, 1, 2] = 800.0  # an overflowing delta: infinite values, as PyMC's
    rows[3, :, 0] = -40.0, 30.0
    for row in rows:
        log_prior, log_lik, grad_prior, grad_lik = terms(row)
        np.testing.assert_array_equal(log_prior + log_lik, logp({name: row}))
        grad = (grad_prior + grad_lik).ravel()
        np.testing.assert_allclose(grad, dlogp({name: row}), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("index", ["categorical", "in range", "negative", "vector gather"])
def test_takes_along_a_last_axis_of_known_length_are_masked_sums(rng, index):
    """``slices_as_masks`` writes ``take_along_axis(a, i, axis=-1)`` as a masked sum where the
    axis is of known length and ``i`` is within it (PyMC's ``Categorical`` clips its values; a
    constant index checked), with PyMC's own values and gradients (to rounding: the model's
    terms are added in another order) and no indexing left, nor its gradient's indexed write; a
    negative index (counted from the end) and a gather from a vector, ``x[i]``, stay
    indexings."""
    from pytensor.graph.traversal import apply_ancestors
    from pytensor.tensor.subtensor import AdvancedIncSubtensor, AdvancedSubtensor

    from pm_evidence.model.compile_mode import python_linker_function
    from pm_evidence.model.graphs import flat_graphs

    with pm.Model() as model:
        if index == "categorical":
            p = pm.Dirichlet("p", a=np.ones(4))
            pm.Categorical("y", p=p, observed=rng.integers(0, 4, size=20))
        elif index == "vector gather":
            x = pm.Normal("x", 0.0, 1.0, shape=4)
            pm.Potential("gathered", (x[np.array([0, 3, 1, 3])] ** 2).sum())
        else:
            x = pm.Normal("x", 0.0, 1.0, shape=(3, 4))
            taken = np.array([[0], [3], [1]]) if index == "in range" else np.array([[0], [-1], [1]])
            pm.Potential("taken", pt.take_along_axis(x**2, taken, axis=-1).sum())
    name = model.value_vars[0].name
    shape = model.initial_point()[name].shape
    graphs = flat_graphs(model, {name: np.zeros(shape)})
    outputs = graphs.with_grads_by_variable(graphs.values)
    indexings = [
        n for n in apply_ancestors(outputs)
        if isinstance(n.op, AdvancedSubtensor | AdvancedIncSubtensor)
    ]  # fmt: skip
    assert bool(indexings) == (index in ("negative", "vector gather"))
    terms = python_linker_function(graphs.values, outputs)
    logp, dlogp = reference_logp(model), reference_dlogp(model)
    for row in rng.normal(size=(4, *shape)):
        log_prior, log_lik, grad_prior, grad_lik = terms(row)
        np.testing.assert_allclose(log_prior + log_lik, logp({name: row}), rtol=1e-14)
        grad = (grad_prior + grad_lik).ravel()
        np.testing.assert_allclose(grad, dlogp({name: row}), rtol=1e-12, atol=1e-300)


def _equalities_with_a_maximum(outputs) -> int:
    """Elementwise equality tests of a value with a maximum in the graphs of ``outputs``, inner
    graphs included: where a gradient goes through a maximum, it selects where its input
    equals it."""
    from pytensor.compile.builders import OpFromGraph
    from pytensor.graph.traversal import apply_ancestors
    from pytensor.scalar.basic import EQ, Maximum
    from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise

    def is_maximum(var):
        while var.owner is not None and isinstance(var.owner.op, DimShuffle):
            var = var.owner.inputs[0]
        op = getattr(var.owner, "op", None)
        return isinstance(op, CAReduce | Elemwise) and isinstance(op.scalar_op, Maximum)

    count = 0
    for node in apply_ancestors(outputs):
        if isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, EQ):
            count += any(is_maximum(v) for v in node.inputs)
        if isinstance(node.op, OpFromGraph):
            count += _equalities_with_a_maximum(node.op.inner_outputs)
    return count


def _softmax_models(kind: str, rng) -> pm.Model:
    y = rng.normal(size=5)
    with pm.Model() as model:
        if kind == "logsumexp":  # pm.NormalMixture: a LogSumExp over the components
            mu = pm.Normal("mu", 0.0, 3.0)
            pm.NormalMixture("y", w=[0.2, 0.5, 0.3], mu=mu + np.array([-3.0, 0.0, 3.0]),
                             sigma=0.7, observed=y)  # fmt: skip
        elif kind == "logsumexp of two variables":  # the gradient reaches both
            a = pm.Normal("a", 0.0, 1.0, shape=3)
            b = pm.Normal("b", 0.0, 1.0)
            terms = pt.stack([-((a - 1) ** 2), -((b + 1) ** 2) + 0 * a, -(a**2)])
            pm.Potential("bumps", pm.math.logsumexp(terms, axis=0))
        elif kind == "simplex":  # PyMC's simplex transform: a softmax written out
            p = pm.Dirichlet("p", a=np.ones(4))
            pm.Categorical("y", p=p, observed=rng.integers(0, 4, size=20))
        else:  # a softmax whose maximum is used again: its gradient stays PyMC's own
            x = pm.Normal("x", 0.0, 1.0, shape=4)
            x_max = pt.max(x, axis=-1, keepdims=True)
            e = pt.exp(x - x_max)
            pm.Potential("shared", pt.log((e / e.sum(axis=-1, keepdims=True))[0]) + x_max[0])
    return model


@pytest.mark.parametrize(
    "kind", ["logsumexp", "logsumexp of two variables", "simplex", "shared maximum"]
)
def test_log_sum_exps_and_softmaxes_are_differentiated_as_softmaxes(rng, kind):
    """``softmax_gradients``: the gradients of a mixture's log-sum-exp, of a ``pm.math.logsumexp``
    of two variables' terms and of PyMC's simplex transform do not go through their stabilizing
    maximum (no equality test with it left, inner graphs included), and equal PyMC's own; a
    softmax whose maximum is used elsewhere is left as it is."""
    from pm_evidence.model.compile_mode import python_linker_function
    from pm_evidence.model.graphs import flat_graphs

    model = _softmax_models(kind, rng)
    shapes = {v.name: model.initial_point()[v.name].shape for v in model.value_vars}
    graphs = flat_graphs(model, {name: np.zeros(shape) for name, shape in shapes.items()})
    outputs = graphs.with_grads()
    assert (_equalities_with_a_maximum(outputs) > 0) == (kind == "shared maximum")
    terms = python_linker_function([graphs.x], outputs)
    logp, dlogp = reference_logp(model), reference_dlogp(model)
    sizes = [int(np.prod(shape)) for shape in shapes.values()]
    for row in rng.normal(size=(6, sum(sizes))):
        pieces = np.split(row, np.cumsum(sizes)[:-1])
        values = {
            name: piece.reshape(shape)
            for (name, shape), piece in zip(shapes.items(), pieces, strict=True)
        }
        log_prior, log_lik, grad_prior, grad_lik = terms(row)
        np.testing.assert_allclose(log_prior + log_lik, logp(values), rtol=1e-12)
        np.testing.assert_allclose(grad_prior + grad_lik, dlogp(values), rtol=1e-10, atol=1e-12)


def test_sums_of_constant_slices_along_a_last_axis_of_known_length_become_masked_sums(rng):
    """``slices_as_masks`` writes ``sum(v[..., s])`` as a masked sum where ``s`` is a constant
    slice of positive step of ``v``'s last axis, of known length, and the sum runs over that
    axis; the same sums. Other sums of slices are left as they are."""
    from pytensor.graph.traversal import apply_ancestors
    from pytensor.tensor.subtensor import Subtensor

    from pm_evidence.model.compile_mode import python_linker_function
    from pm_evidence.model.graphs import slices_as_masks

    v = pt.tensor("v", shape=(3, 5))
    masked = [
        v[:, 1:].sum(axis=-1),
        v[:, :-2].sum(),
        v[:, 1::2].sum(axis=(0, 1)),
        v[:, 4:].sum(axis=1),
    ]
    kept = [
        v[:, ::-1].sum(axis=-1),  # negative step: another order of terms
        v[:, 1:].sum(axis=0),  # not over the sliced axis
        v[1:, 2:].sum(),  # two axes sliced
        v[:, 1:].sum(axis=()),  # no axis summed
        pt.tensor("w", shape=(3, None))[:, 1:].sum(axis=-1),  # unknown length
    ]
    rewritten = slices_as_masks([*masked, *kept])
    for out in rewritten[: len(masked)]:
        assert not [n for n in apply_ancestors([out]) if isinstance(n.op, Subtensor)]
    for out in rewritten[len(masked) :]:
        assert [n for n in apply_ancestors([out]) if isinstance(n.op, Subtensor)]
    value = rng.normal(size=(3, 5))
    value[0, 0] = np.inf  # outside every masked slice's entries of row 0
    before = python_linker_function([v], masked)(value)
    after = python_linker_function([v], rewritten[: len(masked)])(value)
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("b_rows", [None, 1])
def test_triangular_solves_with_one_factor_per_row_are_one_solve_of_columns(rng, b_rows):
    """``solve_triangular(L, y_i)`` for 30 observations ``y_i`` with one factor ``L`` per row
    (an ``MvNormal(chol=L)`` on observed data, vectorized over points; the data the same for
    every row or not) becomes one solve per row of 30 right-hand sides
    (``TRIANGULAR_SOLVES_BY_COLUMNS``), with the same values. A factor per observation is left
    as it is."""
    from pytensor.graph.rewriting.utils import rewrite_graph
    from pytensor.graph.traversal import apply_ancestors
    from pytensor.tensor.blockwise import Blockwise
    from pytensor.tensor.linalg import solve_triangular
    from pytensor.tensor.linalg.solvers.triangular import SolveTriangular

    from pm_evidence.model.compile_mode import PYTHON_LINKER, TRIANGULAR_SOLVES_BY_COLUMNS

    def solves(outputs):
        return [n.op.core_op.b_ndim for n in apply_ancestors(outputs)
                if isinstance(n.op, Blockwise) and isinstance(n.op.core_op, SolveTriangular)]  # fmt: skip

    def by_columns(x):
        return rewrite_graph(x, include=(), custom_rewrite=TRIANGULAR_SOLVES_BY_COLUMNS)

    factor = pt.tensor("factor", shape=(None, 1, 3, 3))
    y = pt.tensor("y", shape=(b_rows, 30, 3))
    for lower in (True, False):
        x = solve_triangular(factor, y, lower=lower, b_ndim=1)
        rewritten = by_columns(x)
        assert solves([x]) == [1] and solves([rewritten]) == [2]
        fn = pytensor.function([factor, y], [x, rewritten], mode=PYTHON_LINKER)
        L = np.tril(rng.normal(size=(5, 1, 3, 3))) + 3.0 * np.eye(3)
        expected, got = fn(
            L if lower else L.swapaxes(-1, -2), rng.normal(size=(b_rows or 5, 30, 3))
        )
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)

    per_observation = solve_triangular(pt.tensor(shape=(None, 30, 3, 3)), y, b_ndim=1)
    assert solves([by_columns(per_observation)]) == [1]


def test_a_solve_in_place_on_contiguous_columns_leaves_the_input_alone(rng):
    """With one observation at run time the columns ``TRIANGULAR_SOLVES_BY_COLUMNS`` makes are
    C-ordered already, so :class:`ContiguousCopy` returns the input itself; the solve, in place
    on its right-hand side, must not overwrite the function's input (``ContiguousCopy`` is a
    view of it). The model mode's rewrites, on the Python linker."""
    from pytensor.compile.mode import Mode
    from pytensor.tensor.linalg import solve_triangular

    from pm_evidence.model.compile_mode import model_function_mode

    factor = pt.tensor("factor", shape=(None, 1, 3, 3))
    y = pt.tensor("y", shape=(None, None, 3))
    x = solve_triangular(factor, y, lower=True, b_ndim=1)
    mode = Mode(linker="py", optimizer=model_function_mode().provided_optimizer)
    fn = pytensor.function([factor, y], 2.0 * x, mode=mode)
    y_value = rng.normal(size=(4, 1, 3))
    before = y_value.copy()
    L = np.tril(rng.normal(size=(4, 1, 3, 3))) + 3.0 * np.eye(3)
    np.testing.assert_allclose(fn(L, y_value), 2.0 * np.linalg.solve(L, before[..., None])[..., 0])
    np.testing.assert_array_equal(y_value, before)


def test_products_with_a_vector_or_of_small_matrices_are_sums(rng):
    """``VECTOR_PRODUCTS_AS_SUMS``: vectorized over rows, ``x @ W @ x`` (a row vector times a
    matrix, then times a vector) and ``A @ B`` of 2 x 2 matrices are products and sums with
    NumPy's numbers; a product of 8 x 8 matrices (512 products per row), a 100 x 100 matrix
    times a vector (a sum of 100 terms) and the rows times a data matrix stay matrix products. On the Python linker: nothing to compile. Compiled, a
    binary model's pairwise potential ``x @ W @ x`` has no matrix product with a vector left, and
    its values at all 64 states equal PyMC's own."""
    from pytensor.compile.mode import Mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.replace import vectorize_graph
    from pytensor.tensor.blockwise import Blockwise
    from pytensor.tensor.math import Dot

    from pm_evidence.model.compile_mode import VECTOR_PRODUCTS_AS_SUMS

    def products(fgraph):
        return [
            n
            for n in fgraph.apply_nodes
            if isinstance(n.op, Dot)
            or (isinstance(n.op, Blockwise) and isinstance(n.op.core_op, Dot))
        ]

    w, data = pt.constant(rng.normal(size=(3, 3))), pt.constant(rng.normal(size=(5, 3)))
    long_row = pt.constant(rng.normal(size=100))
    x, a, b = pt.vector("x", shape=(3,)), pt.matrix("a", shape=(2, 2)), pt.matrix("b", shape=(8, 8))
    rows_x, rows_a = pt.matrix("rows_x", shape=(None, 3)), pt.tensor3("rows_a", shape=(None, 2, 2))
    rows_b = pt.tensor3("rows_b", shape=(None, 8, 8))
    rows_v = pt.tensor3("rows_v", shape=(None, 100, 100))
    v = pt.matrix("v", shape=(100, 100))
    core = [x @ w @ x, a @ a, b @ b, v @ long_row]
    # the data matrix times the rows as PyTensor's rewrites leave it: one matrix product
    replace = {x: rows_x, a: rows_a, b: rows_b, v: rows_v}
    batched = [*vectorize_graph(core, replace), rows_x @ data.T]
    fgraph = FunctionGraph([rows_x, rows_a, rows_b, rows_v], batched, clone=True)
    assert len(products(fgraph)) == 6
    VECTOR_PRODUCTS_AS_SUMS.rewrite(fgraph)
    left = products(fgraph)
    assert len(left) == 3  # b @ b, the sum of 100 terms and rows_x @ data.T
    assert {n.inputs[0].type.shape[-1] for n in left} == {8, 100, 3}
    xv, av, bv = rng.normal(size=(4, 3)), rng.normal(size=(4, 2, 2)), rng.normal(size=(4, 8, 8))
    vv = rng.normal(size=(4, 100, 100))
    fn = pytensor.function(fgraph.inputs, fgraph.outputs, mode=Mode(linker="py"))
    got = fn(xv, av, bv, vv)
    wv, dv = w.data, data.data
    np.testing.assert_allclose(got[0], np.einsum("ri,ij,rj->r", xv, wv, xv), rtol=1e-12)
    np.testing.assert_allclose(got[1], av @ av, rtol=1e-12)
    np.testing.assert_allclose(got[2], bv @ bv, rtol=1e-12)
    np.testing.assert_allclose(got[3], vv @ long_row.data, rtol=1e-12)
    np.testing.assert_allclose(got[4], xv @ dv.T, rtol=1e-12)

    model, _ = exact_models.binary_field()
    target = LogDensity(model)
    compiled = products(target.terms_function.fn.function.maker.fgraph)
    assert all(1 not in (n.inputs[0].type.shape[-2], n.inputs[1].type.shape[-1]) for n in compiled)
    states = np.array(list(itertools.product((0, 1), repeat=target.dim)), dtype=float)
    logp_fn = reference_logp(model)
    expected = [logp_fn({target.layout[0].value_name: s.astype("int64")}) for s in states]
    np.testing.assert_allclose(target.log_density(states), expected, rtol=1e-12)


def test_the_rewrites_at_one_position_run_in_the_documented_order():
    """PyTensor orders rewrites registered at the same position by their names (which hold an
    object id), so the model mode registers each position once: the rewrites before the fusion
    are one sequence, in the order of the module's docstring."""
    from pytensor.link.numba.linker import NumbaLinker

    from pm_evidence.model import compile_mode as cm

    mode = cm.model_function_mode()
    positions = [position for _, position in mode.provided_optimizer.extra_rewrites]
    assert len(set(positions)) == len(positions)
    (sequence,) = [
        r for r, p in mode.provided_optimizer.extra_rewrites if p == cm.REWRITES_POSITION
    ]
    expected = [
        cm.ContiguousConstants,
        cm.TRIANGULAR_SOLVES_BY_COLUMNS,
        cm.SHARED_BLOCKWISE_INPUTS,
        cm.INDEXING_BY_BATCHED_INDICES,
    ]
    if isinstance(mode.linker, NumbaLinker):
        expected += [
            cm.UncheckedShapes,
            cm.VECTOR_PRODUCTS_AS_SUMS,
            cm.ContiguousDotOperands,
            cm.REDUCTIONS_ACROSS_EXPAND_DIMS,
            cm.CUMSUMS_AS_SUMS,
            cm.SPLITS_AS_SLICES,
        ]
    assert [r if isinstance(r, cm.WalkingGraphRewriter) else type(r) for r in sequence] == expected

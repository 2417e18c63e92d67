"""A multivariate normal log density with a covariance built from the parameters (a Gaussian
process), differentiated in closed form (``pm_evidence.model.gaussian``): the same values and
gradients as PyMC's own, on the graphs where the rewrite applies and not elsewhere."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.traversal import apply_ancestors
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.linalg.solvers.psd import CholeskySolve
from pytensor.tensor.linalg.solvers.triangular import SolveTriangular

from pm_evidence import LogDensity
from pm_evidence.model.compile_mode import model_function_mode, without_c_compiler
from pm_evidence.model.gaussian import (
    CholeskyInverse,
    GaussianTerms,
    cholesky_inverse,
    gaussian_gradients,
)
from pm_evidence.model.graphs import term_passes


def _gp_model(n_series: int = 1, with_diagonal_term: bool = False, n: int = 9) -> pm.Model:
    """``y ~ MvNormal(m, K)``, ``K = a^2 exp(-(t_i - t_j)^2 / (2 l^2)) + s^2 I`` at ``n``
    times: ``n_series`` independent series sharing ``K`` (one ``MvNormal`` of shape
    ``(n_series, n)``), and, with ``with_diagonal_term``, a potential that reads the factor's
    diagonal as well."""
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0.0, 10.0, size=n))
    lag = t[:, None] - t[None, :]
    y = rng.normal(size=(n_series, n)) if n_series > 1 else rng.normal(size=n)
    with pm.Model() as model:
        amplitude = pm.HalfNormal("amplitude", 2.0)
        length = pm.Gamma("length", 2.0, 1.0)
        noise = pm.HalfNormal("noise", 1.0)
        mean = pm.Normal("mean", 0.0, 1.0)
        cov = amplitude**2 * pt.exp(-(lag**2) / (2 * length**2)) + noise**2 * pt.eye(n)
        pm.MvNormal("y", mean, cov=cov, observed=y)
        if with_diagonal_term:
            chol = pt.linalg.cholesky(cov + pt.eye(n))  # a different factor: left alone
            pm.Potential("extra", -pt.sum(pt.diagonal(chol) ** 2))
    return model


def _count(outputs, op_type, **props) -> int:
    """Nodes of ``outputs``' graph whose operation (or the one a ``Blockwise`` wraps) is an
    ``op_type`` with the attribute values ``props``."""
    count = 0
    for node in apply_ancestors(outputs):
        op = node.op.core_op if isinstance(node.op, Blockwise) else node.op
        if isinstance(op, op_type) and all(getattr(op, k) == v for k, v in props.items()):
            count += 1
    return count


def _pymc_functions(model):
    with without_c_compiler():
        return model.compile_logp(mode="FAST_COMPILE"), model.compile_dlogp(mode="FAST_COMPILE")


@pytest.mark.parametrize("n_series", [1, 3])
def test_a_gaussian_process_likelihood_has_pymcs_values_and_gradients(n_series):
    """One series, and three sharing one covariance (the gradient summed over them): value
    and gradient equal PyMC's own at random points, to rounding."""
    model = _gp_model(n_series)
    assert _count(term_passes([model.varlogp, model.datalogp]), GaussianTerms) == 1
    target = LogDensity(model)
    x = np.random.default_rng(0).normal(size=(6, target.dim)) * 0.7
    log_density, grad = target.log_density_and_grad(x)
    logp, dlogp = _pymc_functions(model)
    names = [v.name for v in model.value_vars]  # four scalars, in the flat vector's order
    points = [dict(zip(names, row, strict=True)) for row in x]
    np.testing.assert_allclose(log_density, [logp(p) for p in points], rtol=1e-11)
    np.testing.assert_allclose(grad, [dlogp(p) for p in points], rtol=1e-9, atol=1e-11)


def test_the_gradient_takes_no_triangular_solve_with_a_matrix_right_hand_side():
    """Murray's formula, PyTensor's gradient through the factorization, solves two triangular
    systems with ``n`` right-hand sides; the closed form takes ``K^-1`` from the factor by
    ``CholeskyInverse`` (LAPACK's ``potri``), with no solve of a matrix right-hand side."""
    model = _gp_model()
    value = model.rvs_to_values[model["amplitude"]]
    (rewritten,) = gaussian_gradients([model.datalogp])
    before, after = pt.grad(model.datalogp, value), pt.grad(rewritten, value)
    assert _count([before], SolveTriangular, b_ndim=2) == 2
    assert _count([after], SolveTriangular, b_ndim=2) == 0
    assert _count([after], CholeskySolve, b_ndim=2) == 0
    assert _count([after], CholeskyInverse) == 1


@pytest.mark.parametrize("linker", ["numba", "py", "jax"])
def test_the_inverse_from_a_factor_is_numpys_inverse(linker):
    """``cholesky_inverse`` of a stack of factors (float64 and float32) on Numba, on
    PyTensor's Python linker and on JAX: the whole symmetric inverse of each ``K``, as
    ``np.linalg.inv`` gives it; a factor with a zero on its diagonal gives NaN (Numba and
    Python; LAPACK reports it)."""
    if linker == "jax":
        pytest.importorskip("jax")
    modes = {"numba": model_function_mode, "py": lambda: pytensor.compile.mode.Mode("py")}
    mode = modes.get(linker, lambda: model_function_mode(jax=True))()
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 6, 6))
    K = a @ a.transpose(0, 2, 1) + 6 * np.eye(6)
    for dtype, rtol in (("float64", 1e-10), ("float32", 1e-4)):
        L = pt.tensor3("L", dtype=dtype)
        fn = pytensor.function([L], cholesky_inverse(L), mode=mode)
        factors = np.linalg.cholesky(K).astype(dtype)
        got = fn(factors)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, np.linalg.inv(K), rtol=rtol, atol=rtol)
        if linker != "jax":
            singular = factors.copy()
            singular[1, 2, 2] = 0.0
            assert np.isnan(fn(singular)[1]).all() and np.isfinite(fn(singular)[0]).all()


def test_the_operations_gradient_is_pytensors_with_the_diagonal_read_as_well():
    """``GaussianTerms`` of a covariance and two right-hand sides, the diagonal itself in the
    objective too (its gradient then goes through the factorization, Murray's formula): the
    gradient with respect to every entry of ``K`` (its lower triangle, as PyTensor's) and to
    ``delta`` equals PyTensor's of the same graph written with its own operations."""
    rng = np.random.default_rng(2)
    a = rng.normal(size=(5, 5))
    K_value, delta_value = a @ a.T + 5 * np.eye(5), rng.normal(size=(2, 5))
    K, delta = pt.matrix("K"), pt.matrix("delta")
    diagonal, half_logdet, quadratic = GaussianTerms()(K, delta)
    L = pt.linalg.cholesky(K, lower=True)
    solved = pt.linalg.solve_triangular(L, delta, lower=True, b_ndim=1)
    by_pytensor = (
        3.0 * pt.log(pt.diagonal(L)).sum() - 0.5 * (solved**2).sum(axis=-1).sum()
        + (pt.diagonal(L) ** 3).sum()
    )  # fmt: skip
    closed = 3.0 * half_logdet - 0.5 * quadratic.sum() + (diagonal**3).sum()
    for wrt in (K, delta):
        expected = pytensor.function([K, delta], pt.grad(by_pytensor, wrt), mode="FAST_COMPILE")
        got = pytensor.function([K, delta], pt.grad(closed, wrt), mode="FAST_COMPILE")
        np.testing.assert_allclose(
            got(K_value, delta_value), expected(K_value, delta_value), rtol=1e-10, atol=1e-12
        )


def test_a_factor_read_otherwise_is_left_to_pytensor():
    """A Cholesky factor whose diagonal is read other than as a log-determinant (a potential
    on another factor's diagonal) is not rewritten, the likelihood's is; the gradient is
    PyMC's."""
    model = _gp_model(with_diagonal_term=True)
    assert _count(term_passes([model.varlogp, model.datalogp]), GaussianTerms) == 1
    target = LogDensity(model)
    x = np.random.default_rng(1).normal(size=(4, target.dim)) * 0.5
    _, grad = target.log_density_and_grad(x)
    _, dlogp = _pymc_functions(model)
    names = [v.name for v in model.value_vars]
    points = [dict(zip(names, row, strict=True)) for row in x]
    np.testing.assert_allclose(grad, [dlogp(p) for p in points], rtol=1e-9, atol=1e-11)


def test_the_jax_backend_computes_the_same_values_and_gradients():
    """The closed form is PyTensor operations, so the JAX backend compiles it as Numba does."""
    pytest.importorskip("jax")
    model = _gp_model(n_series=3)
    on_numba, on_jax = LogDensity(model, backend="numba"), LogDensity(model, backend="jax")
    x = np.random.default_rng(4).normal(size=(5, on_numba.dim)) * 0.7
    for got, expected in zip(
        on_jax.log_density_and_grad(x), on_numba.log_density_and_grad(x), strict=True
    ):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_a_large_covariance_takes_its_values_without_the_gradient():
    """Where a point factors a matrix of ``VALUES_APART_ELEMENTS`` numbers or more (a
    100 x 100 covariance), values come from the value-only function (``values_apart``), and
    agree with the value-and-gradient function's to rounding; a 9 x 9 one keeps the one
    function, and so does a model without a factorization."""
    from pm_evidence.model.log_density import VALUES_APART_ELEMENTS

    assert VALUES_APART_ELEMENTS == 100 * 100
    small, large = LogDensity(_gp_model()), LogDensity(_gp_model(n=100))
    assert large.values_apart and not small.values_apart
    x = np.random.default_rng(1).normal(size=(5, large.dim)) * 0.5
    by_default = large.evaluate(x)
    np.testing.assert_array_equal(by_default, large.evaluate(x, via_gradient=False))
    np.testing.assert_allclose(by_default, large.evaluate(x, via_gradient=True), rtol=1e-11)
    with pm.Model() as plain:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1.0, observed=np.zeros(20_000))
    assert not LogDensity(plain).values_apart

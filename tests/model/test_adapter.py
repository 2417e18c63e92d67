"""The model adapter on the models people write: every transform both ways, a total log-density,
batched prior draws, blocks sized to the data, the live data fingerprint, mixed discrete models."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.raise_op import Assert
from scipy import stats

from pm_evidence import LogDensity
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.model.batched import (
    MAX_BLOCK_ELEMENTS,
    MAX_BLOCK_MATRIX_ELEMENTS,
    BlockedFunction,
    block_size_for,
    jitted_function,
)
from pm_evidence.model.compile_mode import python_linker_function
from pm_evidence.tempering.kernels import make_kernel


def _transform_zoo():
    """One model with every dimension-changing or bounded transform PyMC applies."""
    with pm.Model() as model:
        pm.Dirichlet("p", a=np.ones(5))  # simplex: 5 values -> 4
        pm.LKJCholeskyCov(
            "chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=3),
            compute_corr=False,
        )  # fmt: skip
        pm.Normal(
            "cuts", mu=0.0, sigma=3.0, shape=3,
            transform=pm.distributions.transforms.ordered, initval=np.array([-1.0, 0.0, 1.0]),
        )  # fmt: skip
        pm.ZeroSumNormal("effect", sigma=1.0, shape=4)  # zero sum: 4 values -> 3
        pm.HalfNormal("sigma", 1.0)  # log
        pm.Uniform("u", -1.0, 2.0)  # interval
        pm.Beta("theta", 2.0, 2.0)  # logodds
        pm.TruncatedNormal("t", mu=0.0, sigma=1.0, lower=0.0, upper=2.0)
    return model


@pytest.fixture(scope="module")
def transform_target():
    return LogDensity.for_model(_transform_zoo())


def test_layout_has_constrained_and_value_shapes(transform_target):
    shapes = {v.name: (v.shape, v.value_shape) for v in transform_target.layout}
    assert shapes["p"] == ((5,), (4,))
    assert shapes["chol"] == ((6,), (6,))
    assert shapes["cuts"] == ((3,), (3,))
    assert shapes["effect"] == ((4,), (3,))
    assert transform_target.dim == 4 + 6 + 3 + 3 + 4
    assert len(transform_target.coordinate_names) == transform_target.dim


def test_round_trip_every_transform(transform_target, rng):
    """flat -> named -> flat is the identity, and named draws satisfy their constraints."""
    x = rng.normal(size=(7, transform_target.dim))
    named = transform_target.to_constrained(x)
    np.testing.assert_allclose(named["p"].sum(-1), 1.0, atol=1e-12)
    assert np.all(named["p"] > 0)
    assert np.all(np.diff(named["cuts"], axis=-1) > 0)
    np.testing.assert_allclose(named["effect"].sum(-1), 0.0, atol=1e-12)
    assert np.all(named["sigma"] > 0)
    assert np.all((named["u"] > -1) & (named["u"] < 2))
    assert np.all((named["t"] > 0) & (named["t"] < 2))
    back = transform_target.to_unconstrained(named, batch_ndim=1)
    np.testing.assert_allclose(back, x, rtol=1e-9, atol=1e-9)
    # named -> flat -> named from prior draws (the other direction; 'ordered' draws come sorted)
    draws = transform_target.prior.draw(rng, 5)
    again = transform_target.to_constrained(transform_target.to_unconstrained(draws))
    for name, value in draws.items():
        np.testing.assert_allclose(again[name], value, rtol=1e-9, atol=1e-12)


def test_functions_off_the_hot_paths_build_no_c(monkeypatch, rng):
    """The initial point (an LKJ prior's ``Scan``), the maps both ways (a ``Softmax``) and the
    prior draws are built on PyTensor's Python linker with the C++ compiler off
    (``without_c_compiler``): no operation, inner ones included, gets a C thunk, which costs
    g++ seconds per operation from empty caches (the initial point of this model: 6.2 s)."""
    from pytensor.link.c.op import COp

    def refuse(*args, **kwargs):
        raise AssertionError("a C thunk was built")

    monkeypatch.setattr(COp, "make_c_thunk", refuse)
    target = LogDensity(_transform_zoo())
    x = rng.normal(size=(4, target.dim))
    np.testing.assert_allclose(
        target.to_unconstrained(target.to_constrained(x)), x, rtol=1e-9, atol=1e-9
    )
    assert target.sample_prior(rng, 3).shape == (3, target.dim)


def test_prior_reference_sorts_ordered_draws_and_rejects_draws_outside_a_cut(transform_target, rng):
    from pm_evidence.references import PriorReference

    draws = transform_target.to_constrained(PriorReference(transform_target).sample(rng, 5))
    assert np.all(np.diff(draws["cuts"], axis=-1) > 0)  # sorted: tests/model/test_ordered_prior.py
    with pm.Model() as model:
        pm.Normal("s", 0.0, 1.0, transform=pm.distributions.transforms.log)  # s > 0 only
    cut = LogDensity.for_model(
        model
    )  # the half-normal, by rejection: tests/model/test_prior_cut.py
    assert np.all(cut.to_constrained(PriorReference(cut).sample(rng, 50))["s"] > 0)


def test_wrong_shape_names_the_variable(transform_target, rng):
    named = transform_target.to_constrained(rng.normal(size=(3, transform_target.dim)))
    named["p"] = named["p"][..., :4]
    with pytest.raises(EvidenceInputError, match=r"'p' has draws of shape \(3, 4\).*\(5,\)"):
        transform_target.to_unconstrained(named)


def test_log_density_is_total(rng):
    """Points where PyMC's parameter checks fail get -inf, never an exception."""
    y = rng.normal(size=20)
    with pm.Model() as model:
        # no transforms: raw values, so negative ones fail the checks
        sigma = pm.HalfNormal("sigma", np.float64(1.0), default_transform=None)
        p = pm.Beta("p", np.float64(2.0), np.float64(2.0), default_transform=None)
        pm.Normal("y", np.float64(0.0), sigma, observed=y)
        pm.Binomial("k", n=10, p=p, observed=3)
    target = LogDensity(model)
    x = np.array([[1.0, 0.5], [-1.0, 0.5], [1.0, 1.5], [0.7, 0.2]])
    log_prior, log_lik = target.evaluate(x)
    assert np.isneginf(log_prior[1]) or np.isneginf(log_lik[1])
    assert np.isneginf(log_prior[2]) or np.isneginf(log_lik[2])
    assert np.all(np.isfinite(log_prior[[0, 3]] + log_lik[[0, 3]]))
    expected = (
        stats.halfnorm.logpdf(0.7) + stats.beta(2, 2).logpdf(0.2)
        + stats.norm(0, 0.7).logpdf(y).sum() + stats.binom(10, 0.2).logpmf(3)
    )  # fmt: skip
    np.testing.assert_allclose(log_prior[3] + log_lik[3], expected, rtol=1e-10)
    logp, grad = target.log_density_and_grad(x)
    assert np.isneginf(logp[1]) and np.all(np.isfinite(grad[0]))


def test_prior_sampler_draws_a_batch_in_one_call(rng):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        pm.Normal("theta", mu, tau, shape=3)
        pm.Dirichlet("w", np.ones(3))
        # only the second parameter is batched (PyTensor's own vectorization fails here)
        pm.Normal("b", 0.0, tau, shape=2)
    target = LogDensity(model)
    assert target.prior.batched
    draws = target.prior.draw(rng, 40_000)
    assert draws["theta"].shape == (40_000, 3) and draws["w"].shape == (40_000, 3)
    # Var(theta) = Var(mu) + E[tau^2] = 2; the rows are independent draws of the hierarchy
    se = np.sqrt(2 * 4.0 / 40_000)  # sd of a sample variance of a near-normal variable
    np.testing.assert_allclose(draws["theta"].var(axis=0), 2.0, atol=5 * se * 1.5)
    corr = np.corrcoef(draws["theta"][:, 0], draws["theta"][:, 1])[0, 1]
    assert abs(corr - 0.5) < 0.03  # shared mu: Cov = 1, Var = 2
    # b / tau ~ N(0, 1) row by row
    z = draws["b"] / draws["tau"][:, None]
    np.testing.assert_allclose(z.std(axis=0), 1.0, atol=5 * np.sqrt(0.5 / 40_000))
    # LKJ (a SymbolicRandomVariable) draws one point per call, with the same interface
    unbatched = LogDensity(_transform_zoo())
    assert not unbatched.prior.batched
    assert unbatched.prior.draw(rng, 3)["chol"].shape == (3, 6)


def test_block_size_adapts_to_the_data():
    assert block_size_for(200) == 1024
    assert block_size_for(100_000) == MAX_BLOCK_ELEMENTS // 100_000
    assert block_size_for(10_000_000) == 1
    # a matrix per point (a covariance) sets fewer rows than the observations would
    assert block_size_for(200, 200 * 200) == MAX_BLOCK_MATRIX_ELEMENTS // 40_000
    assert block_size_for(200, 4) == 1024
    assert block_size_for(100_000, 2000**2) == 1


def test_a_gaussian_process_likelihood_gets_rows_per_call_for_its_covariance():
    """An ``n x n`` covariance built per point (a Gaussian process's, with a free lengthscale)
    is the adapter's largest point matrix, and sets its rows per compiled call; a model whose
    points make no matrix keeps the rows its observations set."""
    t = np.linspace(0.0, 10.0, 150)
    with pm.Model() as gp:
        ell = pm.HalfNormal("ell", 2.0)
        cov = pt.exp(-0.5 * (t[:, None] - t[None, :]) ** 2 / ell**2) + 0.1 * pt.eye(t.size)
        pm.MvNormal("y", mu=np.zeros(t.size), cov=cov, observed=np.sin(t))
    target = LogDensity(gp)
    assert target.point_matrix_size == t.size**2
    assert target.block_size == MAX_BLOCK_MATRIX_ELEMENTS // t.size**2
    with pm.Model() as plain:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.sin(t))
    assert LogDensity(plain).point_matrix_size == 0
    assert LogDensity(plain).block_size == block_size_for(t.size)


def test_blocked_function_isolates_rows_that_raise():
    def fn(x):
        if np.any(x < 0):
            raise ValueError("negative")
        return [x.sum(axis=1)]

    blocked = BlockedFunction(fn, block_size=4, fill_values=(-np.inf,))
    x = np.array([[1.0], [-1.0], [2.0], [3.0], [4.0]])
    with pytest.warns(RuntimeWarning, match="raised ValueError .* at 1 of 4 points"):
        (out,) = blocked(x)
    np.testing.assert_array_equal(out, [1.0, -np.inf, 2.0, 3.0, 4.0])
    assert blocked.n_raised == 1
    with pytest.raises(ValueError):  # every row raises: a broken model, not a boundary
        blocked(-x[:1] - 1.0)


def test_the_numba_function_called_directly_gives_the_functions_outputs(rng):
    """The samplers call the model's numba function without PyTensor's wrapper
    (``jitted_function``): the same outputs, its shared data (``pm.Data``) read at each call,
    and a point at which it raises isolated as before, with PyTensor's error."""
    with pm.Model() as model:
        data = pm.Data("data", rng.normal(size=6))
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu[0] + mu[1], sigma, observed=data)
        pm.Potential("bounded", Assert("mu[0] below 3")(pt.zeros(()), mu[0] < 3.0))
    target = LogDensity.for_model(model)
    blocked = target.terms_grad_function
    direct = jitted_function(blocked.fn.function)
    assert direct is not None
    x = rng.normal(size=(5, target.dim))
    rows = [np.ascontiguousarray(x[:, :2]), np.ascontiguousarray(x[:, 2])]  # mu, sigma_log__
    for new_data in (None, rng.normal(size=6)):
        if new_data is not None:
            with model:
                pm.set_data({"data": new_data})
        expected = blocked.fn.function(*rows)
        for a, b in zip(direct(*rows), expected, strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(
            blocked(x)[1], [model.compile_logp(vars=model.observed_RVs)(
                {"mu": xi[:2], "sigma_log__": xi[2]}) for xi in x], rtol=1e-12,
        )  # fmt: skip
    x[2, 0] = 4.0
    with pytest.warns(RuntimeWarning, match=r"AssertionError \(mu\[0\] below 3\) at 1 of 5"):
        log_prior = blocked(x)[0]
    assert np.isneginf(log_prior[2]) and np.isfinite(np.delete(log_prior, 2)).all()
    assert blocked.n_raised == 1
    # the PyTensor function is not JIT-linked on the Python linker: no direct call
    assert jitted_function(python_linker_function([], pt.constant(1.0))) is None


def test_fingerprint_follows_set_data(rng):
    with pm.Model() as model:
        data = pm.Data("data", rng.normal(size=5))
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=data)
    target = LogDensity.for_model(model)
    before = target.observed_fingerprint
    with model:
        pm.set_data({"data": rng.normal(size=5)})
    assert target.observed_fingerprint != before
    assert target.observed_fingerprint[0][1] == (5,)


def test_mixed_model_gets_compound_kernel_and_unbounded_count_a_clear_error(rng):
    y = rng.normal(size=8)
    with pm.Model() as switch:
        z = pm.Bernoulli("z", 0.3)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu + 2.0 * z, 1.0, observed=y)
    target = LogDensity(switch)
    kernel = make_kernel("auto", target)
    assert kernel.name == "hmc+gibbs"
    assert list(kernel.continuous_mask) == [False, True]
    assert make_kernel("rwm", target).name == "rwm+gibbs"
    with pytest.raises(EvidenceInputError, match="path method"):
        target.require_continuous("bridge")
    with pm.Model() as count:
        n = pm.Poisson("n", 3.0)
        pm.Normal("y", n, pm.HalfNormal("s", 1.0), observed=y)
    with pytest.raises(EvidenceInputError, match=r"\['n'\] have unbounded support"):
        make_kernel("auto", LogDensity(count))


def test_terms_that_do_not_depend_on_x_get_one_value_per_point(rng):
    """A likelihood with no free parameter is a constant of x: one value per point, in blocks."""
    y = rng.normal(size=6)
    with pm.Model() as model:
        pm.Normal("y", np.float64(0.0), np.float64(1.0), observed=y)
        pm.Normal("unrelated", np.float64(0.0), np.float64(1.0))
    target = LogDensity(model, block_size=3)
    x = rng.normal(size=(7, 1))
    log_prior, log_lik = target.evaluate(x)
    np.testing.assert_allclose(log_lik, np.full(7, stats.norm.logpdf(y).sum()), rtol=1e-12)
    np.testing.assert_allclose(log_prior, stats.norm.logpdf(x[:, 0]), rtol=1e-12)
    _, _, grad_prior, grad_lik = target.evaluate_with_grad(x)
    np.testing.assert_allclose(grad_prior[:, 0], -x[:, 0], rtol=1e-12)
    np.testing.assert_array_equal(grad_lik, 0.0)

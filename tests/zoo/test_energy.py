"""Binary energy-based models (grid MRF, RBM): exact log Z, kernel invariance, and every
applicable annealed/tempered method against the exact value on a 10x10 grid and a small RBM."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special, stats

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.model.log_density import LogDensity
from pm_evidence.references import BernoulliProductReference, CategoricalProductReference
from pm_evidence.tempering.kernels import make_kernel, transition
from pm_evidence.tempering.path import GeometricPath
from pm_evidence.zoo import energy, testing

PATH_METHODS = ["ais", "raise", "ads", "rts", "ti", "mbar"]


def all_states(d: int, n_levels: int = 2) -> np.ndarray:
    return np.array(list(itertools.product(range(n_levels), repeat=d)), dtype=float)


# ---------------------------------------------------------------------- exact log Z
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (1, 5)])
def test_grid_exact_log_z_matches_enumeration(shape):
    mrf = energy.grid_mrf(*shape, sigma_p=0.8, seed=1)
    states = all_states(mrf.size)
    assert mrf.exact_log_z() == pytest.approx(special.logsumexp(mrf.energy(states)), abs=1e-10)
    # the PyMC model's own log-density sums to the model-level log Z
    target = LogDensity.for_model(mrf.to_pymc())
    log_prior, log_lik = target.evaluate(states)
    assert mrf.exact_model_log_z() == pytest.approx(
        special.logsumexp(log_prior + log_lik), abs=1e-10
    )


@pytest.mark.parametrize("sizes", [(7, 3), (3, 7)])
def test_rbm_exact_log_z_matches_enumeration(sizes):
    rbm = energy.random_rbm(*sizes, scale=0.8, seed=2)
    states = all_states(rbm.size)
    assert rbm.exact_log_z(chunk=4) == pytest.approx(
        special.logsumexp(rbm.energy(states)), abs=1e-10
    )
    target = LogDensity.for_model(rbm.to_pymc())
    assert np.allclose(target.evaluate(states)[1], rbm.energy(states))


def test_references_are_normalized_and_mean_field_is_a_fixed_point():
    mrf = energy.grid_mrf(2, 3, sigma_p=1.0, seed=3)
    q = mrf.mean_field()
    assert np.allclose(q, special.expit(mrf.conditional_logits(q)), atol=1e-8)
    states = all_states(mrf.size)
    for ref in (energy.uniform_reference(6), mrf.mean_field_reference()):
        assert special.logsumexp(ref.logpdf(states)) == pytest.approx(0.0, abs=1e-12)
    assert np.isneginf(energy.uniform_reference(2).logpdf(np.array([0.5, 1.0])))
    data = (np.random.default_rng(0).random((50, 4)) < 0.3).astype(float)
    dbr = energy.random_rbm(4, 2).data_base_rate_reference(data)
    assert special.logsumexp(dbr.logpdf(all_states(6))) == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(special.expit(dbr.logits[4:]), 0.5)


# ---------------------------------------------------------------------- kernel invariance
@pytest.fixture(scope="module")
def tiny_mrf():
    mrf = energy.grid_mrf(2, 3, sigma_p=1.0, sigma_s=0.5, seed=4)
    return mrf, LogDensity.for_model(mrf.to_pymc())


def _invariance_p_value(path, kernel, beta, rng, n=40_000, n_levels=2):
    """Chi-square p-value that one transition maps exact f_beta draws to f_beta draws."""
    states = all_states(path.dim, n_levels)
    state_all = path.evaluate(states)
    log_f = state_all.log_p0 + beta * state_all.delta
    probs = special.softmax(log_f)
    idx = rng.choice(states.shape[0], size=n, p=probs)
    state = path.evaluate(states[idx], with_grad=kernel.needs_grad)
    new, _, _ = transition(kernel, rng, path, state, np.full(n, beta), np.ones(n))
    codes = new.x @ (n_levels ** np.arange(path.dim)[::-1])
    counts = np.bincount(codes.astype(int), minlength=states.shape[0])
    return stats.chisquare(counts, probs * n).pvalue, float(np.mean(np.any(new.x != state.x, 1)))


@pytest.mark.parametrize("name", ["gibbs", "gibbs_blocks", "gwg", "flip"])
def test_binary_kernels_leave_tempered_density_invariant(tiny_mrf, name):
    mrf, target = tiny_mrf
    path = GeometricPath(target, mrf.mean_field_reference())  # non-uniform p0
    blocks = energy.checkerboard_blocks(mrf.shape) if name == "gibbs_blocks" else None
    kernel = make_kernel(name.split("_")[0], target, blocks=blocks)
    p_value, moved = _invariance_p_value(path, kernel, 0.6, np.random.default_rng(5))
    assert moved > 0.1  # the kernel does move
    assert p_value > 1e-3


def test_relaxed_gradient_of_a_grid_mrf_is_its_conditional_logits(tiny_mrf):
    """The relaxed log-density of Gibbs-with-gradients (compiled with one input per variable,
    after the passes of the model's own terms): at the binary states its values are the
    model's, and, the energy being linear in each site, its gradient is the change of
    ``log p`` when one site flips, the MRF's conditional logits (NumPy's)."""
    mrf, target = tiny_mrf
    states = all_states(mrf.size)
    log_prior, log_lik, grad_prior, grad_lik = target.evaluate_with_relaxed_grad(states)
    np.testing.assert_allclose(log_prior + log_lik, sum(target.evaluate(states)), rtol=1e-12)
    np.testing.assert_allclose(grad_prior, 0.0, atol=1e-12)  # Bernoulli(1/2): log(p / (1 - p))
    logits = mrf.conditional_logits(states).reshape(len(states), -1)
    np.testing.assert_allclose(grad_lik, logits, rtol=1e-10, atol=1e-12)


def test_rbm_block_gibbs_leaves_tempered_density_invariant():
    rbm = energy.random_rbm(3, 3, scale=1.0, seed=6)
    target = LogDensity.for_model(rbm.to_pymc())
    ref = BernoulliProductReference(np.array([0.5, -1.0, 0.3, 0.0, 0.8, -0.4]))
    path = GeometricPath(target, ref)
    kernel = make_kernel(rbm.block_gibbs_kernel(ref), target)
    p_value, moved = _invariance_p_value(path, kernel, 0.7, np.random.default_rng(7))
    assert moved > 0.3 and p_value > 1e-3
    # a kernel that ignores the reference part of f_beta is caught by the same check
    wrong = make_kernel(rbm.block_gibbs_kernel(None), target)
    assert _invariance_p_value(path, wrong, 0.7, np.random.default_rng(7))[0] < 1e-6


@pytest.fixture(scope="module")
def categorical_chain():
    model, exact = testing.categorical_chain()
    return model, exact, LogDensity.for_model(model)


def test_categorical_model_levels_reference_and_exact_log_z(categorical_chain):
    _, exact, target = categorical_chain
    assert target.finite_levels.tolist() == [3] * 6 and not target.binary_mask.any()
    states = all_states(6, 3)
    log_prior, log_lik = target.evaluate(states)
    assert special.logsumexp(log_prior + log_lik) == pytest.approx(exact, abs=1e-10)
    uniform = CategoricalProductReference.uniform([3, 2, 4])
    grid = np.array(list(itertools.product(range(3), range(2), range(4))), dtype=float)
    assert special.logsumexp(uniform.logpdf(grid)) == pytest.approx(0.0, abs=1e-12)
    assert np.isneginf(uniform.logpdf(np.array([[0.0, 2.0, 0.0], [0.5, 0.0, 0.0]]))).all()
    draws = uniform.sample(np.random.default_rng(0), 20_000)
    assert np.isfinite(uniform.logpdf(draws)).all()
    assert np.allclose(np.bincount(draws[:, 2].astype(int)) / 20_000, 0.25, atol=0.015)


def test_categorical_gibbs_leaves_tempered_density_invariant():
    target = LogDensity.for_model(testing.categorical_chain(n=3)[0])  # 27 states
    levels = np.array([[0.1, 0.6, 0.3]] * 3)
    path = GeometricPath(target, CategoricalProductReference(np.log(levels)))  # non-uniform p0
    for blocks in (None, [np.array([0, 2]), np.array([1])]):  # x_0, x_2 independent given x_1
        kernel = make_kernel("gibbs", target, blocks=blocks)
        p_value, moved = _invariance_p_value(
            path, kernel, 0.6, np.random.default_rng(13), n_levels=3
        )
        assert moved > 0.3 and p_value > 1e-3
    assert kernel.evaluations_per_step == 2 * 2 + 1 * 2 + 1  # two other values per entry


def test_every_path_method_on_a_categorical_chain(categorical_chain):
    model, exact, _ = categorical_chain
    for reference, seed in (("uniform", 14), ("prior", 15)):
        results = pme.marginal_likelihood(
            model, method=PATH_METHODS, reference=reference, random_seed=seed,
            progressbar=False, n_chains=200, n_rungs=50, n_sweeps=200, draws=200, tune=100,
        )  # fmt: skip
        assert all(ev.diagnostics["kernel"] == "gibbs" for ev in results.values())
        _within_se(results, exact)


# ---------------------------------------------------------------------- methods vs exact
def _within_se(results, exact, k=4.0):
    for name, ev in results.items():
        assert abs(ev.log_z - exact) < k * ev.se + 1e-3, (name, ev.log_z - exact, ev.se)


@pytest.mark.slow  # about a minute (a 100-entry Gibbs pilot and six methods); `pytest -m slow`
def test_every_path_method_on_a_10x10_grid():
    """Seed 000 §6 grid, sigma_p = 0.5, checkerboard Gibbs, uniform reference."""
    mrf = energy.grid_mrf(10, 10, sigma_p=0.5, seed=0)
    results = pme.marginal_likelihood(
        mrf.to_pymc(), method=PATH_METHODS, kernel="gibbs", reference="uniform",
        blocks=energy.checkerboard_blocks(mrf.shape), random_seed=8, progressbar=False,
        n_chains=200, n_rungs=100, n_sweeps=300, draws=200, tune=200,
    )  # fmt: skip
    _within_se(results, mrf.exact_model_log_z())


def test_every_path_method_on_a_small_rbm_with_dbr_reference():
    rbm = energy.random_rbm(16, 6, scale=0.4, seed=9)
    data = rbm.sample(np.random.default_rng(10), 300, n_sweeps=200)[:, :16]
    ref = rbm.data_base_rate_reference(data)
    results = pme.marginal_likelihood(
        rbm.to_pymc(), method=PATH_METHODS, kernel=rbm.block_gibbs_kernel(ref), reference=ref,
        random_seed=11, progressbar=False, n_chains=200, n_rungs=100, n_sweeps=300, draws=200,
        tune=100,
    )  # fmt: skip
    _within_se(results, rbm.exact_model_log_z())


# ---------------------------------------------------------------------- errors
def test_discrete_model_errors(tiny_mrf):
    mrf, target = tiny_mrf
    model = mrf.to_pymc(name="errors")
    with pytest.raises(EvidenceInputError, match="discrete"):
        pme.marginal_likelihood(model, method="bridge", progressbar=False)
    with pytest.raises(EvidenceInputError, match="kernel='hmc'"):
        pme.annealed_importance_sampling(model, kernel="hmc", progressbar=False)
    with pytest.raises(EvidenceInputError, match="exactly once"):
        make_kernel("gibbs", target, blocks=[[0, 1, 2]])
    with pytest.raises(EvidenceInputError, match="uniform"):
        pme.annealed_importance_sampling(
            testing.normal_mean()[0], reference="uniform", progressbar=False
        )

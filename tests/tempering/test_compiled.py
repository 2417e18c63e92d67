"""The compiled HMC transition against the NumPy one, the unwrapped batched graphs, and the
tempered sampler's categorical draw of rungs."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.compile.builders import OpFromGraph
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.blockwise import Blockwise
from scipy import stats

from pm_evidence import LogDensity
from pm_evidence.references import (
    MixtureReference,
    MultivariateNormalReference,
    MultivariateStudentTReference,
    PriorReference,
)
from pm_evidence.tempering.compiled import hmc_transition_function
from pm_evidence.tempering.kernels import hmc_step
from pm_evidence.tempering.path import GeometricPath
from pm_evidence.tempering.samplers import beta_conditional, draw_categorical
from pm_evidence.zoo import testing as exact_models


@pytest.fixture(scope="module")
def walled_target():
    """A 3-D normal prior with a likelihood that is -inf beyond a wall at x[0] = 1.5 (HMC
    proposals across it have a non-finite energy), and pt.logaddexp / logsumexp terms (inner
    graphs that vectorizing wraps in a Blockwise)."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=3)
        pm.Potential("wall", pt.switch(x[0] < 1.5, 0.0, -np.inf))
        pm.Potential("bumps", pt.logaddexp(-((x[1] - 1) ** 2), -((x[1] + 1) ** 2)))
        pm.Potential("soft", pm.math.logsumexp(pt.stack([x[2], -x[2], 0.5 * x[2]])))
    return LogDensity.for_model(model)


def _state_and_inputs(path, n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = np.clip(path.reference.sample(rng, n), -1.4, 1.4)  # inside the wall
    state = path.evaluate(x, with_grad=True)
    beta = rng.uniform(0.0, 1.0, n)
    beta[:20] = 0.0  # the reference alone
    beta[20:40] = 1.0
    step_size = rng.uniform(0.2, 1.2, n)  # large steps: many proposals cross the wall
    return state, beta, step_size


@pytest.mark.parametrize(
    "reference",
    # each fused transition compiles for about 25 s: the Student-t one runs with `pytest -m slow`
    ["prior", pytest.param("student_t", marks=pytest.mark.slow)],
)
def test_compiled_hmc_equals_numpy_hmc(walled_target, reference):
    if reference == "prior":
        ref = PriorReference(walled_target)
    else:
        # unequal scales: the compiled graph's per-coordinate step factors are exercised
        draws = np.random.default_rng(3).normal(0.2, (1.5, 0.7, 0.3), size=(500, 3))
        ref = MultivariateStudentTReference.fit(draws)
    path = GeometricPath(walled_target, ref)
    assert (reference == "prior") == np.allclose(path.step_scale, 1.0)
    assert hmc_transition_function(path, 2) is not None
    state, beta, step_size = _state_and_inputs(path)
    numpy_out = hmc_step(np.random.default_rng(7), path, state, beta, step_size, 2, compiled=False)
    compiled_out = hmc_step(
        np.random.default_rng(7), path, state, beta, step_size, 2, compiled=True
    )
    (new_np, acc_np, bad_np), (new_c, acc_c, bad_c) = numpy_out, compiled_out
    assert 0.05 < bad_np.mean() < 0.95 and acc_np.any()  # the test exercises both branches
    np.testing.assert_array_equal(acc_c, acc_np)
    np.testing.assert_array_equal(bad_c, bad_np)
    for a, b in zip(new_c, new_np, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    # rejected points are unchanged, and every point with beta > 0 is inside the support
    # (at beta = 0 the target is the reference alone, which has no wall)
    np.testing.assert_array_equal(new_c.x[~acc_c], state.x[~acc_c])
    walled = beta > 0
    assert np.all(new_c.x[walled, 0] < 1.5) and np.all(np.isfinite(new_c.delta[walled]))
    if reference == "prior":
        # the inputs' rows are declared those of x: no run-time check that two of them
        # broadcast (they were 2 in 5 of the operations of a fused 1-parameter model)
        fn = walled_target.compiled_transitions[("prior", 2)]
        checks = [n for n in fn.maker.fgraph.apply_nodes if isinstance(n.op, CheckAndRaise)]
        assert checks == []
        # which the transition checks itself
        fused = hmc_transition_function(path, 2)
        with pytest.raises(ValueError, match="rows of x"):
            fused(state, beta[:-1], step_size, np.zeros_like(state.x), np.zeros(len(beta)))


def test_compiled_hmc_not_used_where_unsupported(walled_target):
    path = GeometricPath(walled_target, PriorReference(walled_target))
    assert hmc_transition_function(path, 100) is None  # too many model copies in one graph
    binary_model, _ = exact_models.binary_field(n=3)
    binary = LogDensity.for_model(binary_model)
    binary_path = GeometricPath(binary, PriorReference(binary))
    assert hmc_transition_function(binary_path, 2) is None


def test_batched_graphs_have_no_blockwise_inner_graphs(walled_target, rng):
    fn = walled_target.terms_grad_function.fn.function
    wrapped = [
        node for node in fn.maker.fgraph.apply_nodes
        if isinstance(node.op, Blockwise) and isinstance(node.op.core_op, OpFromGraph)
    ]  # fmt: skip
    assert wrapped == []
    # values and gradients still equal PyMC's own (unbatched) compiled functions
    x = rng.uniform(-1.4, 1.4, size=(6, 3))
    logp_fn = walled_target.model.compile_logp()
    dlogp_fn = walled_target.model.compile_dlogp()
    points = [{"x": xi} for xi in x]
    logp, grad = walled_target.log_density_and_grad(x)
    np.testing.assert_allclose(logp, [logp_fn(p) for p in points], rtol=1e-12)
    np.testing.assert_allclose(grad, [dlogp_fn(p) for p in points], rtol=1e-10, atol=1e-12)


def test_rung_draws_follow_q_beta_given_x():
    """q(beta | x) of seed 004 eq. (7) against a direct softmax, and the categorical draw
    against its probabilities (chi-square over 20,000 draws of 5 rows)."""
    rng = np.random.default_rng(1)
    betas = np.linspace(0.0, 1.0, 6)
    delta = np.array([-3.0, 0.0, 2.0, 5.0, -np.inf])
    log_r, log_zhat = np.log(np.arange(1.0, 7.0)), rng.normal(size=6)
    q = beta_conditional(delta, betas, log_r, log_zhat)
    with np.errstate(invalid="ignore"):
        logits = np.where(betas == 0.0, 0.0, np.multiply.outer(delta, betas)) + log_r - log_zhat
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(q, expected, rtol=1e-12, atol=1e-300)
    n_draws = 20_000
    draws = draw_categorical(rng, np.repeat(q, n_draws, axis=0)).reshape(5, n_draws)
    for row, probs in zip(draws, q, strict=True):
        counts = np.bincount(row, minlength=6)
        support = probs > 0
        assert counts[~support].sum() == 0
        if support.sum() == 1:  # Delta = -inf: only beta = 0 has mass
            continue
        result = stats.chisquare(counts[support], n_draws * probs[support])
        assert result.pvalue > 1e-3


@pytest.mark.parametrize("n_categories", [20, 300])  # matrix-product and cumsum branches
def test_categorical_draw_with_many_categories(n_categories):
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.full(n_categories, 20.0))
    n_draws = 200 * n_categories
    draws = draw_categorical(rng, np.tile(probs, (n_draws, 1)))
    counts = np.bincount(draws, minlength=n_categories)
    assert stats.chisquare(counts, n_draws * probs).pvalue > 1e-3


def test_preconditioned_hmc_leaves_an_anisotropic_target_invariant():
    """HMC's steps scaled per coordinate by the path's reference (``GeometricPath.step_scale``,
    a diagonal mass matrix) keep ``f_beta`` invariant: exact draws of a normal with scales
    0.05 and 20 keep their moments after 20 transitions, at beta = 1 and between the
    reference and the target; one step size serves both scales (the acceptance rate stays
    high, where identity mass at that step size rejects nearly everything)."""
    scales = np.array([0.05, 20.0])
    with pm.Model() as model:
        pm.Normal("x", 1.0, scales, shape=2)
    target = LogDensity.for_model(model)
    reference = MultivariateNormalReference(np.zeros(2), np.diag(scales * 1.5))
    path = GeometricPath(target, reference)
    np.testing.assert_allclose(path.step_scale, scales / np.sqrt(scales.prod()))
    assert np.allclose(GeometricPath(target, PriorReference(target)).step_scale, 1.0)
    mixture = MixtureReference(np.array([0.5, 0.5]), np.array([[0.0, -50.0], [0.0, 50.0]]),
                               np.stack([np.diag(scales)] * 2))  # fmt: skip
    np.testing.assert_allclose(mixture.marginal_scale(), scales)  # within components

    rng = np.random.default_rng(11)
    n = 4000
    for beta_value in (1.0, 0.5):
        # f_beta is normal: precision (1 - beta) / (1.5 s)^2 + beta / s^2, mean beta-weighted
        precision = (1 - beta_value) / (1.5 * scales) ** 2 + beta_value / scales**2
        mean = beta_value * 1.0 / scales**2 / precision
        sd = 1 / np.sqrt(precision)
        state = path.evaluate(mean + sd * rng.standard_normal((n, 2)), with_grad=True)
        beta, step = np.full(n, beta_value), np.full(n, 0.5 * np.sqrt(scales.prod()))
        rates = []
        for _ in range(20):
            state, accepted, _ = hmc_step(rng, path, state, beta, step, 3)
            rates.append(accepted.mean())
        z = (state.x - mean) / sd
        # 4,000 draws (correlated across transitions but each transition exact): the moments
        # of a standard normal within 5 standard errors
        assert np.all(np.abs(z.mean(axis=0)) < 5 / np.sqrt(n)), z.mean(axis=0)
        assert np.all(np.abs(z.var(axis=0) - 1) < 5 * np.sqrt(2 / n)), z.var(axis=0)
        assert np.mean(rates) > 0.5
    identity = GeometricPath(target, PriorReference(target))
    state = identity.evaluate(1.0 + scales * rng.standard_normal((n, 2)), with_grad=True)
    _, accepted, _ = hmc_step(rng, identity, state, np.ones(n), step, 3)
    assert accepted.mean() < 0.1


def test_jax_transition_of_one_point_mapped_over_rows_equals_numba_rows():
    """The fused transition on the JAX backend (one point's graph, mapped over the rows) gives
    the Numba backend's states, acceptances and rejections."""
    pytest.importorskip("jax")
    model, _ = exact_models.linear_regression(d=3)
    draws = np.random.default_rng(3).normal(0.0, 0.3, size=(500, 3))
    ref = MultivariateStudentTReference.fit(draws)
    outs = []
    for backend in ("numba", "jax"):
        target = LogDensity(model, backend=backend)
        path = GeometricPath(target, ref)
        assert hmc_transition_function(path, 3) is not None
        state, beta, step_size = _state_and_inputs(path, n=50)
        rng = np.random.default_rng(7)
        outs.append(hmc_step(rng, path, state, beta, step_size, 3, compiled=True))
    (numba_state, numba_acc, numba_bad), (jax_state, jax_acc, jax_bad) = outs
    assert numba_acc.any() and not numba_acc.all()
    np.testing.assert_array_equal(jax_acc, numba_acc)
    np.testing.assert_array_equal(jax_bad, numba_bad)
    for a, b in zip(jax_state, numba_state, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def _stand_in_gpu_path():
    """A path from a Student-t reference on a JAX adapter whose backend says it runs on a GPU
    (JAX on this CPU), and HMC of 3 leapfrog steps: ``(path, reference, kernel)``."""
    from pm_evidence.model.backend import Backend
    from pm_evidence.tempering import kernels

    model, _ = exact_models.linear_regression(d=3)
    draws = np.random.default_rng(3).normal(0.0, 0.3, size=(500, 3))
    ref = MultivariateStudentTReference.fit(draws)
    target = LogDensity(model, backend="jax")
    target.backend = Backend("jax", "cuda:0 (stand-in)", "jax")
    return GeometricPath(target, ref), ref, kernels.make_kernel("hmc", target, n_leapfrog=3)


def _spy_on_the_copy_back(monkeypatch, samplers) -> list:
    """Whether the chains were on the device each time a sampler copied them back to the host
    (``samplers.state_on_host``: once, at the end of a run that kept them there)."""
    from pm_evidence.model.backend import is_on_device

    seen, real = [], samplers.state_on_host

    def spy(state):
        seen.append(is_on_device(state.x))
        return real(state)

    monkeypatch.setattr(samplers, "state_on_host", spy)
    return seen


def test_annealing_on_the_device_is_the_loop_over_rungs_up_to_rounding(monkeypatch):
    """On an accelerator AIS's rungs run on the device, ``ANNEALING_CHUNK_RUNGS`` to a call
    (here 11 rungs: a full call and a padded one, two transitions a rung, the chains split
    over several calls); with the same seed
    the log weights, ``Delta`` at every rung, acceptances and rejections are those of the
    loop over rungs on the CPU. No GPU is needed: a backend that says it runs on one."""
    pytest.importorskip("jax")
    from pm_evidence.tempering import compiled, kernels, samplers
    from pm_evidence.tempering.ladders import Ladder

    path, ref, kernel = _stand_in_gpu_path()
    assert kernels.device_annealing(kernel, path, 2) is not None
    betas = np.linspace(0.0, 1.0, 11) ** 3
    ladder = Ladder(betas, np.full(11, 0.6), np.zeros(11), "given")
    start = path.evaluate(ref.sample(np.random.default_rng(5), 64), with_grad=True)
    settings = samplers.AnnealingSamplerSettings(n_steps=2, store=True, progressbar=False)
    # 8 rungs x 2 transitions x 3 coordinates of momenta per chain: 25 chains per call, so the
    # 64 chains go in three calls per chunk of rungs
    monkeypatch.setattr(compiled, "ANNEALING_CALL_NUMBERS", 25 * 8 * 2 * 3)
    left_on_device = _spy_on_the_copy_back(monkeypatch, samplers)
    runs = [samplers.anneal(np.random.default_rng(9), path, kernel, ladder, start, settings)]
    assert left_on_device == [True]  # the chains stayed on the device until the end
    monkeypatch.setattr(samplers, "device_annealing", lambda *args: None)  # the CPU's loop
    runs.append(samplers.anneal(np.random.default_rng(9), path, kernel, ladder, start, settings))
    device, host = runs
    assert 0.05 < host.acceptance[1:].mean() < 0.95
    np.testing.assert_allclose(device.log_weights, host.log_weights, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(device.delta, host.delta, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(device.log_weights_rungs, host.log_weights_rungs, atol=1e-9)
    np.testing.assert_allclose(device.acceptance, host.acceptance, atol=1e-12)
    np.testing.assert_array_equal(device.nonfinite, host.nonfinite)
    assert (device.n_evaluations, device.points_moved) == (host.n_evaluations, host.points_moved)
    np.testing.assert_allclose(device.final.x, host.final.x, rtol=1e-9, atol=1e-9)


def test_tempering_on_the_device_is_the_loop_over_sweeps_up_to_rounding(monkeypatch):
    """On an accelerator the simulated-tempering sweeps run on the device,
    ``TEMPERING_CHUNK_SWEEPS`` to a call, never across a time batch (here 21 sweeps in three
    time batches of 7: a call of 7 sweeps each, padded; two transitions a sweep, the chains
    split over several calls); with the same seed the Rao-Blackwellized sums, the counts, the
    rung moves, every recorded ``Delta`` and rung, acceptances and rejections are those of the
    loop over sweeps on the CPU. No GPU is needed: a backend that says it runs on one."""
    pytest.importorskip("jax")
    from pm_evidence.tempering import compiled, kernels, samplers
    from pm_evidence.tempering.ladders import Ladder

    path, ref, kernel = _stand_in_gpu_path()
    assert kernels.device_tempering(kernel, path, 2) is not None
    # Delta is about -860 at the reference's draws: low rungs, and log Zhat to match, where
    # q(beta | x) lets the chains move between rungs
    betas = np.linspace(0.0, 0.004, 6)
    ladder = Ladder(betas, np.linspace(0.9, 0.5, 6), np.zeros(6), "given")
    start = path.evaluate(ref.sample(np.random.default_rng(5), 64), with_grad=True)
    log_r, log_zhat = np.zeros(6), -860.0 * betas
    settings = samplers.TemperingSamplerSettings(
        n_sweeps=21, n_steps=2, n_time_batches=3, record=True, progressbar=False
    )
    # 8 sweeps x 2 transitions x 3 coordinates of momenta per chain: 25 chains per call
    monkeypatch.setattr(compiled, "ANNEALING_CALL_NUMBERS", 25 * 8 * 2 * 3)
    chains = samplers.TemperingChains(start)
    left_on_device = _spy_on_the_copy_back(monkeypatch, samplers)
    runs = [samplers.temper(np.random.default_rng(9), path, kernel, ladder, log_r, log_zhat,
                            chains, settings)]  # fmt: skip
    assert left_on_device == [True]  # the chains stayed on the device until the end
    monkeypatch.setattr(samplers, "device_tempering", lambda *args: None)  # the CPU's loop
    runs.append(samplers.temper(np.random.default_rng(9), path, kernel, ladder, log_r,
                                log_zhat, chains, settings))  # fmt: skip
    device, host = runs
    assert 0.05 < np.nanmean(host.acceptance) < 0.95
    assert host.transitions[np.arange(5), np.arange(1, 6)].sum() > 0  # rungs do move
    np.testing.assert_array_equal(device.rung_draws, host.rung_draws)
    np.testing.assert_array_equal(device.unit_of_chain_draw, host.unit_of_chain_draw)
    np.testing.assert_array_equal(device.final_rung, host.final_rung)
    np.testing.assert_array_equal(device.transitions, host.transitions)
    np.testing.assert_array_equal(device.nonfinite, host.nonfinite)
    np.testing.assert_array_equal(device.n_iterations, host.n_iterations)
    np.testing.assert_allclose(device.acceptance, host.acceptance, atol=1e-12)
    for name in ("delta_draws", "c_sum", "rb_delta_sum", "rb_delta2_sum", "count",
                 "count_delta_sum", "count_delta2_sum"):  # fmt: skip
        np.testing.assert_allclose(getattr(device, name), getattr(host, name), rtol=1e-9,
                                   atol=1e-9, err_msg=name)  # fmt: skip
    assert (device.n_evaluations, device.points_moved) == (host.n_evaluations, host.points_moved)
    np.testing.assert_allclose(device.final.x, host.final.x, rtol=1e-9, atol=1e-9)


def test_device_tempering_padding_sweeps_add_nothing_where_delta_is_nan(monkeypatch):
    """A call of one sweep is padded with sweeps that do nothing; where the likelihood is NaN
    (``log(|x| - 0.05)`` near 0) those must not add ``0 * NaN`` to the sums: the device's sums
    have the CPU's NaNs, no more."""
    pytest.importorskip("jax")
    import pymc as pm
    import pytensor.tensor as pt

    from pm_evidence.model.backend import Backend
    from pm_evidence.references import PriorReference
    from pm_evidence.tempering import kernels, samplers
    from pm_evidence.tempering.ladders import Ladder

    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=1)
        pm.Potential("band", pt.log(pt.abs(x[0]) - 0.05))
    target = LogDensity(model, backend="jax")
    target.backend = Backend("jax", "cuda:0 (stand-in)", "jax")
    path = GeometricPath(target, PriorReference(target))
    kernel = kernels.make_kernel("hmc", target, n_leapfrog=1)
    ladder = Ladder(np.array([0.0, 0.5, 1.0]), np.full(3, 0.3), np.zeros(3), "given")
    rng = np.random.default_rng(1)
    start = path.evaluate(rng.uniform(0.06, 0.25, (400, 1)) * rng.choice([-1, 1], (400, 1)),
                          with_grad=True)  # fmt: skip
    log_r = np.array([0.0, -50.0, -50.0])  # nearly every chain at beta = 0, where NaN is met
    settings = samplers.TemperingSamplerSettings(n_sweeps=1, progressbar=False, record=True)
    chains = samplers.TemperingChains(start, rung=np.zeros(400, dtype=int))
    def run():
        return samplers.temper(np.random.default_rng(0), path, kernel, ladder, log_r,
                               np.zeros(3), chains, settings)  # fmt: skip

    on_device = run()
    monkeypatch.setattr(samplers, "device_tempering", lambda *args: None)  # the CPU's loop
    on_cpu = run()
    assert np.isnan(on_cpu.delta_draws).any()  # the sweep met the NaN band
    np.testing.assert_array_equal(np.isnan(on_device.c_sum), np.isnan(on_cpu.c_sum))
    np.testing.assert_allclose(on_device.c_sum, on_cpu.c_sum, rtol=1e-9, atol=1e-12)


def test_a_masked_transition_on_the_device_is_the_numpy_one():
    """The compound kernel's HMC move on a model with discrete entries (``mask``: the
    continuous ones) as one fused call on an accelerator, its steps zero outside the mask:
    the NumPy transition's states, acceptances and rejections up to rounding, the discrete
    entries where they were. No GPU is needed: a backend that says it runs on one."""
    pytest.importorskip("jax")
    from pm_evidence.model.backend import Backend

    model, _ = exact_models.bernoulli_switch()
    target = LogDensity(model, backend="jax")
    target.backend = Backend("jax", "cuda:0 (stand-in)", "jax")
    path = GeometricPath(target, PriorReference(target))
    rng = np.random.default_rng(1)
    state = path.sample_reference(rng, 64, with_grad=True)
    beta, step_size = rng.uniform(0.0, 1.0, 64), rng.uniform(0.1, 0.6, 64)
    mask = ~target.discrete_mask
    assert target.discrete_mask.any() and hmc_transition_function(path, 3) is not None
    fused, plain = (
        hmc_step(np.random.default_rng(5), path, state, beta, step_size, 3, compiled=c, mask=mask)
        for c in (True, False)
    )
    assert 0 < plain[1].mean() < 1
    np.testing.assert_array_equal(fused[1], plain[1])
    np.testing.assert_array_equal(fused[2], plain[2])
    for a, b in zip(fused[0], plain[0], strict=True):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(np.asarray(fused[0].x)[:, ~mask], state.x[:, ~mask])

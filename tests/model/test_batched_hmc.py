"""Batched HMC, the default posterior draws of small continuous models: right moments on a
posterior known in closed form, its tuning schedule, its starts, its settings and what the
result says about it."""

from __future__ import annotations

import dataclasses
import itertools
import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from arviz_stats.base import array_stats

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import RHAT_MAX, max_rhat
from pm_evidence.model import batched_hmc, hmc_chains
from pm_evidence.model.backend import Backend, is_on_device
from pm_evidence.model.batched_hmc import (
    DENSE_CONDITION,
    EXTEND_RHAT,
    LAGGING_GAP,
    VARIANCE_OVER_MEDIAN,
    BatchedHMCSettings,
    adaptation_windows,
    early_check_draws,
    sample_batched_hmc,
    spread_of,
    starting_points,
    window_estimates,
)
from pm_evidence.model.draws import BATCHED_DRAWS_MAX_DIM, draws_sampler
from pm_evidence.model.log_density import LogDensity, as_target


@pytest.fixture(scope="module")
def correlated_regression():
    """``y ~ N(X beta, 1)``, ``beta ~ N(0, I_4)`` with strongly correlated covariates (one
    posterior direction 30 times narrower than another): posterior ``N(m, S)``,
    ``S = (X'X + I)^-1``, ``m = S X'y``."""
    rng = np.random.default_rng(3)
    z = rng.standard_normal((40, 1))
    x = np.hstack([z + 0.05 * rng.standard_normal((40, 1)) for _ in range(3)])
    x = np.hstack([x, rng.standard_normal((40, 1))])
    y = x @ np.array([0.5, -0.3, 0.2, 1.0]) + rng.standard_normal(40)
    cov = np.linalg.inv(x.T @ x + np.eye(4))
    mean = cov @ x.T @ y
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=4)
        pm.Normal("y", pm.math.dot(x, beta), 1.0, observed=y)
    return model, mean, cov


@pytest.mark.parametrize("backend", ["numba", "jax"])
def test_draws_have_the_exact_posterior_moments(correlated_regression, backend):
    """On both engines: on JAX the leapfrog steps run in chunks on the device
    (``fused_leapfrog_function``), here with the dense metric the correlation calls for."""
    if backend == "jax":
        pytest.importorskip("jax")
    model, mean, cov = correlated_regression
    target = LogDensity.for_model(model, backend=backend)
    x, stats = sample_batched_hmc(target, np.random.default_rng(1), progressbar=False)
    assert stats.dense_metric
    settings = BatchedHMCSettings()
    assert x.shape == (settings.chains, settings.draws, 4)
    rhat, _ = max_rhat(x)
    assert rhat < RHAT_MAX
    ess = np.asarray(array_stats.ess(x, chain_axis=0, draw_axis=1, method="mean"))
    flat = x.reshape(-1, 4)
    sd = np.sqrt(np.diag(cov))
    z = (flat.mean(axis=0) - mean) / (sd / np.sqrt(ess))  # MCSE of the mean from the ESS
    assert np.all(np.abs(z) < 4), z
    # the variance of a Gaussian's sample variance is 2 var^2 / n: the ESS of the squares
    # stands for n (a conservative bound where the squares mix more slowly)
    ratio = flat.var(axis=0) / np.diag(cov)
    assert np.all(np.abs(ratio - 1) < 4 * np.sqrt(2 / ess.min()) + 0.02), ratio
    assert stats.divergences == 0
    assert 0.6 < stats.accept_rate < 1.0
    assert stats.mean_leapfrog > 1  # the narrow direction needs trajectories of several steps
    assert stats.evaluations > settings.chains * (settings.tune + settings.draws)


@pytest.mark.parametrize("metric_kind", ["diagonal", "dense", "dense per chain"])
def test_a_transition_is_the_same_on_both_engines(correlated_regression, metric_kind):
    """The leapfrog steps are written once (``pm_evidence.model.leapfrog``): on JAX, chunks of
    ``CHUNK_STEPS`` steps in one call each (trajectories shorter than, equal to and longer than
    a chunk) give Numba's transition up to rounding, divergences included (a step size that
    overflows the positions of some chains), with a diagonal metric, one dense factor, and one
    dense factor per chain. On JAX the whole transition runs on the device and the chains'
    state stays there from one transition to the next; only the statistics come back."""
    pytest.importorskip("jax")
    model = correlated_regression[0]
    dense = metric_kind != "diagonal"
    numba, jax = (LogDensity.for_model(model, backend=b) for b in ("numba", "jax"))
    assert hmc_chains.fused_leapfrog_function(numba, metric_kind) is None
    assert hmc_chains.fused_leapfrog_function(jax, metric_kind) is not None
    rng = np.random.default_rng(2)
    x0 = rng.normal(0.0, 0.3, size=(6, 4))
    factor = np.linalg.cholesky(np.full((4, 4), 0.5) + 0.5 * np.eye(4)) if dense else None
    if metric_kind == "dense per chain":  # each chain's own correlation
        factor = np.stack([
            np.linalg.cholesky(np.full((4, 4), r) + (1.0 - r) * np.eye(4))
            for r in (-0.3, -0.1, 0.0, 0.3, 0.6, 0.9)
        ])  # fmt: skip
    metric = hmc_chains.Metric(np.full((6, 4), 0.2), factor)
    eps = np.array([0.01, 0.05, 0.1, 0.3, np.inf, 0.02])  # one chain's positions overflow
    for n_steps in (1, hmc_chains.CHUNK_STEPS, hmc_chains.CHUNK_STEPS + 3):
        moved, trajectories = [], []
        for target in (numba, jax):
            state = hmc_chains.HMCState(target, x0.copy())
            p = np.random.default_rng(n_steps).standard_normal(x0.shape)
            h0 = 0.5 * np.sum(p * p, axis=1) - state.log_f
            trajectories.append(hmc_chains.leapfrog_trajectory(state, p, h0, eps, metric, n_steps))
            rng = np.random.default_rng(n_steps)
            for _ in range(2):  # the second from the first's state, on the device on JAX
                accept, diverged, along = hmc_chains.hmc_transition(
                    rng, state, eps, metric, n_steps
                )
                assert is_on_device(state.x) is (target is jax)
                assert is_on_device(state.grad) is (target is jax)
                assert not any(is_on_device(a) for a in (accept, diverged, along))
            moved.append((state.x, state.log_f, state.grad, accept, diverged, along))
        # the trajectories themselves: the overflowing chain moved back to its start, flagged
        # there, and evaluated there (its log f and gradient those of its start)
        for a, b in zip(*trajectories, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
        x_end, _, log_f_end, _, diverged_end, _ = trajectories[1]
        assert diverged_end[4] and not diverged_end[0]
        np.testing.assert_array_equal(x_end[4], x0[4])
        assert np.isfinite(log_f_end[4])
        (x_a, f_a, g_a, acc_a, div_a, along_a), (x_b, f_b, g_b, acc_b, div_b, along_b) = moved
        np.testing.assert_array_equal(div_a, div_b)
        # the trajectory's mean acceptance (tuning's statistic): the same on both engines, 0
        # for the chain that diverged at its first step, the endpoint's for a one-step one
        np.testing.assert_allclose(along_a, along_b, rtol=1e-9, atol=1e-12)
        assert along_a[4] == 0.0 and np.all((along_a >= 0) & (along_a <= 1))
        if n_steps == 1:
            np.testing.assert_allclose(along_a, acc_a, rtol=1e-12)
        assert div_a[4] and not div_a[0]
        np.testing.assert_allclose(x_a, x_b, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(f_a, f_b, rtol=1e-9)
        np.testing.assert_allclose(g_a, g_b, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(acc_a, acc_b, rtol=1e-9, atol=1e-12)
    # the kept transitions do without the statistic (a few NumPy operations fewer a step)
    state = hmc_chains.HMCState(numba, x0.copy())
    rng = np.random.default_rng(0)
    assert hmc_chains.hmc_transition(rng, state, eps, metric, 2, along=False)[2] is None


def test_same_seed_same_draws(correlated_regression):
    model = correlated_regression[0]
    small = BatchedHMCSettings(chains=4, tune=50, draws=20)
    a, _ = sample_batched_hmc(as_target(model), np.random.default_rng(7), small, progressbar=False)
    b, _ = sample_batched_hmc(as_target(model), np.random.default_rng(7), small, progressbar=False)
    np.testing.assert_array_equal(a, b)


def test_a_correlated_posterior_gets_a_dense_metric_and_shorter_trajectories(
    correlated_regression, monkeypatch
):
    """The regression's posterior correlation has a condition number near 10^3: a dense metric
    (the Cholesky factor of the draws' correlation) takes a few leapfrog steps per transition
    where the diagonal one takes tens, with the same exact moments (the test above)."""
    model = correlated_regression[0]
    target = as_target(model)
    _, dense = sample_batched_hmc(target, np.random.default_rng(1), progressbar=False)
    monkeypatch.setattr(batched_hmc, "DENSE_CONDITION", np.inf)
    _, diagonal = sample_batched_hmc(target, np.random.default_rng(1), progressbar=False)
    assert dense.dense_metric and not diagonal.dense_metric
    assert dense.diagnostics()["draws_dense_metric"]
    assert dense.mean_leapfrog * 3 < diagonal.mean_leapfrog, (dense, diagonal)
    assert dense.divergences == 0 and 0.6 < dense.accept_rate < 1.0


def test_window_estimates_choose_the_metric_from_the_correlation():
    """A window of draws with correlation 0.999 between two of three coordinates (condition
    number 2,000): the metric's factor ``F`` is the Cholesky factor of the regularized
    correlation and the trajectory a quarter period of a unit scale (the correlation is about
    ``I`` in its coordinates); uncorrelated draws, or too few per dimension, keep the diagonal
    metric."""
    rng = np.random.default_rng(4)
    corr = np.array([[1.0, 0.999, 0.0], [0.999, 1.0, 0.0], [0.0, 0.0, 1.0]])
    window = rng.multivariate_normal(np.zeros(3), corr, size=(200, 16))
    metric, length = window_estimates(window)
    n = 200 * 16
    z = ((window - window.mean(axis=0)) / metric.scale).reshape(-1, 3)
    sample = np.corrcoef(z, rowvar=False)
    assert np.linalg.cond(sample) > DENSE_CONDITION
    regularized = n / (n + 5.0) * sample + 5.0 / (n + 5.0) * np.eye(3)
    np.testing.assert_allclose(metric.factor @ metric.factor.T, regularized, rtol=1e-10)
    assert 0.5 * np.pi <= length < 0.5 * np.pi * 1.01
    independent, length = window_estimates(rng.standard_normal((200, 16, 3)))
    assert not independent.dense and length < 0.5 * np.pi * 1.2
    assert not window_estimates(window[:1, :16])[0].dense  # 16 draws: under 10 per dimension


def _opposite_modes(rng, n, chains, rho=0.995):
    """A window of draws ``(n, chains, 2)``: half the chains in a mode at ``(-5, -5)`` with
    correlation ``rho``, the others in one at ``(5, 5)`` with ``-rho``."""
    window = np.empty((n, chains, 2))
    for c in range(chains):
        sign = 1.0 if c < chains // 2 else -1.0
        cov = np.array([[1.0, sign * rho], [sign * rho, 1.0]])
        window[:, c] = rng.multivariate_normal(np.full(2, -5.0 * sign), cov, size=n)
    return window


def test_chains_apart_get_a_metric_each():
    """Chains in two modes whose correlations are opposite (+-0.995): pooled, the correlation
    is about 0 and a diagonal metric would take each mode's steps from its narrow direction;
    each chain's factor whitens its own draws instead (Stan's regularization of a dense
    metric, chain by chain: within 0.1 of the identity), and the trajectory is a quarter
    period of that. Chains in one mode keep one
    metric for all."""
    rng = np.random.default_rng(5)
    n = 200
    window = _opposite_modes(rng, n, 8)
    metric, length = window_estimates(window)
    assert metric.factor.shape == (8, 2, 2)
    z = window / metric.scale
    for c in range(8):
        inverse = np.linalg.inv(metric.factor[c])
        whitened = inverse @ np.cov(z[:, c], rowvar=False) @ inverse.T
        np.testing.assert_allclose(whitened, np.eye(2), atol=0.1)
    assert 0.5 * np.pi <= length < 0.5 * np.pi * 1.1
    together = rng.multivariate_normal(np.zeros(2), [[1.0, 0.995], [0.995, 1.0]], size=(n, 8))
    one = window_estimates(together)[0]
    assert one.factor.shape == (2, 2)  # one dense metric: the chains agree


def test_chains_in_modes_of_their_own_shape_take_shorter_trajectories():
    """Two modes of opposite correlation, the chains started half in each: with a metric per
    chain each mode is sampled as a round one, in a third of the leapfrog steps or fewer of
    one pooled metric (``CHAINS_APART_RHAT`` set out of reach), and each mode's draws have its
    correlation."""
    rho, centre = 0.995, 5.0
    precision = [np.linalg.inv([[1.0, s * rho], [s * rho, 1.0]]) for s in (1.0, -1.0)]

    def log_mode(x, mean, prec):
        d = x - mean
        return -0.5 * pt.dot(d, pt.dot(prec, d))

    with pm.Model() as model:
        x = pm.Flat("x", shape=2, initval=np.zeros(2))
        pm.Potential("modes", pt.logaddexp(
            log_mode(x, np.full(2, -centre), precision[0]),
            log_mode(x, np.full(2, centre), precision[1]),
        ))  # fmt: skip
    target = as_target(model)
    starts = np.repeat([[-centre, -centre], [centre, centre]], 8, axis=0)
    settings = BatchedHMCSettings(chains=16, tune=200, draws=200)
    draws, each = sample_batched_hmc(
        target, np.random.default_rng(1), settings, progressbar=False, starts=starts
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batched_hmc, "CHAINS_APART_RHAT", np.inf)
        _, pooled = sample_batched_hmc(
            target, np.random.default_rng(1), settings, progressbar=False, starts=starts
        )
    assert each.mean_leapfrog * 3 < pooled.mean_leapfrog, (each, pooled)
    for half, sign in ((draws[:8], 1.0), (draws[8:], -1.0)):
        r = np.corrcoef(half.reshape(-1, 2), rowvar=False)[0, 1]
        assert abs(r - sign * rho) < 0.01


@pytest.mark.parametrize("tune", [10, 39, 40, 100, 400, 1000, 5000])
def test_adaptation_windows_cover_the_tuning(tune):
    first, windows, last = adaptation_windows(tune)
    assert first + sum(windows) + last == tune
    assert all(w > 0 for w in windows)
    # each slow window at least doubles the one before (the last takes what is left)
    assert all(b >= 2 * a for a, b in itertools.pairwise(windows))


def test_chains_hopping_between_narrow_modes_do_not_set_every_chains_scales():
    """16 chains each in a mode of width 0.01 (the first coordinate: modes 1 apart), one of them
    hopping between two modes: the scales of the first coordinate come from the chains' median
    variance times ``VARIANCE_OVER_MEDIAN`` (the mean, 0.06, is the hopping chain's), those of
    the second coordinate, where the chains are alike, from their mean."""
    rng = np.random.default_rng(0)
    n, chains = 100, 16
    window = rng.normal(0.0, 0.01, size=(n, chains, 2))
    window[:, :, 0] += np.arange(chains)  # each chain in its own mode
    window[:, 0, 0] += rng.choice([-0.5, 0.5], size=n)  # one chain hops between two
    scale = window_estimates(window)[0].scale
    assert scale.shape == (chains, 2)
    variances = window.var(axis=0)

    def regularized(v):  # Stan's regularization towards 1e-3
        return np.sqrt(n / (n + 5.0) * v + 1e-3 * 5.0 / (n + 5.0))

    capped = VARIANCE_OVER_MEDIAN * np.median(variances[:, 0])
    assert variances[:, 0].mean() > 10 * capped  # the hopping chain would set the mean
    np.testing.assert_allclose(scale[:, 0], regularized(capped), rtol=1e-12)
    np.testing.assert_allclose(scale[:, 1], regularized(variances[:, 1].mean()), rtol=1e-12)


def test_a_start_of_zero_density_is_replaced_by_a_prior_draw():
    """``y ~ U(0, u)`` with a largest observation of 9: PyMC's initial point ``u = 5`` (the
    middle of ``U(0, 10)``), jittered, has zero density; every start must be finite."""
    with pm.Model() as model:
        u = pm.Uniform("u", 0.0, 10.0)
        pm.Uniform("y", 0.0, u, observed=np.array([1.0, 4.0, 9.0]))
    target = as_target(model)
    x = starting_points(target, np.random.default_rng(2), 32)
    assert np.all(np.isfinite(target.log_density(x)))
    assert np.all(target.to_constrained(x)["u"] > 9.0)


def test_a_trajectory_that_overflows_diverges_alone_and_is_never_evaluated(monkeypatch):
    """``x ~ N(0, I_2)`` with a cliff, ``log f -= 10^300 (x_1 - 1.5)^2`` beyond ``x_1 = 1.5``: a
    trajectory that crosses it is thrown to about ``-10^300`` and on to an infinite position.
    Such a transition is a divergence and its chain stays where it started; the other chains
    move on (some kept transitions diverge, not all), the compiled function never sees a
    non-finite point (a spy on it), nothing warns and every draw is finite and below the cliff."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=2)
        pm.Potential("cliff", pt.switch(x[0] > 1.5, -1e300 * (x[0] - 1.5) ** 2, 0.0))
    target = as_target(model)
    compiled = target.terms_grad_function
    finite_inputs = []

    def spy(points):
        finite_inputs.append(bool(np.all(np.isfinite(points))))
        return compiled(points)

    monkeypatch.setattr(type(target), "terms_grad_function", property(lambda self: spy))
    settings = BatchedHMCSettings(chains=8, tune=60, draws=60)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draws, stats = sample_batched_hmc(
            target, np.random.default_rng(0), settings, progressbar=False
        )
    assert finite_inputs and all(finite_inputs)
    assert 0 < stats.divergences < settings.chains * settings.draws
    assert np.all(np.isfinite(draws)) and np.all(draws[..., 0] < 1.5)


def test_the_device_state_in_blocks_is_the_state_in_one_call(correlated_regression):
    """On JAX with fewer rows a call than chains (blocks of 4 for 6 chains: a full block and
    a padded one), the chains' state is joined on the device, and the transitions are those
    of one call on every chain."""
    pytest.importorskip("jax")
    model = correlated_regression[0]
    x0 = np.random.default_rng(4).normal(0.0, 0.3, size=(6, 4))
    metric = hmc_chains.Metric(np.full((6, 4), 0.2))
    eps = np.full(6, 0.1)
    moved = []
    for block_size in (None, 4):
        target = LogDensity(model, backend="jax", block_size=block_size)
        state = hmc_chains.HMCState(target, x0.copy())
        rng = np.random.default_rng(7)
        for n_steps in (3, hmc_chains.CHUNK_STEPS + 2):
            accept, _, _ = hmc_chains.hmc_transition(rng, state, eps, metric, n_steps)
        assert is_on_device(state.x)
        moved.append((np.asarray(state.x), np.asarray(state.log_f), accept))
    for a, b in zip(*moved, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"chains": 1}, "at least 2 chains"),
        ({"draws": 3}, "4 draws per chain"),
        ({"tune": 0}, "tune must be a positive integer"),
        ({"target_accept": 1.0}, "target_accept"),
    ],
)
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(EvidenceInputError, match=match):
        BatchedHMCSettings(**kwargs)


def test_which_sampler_draws_and_the_result_says_so(normal_mean_case):
    model = normal_mean_case.model
    target = as_target(model)
    assert draws_sampler(target, None) == "batched_hmc"
    assert draws_sampler(target, {}) == "pymc_nuts"  # PyMC's options: PyMC's NUTS
    with pm.Model() as big:
        pm.Normal("theta", 0.0, 1.0, shape=BATCHED_DRAWS_MAX_DIM + 1)
        pm.Normal("y", big["theta"].sum(), 1.0, observed=1.0)
    assert draws_sampler(as_target(big), None) == "pymc_nuts"
    # on an accelerator PyMC's NUTS would run on the CPU: batched HMC at every size
    on_gpu = LogDensity(big, backend="numba")
    on_gpu.backend = Backend("jax", "cuda:0 (NVIDIA H200)", "auto")
    assert draws_sampler(on_gpu, None) == "batched_hmc"
    ev = pme.bridge_sampling(model, random_seed=1, progressbar=False, draws=40, tune=60)
    assert ev.diagnostics["draws_sampler"] == "batched HMC"
    assert ev.diagnostics["draws_per_chain"] == 40 and ev.diagnostics["draws_tune"] == 60
    ev = pme.bridge_sampling(model, random_seed=1, progressbar=False, draws=40, tune=60,
                             chains=2, sample_kwargs={})  # fmt: skip
    assert ev.diagnostics["draws_sampler"] == "pm.sample (pymc)"
    ev = pme.bridge_sampling(model, idata=normal_mean_case.idata, random_seed=1, progressbar=False)
    assert ev.diagnostics["draws_sampler"] == "idata (given)"


def test_draws_are_extended_only_while_their_r_hat_is_a_little_high(correlated_regression):
    """Short chains (4 x 50 draws) on the correlated regression: R-hat above 1.01 but at most
    ``EXTEND_RHAT``, and within reach of 1.01 by the most draws (``(R - 1) n / 250 <= 0.01``
    with ``n`` draws per chain of at most 250: R-hat falling as ``1 / n``), extends the draws
    by another 50 per chain, with the same kernel (the first 50 are those made without
    extensions, draw for draw), until R-hat falls out of that range or ``max_extensions`` is
    spent; outside it nothing is added. Over several seeds both branches are taken (which
    seeds take which depends on the machine's floating point)."""
    target = as_target(correlated_regression[0])
    settings = BatchedHMCSettings(chains=4, tune=60, draws=50, max_extensions=0)
    extensions = []
    for seed in range(1, 9):
        plain, plain_stats = sample_batched_hmc(
            target, np.random.default_rng(seed), settings, progressbar=False
        )
        assert plain.shape == (4, 50, 4) and plain_stats.extensions == 0
        extended, stats = sample_batched_hmc(
            target, np.random.default_rng(seed),
            dataclasses.replace(settings, max_extensions=4), progressbar=False,
        )  # fmt: skip
        np.testing.assert_array_equal(extended[:, :50], plain)
        assert extended.shape == (4, 50 * (1 + stats.extensions), 4)
        assert stats.draws == extended.shape[1]
        assert stats.diagnostics()["draws_extensions"] == stats.extensions
        rhats = [max_rhat(extended[:, : 50 * (k + 1)])[0] for k in range(stats.extensions + 1)]
        due = [  # the rule, after k extensions
            RHAT_MAX < r <= EXTEND_RHAT and (r - 1.0) * 50 * (k + 1) / 250 <= 0.01
            for k, r in enumerate(rhats)
        ]
        assert all(due[:-1])  # each extension was due
        if stats.extensions < 4:
            assert not due[-1]  # and the last one ended it
        extensions.append(stats.extensions)
    assert 0 in extensions and max(extensions) > 0, extensions  # both branches are exercised


def test_draws_given_are_never_extended(correlated_regression):
    ev = pme.bridge_sampling(
        correlated_regression[0], random_seed=1, progressbar=False, draws=50, tune=60, chains=4
    )
    assert ev.diagnostics["draws_per_chain"] == 50 and ev.diagnostics["draws_extensions"] == 0
    with pytest.raises(EvidenceInputError, match="max_extensions"):
        BatchedHMCSettings(max_extensions=-1)


def test_discrete_models_are_refused():
    with pm.Model() as model:
        pm.Bernoulli("z", 0.5)
    with pytest.raises(EvidenceInputError, match="discrete"):
        sample_batched_hmc(as_target(model), np.random.default_rng(1), progressbar=False)


def test_chains_start_where_they_are_told_and_bad_starts_are_refused(
    correlated_regression, monkeypatch
):
    """``starts`` (``auto``: its exploration's particles) are where the chains begin, in
    place of PyMC's jittered initial point (never computed then), and the draws from
    posterior starts have the posterior's moments. Starts of the wrong shape or not finite
    are refused, naming the shape."""
    model, mean, cov = correlated_regression
    target = as_target(model)
    rng = np.random.default_rng(2)
    posterior = rng.multivariate_normal(mean, cov, size=16)

    def no_default_starts(*args, **kwargs):
        raise AssertionError("the default starts were computed although starts were given")

    monkeypatch.setattr(batched_hmc, "starting_points", no_default_starts)
    x, _ = sample_batched_hmc(target, rng, progressbar=False, starts=posterior)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(x.reshape(-1, 4).mean(axis=0) - mean) < 0.1 * sd)
    with pytest.raises(EvidenceInputError, match=r"shape \(16, 4\)"):
        sample_batched_hmc(target, rng, progressbar=False, starts=posterior[:3])
    with pytest.raises(EvidenceInputError, match="finite"):
        sample_batched_hmc(target, rng, progressbar=False, starts=np.full((16, 4), np.nan))


def test_a_narrow_posterior_from_posterior_starts_tunes_at_its_own_scale():
    """A normal mean whose posterior SD is 0.001, its chains started at 16 posterior draws:
    tuning's first windows run at their spread (``spread_of``), not at unit scales, whose
    quarter-period trajectories took a thousand steps at the narrow posterior's step size (the
    cap of 128): tuning then cost 250,000 evaluations, here under 110,000. The draws' SD is
    the exact one."""
    y = np.random.default_rng(1).normal(0.3, 0.01, size=100)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 0.01, observed=y)
    post_sd = 1.0 / np.sqrt(1.0 + y.size / 0.01**2)
    post_mean = post_sd**2 * y.sum() / 0.01**2
    starts = np.random.default_rng(2).normal(post_mean, post_sd, size=(16, 1))
    np.testing.assert_allclose(spread_of(starts), starts.std(axis=0))
    assert spread_of(np.zeros((16, 2))).tolist() == [1.0, 1.0]  # no spread: unit scales
    wide = np.random.default_rng(4).normal(0.0, [10.0, 0.1], size=(16, 2))
    assert spread_of(wide)[0] == 1.0 and spread_of(wide)[1] < 0.2  # it only narrows them
    draws, stats = sample_batched_hmc(
        LogDensity(model), np.random.default_rng(3), BatchedHMCSettings(), progressbar=False,
        starts=starts,
    )  # fmt: skip
    kept = stats.chains * stats.draws * stats.mean_leapfrog
    assert stats.evaluations - kept < 110_000
    # the SD of 8,192 draws (ESS in the thousands): within 10% of the exact one
    assert abs(draws.std() / post_sd - 1.0) < 0.1


def test_auto_starts_its_draws_at_the_exploration(normal_mean_case):
    """``method="auto"`` explores first, and its batched HMC chains start at the exploration's
    particles (``draws_starts``); a method alone starts them at PyMC's jittered initial point."""
    ev = pme.marginal_likelihood(normal_mean_case.model, random_seed=3, progressbar=False)
    assert ev.diagnostics["draws_starts"] == "the exploration's particles"
    ev = pme.bridge_sampling(normal_mean_case.model, random_seed=3, progressbar=False)
    assert ev.diagnostics["draws_starts"] == "PyMC's initial point, jittered"


def test_chains_stuck_far_below_the_best_move_to_its_draws():
    """A narrow mode beside a wide one holding a millionth of the mass (``e^-13.8``), with a
    barrier between them: 15 chains started in the wide mode stay there. Their ``log f`` never
    meets that of the one chain started in the narrow mode, and the mass near them is more
    than ``LAGGING_GAP`` below its, so at the end of tuning's first slow window they move to
    that chain's draws (``draws_moved_in_tuning``): the draws then have the posterior's mean,
    0, not 4.7. Where tuning's windows are too short to read (3 transitions: fewer than twice
    the dimension), the stuck chains are seen in the kept draws instead, after their first
    quarter (:func:`early_check_draws`), and every chain runs again from the best chain's
    draws (``draws_restarted``): the first run stops there, so the two runs cost less than one
    and a half runs of 512 kept transitions (two whole runs without the early check)."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 100.0, shape=2)
        narrow = pm.logp(pm.Normal.dist(0.0, 0.05), x).sum()
        wide = np.log(1e-6) + pm.logp(pm.Normal.dist(5.0, 1.0), x).sum()
        pm.Potential("modes", pt.logaddexp(narrow, wide))
    starts = np.vstack([np.zeros((1, 2)), np.full((15, 2), 5.0)])
    draws, stats = sample_batched_hmc(
        as_target(model), np.random.default_rng(3), progressbar=False, starts=starts
    )
    assert stats.diagnostics()["draws_moved_in_tuning"] == 15 and not stats.restarted
    assert np.all(np.abs(draws.reshape(-1, 2).mean(axis=0)) < 0.02)
    draws, stats = sample_batched_hmc(
        as_target(model), np.random.default_rng(3), BatchedHMCSettings(tune=3),
        progressbar=False, starts=starts,
    )  # fmt: skip
    assert stats.restarted and stats.diagnostics()["draws_restarted"]
    assert stats.moved_in_tuning == 0
    assert stats.evaluations < 1.5 * 16 * (3 + 512) * stats.mean_leapfrog
    assert early_check_draws(512, 2) == 128 and early_check_draws(512, 100) == 200
    assert early_check_draws(100, 100) == 100
    assert np.all(np.abs(draws.reshape(-1, 2).mean(axis=0)) < 0.02)
    kept = np.stack([np.zeros((8, 2)), np.full((8, 2), 5.0)])
    log_f = np.stack([np.full(8, -1.0), np.full(8, -20.0)])
    np.testing.assert_array_equal(batched_hmc.best_chain_starts(kept, log_f), np.zeros((2, 2)))


def test_chains_that_meet_in_log_f_or_hold_as_much_mass_are_not_restarted(
    correlated_regression,
):
    """Chains whose ``log f`` overlaps (one distribution, or modes of one height), whose
    medians are less than ``LAGGING_GAP`` apart, or that sit lower in ``f`` but as much
    wider (as much mass near them), are left as they are."""
    rng = np.random.default_rng(0)
    kept = rng.normal(0.0, 1.0, size=(16, 100, 2))
    one = rng.normal(-10.0, 2.0, size=(16, 100))
    assert not batched_hmc.lagging_chains(kept, one)
    wide = one.copy()
    wide[3] = rng.normal(-10.0 - 1.5 * LAGGING_GAP, 10.0, size=100)  # far, but they meet
    assert not batched_hmc.lagging_chains(kept, wide)
    stuck = one.copy()
    stuck[3] = rng.normal(-10.0 - 1.5 * LAGGING_GAP, 0.5, size=100)
    assert batched_hmc.lagging_chains(kept, stuck)
    wider = kept.copy()
    wider[3] *= np.exp(0.75 * LAGGING_GAP)  # the same mass: lower in f, as much wider
    assert not batched_hmc.lagging_chains(wider, stuck)
    _, stats = sample_batched_hmc(
        as_target(correlated_regression[0]), np.random.default_rng(1), progressbar=False
    )
    assert not stats.restarted and stats.moved_in_tuning == 0

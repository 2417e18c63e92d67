"""The pilot measures the thermodynamic length, and ladders are placed at equal length
(``pm_evidence.tempering.pilot``, issue 13 part 3)."""

from __future__ import annotations

import numpy as np
from scipy import integrate

from pm_evidence.tempering.pilot import ladder_from_pilot, length_at


def _exact_length(normal_mean_target) -> float:
    """``int_0^1 sd_beta[log L] d beta`` for the conjugate normal mean (prior reference)."""
    model, _, _ = normal_mean_target
    y = np.asarray(model.rvs_to_values[model.observed_RVs[0]].data)
    n, sigma, tau = y.size, 1.0, 2.0

    def sd(beta):
        precision = 1 / tau**2 + beta * n / sigma**2
        mean = beta * y.sum() / sigma**2 / precision
        s2, d = 1 / precision, mean - y.mean()
        a = n / (2 * sigma**2)  # log L = const - a (mu - ybar)^2
        return a * np.sqrt(2 * s2**2 + 4 * d**2 * s2)

    return integrate.quad(sd, 0, 1, limit=200, points=[1e-4, 1e-3, 1e-2, 1e-1])[0]


def test_pilot_measures_the_thermodynamic_length(normal_mean_target, normal_mean_plan):
    exact = _exact_length(normal_mean_target)
    assert abs(normal_mean_plan.length - exact) < 0.15 * exact, (normal_mean_plan.length, exact)
    assert normal_mean_plan.pilot.betas[0] == 0.0 and normal_mean_plan.pilot.betas[-1] == 1.0
    assert np.all(np.diff(normal_mean_plan.pilot.betas) > 0)


def test_adaptive_ladder_is_at_equal_length(normal_mean_plan):
    betas, step_size, log_z = ladder_from_pilot(normal_mean_plan.pilot, 12)
    assert betas[0] == 0.0 and betas[-1] == 1.0 and np.all(np.diff(betas) > 0)
    np.testing.assert_allclose(
        np.diff(length_at(normal_mean_plan.pilot, betas)), normal_mean_plan.length / 11, rtol=1e-6
    )
    assert np.all(step_size > 0) and log_z[0] == 0.0
    ladder = normal_mean_plan.ladder("adaptive", None, 1e-4, default_rungs=7)
    assert ladder.n_rungs == 7 and "equal thermodynamic length" in ladder.how


def test_the_resampling_is_one_implementation_on_numpy_and_on_the_device():
    """``resampled_indices`` over NumPy gives ``systematic_resample`` by the normalized
    incremental weights and their ``log mean`` to the bit; over JAX (jitted, as for particles
    kept on a device) the same indices and the same ``log mean`` to rounding. Points outside
    the support (``Delta = -inf`` or NaN) are never drawn."""
    from pm_evidence.core.utils import log_mean_exp, normalized_weights
    from pm_evidence.tempering.pilot import resampled_indices, systematic_resample

    rng = np.random.default_rng(4)
    delta = rng.normal(-50.0, 20.0, 1000)
    delta[:7], delta[7:9] = -np.inf, np.nan
    d_beta = 0.013
    increment = np.where(np.isfinite(delta), d_beta * delta, -np.inf)
    expected = systematic_resample(np.random.default_rng(9), normalized_weights(increment))
    u = np.random.default_rng(9).random()
    idx, log_mean = resampled_indices(np, delta, d_beta, u)
    np.testing.assert_array_equal(idx, expected)
    assert log_mean == log_mean_exp(increment)
    assert not np.isin(idx, np.arange(9)).any()
    jax = __import__("pytest").importorskip("jax")
    __import__("pytensor.link.jax.dispatch")  # float64 on JAX, as for a JAX model
    from pm_evidence.model.backend import jitted_over_jax

    on_device, log_mean_device = jitted_over_jax(resampled_indices)(
        jax.device_put(delta), d_beta, u
    )
    np.testing.assert_array_equal(np.asarray(on_device), expected)
    np.testing.assert_allclose(float(log_mean_device), log_mean, rtol=1e-12)

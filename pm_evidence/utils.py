"""Shared helpers: random generators, log-space reductions, effective sample sizes.

Every other module calls these; none of them keeps state.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "as_generator",
    "kish_ess",
    "log_mean_exp",
    "mcmc_ess",
    "normalized_weights",
    "relative_sd_of_mean",
    "spawn_seed",
]


def as_generator(random_seed: int | np.random.Generator | np.random.SeedSequence | None):
    """Convert a ``random_seed`` argument to a :class:`numpy.random.Generator`.

    An existing Generator is used as is (its state advances); ``None`` gives fresh OS entropy.
    The global NumPy RNG is never touched.
    """
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if random_seed is None or isinstance(random_seed, int | np.integer | np.random.SeedSequence):
        return np.random.default_rng(random_seed)
    raise TypeError(
        f"random_seed must be None, an int, a SeedSequence or a numpy Generator, "
        f"got {type(random_seed).__name__}"
    )


def spawn_seed(rng: np.random.Generator) -> int:
    """Draw an integer seed from ``rng`` for a library (PyMC) that wants one."""
    return int(rng.integers(2**31 - 1))


def log_mean_exp(log_values: np.ndarray, axis=None) -> np.ndarray:
    """``log(mean(exp(log_values)))`` computed stably with log-sum-exp."""
    log_values = np.asarray(log_values, dtype=float)
    n = log_values.size if axis is None else log_values.shape[axis]
    return logsumexp(log_values, axis=axis) - np.log(n)


def normalized_weights(log_weights) -> np.ndarray:
    """``w / sum(w)`` from log weights (flattened), computed without overflow."""
    log_weights = np.asarray(log_weights, dtype=float).ravel()
    return np.exp(log_weights - logsumexp(log_weights))


def relative_sd_of_mean(log_values: np.ndarray, n_eff: float) -> float:
    """Standard error of ``log(mean(exp(v)))`` by the delta method.

    With ``w = exp(v)``, ``se(log mean w) = sd(w) / (sqrt(n_eff) * mean(w))``; ``w`` is scaled by
    its maximum first so that nothing overflows.
    """
    log_values = np.asarray(log_values, dtype=float).ravel()
    w = np.exp(log_values - np.max(log_values))
    return float(np.std(w, ddof=1) / (np.sqrt(n_eff) * np.mean(w)))


def kish_ess(log_weights: np.ndarray) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of importance weights, in log space."""
    log_weights = np.asarray(log_weights, dtype=float).ravel()
    return float(np.exp(2 * logsumexp(log_weights) - logsumexp(2 * log_weights)))


def mcmc_ess(values: np.ndarray) -> float:
    """Effective sample size of the mean of ``values`` shaped ``(chain, draw)``.

    Uses ArviZ's rank-free "mean" ESS (Geyer's initial monotone sequence over chains); a 1-D
    array is treated as one chain. Constant input returns the number of draws.
    """
    from arviz_stats.base import array_stats

    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[None, :]
    if np.ptp(values) == 0:
        return float(values.size)
    ess = float(array_stats.ess(values, chain_axis=-2, draw_axis=-1, method="mean"))
    if not np.isfinite(ess):
        return float(values.size)
    return min(ess, float(values.size)) if ess > 0 else 1.0

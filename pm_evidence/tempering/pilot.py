r"""The pilot run: an adaptive sequential Monte Carlo pass along the path that places the rungs.

From ``beta = 0`` the pilot picks each next ``beta`` so that the Kish ESS of the incremental
weights ``exp((beta' - beta) Delta(x_i))`` is a fixed fraction ``rho`` of the particles (the
conditional-ESS rule of adaptive SMC tempering; Jasra et al. 2011, Zhou, Johansen & Aston 2016),
resamples, and moves the particles with the path's kernel while tuning its step size. It yields,
at no extra cost:

* the **thermodynamic length** of the path, ``L = int_0^1 s(beta) d beta`` with
  ``s(beta) = sd_beta[Delta]`` (Gelman & Meng 1998; seed 004 §3.4's moments of ``Delta`` under
  ``f_beta``), from ``s`` at the pilot's rungs (:func:`step_lengths`). Rungs at equal length
  apart are equally hard to cross, which is what both annealing and tempering need
  (:func:`ladder_from_pilot`);
* the kernel's step size at every ``beta`` (held fixed afterwards, so AIS stays unbiased and the
  tempered chains are valid MCMC);
* an SMC estimate of ``log Z_beta`` at every pilot rung, RTS's starting ``log Zhat``
  (seed 004 §2.4: "or a better estimate, if known").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq

from pm_evidence.core.options import PILOT_CHAINS
from pm_evidence.core.progress import long_run
from pm_evidence.core.utils import kish_ess, warn_user
from pm_evidence.model.backend import is_on_device, jitted_over_jax, take_rows
from pm_evidence.tempering.kernels import Kernel, adapt_step_size, resident_chains, transition
from pm_evidence.tempering.path import GeometricPath, PathState, state_on_device, state_on_host

__all__ = [
    "Pilot",
    "ladder_from_pilot",
    "length_at",
    "next_beta",
    "resampled_indices",
    "run_pilot",
    "smc_step",
    "step_lengths",
    "systematic_resample",
    "take",
]

# Each pilot step keeps this fraction of the particles' ESS: a step of thermodynamic length
# sqrt(-log 0.5) = 0.83.
PILOT_ESS_FRACTION = 0.5
MAX_PILOT_RUNGS = 2000


class Pilot(NamedTuple):
    """What the pilot measured along the path (rung ``j`` of the pilot's own ladder)."""

    betas: np.ndarray  # (J,) from 0 to 1
    length: np.ndarray  # (J,) thermodynamic length from beta = 0 to betas[j]
    delta_sd: np.ndarray  # (J,) sd_beta[Delta] of the moved particles
    log_step_size: np.ndarray  # (J,) log of the kernel's tuned step size (Ladder.step_size)
    log_z: np.ndarray  # (J,) SMC estimate of log Z_beta - log Z_0
    n_evaluations: int
    final: PathState  # the particles at beta = 1 (equally weighted)

    @property
    def log_tuning(self) -> np.ndarray:
        """Deprecated name of ``log_step_size``."""
        warn_user(
            "Pilot.log_tuning is deprecated and will be removed: read Pilot.log_step_size instead.",
            FutureWarning,
        )
        return self.log_step_size


def _initial_log_step_size(kernel: Kernel, state: PathState) -> float:
    """A starting log step size from the spread of reference draws (adapted afterwards)."""
    x = state.x if kernel.continuous_mask is None else state.x[:, kernel.continuous_mask]
    spread = float(np.median(np.std(x, axis=0))) if x.shape[0] > 1 else 1.0
    spread = spread if np.isfinite(spread) and spread > 0 else 1.0
    d = x.shape[1]
    if kernel.continuous_name == "rwm":
        return float(np.log(2.38 * spread / np.sqrt(d)))
    return float(np.log(spread / d**0.25))  # HMC: eps ~ d^(-1/4)


def next_beta(delta: np.ndarray, beta: float, fraction: float) -> tuple[float, float]:
    """The largest ``beta' <= 1`` whose incremental weights ``exp((beta' - beta) Delta)`` keep a
    Kish ESS of ``fraction`` of the particles inside the target's support; returns ``beta'``
    and the ESS fraction reached (above ``fraction`` only when ``beta' = 1``)."""
    finite = np.isfinite(delta)
    d = delta[finite]
    n = d.size

    def ess_gap(step: float) -> float:
        return kish_ess(step * d) / n - fraction

    remaining = 1.0 - beta
    if ess_gap(remaining) >= 0.0:
        return 1.0, ess_gap(remaining) + fraction
    step = brentq(ess_gap, 0.0, remaining, xtol=1e-14 * max(remaining, 1e-300), rtol=1e-10)
    step = max(step, 1e-15)
    return min(beta + step, 1.0), ess_gap(step) + fraction


def _hyperbolic_scale(h: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    """``c`` of ``s(beta) = c / (beta + b)`` through ``(0, s0)`` and ``(h, s1)``: ``c = h s0 s1
    / (s0 - s1)`` (``inf`` where ``s0 = s1``: ``s`` is then constant on the step)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        c = h * s0 * s1 / (s0 - s1)
    return np.where(np.isclose(s0, s1, rtol=1e-9, atol=0.0), np.inf, c)


def step_lengths(betas: np.ndarray, delta_sd: np.ndarray) -> np.ndarray:
    r"""Thermodynamic length of each pilot step, ``int s(beta) d beta`` over ``[beta_j,
    beta_{j+1}]``, with ``s`` hyperbolic on the step: ``s(beta) = c / (beta + b)`` through the
    measured ``s_j`` and ``s_{j+1}``. A data-dominated path has this shape (the posterior's
    precision grows linearly in ``beta``, so ``sd_beta[Delta]`` falls like ``1/beta``), where a
    linear or trapezoid rule over-states the long first steps several times. The length is
    ``h s_j s_{j+1} log(s_j / s_{j+1}) / (s_j - s_{j+1})`` (``h s`` when they are equal): close
    to the exact length from a few pilot rungs (measured: docs/benchmarks.rst, Measurements
    behind the defaults).
    """
    h = np.diff(betas)
    s0, s1 = np.maximum(delta_sd[:-1], 1e-300), np.maximum(delta_sd[1:], 1e-300)
    c = _hyperbolic_scale(h, s0, s1)
    with np.errstate(divide="ignore", invalid="ignore"):
        curved = c * np.log(s0 / s1)
    return np.where(np.isfinite(c), curved, h * s0)


def systematic_resample(rng, weights: np.ndarray, n: int | None = None) -> np.ndarray:
    """Indices of ``n`` draws (``weights.size`` where not given) by systematic resampling (one
    uniform, evenly spaced positions on the cumulative normalized ``weights``)."""
    return _systematic(np, weights, rng.random(), weights.size if n is None else n)


def _systematic(xp, weights, u: float, n: int):
    """The indices of ``n`` evenly spaced positions from ``u`` on the cumulative ``weights``,
    over the array namespace ``xp``."""
    positions = (u + xp.arange(n)) / n
    return xp.minimum(xp.searchsorted(xp.cumsum(weights), positions), weights.shape[0] - 1)


def smc_step(
    rng: np.random.Generator, state: PathState, beta: float, ess_fraction: float
) -> tuple[PathState, float, float]:
    """One step of adaptive tempered SMC: the next ``beta'`` by the conditional-ESS rule
    (:func:`next_beta`), the incremental weights ``w_i = exp((beta' - beta) Delta(x_i))`` (zero
    outside the target's support), and systematic resampling by them.

    Returns
    -------
    state : PathState
        The resampled particles (equally weighted at ``beta'``).
    new_beta : float
    log_increment : float
        ``log mean w``, this step's term of the SMC estimate of ``log Z`` (seed 000 eq. (8)
        with resampling).
    """
    # the next beta from Delta on the host (a vector: a root find); the weights and the
    # resampling where the particles are (jitted on the device for particles kept there)
    new_beta, _ = next_beta(np.asarray(state.delta), beta, ess_fraction)
    u = rng.random()
    if is_on_device(state.delta):
        idx, log_increment = jitted_over_jax(resampled_indices)(state.delta, new_beta - beta, u)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            idx, log_increment = resampled_indices(np, state.delta, new_beta - beta, u)
    return take(state, idx), new_beta, float(log_increment)


def resampled_indices(xp, delta, d_beta: float, u: float):
    """Systematic resampling by the incremental weights ``w_i = exp(d_beta Delta(x_i))`` (zero
    outside the target's support) at the uniform ``u``: the indices and ``log mean w``, over
    the array namespace ``xp`` (NumPy, or JAX's on the device: one implementation).

    The same operations as :func:`~pm_evidence.core.utils.normalized_weights`,
    :func:`~pm_evidence.core.utils.log_mean_exp` and :func:`systematic_resample`, so that on
    NumPy the indices are theirs to the bit."""
    n = delta.shape[0]
    increment = xp.where(xp.isfinite(delta), d_beta * delta, -xp.inf)
    top = xp.max(increment)
    top = xp.where(xp.isfinite(top), top, 0.0)  # all -inf: the sum is 0, its log -inf
    log_total = xp.log(xp.sum(xp.exp(increment - top))) + top
    return _systematic(xp, xp.exp(increment - log_total), u, n), log_total - xp.log(n)


def take(state: PathState, idx: np.ndarray) -> PathState:
    """The rows ``idx`` of every array of ``state`` (where the arrays are: a gather on the
    device for a state kept there)."""
    return PathState(*take_rows(tuple(state), idx))


def run_pilot(
    rng: np.random.Generator,
    path: GeometricPath,
    kernel: Kernel,
    *,
    n_chains: int = PILOT_CHAINS,
    n_adapt: int = 4,
    ess_fraction: float = PILOT_ESS_FRACTION,
    max_rungs: int = MAX_PILOT_RUNGS,
    progressbar: bool = False,
) -> Pilot:
    r"""Adaptive SMC from ``p0`` to the posterior (see the module docstring).

    At each rung: the next ``beta`` by the conditional-ESS rule (:func:`next_beta`), the
    incremental weights ``w_i = exp((beta' - beta) Delta(x_i))`` added to ``log Z`` as
    ``log mean w`` (seed 000 eq. (8) with resampling), systematic resampling, then ``n_adapt``
    transitions at ``beta'`` moving the log step size by the gap between the acceptance rate
    and the kernel's target (Robbins-Monro). ``Var_beta'[Delta]`` is taken over the moved
    particles.

    Parameters
    ----------
    rng : numpy.random.Generator
    path : GeometricPath
    kernel : Kernel
    n_chains : int
        Particles.
    n_adapt : int
        Transitions per rung (five times as many at ``beta = 0``, to tune from scratch).
    ess_fraction : float
        ``rho``: the ESS fraction each step keeps (a step of length ``sqrt(-log rho)``).
    max_rungs : int
        Cap on the pilot's rungs; the path is declared too long beyond it.
    progressbar : bool

    Returns
    -------
    Pilot
    """
    state = path.sample_reference(rng, n_chains, with_grad=kernel.needs_grad)
    log_step = _initial_log_step_size(kernel, state)
    resident = resident_chains(kernel, path)
    if resident:  # the particles stay on the device; Delta and the acceptances come back
        state = state_on_device(state)
    betas, log_steps, log_zs, delta_sds = [0.0], [], [0.0], []
    n_eval = n_chains
    points_moved = 0  # the pilot is a run of its own (kernels.transition)
    beta, log_z = 0.0, 0.0
    with long_run(None, "pilot run (rungs)", progressbar) as bar:
        while True:
            steps = (n_adapt * (5 if beta == 0.0 else 1)) if kernel.adaptive else 1
            beta_vec = np.full(n_chains, beta)
            for _ in range(steps):
                step_size = np.full(n_chains, np.exp(log_step))
                state, accepted, _ = transition(
                    kernel, rng, path, state, beta_vec, step_size, points_moved
                )
                points_moved += n_chains
                if kernel.adaptive:
                    log_step = adapt_step_size(log_step, accepted.mean(), kernel.target_accept)
            n_eval += steps * n_chains * kernel.evaluations_per_step
            log_steps.append(float(log_step))
            delta = np.asarray(state.delta)
            finite = np.isfinite(delta)
            delta_sds.append(float(np.std(delta[finite])) if finite.sum() > 1 else 0.0)
            if beta >= 1.0:
                break
            if len(betas) >= max_rungs:
                raise RuntimeError(
                    f"The pilot run needed more than {max_rungs} rungs to reach beta = 1 (at "
                    f"beta = {beta:.3g}); the path from the reference to the posterior is too "
                    f"long. Use a reference closer to the posterior."
                )
            if not finite.any():
                raise RuntimeError(
                    "Every pilot particle lies where the target's density is zero; the "
                    "reference does not overlap the posterior's support."
                )
            state, beta, log_increment = smc_step(rng, state, beta, ess_fraction)
            log_z += log_increment
            betas.append(beta)
            log_zs.append(log_z)
            bar.advance()
            if bar.interrupted:
                raise KeyboardInterrupt("Interrupted during the pilot run; nothing to return.")
    betas, delta_sds = np.asarray(betas), np.asarray(delta_sds)
    lengths = np.concatenate([[0.0], np.cumsum(step_lengths(betas, delta_sds))])
    final = state_on_host(state) if resident else state
    return Pilot(
        betas, lengths, delta_sds, np.asarray(log_steps), np.asarray(log_zs), n_eval, final
    )


def length_at(pilot: Pilot, betas: np.ndarray) -> np.ndarray:
    """Thermodynamic length from ``beta = 0`` to each of ``betas``, by the rule of
    :func:`step_lengths` (the inverse of the placement in :func:`ladder_from_pilot`)."""
    b, s_all, cum = pilot.betas, np.maximum(pilot.delta_sd, 1e-300), pilot.length
    betas = np.asarray(betas, dtype=float)
    step = np.clip(np.searchsorted(b, betas, side="right") - 1, 0, b.size - 2)
    h, s0, s1 = b[step + 1] - b[step], s_all[step], s_all[step + 1]
    into = betas - b[step]
    c = _hyperbolic_scale(h, s0, s1)
    with np.errstate(divide="ignore", invalid="ignore"):
        curved = c * np.log1p(s0 * into / c)
    return cum[step] + np.where(np.isfinite(c), curved, s0 * into)


def ladder_from_pilot(pilot: Pilot, n_rungs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""``n_rungs`` rungs at equal thermodynamic length apart, with the pilot's step size and
    ``log Z_beta`` interpolated to them.

    Within a pilot step ``s(beta)`` is hyperbolic (:func:`step_lengths`), so the length from the
    step's start ``beta_j`` is ``c log(1 + s_j (beta - beta_j) / c)``, and the rung at length
    ``l`` into the step is ``beta_j + (c / s_j)(exp(l / c) - 1)`` (``beta_j + l / s_j`` for a
    constant ``s``). The log step size and ``log Z_beta`` are interpolated linearly in ``beta``.

    Returns
    -------
    betas, step_size, log_z : numpy.ndarray (n_rungs,)
        The ladder (``0`` and ``1`` included), the step size per rung and the pilot's
        ``log Z_beta`` there.
    """
    if n_rungs < 2:
        raise ValueError(f"n_rungs must be at least 2, got {n_rungs}.")
    b, s_all, cum = pilot.betas, np.maximum(pilot.delta_sd, 1e-300), pilot.length
    target = np.linspace(0.0, cum[-1], n_rungs)
    step = np.clip(np.searchsorted(cum, target, side="right") - 1, 0, b.size - 2)
    h, s0, s1 = b[step + 1] - b[step], s_all[step], s_all[step + 1]
    into = target - cum[step]
    c = _hyperbolic_scale(h, s0, s1)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        curved = (c / s0) * np.expm1(into / c)
    offset = np.where(np.isfinite(c), curved, into / s0)
    betas = np.clip(b[step] + np.minimum(offset, h), 0.0, 1.0)
    betas[0], betas[-1] = 0.0, 1.0
    betas = np.maximum.accumulate(betas)
    if np.any(np.diff(betas) <= 0):  # a zero-length stretch: spread those rungs evenly
        betas = np.unique(betas)
        betas = np.interp(np.linspace(0, betas.size - 1, n_rungs), np.arange(betas.size), betas)
    step_size = np.exp(np.interp(betas, pilot.betas, pilot.log_step_size))
    log_z = np.interp(betas, pilot.betas, pilot.log_z)
    return betas, step_size, log_z

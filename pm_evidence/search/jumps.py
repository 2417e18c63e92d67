r"""Jumps between modes: independent Metropolis-Hastings moves of a population of particles
from Gaussian mixtures fitted to it, the exploration's moves between modes
(:mod:`pm_evidence.search.exploration`).

A particle ``x`` at ``f_beta`` jumps to ``x' ~ q``, accepted with probability

.. math::
    \min\Bigl(1, \frac{f_\beta(x')\, q(x)}{f_\beta(x)\, q(x')}\Bigr),

which leaves ``f_beta`` invariant wherever ``q`` does not depend on the particle it moves (SMC
with independent proposals: Chopin 2002; South, Pettitt & Drovandi 2019). A particle can so
move to any mode another particle holds, in one step.
"""

from __future__ import annotations

import numpy as np

from pm_evidence.model.backend import (
    is_on_device,
    padded_index,
    put_rows,
    rows_changed,
    rows_on_host,
    select_rows,
    take_rows,
)
from pm_evidence.references import MixtureReference
from pm_evidence.search.mixtures import pooled
from pm_evidence.tempering.compiled import device_mixture_density
from pm_evidence.tempering.path import PathState, tempered_log_density
from pm_evidence.tempering.pilot import take

__all__ = ["JUMPS_PER_PARTICLE", "cross_fitted_jumps", "evaluated", "mixture_density"]

# A rung's jumps are repeated until the particles have made this many accepted jumps each, on
# average (at most ExplorationOptions.n_jumps jumps).
JUMPS_PER_PARTICLE = 3.0


def evaluated(path, x, with_grad: bool, resident: bool) -> PathState:
    """The path at points ``x`` (NumPy's or JAX's): with ``resident`` (the particles are kept
    on the device) computed there by the model's own functions and left there
    (:meth:`~pm_evidence.tempering.path.GeometricPath.evaluate`)."""
    return path.evaluate(x, with_grad=with_grad, resident=resident)


def mixture_density(path, q: MixtureReference, x) -> np.ndarray:
    """``q.logpdf(x)`` as a NumPy vector, computed on the device for points kept there."""
    on_device = device_mixture_density(path.target, q) if is_on_device(x) else None
    return q.logpdf(x) if on_device is None else on_device(x)


def _jump(rng, path, state: PathState, beta: float, q: MixtureReference, with_grad,
          log_q_state: np.ndarray | None = None):  # fmt: skip
    """One independent Metropolis-Hastings move of every particle from ``q``; ``log_q_state``:
    ``q.logpdf(state.x)`` where the caller holds it. Returns the moved state, the acceptance
    rate and ``q.logpdf`` at the moved particles.

    Where the particles are kept on the device, the proposals are drawn on the host (from the
    run's generator), evaluated there and merged there; the test itself reads the particles'
    and the proposals' values (vectors) on the host."""
    x_new = q.sample(rng, state.x.shape[0])
    proposal = evaluated(path, x_new, with_grad, is_on_device(state.x))
    if log_q_state is None:
        log_q_state = mixture_density(path, q, state.x)
    log_q_proposal = q.logpdf(x_new)
    log_target_new = tempered_log_density(
        np.asarray(proposal.log_p0), np.asarray(proposal.delta), beta
    )
    log_target_old = tempered_log_density(np.asarray(state.log_p0), np.asarray(state.delta), beta)
    log_ratio = log_target_new - log_target_old + log_q_state - log_q_proposal
    with np.errstate(invalid="ignore"):
        accept = np.log(rng.random(log_ratio.size)) < np.where(
            np.isfinite(log_target_new), log_ratio, -np.inf
        )
    merged = PathState(*select_rows(accept, tuple(proposal), tuple(state)))
    return merged, float(accept.mean()), np.where(accept, log_q_proposal, log_q_state)


def _put(state: PathState, idx: np.ndarray, part: PathState) -> PathState:
    """``state`` with the rows ``idx`` replaced by ``part`` (where ``state`` is)."""
    return PathState(*put_rows(tuple(state), idx, tuple(part)))


def cross_fitted_jumps(
    rng,
    path,
    state: PathState,
    beta: float,
    with_grad: bool,
    fit,
    n_jumps: int,
    remembered: MixtureReference | None = None,
    memory: MixtureReference | None = None,
    *,
    gradient_once: bool = False,
    fit_points: int | None = None,
):
    """Independent Metropolis-Hastings moves of every particle, each half of the particles
    (split at random) proposed from the mixture fitted to the other half.

    A mixture fitted to all the particles and used to move them favours leaving the sparse
    regions: there the fit hugs the few particles, so ``q`` at a particle exceeds ``q`` at a
    fresh proposal nearby, and the acceptance ratio ``q(x) / q(x')`` rises: modes whose mass
    stretches into the far tails of the unconstrained space (at a bound) are drained of their
    particles (measured: docs/benchmarks.rst, Measurements behind the defaults). Fitted to the
    other half (once, at
    the rung's start), ``q`` is independent of the particles it moves, and every move leaves
    ``f_beta`` invariant exactly.

    The moves are repeated, up to ``n_jumps`` times, until the particles have made
    ``JUMPS_PER_PARTICLE`` accepted jumps each on average: a jump costs one evaluation,
    and where the mixture fits the modes poorly (jumps rarely accepted) one jump per rung
    leaves the particles' shares of the modes far off (measured: docs/benchmarks.rst,
    Measurements behind the defaults). Where
    both proposals have one component (a unimodal posterior) one jump is made. Each half's
    proposal also holds, with half the weight, the mixtures of the rung before
    (``remembered``): a mode that the last resampling emptied is still proposed, and refilled.
    A second pass of the exploration adds, at every rung and also where the fits have one
    component, an earlier pass's final mixture (``memory``, fixed: independent of the
    particles), so that a mode found late is proposed from the first rung on.

    With ``with_grad`` and ``gradient_once``, repeated jumps evaluate their proposals without
    the gradient (a model whose value costs far less alone:
    :attr:`~pm_evidence.LogDensity.values_apart`), and the gradient is taken once after the
    last jump, at the particles that moved (one more evaluation each); a single jump takes it
    with the value.

    ``fit(x) -> MixtureReference``, given at most ``fit_points`` of a half's particles (all
    where ``None``), in random order. Returns the moved state, the mean acceptance rate, the
    first half's mixture and the number of jumps made.

    Particles kept on the device (JAX's arrays: :func:`~pm_evidence.tempering.kernels.resident_chains`)
    stay there: what comes to the host is the points each half's mixture is fitted to, and each
    jump's values and densities at the particles (vectors).
    """
    halves = np.array_split(rng.permutation(state.x.shape[0]), 2)
    # each half's points to the host for its fit (at most ``fit_points`` of them)
    mixtures = [fit(rows_on_host(state.x, half[:fit_points])) for half in halves]
    if memory is None and all(q.n_components == 1 for q in mixtures):
        # one jump from the fitted normals where both halves' fits are single normals (a
        # unimodal posterior): the jumps then only refresh the particles within one mode,
        # which the local moves also do
        proposals, n_jumps = mixtures, 1
    else:
        proposals = [m if remembered is None else pooled(m, remembered) for m in mixtures]
        if memory is not None:
            proposals = [pooled(q, memory) for q in proposals]

    later = with_grad and gradient_once and n_jumps > 1
    start = state
    if later:
        state = state._replace(grad_log_p0=None, grad_delta=None)
    rates = []
    # each half's proposal density at its particles, carried from jump to jump (a half is
    # always proposed from the same mixture): one mixture density per jump, not two
    log_q = [None, None]
    while len(rates) < n_jumps and sum(rates) < JUMPS_PER_PARTICLE:
        accepted = 0.0
        for i, (moving, q) in enumerate(zip(halves, reversed(proposals), strict=True)):
            part, rate, log_q[i] = _jump(
                rng, path, take(state, moving), beta, q, with_grad and not later, log_q[i]
            )
            state = _put(state, moving, part)
            accepted += rate * moving.size
        rates.append(accepted / state.x.shape[0])
    if later:
        moved = np.flatnonzero(rows_changed(state.x, start.x))
        resident = is_on_device(state.x)
        if resident:  # a few index lengths, not one per count (the repeats write the same rows)
            moved = padded_index(moved)
        state = start if not moved.size else _put(
            start, moved, evaluated(path, take_rows((state.x,), moved)[0], True, resident)
        )  # fmt: skip
    return state, float(np.mean(rates)), mixtures, len(rates)

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

from pm_evidence.references import MixtureReference
from pm_evidence.search.mixtures import pooled
from pm_evidence.tempering.path import PathState, tempered_log_density
from pm_evidence.tempering.pilot import take

__all__ = ["JUMPS_PER_PARTICLE", "cross_fitted_jumps"]

# A rung's jumps are repeated until the particles have made this many accepted jumps each, on
# average (at most ExplorationOptions.n_jumps jumps).
JUMPS_PER_PARTICLE = 3.0


def _jump(rng, path, state: PathState, beta: float, q: MixtureReference, with_grad,
          log_q_state: np.ndarray | None = None):  # fmt: skip
    """One independent Metropolis-Hastings move of every particle from ``q``; ``log_q_state``:
    ``q.logpdf(state.x)`` where the caller holds it. Returns the moved state, the acceptance
    rate and ``q.logpdf`` at the moved particles."""
    proposal = path.evaluate(q.sample(rng, state.x.shape[0]), with_grad=with_grad)
    if log_q_state is None:
        log_q_state = q.logpdf(state.x)
    log_q_proposal = q.logpdf(proposal.x)
    log_target_new = tempered_log_density(proposal.log_p0, proposal.delta, beta)
    log_target_old = tempered_log_density(state.log_p0, state.delta, beta)
    log_ratio = log_target_new - log_target_old + log_q_state - log_q_proposal
    with np.errstate(invalid="ignore"):
        accept = np.log(rng.random(log_ratio.size)) < np.where(
            np.isfinite(log_target_new), log_ratio, -np.inf
        )
    merged = PathState(
        *(None if a is None else np.where(accept.reshape(-1, *[1] * (a.ndim - 1)), b, a)
          for a, b in zip(state, proposal, strict=True))
    )  # fmt: skip
    return merged, float(accept.mean()), np.where(accept, log_q_proposal, log_q_state)


def _put(state: PathState, idx: np.ndarray, part: PathState) -> PathState:
    """``state`` with the rows ``idx`` replaced by ``part``."""
    fields = []
    for whole, rows in zip(state, part, strict=True):
        if whole is None:
            fields.append(None)
            continue
        whole = whole.copy()
        whole[idx] = rows
        fields.append(whole)
    return PathState(*fields)


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

    ``fit(x) -> MixtureReference``. Returns the moved state, the mean acceptance rate, the
    first half's mixture and the number of jumps made.
    """
    halves = np.array_split(rng.permutation(state.x.shape[0]), 2)
    mixtures = [fit(state.x[half]) for half in halves]
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
        moved = np.flatnonzero(np.any(state.x != start.x, axis=1))
        landed = state.x[moved]
        state = start if not moved.size else _put(
            start, moved, path.evaluate(landed, with_grad=True)
        )  # fmt: skip
    return state, float(np.mean(rates)), mixtures, len(rates)

r"""One HMC transition of many chains at once, on either engine: the chains' state, the
metric, the trajectory and the Metropolis test of batched HMC
(:mod:`pm_evidence.model.batched_hmc`, which tunes and runs them).

For scales ``s`` and the metric's factor ``F`` (``M^{-1/2} = diag(s) F``; ``F = I`` for a
diagonal metric), step size ``eps`` and momentum ``p ~ N(0, I)`` (Neal 2011, eq. 5.18-5.20,
with ``p`` standardized)

.. math::
    p_{1/2} = p + \tfrac{\epsilon}{2} F^T s \odot \nabla \log f(x), \quad
    x_{l} = x_{l-1} + \epsilon\, s \odot F p_{l-1/2}, \quad
    p_{l+1/2} = p_{l-1/2} + \epsilon\, F^T s \odot \nabla \log f(x_l),

``L`` steps (the last momentum step a half step), accepted with probability
``min(1, exp(H_0 - H_L))``, ``H = |p|^2 / 2 - log f(x)`` (seed 004 §3's kernel at ``beta =
1``). A non-finite position or energy is a rejection, counted as a divergence, as is an energy
error above ``DIVERGENCE_ENERGY``. The step, the energies and the test are written once
(:mod:`pm_evidence.model.leapfrog`), over NumPy and over PyTensor's graph.

On Numba every leapfrog step is one call of the model's compiled, batched log density and
gradient, and the rest is NumPy on ``(chains, dim)`` arrays. On JAX the whole transition runs
on the device, ``CHUNK_STEPS`` leapfrog steps of every chain per call
(:func:`fused_leapfrog_function`), and the chains' positions, log densities and gradients
stay there from one transition to the next: what comes to the host is ``chains`` numbers per
statistic. The momenta and the uniforms of the test are drawn on the host from the caller's
generator in the same order on both engines, so both make the same Markov chain up to
floating-point rounding.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pm_evidence.model.backend import to_device
from pm_evidence.model.compile_mode import without_garbage_collection
from pm_evidence.model.leapfrog import (
    kinetic_energy,
    leapfrog_maps,
    leapfrog_step,
    metropolis_acceptance,
    point_acceptance,
)
from pm_evidence.model.log_density import LogDensity

__all__ = [
    "CHUNK_STEPS",
    "DIVERGENCE_ENERGY",
    "HMCState",
    "Metric",
    "fused_leapfrog_function",
    "hmc_transition",
    "leapfrog_trajectory",
]

DIVERGENCE_ENERGY = 1000.0  # an energy error above this is a divergence (as PyMC's NUTS)
# Leapfrog steps per call on JAX (fused_leapfrog_function): a trajectory of L steps is
# ceil(L / CHUNK_STEPS) calls, at most CHUNK_STEPS - 1 of its steps computed and discarded.
CHUNK_STEPS = 16


class HMCState:
    """The chains' positions ``x (c, dim)`` with their log-density and gradient, on
    ``target``; :func:`hmc_transition` moves it (by replacing the arrays, never by writing
    into them). Where the transitions run on JAX's device, the arrays are JAX's, there."""

    def __init__(self, target: LogDensity, x: np.ndarray):
        self.target = target
        self.function = target.terms_grad_function  # x (n, dim) -> log p0, log L, gradients
        self.x = x
        self.log_f, self.grad = self._evaluate(x)
        self._metric_rows = None  # (the metric, its rows, its constants): on the device

    def copy(self) -> HMCState:
        """The same points, without evaluating them again (a transition moves the copy)."""
        other = HMCState.__new__(HMCState)
        other.target, other.function, other.x, other.log_f, other.grad = (
            self.target,
            self.function,
            self.x,
            self.log_f,
            self.grad,
        )
        other._metric_rows = self._metric_rows
        return other

    def _evaluate(self, x):
        with np.errstate(invalid="ignore", over="ignore"):
            return _log_f_and_grad(self.function, x)

    def metric_on_device(self, metric: Metric) -> tuple[tuple, tuple]:
        """``metric`` as the fused function reads it (:func:`fused_leapfrog_function`), on
        the device: its rows (the scales ``(c, dim)``, and each chain's factor for the kind
        ``"per chain"``) and its constants (the one factor of the kind ``"dense"``), sent
        once per metric and kept for the transitions after it, not sent with every call."""
        if self._metric_rows is None or self._metric_rows[0] is not metric:
            rows = [np.broadcast_to(metric.scale, self.x.shape)]
            per_chain = metric.kind == "per chain"
            factor = () if metric.factor is None else (metric.factor,)
            rows += factor if per_chain else ()
            placed = [tuple(to_device(np.ascontiguousarray(a)) for a in arrays)
                      for arrays in (rows, () if per_chain else factor)]  # fmt: skip
            self._metric_rows = (metric, *placed)
        return self._metric_rows[1:]


def _log_f_and_grad(function, x):
    """``log f`` and its gradient at ``x`` from the compiled function's four terms."""
    log_prior, log_lik, g_prior, g_lik = function(x)
    return log_prior + log_lik, g_prior + g_lik


class Metric(NamedTuple):
    """The mass matrix's square root ``M^{-1/2} = diag(s) F``: the scales ``s (c, dim)`` and,
    where the posterior's correlations call for it
    (:func:`~pm_evidence.model.batched_hmc.window_estimates`), the Cholesky factor ``F (dim,
    dim)`` of its regularized correlation, or one factor per chain ``F (c, dim, dim)`` where
    the chains sit apart (``None``: a diagonal metric)."""

    scale: np.ndarray
    factor: np.ndarray | None = None

    @property
    def dense(self) -> bool:
        return self.factor is not None

    @property
    def kind(self) -> str:
        """``"diagonal"``, ``"dense"`` (one factor) or ``"per chain"``."""
        if self.factor is None:
            return "diagonal"
        return "per chain" if self.factor.ndim == 3 else "dense"


def _numpy_leapfrog(state: HMCState, p, h0, maps, n_steps: int):
    """``n_steps`` leapfrog steps from ``state`` and the half-kicked momentum ``p`` with the
    chains' ``maps = (move, kick)``, one call of the compiled function per step: ``(x, p,
    log f, grad, diverged, mean acceptance)``, the last the mean over the trajectory's points
    of :func:`~pm_evidence.model.leapfrog.point_acceptance` from the energy ``h0`` (the
    statistic tuning adapts the step size to; ``None`` where ``h0`` is: a few NumPy
    operations fewer a step)."""
    move, kick = maps
    x, diverged = state.x, np.zeros(state.x.shape[0], dtype=bool)
    accepted = np.zeros(state.x.shape[0])
    for i in range(n_steps):  # at least one
        before = p
        x, p, terms, diverged = leapfrog_step(
            np, state.function, _gradient, move, kick, x, p, state.x, diverged,
            0.5 if i == n_steps - 1 else 1.0,
        )  # fmt: skip
        if h0 is not None:
            accepted += point_acceptance(
                np, h0, before, kick, _gradient(terms), terms[0] + terms[1], diverged
            )
    along = None if h0 is None else accepted / n_steps
    return x, p, terms[0] + terms[1], _gradient(terms), diverged, along


def _gradient(terms):
    """``grad log f`` from the model's terms ``(log prior, log lik, their gradients)``."""
    return terms[2] + terms[3]


def fused_leapfrog_function(target: LogDensity, kind: str):
    """Up to ``CHUNK_STEPS`` leapfrog steps (:func:`~pm_evidence.model.leapfrog.leapfrog_step`)
    of one point as a PyTensor ``scan``, with the transition's first half kick before them
    and its Metropolis test after them where the chunk begins or ends the transition,
    compiled by JAX and mapped over the chains (``LogDensity.compile_point_rows``): a
    transition of ``L`` steps is ``ceil(L / CHUNK_STEPS)`` calls on the device, and the
    chains' positions, momenta and gradients stay there between calls and between
    transitions (:func:`hmc_transition`).

    Its rows are ``(x0, log f0, grad0, x, p, log f, grad, diverged, accepted, h0, u, eps,
    scale)``, with each chain's ``factor`` after them for the metric ``kind`` ``"per
    chain"`` (``Metric.kind``): the chain's state ``x0`` (where a divergence moves the point
    back to), the trajectory's point so far, ``accepted`` the sum of
    :func:`~pm_evidence.model.leapfrog.point_acceptance` over its steps from the energy
    ``h0``, and ``u`` the chain's uniform of the Metropolis test. Its constants are
    ``(n_active, last, begin, finish)``, after the one ``factor`` of the kind ``"dense"``
    (sent once a call, not once a chain): steps ``i >= n_active`` leave everything as it is,
    step ``last`` kicks by half (``-1``: none in this chunk); ``begin`` (1 or 0) takes ``p``
    as the momentum drawn for the transition and starts the trajectory at ``x0`` (its energy
    ``h0`` and first half kick computed here), ``finish`` ends it with the Metropolis test,
    which replaces ``x0``, ``log f0`` and ``grad0`` by the trajectory's end where it is
    accepted. The outputs are the rows ``(x0, log f0, grad0, x, p, log f, grad, diverged,
    accepted, h0)`` and the acceptance probability. Built once per model and metric kind;
    ``None`` on Numba, where the adapter moved to Numba, and in a funnel's coordinates
    (:class:`~pm_evidence.model.mapped_density.MappedDensity`, whose steps are NumPy's)."""
    if not isinstance(target, LogDensity) or not target.backend.is_jax:
        return None
    key = ("batched_hmc_leapfrog", kind)
    functions = target.compiled_transitions  # owned by the adapter, cleared if it moves
    if key not in functions:
        built = _build_fused_leapfrog(target, kind)
        functions[key] = None if built is None else target.blocked(built)
    return functions[key]


@without_garbage_collection()
def _build_fused_leapfrog(target: LogDensity, kind: str):
    import pytensor
    import pytensor.tensor as pt

    dim = target.dim
    names = ("x0", "grad0", "x", "p", "grad", "scale")
    x0, grad0, x_in, p_in, grad_in, scale = (pt.vector(name, shape=(dim,)) for name in names)
    log_f0, log_f_in, eps = pt.scalar("log_f0"), pt.scalar("log_f"), pt.scalar("eps")
    accepted_in, h0_in, u = pt.scalar("accepted"), pt.scalar("h0"), pt.scalar("u")
    diverged_in = pt.scalar("diverged", dtype="bool")
    factor = None if kind == "diagonal" else pt.matrix("factor", shape=(dim, dim))
    n_active, last, begin, finish = (
        pt.scalar(name, dtype="int64") for name in ("n_active", "last", "begin", "finish")
    )
    move, kick = leapfrog_maps(scale, factor, eps)
    starting = pt.eq(begin, 1)
    h0 = pt.switch(starting, kinetic_energy(pt, p_in) - log_f0, h0_in)
    carried_in = (
        pt.switch(starting, x0, x_in), pt.switch(starting, p_in + kick(grad0, 0.5), p_in),
        pt.switch(starting, log_f0, log_f_in), pt.switch(starting, grad0, grad_in),
        pt.and_(diverged_in, pt.eq(begin, 0)), pt.switch(starting, 0.0, accepted_in),
    )  # fmt: skip

    def body(i, x, p, log_f, grad, diverged, accepted):
        fraction = pt.switch(pt.eq(i, last), 0.5, 1.0)
        x_new, p_new, terms, diverged_new = leapfrog_step(
            pt, target.symbolic_point_terms_with_grad, _gradient, move, kick, x, p, x0,
            diverged, fraction,
        )  # fmt: skip
        log_f_new, grad_new = terms[0] + terms[1], _gradient(terms)
        point = point_acceptance(pt, h0, p, kick, grad_new, log_f_new, diverged_new)
        stepped = (x_new, p_new, log_f_new, grad_new, diverged_new, accepted + point)
        active = pt.lt(i, n_active)
        carried = (x, p, log_f, grad, diverged, accepted)
        return [pt.switch(active, new, old) for new, old in zip(stepped, carried, strict=True)]

    steps = pytensor.scan(
        body, sequences=[pt.arange(CHUNK_STEPS, dtype="int64")], outputs_info=list(carried_in),
        n_steps=CHUNK_STEPS, return_updates=False,
    )  # fmt: skip
    x, p, log_f, grad, diverged, accepted = (s[-1] for s in steps)
    ending = pt.eq(finish, 1)
    accept_prob, diverged_end = metropolis_acceptance(
        pt, h0, p, log_f, diverged, DIVERGENCE_ENERGY
    )
    take = ending & (u < accept_prob) & ~diverged_end
    outputs = [
        pt.switch(take, x, x0), pt.switch(take, log_f, log_f0), pt.switch(take, grad, grad0),
        x, p, log_f, grad, pt.switch(ending, diverged_end, diverged), accepted, h0,
        pt.switch(ending, accept_prob, 0.0),
    ]  # fmt: skip
    rows = [x0, log_f0, grad0, x_in, p_in, log_f_in, grad_in, diverged_in, accepted_in, h0_in]
    rows += [u, eps, scale]
    constants = [n_active, last, begin, finish]
    if kind == "per chain":
        return target.compile_point_rows([*rows, factor], outputs, constants)
    shared = [] if factor is None else [factor]
    return target.compile_point_rows(rows, outputs, [*shared, *constants])


def _fused_chunks(
    function, state: HMCState, p, h0, u, eps: np.ndarray, metric: Metric, n_steps: int,
    *, begin: bool, finish: bool, resident: bool,
):  # fmt: skip
    """``n_steps`` leapfrog steps of every chain in chunks of ``CHUNK_STEPS`` steps, each one
    call of ``function`` (:func:`fused_leapfrog_function`), the first beginning the transition
    where ``begin`` and the last ending it where ``finish``; every row stays on the device
    between the calls, and after them where ``resident``. Returns the function's outputs."""
    c = state.x.shape[0]
    rows = [state.x, state.log_f, state.grad, state.x, p, state.log_f, state.grad,
            np.zeros(c, dtype=bool), np.zeros(c), h0, u]  # fmt: skip
    (scale, *per_chain), shared = state.metric_on_device(metric)
    done = 0
    while done < n_steps:
        n_active = min(CHUNK_STEPS, n_steps - done)
        ends = done + n_active == n_steps
        outputs = function(
            *rows, eps, scale, *per_chain, resident=resident or not ends,
            constants=(*shared, np.int64(n_active), np.int64(n_active - 1 if ends else -1),
                       np.int64(begin and done == 0), np.int64(finish and ends)),
        )  # fmt: skip
        rows = [*outputs[:10], u]
        done += n_active
    return outputs


def leapfrog_trajectory(
    state: HMCState, p, h0, eps: np.ndarray, metric: Metric, n_steps: int
):  # fmt: skip
    """``n_steps`` leapfrog steps (:func:`~pm_evidence.model.leapfrog.leapfrog_step`) of every
    chain from ``state`` and the half-kicked momenta ``p``, with per-chain step sizes ``eps
    (c,)``: ``(x, p, log f, grad, diverged)`` at the end (``p`` half-kicked at the last step)
    and the mean over the trajectory's points of their acceptance probability from the
    starting energy ``h0`` (:func:`~pm_evidence.model.leapfrog.point_acceptance`; ``None``
    where ``h0`` is).
    On JAX in chunks of ``CHUNK_STEPS`` steps per call (:func:`fused_leapfrog_function`), on
    Numba one call per step."""
    fused = fused_leapfrog_function(state.target, metric.kind)
    if fused is None:
        maps = leapfrog_maps(metric.scale, metric.factor, eps[:, None])
        return _numpy_leapfrog(state, p, h0, maps, n_steps)
    energy = np.zeros(state.x.shape[0]) if h0 is None else h0  # summed in the graph either way
    outputs = _fused_chunks(
        fused, state, p, energy, np.zeros_like(energy), eps, metric, n_steps, begin=False,
        finish=False, resident=False,
    )  # fmt: skip
    x, p, log_f, grad, diverged, accepted = outputs[3:9]
    return x, p, log_f, grad, diverged, None if h0 is None else accepted / n_steps


def hmc_transition(
    rng, state: HMCState, eps: np.ndarray, metric: Metric, n_steps: int, along: bool = True
):  # fmt: skip
    """One HMC transition of every chain (module text) with per-chain step sizes ``eps (c,)``
    and ``metric``; updates ``state`` in place and returns ``(acceptance probabilities,
    divergent, trajectory acceptance)``, the last the mean acceptance probability over the
    trajectory's points (:func:`leapfrog_trajectory`), the statistic tuning adapts to
    (``None`` where ``along`` is false: the kept transitions do without it).

    The momenta ``p ~ N(0, I)`` and the uniforms of the Metropolis test are drawn from
    ``rng`` first, in that order, the same on both engines. On Numba the leapfrog steps are one
    call of the compiled function per step, with a few NumPy operations on ``(c, dim)``
    arrays (each a microsecond or two on a small model, as long as the call), and the
    energies and the Metropolis test are NumPy's
    (:func:`~pm_evidence.model.leapfrog.metropolis_acceptance`). On JAX the whole transition
    runs on the device, ``CHUNK_STEPS`` steps per call (:func:`fused_leapfrog_function`), and
    the chains' state stays there (``state.x``, ``state.log_f`` and ``state.grad`` are then
    JAX's arrays): only the returned statistics, ``c`` numbers each, come to the host."""
    c = state.x.shape[0]
    p = rng.standard_normal(state.x.shape)
    u = rng.random(c)
    fused = fused_leapfrog_function(state.target, metric.kind)
    if fused is not None:
        outputs = _fused_chunks(
            fused, state, p, np.zeros(c), u, eps, metric, n_steps, begin=True, finish=True,
            resident=True,
        )  # fmt: skip
        state.x, state.log_f, state.grad = outputs[:3]
        accept_prob, diverged = np.asarray(outputs[10]), np.asarray(outputs[7])
        return accept_prob, diverged, np.asarray(outputs[8]) / n_steps if along else None
    maps = leapfrog_maps(metric.scale, metric.factor, eps[:, None])  # once per transition
    h0 = kinetic_energy(np, p) - state.log_f
    with np.errstate(invalid="ignore", over="ignore"):
        p = p + maps[1](state.grad, 0.5)
        x, p, log_f, grad, diverged, along = _numpy_leapfrog(
            state, p, h0 if along else None, maps, n_steps
        )
        accept_prob, diverged = metropolis_acceptance(
            np, h0, p, log_f, diverged, DIVERGENCE_ENERGY
        )
    take = (u < accept_prob) & ~diverged
    state.x = np.where(take[:, None], x, state.x)
    state.log_f = np.where(take, log_f, state.log_f)
    state.grad = np.where(take[:, None], grad, state.grad)
    return accept_prob, diverged, along

r"""A whole HMC transition at per-point ``beta`` as one compiled PyTensor function; on an
accelerator, AIS's rungs (:func:`annealing_function`) and the simulated-tempering sweeps
(:func:`tempering_function`) too, the compound kernel's Gibbs sweep included where there is
one, and a mixture's density at chains kept on the device (:func:`device_mixture_density`).

:func:`pm_evidence.tempering.kernels.hmc_step` in NumPy calls the compiled log-density once per
leapfrog step and does the leapfrog arithmetic, the energies and the Metropolis test in NumPy.
On a small model that arithmetic costs as much as the model itself (measured:
docs/benchmarks.rst, Measurements behind the defaults). Here the model's
graph (vectorized over points), the reference's graph, the ``n_leapfrog`` leapfrog steps, both
energies and the accept/reject step form one graph, compiled once per (model, reference kind,
``n_leapfrog``) and reused by every later call.

The random numbers (jittered step sizes, momenta, log-uniforms) are inputs drawn by the caller
from its own ``rng`` in the same order as the NumPy kernel, so the function is pure and the
transition is the same Markov kernel (the same draws up to floating-point rounding).

When a run uses it: the graph takes seconds to compile, so a run makes NumPy transitions until
it has moved ``FUSE_AFTER_POINT_TRANSITIONS`` points (chains x transitions) and compiled ones
from then on. The count belongs to the run: each sampler starts it at 0 and hands it on
explicitly (:func:`pm_evidence.tempering.kernels.transition` reads it), so a run's result does
not depend on the runs made before it on the same path, and two runs with the same seed give
the same numbers in either order. Only the compiled code is shared between runs (a cache: a
second long run on a path does not compile again).

The transition, for a point ``x`` at inverse temperature ``beta`` with
``log f_beta = log p0 + beta Delta`` (seed 004 eq. (2)) and step size ``eps`` times the path's
per-coordinate factors ``s = path.step_scale`` (``epsilon = eps s``, elementwise: HMC with a
diagonal mass matrix ``diag(s)^{-2}``):

.. math::
    p_{1/2} = p + \tfrac{\epsilon}{2} \nabla \log f_\beta(x), \quad
    x_{l} = x_{l-1} + \epsilon\, p_{l-1/2}, \quad
    p_{l+1/2} = p_{l-1/2} + \epsilon \nabla \log f_\beta(x_l)

(the last momentum step is a half step; the step is
:func:`~pm_evidence.model.leapfrog.leapfrog_step`, the NumPy kernel's), accepted with probability
``min(1, exp(H(x, p) - H(x_L, p_L)))``, ``H = |p|^2 / 2 - log f_beta``; a non-finite energy
difference, or a trajectory whose position left the finite numbers, is rejected and flagged.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace

from pm_evidence.model.backend import concatenate_rows, is_on_device
from pm_evidence.model.compile_mode import without_garbage_collection
from pm_evidence.model.leapfrog import kinetic_energy, leapfrog_maps, leapfrog_step
from pm_evidence.tempering.path import GeometricPath, PathState

__all__ = [
    "ANNEALING_CHUNK_RUNGS",
    "FUSE_AFTER_POINT_TRANSITIONS",
    "MAX_COMPILED_LEAPFROG",
    "TEMPERING_CHUNK_SWEEPS",
    "annealing_function",
    "device_mixture_density",
    "hmc_transition_function",
    "symbolic_tempered_log_density",
    "tempering_function",
]

MAX_COMPILED_LEAPFROG = 8  # Numba's graph holds one copy of the model per leapfrog step
# Operations in the model's log-density-and-gradient graph times leapfrog steps above which the
# fused graph is not built: its compile time (and at times its memory) grows faster than its
# size (measured: docs/benchmarks.rst, Measurements behind the defaults).
# Larger models use the NumPy transition around the model's own compiled function.
MAX_FUSED_OPERATIONS = 600
# The fused graph takes seconds to compile, and saves microseconds per point and transition
# (measured: docs/benchmarks.rst, Measurements behind the defaults), so a run first
# makes NumPy transitions and fuses once it has moved this many points: short default runs on
# small models never pay for the compile, long runs do so early. Each run counts its own points
# from 0 (the samplers pass the count to pm_evidence.tempering.kernels.transition), so which
# transitions of a run are fused depends on that run alone, not on earlier runs on the path.
FUSE_AFTER_POINT_TRANSITIONS = 2_000_000


def _parameter_inputs(values) -> list:
    return [pt.tensor(dtype="float64", shape=(None,) * np.ndim(v)) for v in values]


def _path_terms(path: GeometricPath, x, reference_inputs, terms):
    """Symbolic ``(log p0, Delta, grad log p0, grad Delta)`` at ``x`` from the model's
    ``terms = (log_prior, log_lik, grad log_prior, grad log_lik)`` there: the rows of a
    placeholder ``x (n, dim)``, or one point ``x (dim,)`` (the reference's graph is of rows)."""
    log_prior, log_lik, g_prior, g_lik = terms
    if path.is_prior:  # PriorReference.log_normalizer: log K! per ordered vector, else 0
        c = path.reference.log_normalizer
        return log_prior + c, log_lik - c, g_prior, g_lik
    if x.type.ndim == 1:
        log_p0 = path.reference.graph_logpdf(x[None, :], *reference_inputs)[0]
    else:
        log_p0 = path.reference.graph_logpdf(x, *reference_inputs)
    g_p0 = pytensor.grad(log_p0.sum(), x)  # rows are independent
    return log_p0, log_prior + log_lik - log_p0, g_p0, g_prior + g_lik - g_p0


def symbolic_tempered_log_density(log_p0, delta, beta):
    """:func:`~pm_evidence.tempering.path.tempered_log_density` as a PyTensor graph:
    ``log p0 + beta Delta`` with ``0 * (-inf) = 0`` at ``beta = 0``."""
    return log_p0 + pt.switch(pt.eq(beta, 0.0), 0.0, beta * delta)


_ROWS_OF_X = ("x", "g_p0", "g_delta", "momentum")  # the inputs of shape (n, dim)
_INPUTS = ("x", "log_p0", "delta", "g_p0", "g_delta", "beta", "eps", "momentum", "log_u")


def _transition(inputs: dict, scale, terms_at, n_leapfrog: int, scan: bool = False) -> list:
    """The outputs of one HMC transition (module docstring) of the rows ``(n, dim)`` or of one
    point ``(dim,)``: the same graph either way, the coordinates on the last axis;
    ``terms_at(x)`` is ``(log p0, Delta, grad log p0, grad Delta)`` at a position ``x``. The
    leapfrog steps are unrolled (one copy of the model per step, for Numba), or with ``scan``
    a PyTensor ``scan`` (one copy, for JAX: its compile time does not grow with the steps)."""
    x, log_p0, delta, g_p0, g_delta, beta, eps, momentum, log_u = (inputs[k] for k in _INPUTS)

    def log_f(lp0, d):
        return symbolic_tempered_log_density(lp0, d, beta)

    def grad(gp0, gd):
        return gp0 + pt.shape_padright(beta) * gd

    move, kick = leapfrog_maps(pt.shape_padright(eps) * scale, None, 1.0)
    current_h = kinetic_energy(pt, momentum) - log_f(log_p0, delta)
    p = momentum + kick(grad(g_p0, g_delta), 0.5)
    x_new, diverged = x, pt.zeros_like(log_p0, dtype="bool")

    def step(fraction, x_now, p_now, diverged_now):
        return leapfrog_step(
            pt, terms_at, lambda t: grad(t[2], t[3]), move, kick, x_now, p_now, x, diverged_now,
            fraction,
        )  # fmt: skip

    if scan:
        def body(leap, x_now, p_now, lp0, d, gp0, gd, diverged_now):
            fraction = pt.switch(pt.eq(leap, n_leapfrog - 1), 0.5, 1.0)
            x_next, p_next, terms, diverged_next = step(fraction, x_now, p_now, diverged_now)
            return [x_next, p_next, *terms, diverged_next]

        steps = pytensor.scan(
            body, sequences=[pt.arange(n_leapfrog, dtype="int64")],
            outputs_info=[x, p, log_p0, delta, g_p0, g_delta, diverged], n_steps=n_leapfrog,
            return_updates=False,
        )  # fmt: skip
        x_new, p, *terms, diverged = (s[-1] for s in steps)
    else:
        for leap in range(n_leapfrog):
            x_new, p, terms, diverged = step(
                1.0 if leap < n_leapfrog - 1 else 0.5, x_new, p, diverged
            )
    lp0_new, d_new, gp0_new, gd_new = terms
    log_ratio = current_h - (kinetic_energy(pt, p) - log_f(lp0_new, d_new))
    finite = pt.isfinite(log_ratio) & ~diverged
    accept = finite & (log_u < pt.switch(finite, log_ratio, -np.inf))
    take = pt.shape_padright(accept)
    return [
        pt.switch(take, x_new, x),
        pt.switch(accept, lp0_new, log_p0),
        pt.switch(accept, d_new, delta),
        pt.switch(take, gp0_new, g_p0),
        pt.switch(take, gd_new, g_delta),
        accept,
        ~finite,
    ]


@without_garbage_collection()
def _build(path: GeometricPath, n_leapfrog: int, parameters):
    """The transition of rows ``(n, dim)``, compiled by Numba around the model's graph
    vectorized over the rows."""
    # The inputs' shapes are declared: ``dim`` statically, the rows ``n`` as the rows of ``x``
    # (``specify_shape``, unchecked in the compiled function: ``transition`` checks them).
    # Otherwise every elementwise operation between two inputs carries a check that their
    # lengths broadcast: several times the operations of the transition itself.
    dim = path.target.dim
    raw = {  # the function's inputs, in the order of the call
        name: pt.tensor(name, dtype="float64", shape=(None, dim) if name in _ROWS_OF_X else (None,))
        for name in _INPUTS
    }
    scale = pt.tensor("step_scale", dtype="float64", shape=(dim,))
    n = raw["x"].shape[0]
    shaped = {
        k: pt.specify_shape(v, (n, dim) if k in _ROWS_OF_X else (n,)) if k != "x" else v
        for k, v in raw.items()
    }
    reference_inputs = _parameter_inputs(parameters)
    # Built once per transition graph, each leapfrog step replacing the placeholder by its own
    # position: vectorizing the model's graph at a position that is itself the previous steps'
    # graph infers the batch size through all of them (the graph building took 23 of a 7-step
    # transition's 41 s on a 1-parameter model).
    x_rows = pt.tensor("x_rows", dtype="float64", shape=(None, dim))
    terms = _path_terms(
        path, x_rows, reference_inputs, path.target.symbolic_terms_with_grad(x_rows)
    )
    outputs = _transition(
        shaped, scale, lambda x: graph_replace(terms, {x_rows: x}, strict=False), n_leapfrog
    )
    inputs = [*raw.values(), scale, *reference_inputs]
    return path.target.compile(inputs, outputs)


@without_garbage_collection()
def _build_point(path: GeometricPath, n_leapfrog: int, parameters):
    """The transition of one point ``(dim,)``, compiled by JAX and mapped over rows
    (``LogDensity.compile_point_rows``): a whole trajectory in one call on the device."""
    target = path.target
    dim = target.dim
    point = {
        name: pt.tensor(name, dtype="float64", shape=(dim,) if name in _ROWS_OF_X else ())
        for name in _INPUTS
    }
    scale = pt.tensor("step_scale", dtype="float64", shape=(dim,))
    reference_inputs = _parameter_inputs(parameters)

    def terms_at(x):
        return _path_terms(path, x, reference_inputs, target.symbolic_point_terms_with_grad(x))

    outputs = _transition(point, scale, terms_at, n_leapfrog, scan=True)
    return target.compile_point_rows(list(point.values()), outputs, [scale, *reference_inputs])


def hmc_transition_function(path: GeometricPath, n_leapfrog: int) -> Callable | None:
    """A compiled HMC transition ``(state, beta, eps, momentum, log_u) -> (state, accepted,
    nonfinite)`` for ``path``, or ``None`` where NumPy HMC must be used (a reference without a
    symbolic log-density, a model without gradients; on Numba more than
    ``MAX_COMPILED_LEAPFROG`` leapfrog steps; on a CPU a model whose graph times
    ``n_leapfrog`` exceeds ``MAX_FUSED_OPERATIONS``).

    ``eps`` are the (already jittered) step sizes per point; ``log_u`` the logs of the
    Metropolis uniforms. Points are processed in blocks of the target's ``block_size`` rows.
    Compiled on the first call for a path and ``n_leapfrog`` and cached; whether a transition
    uses it is the caller's choice (``hmc_step(..., compiled=True)``; the samplers choose it
    after ``FUSE_AFTER_POINT_TRANSITIONS`` points of a run).
    """
    bound = path.bound_transitions  # owned by the path: bound to its reference's parameters
    if n_leapfrog not in bound:
        bound[n_leapfrog] = _bind(path, n_leapfrog)
    return bound[n_leapfrog]


def _bind(path: GeometricPath, n_leapfrog: int) -> Callable | None:
    target = path.target
    parameters = () if path.is_prior else path.reference.graph_parameters()
    # a model with discrete entries moves its continuous ones (a mask: zero steps elsewhere);
    # on an accelerator only, where the compound kernels' transitions would otherwise be one
    # call per leapfrog step with the points on the host
    if parameters is None or (target.has_discrete and not target.backend.on_accelerator):
        return None
    if n_leapfrog > MAX_COMPILED_LEAPFROG and not target.backend.is_jax:  # JAX's is a scan
        return None
    large = target.gradient_graph_size * n_leapfrog > MAX_FUSED_OPERATIONS
    if large and not target.backend.on_accelerator:  # compile time, on Numba and JAX's CPU
        return None
    # the graph depends on the model's prior, or on the reference's class (its parameters are
    # inputs)
    key = ("prior" if path.is_prior else type(path.reference), n_leapfrog)
    functions = target.compiled_transitions  # owned by the model's adapter
    if key not in functions:
        built = _build_point(path, n_leapfrog, parameters) if target.backend.is_jax else None
        if built is None and (  # on Numba (None on JAX: moved there while building): its bounds
            n_leapfrog > MAX_COMPILED_LEAPFROG
            or target.gradient_graph_size * n_leapfrog > MAX_FUSED_OPERATIONS
        ):
            return None
        functions[key] = built if built is not None else _build(path, n_leapfrog, parameters)
    fn = target.blocked(functions[key])

    def transition(state: PathState, beta, eps, momentum, log_u, mask=None):
        rows = (state.x, state.log_p0, state.delta, state.grad_log_p0, state.grad_delta,
                beta, eps, momentum, log_u)  # fmt: skip
        # with a mask, the steps are zero at the entries that do not move (a zero momentum
        # there: hmc_step's masked transition)
        scale = path.step_scale if mask is None else path.step_scale * mask
        n = state.x.shape[0]
        if any(np.shape(a)[:1] != (n,) for a in rows):  # the graph assumes these shapes
            raise ValueError(
                f"A fused HMC transition needs every array with the {n} rows of x; got "
                f"{[np.shape(a) for a in rows]}."
            )
        # a state on the device (a sampler's chains between calls) stays there; what comes
        # back is each point's acceptance and non-finite flag
        resident = is_on_device(state.x)
        outs = fn(*rows, constants=(scale, *parameters), resident=resident)
        flags = (np.asarray(o).astype(bool) for o in outs[5:7])
        return PathState(*outs[:5]), *flags

    return transition


# Mixtures' components are padded to a multiple of this (device_mixture_density): the density
# compiles once per such count, not once per mixture.
MIXTURE_COMPONENT_BUCKET = 8


def device_mixture_density(target, mixture) -> Callable | None:
    """``x (n, dim) -> log q(x)`` of a Gaussian or Student-t mixture
    (:class:`~pm_evidence.references.MixtureReference`) at points on the device, computed there
    and returned as a NumPy vector (the points stay): the exploration's jumps and its
    candidates read a mixture's density at particles kept on the device. ``None`` off an
    accelerator. The components are padded with empty ones to a multiple of
    ``MIXTURE_COMPONENT_BUCKET``, so the function compiles for a few counts only."""
    if not target.backend.on_accelerator:
        return None
    key = ("mixture density", mixture.dim)
    functions = target.compiled_transitions
    if key not in functions:
        functions[key] = _build_mixture_density(target, mixture)
    fn = functions[key]
    if fn is None:
        return None
    k = -(-mixture.n_components // MIXTURE_COMPONENT_BUCKET) * MIXTURE_COMPONENT_BUCKET
    parameters = mixture.padded_graph_parameters(k)

    def density(x) -> np.ndarray:
        return np.asarray(fn(x, constants=parameters, resident=True)[0])

    return density


@without_garbage_collection()
def _build_mixture_density(target, mixture):
    x = pt.tensor("x", dtype="float64", shape=(mixture.dim,))
    inputs = _parameter_inputs(mixture.graph_parameters())
    log_q = type(mixture).graph_logpdf(x[None, :], *inputs)[0]
    built = target.compile_point_rows([x], [log_q], inputs)
    return None if built is None else target.blocked(built)


# Rungs annealed per call on an accelerator (annealing_function): the random numbers of that
# many rungs travel to the device at once, and the progress bar and Ctrl-C are seen between
# calls. Every call has this many rungs (the last padded with rungs that do nothing), so the
# function compiles once.
ANNEALING_CHUNK_RUNGS = 8
# The most random numbers (momenta) of the chains sent to the device in one call of AIS's rungs
# (2**25 float64: 256 MiB); more chains are split over several calls.
ANNEALING_CALL_NUMBERS = 2**25


def _in_calls(fn, rows, constants, numbers_per_row: int) -> list:
    """``fn`` of row-aligned ``rows`` in as many calls as keep the random numbers travelling to
    the device in one call (``numbers_per_row`` a row) at most ``ANNEALING_CALL_NUMBERS``; the
    outputs joined along the rows, left on the device (the caller copies what it reads)."""
    n = rows[0].shape[0]
    per_call = max(1, ANNEALING_CALL_NUMBERS // numbers_per_row)
    parts = [
        fn(*(r[i : i + per_call] for r in rows), constants=constants, resident=True)
        for i in range(0, n, per_call)
    ]
    return [o[0] if len(o) == 1 else concatenate_rows(o) for o in zip(*parts, strict=True)]


def _on_host(outputs) -> list[np.ndarray]:
    return [np.asarray(o) for o in outputs]


def _device_function(path: GeometricPath, kind: str, n_leapfrog: int, n_steps: int, build,
                     gibbs=None):  # fmt: skip
    """The compiled ``build(path, n_leapfrog, n_steps, parameters, gibbs)`` of one chain mapped
    over the chains, cached on the model's adapter per (``kind``, reference class,
    ``n_leapfrog``, ``n_steps``, the Gibbs sweep's blocks), with the reference's parameters;
    ``(None, ())`` off an accelerator or where the fused transition cannot be built
    (:func:`hmc_transition_function`)."""
    target = path.target
    if not target.backend.on_accelerator or hmc_transition_function(path, n_leapfrog) is None:
        return None, ()
    if not target.backend.on_accelerator:  # moved to Numba while building the transition
        return None, ()
    parameters = () if path.is_prior else path.reference.graph_parameters()
    key = (kind, "prior" if path.is_prior else type(path.reference), n_leapfrog, n_steps,
           None if gibbs is None else gibbs.key)  # fmt: skip
    functions = target.compiled_transitions  # owned by the model's adapter
    if key not in functions:
        built = build(path, n_leapfrog, n_steps, parameters, gibbs)
        functions[key] = None if built is None else target.blocked(built)
    return functions[key], parameters


def _moves(path: GeometricPath, gibbs) -> tuple[np.ndarray, np.ndarray]:
    """The step factors of the device's HMC moves and the mask of the entries they move: all
    of them, or with a Gibbs sweep (the compound kernel ``hmc+gibbs``) the continuous ones,
    the steps zero at the discrete entries (as :func:`~pm_evidence.tempering.kernels.hmc_step`
    with a mask)."""
    if gibbs is None:
        return path.step_scale, np.ones(path.dim)
    mask = (~path.target.discrete_mask).astype(float)
    return path.step_scale * mask, mask


def _transition_with_sweep(step: dict, scale, terms_at, n_leapfrog: int, gibbs, uniforms):
    """One transition of a chain on the device: HMC (:func:`_transition`), then, for the
    compound kernel, the Gibbs sweep over the discrete entries and the model's value and
    gradient at the new point (:func:`~pm_evidence.tempering.kernels.compound_step`).
    Returns the state ``(x, log p0, Delta, grads)``, the HMC acceptance and the non-finite
    flag."""
    outs = _transition(step, scale, terms_at, n_leapfrog, scan=True)
    if gibbs is None:
        return outs[:5], outs[5], outs[6]
    # the sweep's own log p0 and Delta are those of the value-only graph: the new point's
    # come with its gradient, as on the CPU
    swept = gibbs.graph(outs[0], outs[1], outs[2], step["beta"], uniforms)
    x, bad = swept[0], swept[4]
    return [x, *terms_at(x)], outs[5], outs[6] | bad


def annealing_function(
    path: GeometricPath, n_leapfrog: int, n_steps: int, gibbs=None
) -> Callable | None:
    r"""AIS's loop over rungs (:func:`~pm_evidence.tempering.samplers.anneal`) on the device:
    ``ANNEALING_CHUNK_RUNGS`` rungs per call, each ``log w += (beta_k - beta_{k-1}) Delta(x)``
    (seed 000 eq. (8)) and then ``n_steps`` HMC transitions at ``beta_k`` (this module's
    transition, unrolled), the chains' points, gradients and log weights staying on the device
    between rungs and between calls (the returned state and log weights are JAX's arrays);
    what comes back per call is, per rung, each chain's ``Delta``, log weight, acceptances and
    non-finite proposals.

    Only where the model runs on an accelerator (``None`` elsewhere, and where the fused
    transition cannot be built: :func:`hmc_transition_function`). The returned
    ``anneal_rungs(rng, state, log_w, betas, d_betas, step_sizes, jitter)`` draws the random
    numbers from ``rng`` in the order the transitions one by one would (per rung and
    transition: the step sizes' jitter, the momenta, the Metropolis uniforms, and with
    ``gibbs`` the sweep's uniforms), so that the annealing is the same Markov chain as on the
    CPU, up to rounding.

    ``gibbs`` (:class:`~pm_evidence.tempering.compiled_gibbs.GibbsSweepGraph`): the compound
    kernel ``hmc+gibbs``, each transition HMC on the continuous entries, then the Gibbs sweep
    over the discrete ones and the model's value and gradient at the new point."""
    fn, parameters = _device_function(
        path, "annealing", n_leapfrog, n_steps, _build_annealing, gibbs
    )
    if fn is None:
        return None
    chunk, dim = ANNEALING_CHUNK_RUNGS, path.target.dim
    scale, mask = _moves(path, gibbs)
    n_uniforms = 0 if gibbs is None else gibbs.n_uniforms

    def anneal_rungs(rng, state: PathState, log_w, betas, d_betas, step_sizes, jitter: float):
        n, rungs = state.x.shape[0], len(betas)
        eps = np.zeros((n, chunk, n_steps))
        momentum = np.zeros((n, chunk, n_steps, dim))
        log_u = np.zeros((n, chunk, n_steps))
        uniforms = np.zeros((n, chunk, n_steps, n_uniforms))
        for k in range(rungs):
            for s in range(n_steps):  # hmc_step's order: jitter, momenta, uniforms
                eps[:, k, s] = step_sizes[k] * rng.uniform(1.0 - jitter, 1.0 + jitter, size=n)
                momentum[:, k, s] = rng.standard_normal((n, dim)) * mask
                log_u[:, k, s] = np.log(rng.random(n))
                if gibbs is not None:  # then the sweep's
                    uniforms[:, k, s] = gibbs.uniforms(rng, n)
        pad = chunk - rungs
        active = np.concatenate([np.ones(rungs), np.zeros(pad)])
        rows = (state.x, state.log_p0, state.delta, state.grad_log_p0, state.grad_delta,
                log_w, eps, momentum, log_u, uniforms)  # fmt: skip
        constants = (
            np.concatenate([betas, np.ones(pad)]), np.concatenate([d_betas, np.zeros(pad)]),
            active, scale, *parameters,
        )  # fmt: skip
        outs = _in_calls(fn, rows, constants, chunk * n_steps * dim)
        final = PathState(*outs[:5])  # the chains and their log weights stay on the device
        delta_rungs, log_w_rungs, accepted, nonfinite = (
            o[:, :rungs].T for o in _on_host(outs[6:])
        )
        return final, outs[5], delta_rungs, log_w_rungs, accepted, nonfinite.astype(int)

    return anneal_rungs


def _chain_state(dim: int) -> dict:
    """One chain's state as symbolic inputs, in the order of :class:`PathState`: its point,
    ``log p0``, ``Delta`` and their gradients."""
    return {
        "x": pt.tensor("x", dtype="float64", shape=(dim,)),
        "log_p0": pt.scalar("log_p0"), "delta": pt.scalar("delta"),
        "g_p0": pt.tensor("g_p0", dtype="float64", shape=(dim,)),
        "g_delta": pt.tensor("g_delta", dtype="float64", shape=(dim,)),
    }  # fmt: skip


def _transition_numbers(chunk: int, n_steps: int, dim: int, gibbs=None) -> dict:
    """One chain's momenta, Metropolis log-uniforms and Gibbs sweeps' uniforms (none without
    ``gibbs``) for ``n_steps`` transitions in each of ``chunk`` rungs or sweeps, as symbolic
    inputs."""
    n_uniforms = 0 if gibbs is None else gibbs.n_uniforms
    return {
        "momentum": pt.tensor("momentum", dtype="float64", shape=(chunk, n_steps, dim)),
        "log_u": pt.tensor("log_u", dtype="float64", shape=(chunk, n_steps)),
        "uniforms": pt.tensor("uniforms", dtype="float64", shape=(chunk, n_steps, n_uniforms)),
    }


@without_garbage_collection()
def _build_annealing(path: GeometricPath, n_leapfrog: int, n_steps: int, parameters, gibbs):
    """One chain's annealing over ``ANNEALING_CHUNK_RUNGS`` rungs as a PyTensor ``scan``,
    compiled by JAX and mapped over the chains (``LogDensity.compile_point_rows``)."""
    target = path.target
    dim, chunk = target.dim, ANNEALING_CHUNK_RUNGS
    point = {
        **_chain_state(dim),
        "log_w": pt.scalar("log_w"),
        "eps": pt.tensor("eps", dtype="float64", shape=(chunk, n_steps)),
        **_transition_numbers(chunk, n_steps, dim, gibbs),
    }
    betas, d_betas, active = (pt.tensor(n, dtype="float64", shape=(chunk,))
                              for n in ("betas", "d_betas", "active"))  # fmt: skip
    scale = pt.tensor("step_scale", dtype="float64", shape=(dim,))
    reference_inputs = _parameter_inputs(parameters)

    def terms_at(x):
        return _path_terms(path, x, reference_inputs, target.symbolic_point_terms_with_grad(x))

    def rung(beta, d_beta, on, eps, momentum, log_u, uniforms, x, log_p0, delta, g_p0, g_delta,
             log_w):  # fmt: skip
        state = {"x": x, "log_p0": log_p0, "delta": delta, "g_p0": g_p0, "g_delta": g_delta}
        new_log_w = symbolic_tempered_log_density(log_w, delta, d_beta)  # seed 000 eq. (8)
        accepted = nonfinite = pt.constant(0.0)
        for s in range(n_steps):
            step = {**state, "beta": beta, "eps": eps[s], "momentum": momentum[s],
                    "log_u": log_u[s]}  # fmt: skip
            moved, accept, bad = _transition_with_sweep(
                step, scale, terms_at, n_leapfrog, gibbs, uniforms[s]
            )
            state = dict(zip(("x", "log_p0", "delta", "g_p0", "g_delta"), moved, strict=True))
            accepted = accepted + pt.cast(accept, "float64")
            nonfinite = nonfinite + pt.cast(bad, "float64")
        kept = pt.gt(on, 0.0)
        carried = [pt.switch(kept, new, old) for new, old in zip(
            (*state.values(), new_log_w), (x, log_p0, delta, g_p0, g_delta, log_w), strict=True
        )]  # fmt: skip
        return [*carried, carried[2], carried[5], accepted, nonfinite]

    initial = [point[k] for k in ("x", "log_p0", "delta", "g_p0", "g_delta", "log_w")]
    steps = pytensor.scan(
        rung, sequences=[betas, d_betas, active, point["eps"], point["momentum"], point["log_u"],
                         point["uniforms"]],
        outputs_info=[*initial, None, None, None, None], n_steps=chunk, return_updates=False,
    )  # fmt: skip
    outputs = [s[-1] for s in steps[:6]] + list(steps[6:])
    constants = [betas, d_betas, active, scale, *reference_inputs]
    return target.compile_point_rows(list(point.values()), outputs, constants)


# Sweeps of the tempered chains per call on an accelerator (tempering_function): as
# ANNEALING_CHUNK_RUNGS for AIS, every call has this many (the last padded with sweeps that do
# nothing), so the function compiles once per run's number of rungs.
TEMPERING_CHUNK_SWEEPS = 8


def tempering_function(
    path: GeometricPath, n_leapfrog: int, n_steps: int, gibbs=None
) -> Callable | None:
    r"""The simulated-tempering sweeps of :func:`~pm_evidence.tempering.samplers.temper` on the
    device: up to ``TEMPERING_CHUNK_SWEEPS`` sweeps per call, each ``n_steps`` HMC transitions
    of every chain at its rung's ``beta`` and step size (this module's transition), then the
    chain's next rung drawn from

    .. math:: q(\beta_k \mid x) \propto \exp(\beta_k \Delta(x) + \log r_k - \log \hat Z_k)

    (seed 004 eq. (7)) by inverting its cumulative sums at a uniform. The chains' points and
    gradients stay on the device between sweeps and between calls (the returned state is
    JAX's arrays); what comes back per call is the chains' rungs, per sweep each chain's
    ``Delta``, rung, acceptances and non-finite proposals, and, summed over the call's sweeps, each chain's ``q_k``, ``q_k Delta`` and
    ``q_k Delta^2`` (``Delta`` taken as 0 where it is not finite, as on the CPU): the
    Rao-Blackwellized sums of seed 004 eqs. (8)-(9) without the ``n x K`` table of ``q`` of
    every sweep.

    Only where the model runs on an accelerator (``None`` elsewhere, and where the fused
    transition cannot be built: :func:`hmc_transition_function`). The returned
    ``temper_sweeps(rng, state, rung, n_sweeps, betas, step_sizes, log_weights, jitter)``
    (``log_weights = log r - log Zhat``) draws the random numbers from ``rng`` in the order the
    CPU's sweeps do (per sweep and transition: the step sizes' jitter, the momenta, the
    Metropolis uniforms, with ``gibbs`` the sweep's uniforms; then the uniforms of the rung
    draws), so that the chains are the same Markov chains as on the CPU, up to rounding.
    ``gibbs``: the compound kernel, as in :func:`annealing_function`."""
    fn, parameters = _device_function(
        path, "tempering", n_leapfrog, n_steps, _build_tempering, gibbs
    )
    if fn is None:
        return None
    chunk, dim = TEMPERING_CHUNK_SWEEPS, path.target.dim
    scale, mask = _moves(path, gibbs)
    n_uniforms = 0 if gibbs is None else gibbs.n_uniforms

    def temper_sweeps(rng, state: PathState, rung, n_sweeps: int, betas, step_sizes,
                      log_weights, jitter: float):  # fmt: skip
        n = state.x.shape[0]
        stretch = np.ones((n, chunk, n_steps))
        momentum = np.zeros((n, chunk, n_steps, dim))
        log_u = np.zeros((n, chunk, n_steps))
        uniforms = np.zeros((n, chunk, n_steps, n_uniforms))
        u_rung = np.zeros((n, chunk))
        for t in range(n_sweeps):
            for s in range(n_steps):  # hmc_step's order: jitter, momenta, uniforms
                stretch[:, t, s] = rng.uniform(1.0 - jitter, 1.0 + jitter, size=n)
                momentum[:, t, s] = rng.standard_normal((n, dim)) * mask
                log_u[:, t, s] = np.log(rng.random(n))
                if gibbs is not None:  # then the sweep's
                    uniforms[:, t, s] = gibbs.uniforms(rng, n)
            u_rung[:, t] = rng.random(n)  # draw_categorical's uniforms
        active = (np.arange(chunk) < n_sweeps).astype(float)
        rows = (state.x, state.log_p0, state.delta, state.grad_log_p0, state.grad_delta,
                np.asarray(rung, dtype=float), stretch, momentum, log_u, uniforms,
                u_rung)  # fmt: skip
        constants = (np.asarray(betas, dtype=float), np.asarray(step_sizes, dtype=float),
                     np.asarray(log_weights, dtype=float), active, scale,
                     *parameters)  # fmt: skip
        outs = _in_calls(fn, rows, constants, chunk * n_steps * dim)
        final = PathState(*outs[:5])  # the chains stay on the device
        new_rung, q_sum, q_delta_sum, q_delta2_sum, *per_sweep = _on_host(outs[5:])
        new_rung = new_rung.astype(int)
        delta, rungs, accepted, nonfinite = (o[:, :n_sweeps] for o in per_sweep)
        return (final, new_rung, delta, rungs.astype(int), accepted, nonfinite.astype(int),
                q_sum, q_delta_sum, q_delta2_sum)  # fmt: skip

    return temper_sweeps


@without_garbage_collection()
def _build_tempering(path: GeometricPath, n_leapfrog: int, n_steps: int, parameters, gibbs):
    """One chain's ``TEMPERING_CHUNK_SWEEPS`` sweeps as a PyTensor ``scan``, compiled by JAX and
    mapped over the chains (``LogDensity.compile_point_rows``)."""
    target = path.target
    dim, chunk = target.dim, TEMPERING_CHUNK_SWEEPS
    point = {
        **_chain_state(dim),
        "rung": pt.scalar("rung"),
        "stretch": pt.tensor("stretch", dtype="float64", shape=(chunk, n_steps)),
        **_transition_numbers(chunk, n_steps, dim, gibbs),
        "u_rung": pt.tensor("u_rung", dtype="float64", shape=(chunk,)),
    }
    betas, step_sizes, log_weights = (pt.tensor(n, dtype="float64", shape=(None,))
                                      for n in ("betas", "step_sizes", "log_weights"))  # fmt: skip
    active = pt.tensor("active", dtype="float64", shape=(chunk,))
    scale = pt.tensor("step_scale", dtype="float64", shape=(dim,))
    reference_inputs = _parameter_inputs(parameters)
    names = ("x", "log_p0", "delta", "g_p0", "g_delta")

    def terms_at(x):
        return _path_terms(path, x, reference_inputs, target.symbolic_point_terms_with_grad(x))

    def sweep(on, stretch, momentum, log_u, uniforms, u_rung, x, log_p0, delta, g_p0, g_delta,
              rung, q_sum, q_delta_sum, q_delta2_sum):  # fmt: skip
        k = pt.cast(rung, "int64")
        state = dict(zip(names, (x, log_p0, delta, g_p0, g_delta), strict=True))
        accepted = nonfinite = pt.constant(0.0)
        for s in range(n_steps):
            step = {**state, "beta": betas[k], "eps": step_sizes[k] * stretch[s],
                    "momentum": momentum[s], "log_u": log_u[s]}  # fmt: skip
            moved, accept, bad = _transition_with_sweep(
                step, scale, terms_at, n_leapfrog, gibbs, uniforms[s]
            )
            state = dict(zip(names, moved, strict=True))
            accepted = accepted + pt.cast(accept, "float64")
            nonfinite = nonfinite + pt.cast(bad, "float64")
        d = state["delta"]  # q(beta | x), eq. (7); 0 * (-inf) = 0 at beta = 0
        logits = symbolic_tempered_log_density(log_weights, d, betas)
        q = pt.exp(logits - pt.max(logits))
        q = q / pt.sum(q)
        cumulative = pt.cumsum(q)
        below = pt.sum(pt.lt(cumulative, u_rung * cumulative[-1]))
        new_rung = pt.cast(pt.minimum(below, betas.shape[0] - 1), "float64")
        kept = pt.gt(on, 0.0)
        carried = [pt.switch(kept, new, old) for new, old in zip(
            (*state.values(), new_rung), (x, log_p0, delta, g_p0, g_delta, rung), strict=True
        )]  # fmt: skip
        finite = pt.switch(pt.isfinite(d), d, 0.0)
        weighted = pt.switch(kept, q, 0.0)  # a padding sweep adds exactly nothing, not 0 * NaN
        weighted_delta = weighted * finite
        sums = [q_sum + weighted, q_delta_sum + weighted_delta,
                q_delta2_sum + weighted_delta * finite]  # fmt: skip
        return [*carried, *sums, d, rung, accepted, nonfinite]

    zeros = pt.zeros_like(betas)
    initial = [point[k] for k in (*names, "rung")]
    steps = pytensor.scan(
        sweep,
        sequences=[active, point["stretch"], point["momentum"], point["log_u"],
                   point["uniforms"], point["u_rung"]],
        outputs_info=[*initial, zeros, zeros, zeros, None, None, None, None], n_steps=chunk,
        return_updates=False,
    )  # fmt: skip
    outputs = [s[-1] for s in steps[:9]] + list(steps[9:])
    constants = [betas, step_sizes, log_weights, active, scale, *reference_inputs]
    return target.compile_point_rows(list(point.values()), outputs, constants)

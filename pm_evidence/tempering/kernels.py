r"""Markov kernels that leave ``f_beta`` invariant, batched over points that each sit at their own
``beta`` (chains x rungs in one call).

:func:`make_kernel` builds a :class:`Kernel` once per plan (blackjax's ``build_kernel`` shape):
the transition is chosen when the kernel is built and bound as its :attr:`Kernel.step`, a pure
function ``step(rng, path, state, beta, step_size, compiled=False) -> (state, accepted,
nonfinite)``. ``beta`` and ``step_size`` are arrays of length ``n`` (one value per point); one
compiled, batched evaluation of the model serves all points. ``step_size`` is the one name of
the size of a move, for every kernel, on the ladders (``Ladder.step_size``), the pilot
(``Pilot.log_step_size``) and the results (``step_size``): HMC's leapfrog step size ``eps``, and
for random-walk Metropolis the proposal's scale ``s`` (the length of a random-walk step, as in
"random-walk step size"); the discrete kernels ignore it. It is tuned per rung by the pilot
(:func:`adapt_step_size`) where :attr:`Kernel.adaptive`. A proposal whose
tempered log-density (or, for HMC, energy) is not finite, or whose leapfrog trajectory reaches
a non-finite position (a divergence), is rejected and flagged in ``nonfinite``; the samplers
count these per rung and the results report their sum as ``diagnostics["n_nonfinite_rejected"]``. ``compiled`` asks HMC for its transition as one compiled function
(:mod:`pm_evidence.tempering.compiled`; the same draws up to rounding); the other kernels do
not read it. The samplers make that choice through :func:`transition` from the points their
run has moved.

* ``rwm``: random-walk Metropolis, ``x' = x + s z``, ``z ~ N(0, I)``, ``s`` adapted per rung.
* ``hmc``: Hamiltonian Monte Carlo with ``n_leapfrog`` leapfrog steps of size ``eps`` per rung
  (seed 004 App. E; target acceptance 0.651 from Beskos et al. 2013, as there). The gradient is
  ``grad log p0 + beta grad Delta`` from PyTensor.
* ``flip``: Metropolis flips of ``n_flips`` random binary (Bernoulli) entries.
* ``gibbs``: a heat-bath (Gibbs) sweep over binary or categorical entries, one entry at a
  time, or over ``blocks`` of entries that are conditionally independent given the rest (a
  checkerboard on a grid MRF; the visible or hidden layer of an RBM): all candidate values of
  a block come from one batched call over ``points x entries x values``.
* ``gwg``: Gibbs-with-gradients (Grathwohl et al. 2021): the gradient of the relaxed
  log-density ranks all single flips at once, one is proposed and Metropolis-corrected.
* ``hmc+gibbs`` and ``rwm+gibbs``: for models with continuous and finite discrete (Bernoulli,
  Categorical) variables, a compound kernel: HMC or random-walk Metropolis on the continuous
  entries with the discrete ones held fixed, then a Gibbs sweep over the discrete entries with
  the continuous ones held fixed. Each part leaves ``f_beta`` invariant, so their composition
  does too.
* a user function ``step(rng, x, beta) -> x`` with ``x (n, dim)`` and ``beta (n,)``, which must
  leave every ``f_beta`` invariant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import warn_user
from pm_evidence.model.backend import is_on_device, select_rows
from pm_evidence.model.leapfrog import leapfrog_maps, leapfrog_step
from pm_evidence.tempering.compiled import (
    FUSE_AFTER_POINT_TRANSITIONS,
    annealing_function,
    hmc_transition_function,
    tempering_function,
)
from pm_evidence.tempering.compiled_gibbs import device_gibbs, gibbs_sweep_function
from pm_evidence.tempering.path import GeometricPath, PathState, tempered_log_density

__all__ = [
    "COMPOUND_KERNELS",
    "KERNELS",
    "Kernel",
    "adapt_step_size",
    "device_annealing",
    "device_tempering",
    "flip_step",
    "gibbs_step",
    "gwg_step",
    "hmc_step",
    "make_kernel",
    "resident_chains",
    "rwm_step",
    "transition",
]

KERNELS = ("hmc", "rwm", "flip", "gibbs", "gwg")
COMPOUND_KERNELS = ("hmc+gibbs", "rwm+gibbs")
BINARY_KERNELS = ("flip", "gibbs", "gwg")
HMC_STEP_JITTER = 0.5
DEFAULT_TARGET_ACCEPT = {
    "hmc": 0.651, "rwm": 0.3, "flip": 0.3, "gibbs": 1.0, "gwg": 1.0, "custom": 1.0,
    "hmc+gibbs": 0.651, "rwm+gibbs": 0.3,
}  # fmt: skip


@dataclass(frozen=True, eq=False)
class Kernel:
    """A transition kernel as built by :func:`make_kernel`: its step, chosen once, and what the
    samplers read from it.

    Attributes
    ----------
    name : str
        ``"hmc"``, ``"rwm"``, ``"flip"``, ``"gibbs"``, ``"gwg"``, ``"hmc+gibbs"``,
        ``"rwm+gibbs"`` or ``"custom"`` (the ``kernel`` of the results' diagnostics; no
        transition reads it). It was ``kind`` before (still readable, with a
        ``FutureWarning``).
    step : callable
        ``step(rng, path, state, beta, step_size, compiled=False) -> (state, accepted,
        nonfinite)``, one transition of every point (module docstring).
    evaluations_per_step : int
        Log-density (or gradient) evaluations per point per transition (for cost accounting).
    target_accept : float
        The acceptance rate the pilot tunes the step size towards.
    needs_grad : bool
        Whether the states it moves carry gradients (HMC, GWG, ``hmc+gibbs``).
    adaptive : bool
        Whether a per-rung step size is tuned (HMC, RWM and the compound kernels).
    n_leapfrog, n_flips, user_step, binary_mask, blocks, levels, continuous_mask, lowest
        The settings its step was built with (``None`` where the kernel has none): HMC's leapfrog
        steps, the flips of ``"flip"``, the user's function, the binary entries, the Gibbs
        blocks (entries updated together) and the number of values of each entry, the entries
        that a compound kernel moves by HMC or RWM, the smallest value of each entry.
    """

    name: str
    step: Callable
    evaluations_per_step: int
    target_accept: float
    needs_grad: bool = False
    adaptive: bool = False
    n_leapfrog: int | None = None
    n_flips: int | None = None
    user_step: Callable | None = None
    binary_mask: np.ndarray | None = None
    blocks: tuple[np.ndarray, ...] | None = None
    levels: np.ndarray | None = None
    continuous_mask: np.ndarray | None = None
    lowest: np.ndarray | None = None

    @property
    def continuous_name(self) -> str:
        """The kernel of the continuous entries: ``"hmc"``, ``"rwm"`` or the name itself."""
        return self.name.split("+")[0]

    @property
    def kind(self) -> str:
        """Deprecated name of :attr:`name`."""
        _renamed("kind", "name")
        return self.name

    @property
    def continuous_kind(self) -> str:
        """Deprecated name of :attr:`continuous_name`."""
        _renamed("continuous_kind", "continuous_name")
        return self.continuous_name


def _renamed(old: str, new: str) -> None:
    warn_user(
        f"Kernel.{old} is deprecated and will be removed: read Kernel.{new} instead.",
        FutureWarning,
    )


def transition(
    kernel: Kernel, rng, path: GeometricPath, state: PathState, beta, step_size,
    points_moved: int = 0,
):  # fmt: skip
    """One transition of ``kernel`` at inverse temperatures ``beta`` with per-point
    ``step_size`` (module docstring).

    ``points_moved`` is the number of points the caller's run has moved before this transition
    (each sampler counts its own run's, from 0): from ``FUSE_AFTER_POINT_TRANSITIONS`` on, HMC
    takes its compiled transition, before that the NumPy one (the same draws up to rounding;
    :mod:`pm_evidence.tempering.compiled`). The choice depends on this run only, never on
    earlier runs on the same path. On an accelerator HMC takes the compiled transition from
    the first: a whole transition, the reference's density included, is one call on the
    device instead of one per leapfrog step with the reference evaluated on the CPU.
    """
    compiled = (
        points_moved >= FUSE_AFTER_POINT_TRANSITIONS or path.target.backend.on_accelerator
    )
    return kernel.step(rng, path, state, beta, step_size, compiled)


def resident_chains(kernel: Kernel, path: GeometricPath) -> bool:
    """Whether a sampler keeps its chains on the device between transitions
    (:func:`~pm_evidence.tempering.path.state_on_device`): where the model runs on an
    accelerator and every transition of ``kernel`` is one compiled call there (HMC, whose
    transition :func:`transition` takes compiled from the first on an accelerator, the Gibbs
    sweeps of :mod:`~pm_evidence.tempering.compiled_gibbs`, and ``hmc+gibbs``: both, HMC's
    steps zero at the discrete entries). The sampler then reads from the device only what it
    needs on the host (``Delta`` for the next ``beta``, the acceptance rates for the step
    size) and copies its chains back once, at the end."""
    if not path.target.backend.on_accelerator:
        return False
    if kernel.name == "gibbs":
        on_device = _gibbs_graph(kernel, path) is not None
    else:
        moves, _ = _device_moves(kernel, path)
        on_device = moves and hmc_transition_function(path, kernel.n_leapfrog) is not None
    return on_device and path.target.backend.on_accelerator  # may have moved to Numba


def _gibbs_graph(kernel: Kernel, path: GeometricPath):
    """The Gibbs sweep of ``kernel`` as a graph for the device
    (:func:`~pm_evidence.tempering.compiled_gibbs.device_gibbs`), ``None`` where it cannot run
    there; binary entries where the kernel gives no levels (as :func:`gibbs_step`)."""
    dim = path.dim
    levels = np.full(dim, 2) if kernel.levels is None else np.asarray(kernel.levels)
    lowest = np.zeros(dim) if kernel.lowest is None else np.asarray(kernel.lowest)
    return device_gibbs(path, kernel.blocks, levels, lowest)


def _device_moves(kernel: Kernel, path: GeometricPath):
    """Whether ``kernel``'s transitions can be built into the device's loops, and the Gibbs
    sweep's graph they include (``None`` for HMC alone)."""
    if kernel.name == "hmc":
        return True, None
    if kernel.name != "hmc+gibbs":
        return False, None
    gibbs = _gibbs_graph(kernel, path)
    return gibbs is not None, gibbs


def device_annealing(kernel: Kernel, path: GeometricPath, n_steps: int) -> Callable | None:
    """AIS's rungs on the device (:func:`~pm_evidence.tempering.compiled.annealing_function`)
    for ``kernel`` on ``path``, as ``anneal_rungs(rng, state, log_w, betas, d_betas,
    step_sizes)``: where the model runs on an accelerator and the kernel is HMC (its
    transitions those of :func:`hmc_step`, jitter included) or ``hmc+gibbs`` (those of
    ``compound_step``); ``None`` elsewhere."""
    on_device, gibbs = _device_moves(kernel, path)
    if not on_device:
        return None
    anneal_rungs = annealing_function(path, kernel.n_leapfrog, n_steps, gibbs)
    if anneal_rungs is None:
        return None

    def rungs(rng, state, log_w, betas, d_betas, step_sizes):
        return anneal_rungs(rng, state, log_w, betas, d_betas, step_sizes, HMC_STEP_JITTER)

    return rungs


def device_tempering(kernel: Kernel, path: GeometricPath, n_steps: int) -> Callable | None:
    """The simulated-tempering sweeps on the device
    (:func:`~pm_evidence.tempering.compiled.tempering_function`) for ``kernel`` on ``path``, as
    ``temper_sweeps(rng, state, rung, n_sweeps, betas, step_sizes, log_weights)``: where the
    model runs on an accelerator and the kernel is HMC (its transitions those of
    :func:`hmc_step`, jitter included) or ``hmc+gibbs``; ``None`` elsewhere."""
    on_device, gibbs = _device_moves(kernel, path)
    if not on_device:
        return None
    temper_sweeps = tempering_function(path, kernel.n_leapfrog, n_steps, gibbs)
    if temper_sweeps is None:
        return None

    def sweeps(rng, state, rung, n_sweeps, betas, step_sizes, log_weights):
        return temper_sweeps(
            rng, state, rung, n_sweeps, betas, step_sizes, log_weights, HMC_STEP_JITTER
        )

    return sweeps


def _check_blocks(blocks, dim: int) -> tuple[np.ndarray, ...]:
    """Blocks as index arrays that together cover every entry exactly once."""
    if blocks is None:
        return tuple(np.array([j]) for j in range(dim))
    blocks = tuple(np.asarray(b, dtype=int).ravel() for b in blocks)
    joined = np.sort(np.concatenate(blocks)) if blocks else np.array([], dtype=int)
    if joined.size != dim or np.any(joined != np.arange(dim)):
        raise EvidenceInputError(
            f"Gibbs blocks must cover each of the {dim} entries of the flat vector exactly once "
            f"(got {joined.size} indices); e.g. pm_evidence.zoo.energy.checkerboard_blocks(shape)."
        )
    return blocks


def make_kernel(kernel, target, *, n_leapfrog: int = 2, n_flips: int = 1, blocks=None) -> Kernel:
    """Build a :class:`Kernel` from a name (``"auto"`` picks one for the model) or a callable.

    ``"auto"`` is HMC for continuous models and Gibbs sweeps for models whose free variables
    are all finite discrete (Bernoulli, Categorical). The name is read here only: the kernel
    returned carries its step.
    """
    if isinstance(kernel, Kernel):
        return kernel
    if callable(kernel):
        return _custom_kernel(kernel)
    mixed = target.has_discrete and not target.discrete_mask.all()
    if target.has_discrete and (kernel == "auto" or mixed):
        _check_finite_discrete(target, kernel)
    if kernel == "auto":
        kernel = "hmc+gibbs" if mixed else "gibbs" if target.has_discrete else "hmc"
    if mixed and kernel in ("hmc", "rwm"):
        kernel = f"{kernel}+gibbs"
    if mixed and kernel in COMPOUND_KERNELS:
        return _compound_kernel(kernel, target, n_leapfrog)
    if kernel not in KERNELS:
        raise EvidenceInputError(
            f"Requested kernel {kernel!r} but it must be one of {list(KERNELS)}, 'auto', or a "
            f"function step(rng, x, beta) -> x."
        )
    mask = target.binary_mask
    if kernel == "gibbs":
        if not target.finite_levels.all():
            raise EvidenceInputError(
                f"kernel='gibbs' draws finite discrete (Bernoulli, Categorical, DiscreteUniform) "
                f"variables, and "
                f"{int((target.finite_levels == 0).sum())} entries of the model's flat vector "
                f"are not; pass a custom kernel step(rng, x, beta) -> x that moves all of them."
            )
    elif kernel in BINARY_KERNELS:
        if not mask.any():
            raise EvidenceInputError(
                f"kernel={kernel!r} flips binary (Bernoulli) variables, and the model has none. "
                f"Use kernel='hmc' or 'rwm'."
            )
        if not mask.all():
            raise EvidenceInputError(
                f"kernel={kernel!r} moves only binary variables, but the model also has "
                f"{int((~mask).sum())} other entries; pass a custom kernel that moves all of them."
            )
    elif target.has_discrete:
        raise EvidenceInputError(
            f"kernel={kernel!r} moves continuous variables, but every free variable of the model "
            f"is discrete ({list(target.discrete_names)}). Use kernel='gibbs' (Bernoulli and "
            f"Categorical variables), 'flip' (binary) or a custom kernel step(rng, x, beta) -> x."
        )
    if n_leapfrog < 1 or n_flips < 1:
        raise EvidenceInputError("n_leapfrog and n_flips must be positive integers.")
    if kernel == "hmc":
        return _hmc_kernel(int(n_leapfrog))
    if kernel == "rwm":
        return _rwm_kernel()
    if kernel == "flip":
        return _flip_kernel(mask, int(n_flips))
    if kernel == "gibbs":
        return _gibbs_kernel(
            _check_blocks(blocks, target.dim), target.finite_levels, target.lowest_values
        )
    return _gwg_kernel(mask)


def _check_finite_discrete(target, kernel) -> None:
    """Built-in kernels move discrete variables only by Gibbs sweeps over their values."""
    unbounded = target.layout_info.unbounded_discrete_names
    if unbounded and not callable(kernel):
        raise EvidenceInputError(
            f"The discrete variables {list(unbounded)} have unbounded support (Poisson, "
            f"negative binomial, ...), which no built-in kernel can move (Gibbs sweeps enumerate "
            f"the values of Bernoulli and Categorical variables). Pass kernel=step, a function "
            f"step(rng, x, beta) -> x of flat points (n, {target.dim}) that leaves every "
            f"tempered density invariant, or marginalize those variables out of the model."
        )


# ---------------------------------------------------------------------- built kernels
# Each builder binds one step function to its settings; the steps share the signature
# (rng, path, state, beta, step_size, compiled=False) and ignore what they do not use.


def _hmc_kernel(n_leapfrog: int) -> Kernel:
    def step(rng, path, state, beta, step_size, compiled=False):
        return hmc_step(rng, path, state, beta, step_size, n_leapfrog, compiled=compiled)

    return Kernel(
        "hmc", step, n_leapfrog, DEFAULT_TARGET_ACCEPT["hmc"], needs_grad=True, adaptive=True,
        n_leapfrog=n_leapfrog,
    )  # fmt: skip


def _rwm_kernel() -> Kernel:
    def step(rng, path, state, beta, step_size, compiled=False):
        return rwm_step(rng, path, state, beta, step_size)

    return Kernel("rwm", step, 1, DEFAULT_TARGET_ACCEPT["rwm"], adaptive=True)


def _flip_kernel(binary_mask: np.ndarray, n_flips: int) -> Kernel:
    def step(rng, path, state, beta, step_size, compiled=False):
        return flip_step(rng, path, state, beta, binary_mask, n_flips)

    return Kernel(
        "flip", step, 1, DEFAULT_TARGET_ACCEPT["flip"], n_flips=n_flips, binary_mask=binary_mask
    )


def _gibbs_evaluations(blocks: tuple[np.ndarray, ...], levels: np.ndarray) -> int:
    """Evaluations per point of a Gibbs sweep: every other value of every entry, plus one at the
    new state for each block of several entries (:func:`gibbs_step`)."""
    candidates = sum(b.size * (int(levels[b].max()) - 1) for b in blocks)
    return candidates + sum(b.size > 1 for b in blocks)


def _gibbs_kernel(blocks: tuple[np.ndarray, ...], levels: np.ndarray, lowest=None) -> Kernel:
    def step(rng, path, state, beta, step_size, compiled=False):
        return gibbs_step(rng, path, state, beta, blocks, levels, lowest, compiled=compiled)

    return Kernel(
        "gibbs", step, _gibbs_evaluations(blocks, levels), DEFAULT_TARGET_ACCEPT["gibbs"],
        blocks=blocks, levels=levels, lowest=lowest,
    )  # fmt: skip


def _gwg_kernel(binary_mask: np.ndarray) -> Kernel:
    def step(rng, path, state, beta, step_size, compiled=False):
        return gwg_step(rng, path, state, beta)

    return Kernel(
        "gwg", step, 1, DEFAULT_TARGET_ACCEPT["gwg"], needs_grad=True, binary_mask=binary_mask
    )


def _custom_kernel(user_step: Callable) -> Kernel:
    def step(rng, path, state, beta, step_size, compiled=False):
        return custom_step(rng, path, state, beta, user_step)

    return Kernel("custom", step, 1, DEFAULT_TARGET_ACCEPT["custom"], user_step=user_step)


def _compound_kernel(name: str, target, n_leapfrog: int) -> Kernel:
    """HMC or RWM on the continuous entries, then a Gibbs sweep over the discrete ones."""
    if n_leapfrog < 1:
        raise EvidenceInputError("n_leapfrog must be a positive integer.")
    n_leapfrog = int(n_leapfrog)
    continuous = ~target.discrete_mask
    blocks = tuple(np.array([j]) for j in np.flatnonzero(target.discrete_mask))
    levels, lowest = target.finite_levels, target.lowest_values
    with_hmc = name == "hmc+gibbs"

    def move(rng, path, state, beta, step_size, compiled=False):
        if with_hmc:
            return hmc_step(
                rng, path, state, beta, step_size, n_leapfrog, compiled=compiled, mask=continuous
            )
        return rwm_step(rng, path, state, beta, step_size, mask=continuous)

    def step(rng, path, state, beta, step_size, compiled=False):
        return compound_step(
            rng, path, state, beta, step_size, move, blocks, levels, with_hmc, lowest, compiled
        )

    # the continuous move's evaluations, the sweep's, and one more: the evaluation with
    # gradients after the sweep (rwm+gibbs, which has none, is charged it too)
    continuous_evaluations = n_leapfrog if with_hmc else 1
    return Kernel(
        name, step, continuous_evaluations + _gibbs_evaluations(blocks, levels) + 1,
        DEFAULT_TARGET_ACCEPT[name], needs_grad=with_hmc, adaptive=True,
        n_leapfrog=n_leapfrog if with_hmc else None, blocks=blocks, levels=levels,
        continuous_mask=continuous, lowest=lowest,
    )  # fmt: skip


def _metropolis(rng, current: PathState, proposal: PathState, log_ratio: np.ndarray):
    """Accept ``proposal`` where ``log u < log_ratio``; non-finite ratios are rejected."""
    finite = np.isfinite(log_ratio)
    accept = finite & (np.log(rng.random(log_ratio.shape)) < np.where(finite, log_ratio, -np.inf))
    return PathState(*select_rows(accept, tuple(proposal), tuple(current))), accept, ~finite


def rwm_step(rng, path: GeometricPath, state: PathState, beta, scale, mask=None):
    """Random-walk Metropolis: ``x' = x + scale z``, accepted with ``min(1, f_b(x')/f_b(x))``;
    only the entries of ``mask`` move when it is given."""
    z = rng.standard_normal(state.x.shape)
    if mask is not None:
        z = z * mask
    x_new = state.x + np.asarray(scale)[:, None] * z
    proposal = path.evaluate(x_new)
    log_ratio = tempered_log_density(proposal.log_p0, proposal.delta, beta) - tempered_log_density(
        state.log_p0, state.delta, beta
    )
    return _metropolis(rng, state, proposal, log_ratio)


def _kinetic(momentum: np.ndarray) -> np.ndarray:
    """``|p|^2 / 2`` per point (identity mass for ``p``; a diagonal mass matrix enters through
    the per-coordinate steps, :func:`hmc_step`)."""
    return 0.5 * np.einsum("ij,ij->i", momentum, momentum)


def _grad(state: PathState, beta) -> np.ndarray:
    return state.grad_log_p0 + np.asarray(beta)[:, None] * state.grad_delta


def hmc_step(
    rng, path: GeometricPath, state: PathState, beta, step_size, n_leapfrog: int,
    jitter: float = HMC_STEP_JITTER, compiled: bool = False, mask=None,
):  # fmt: skip
    """HMC with ``n_leapfrog`` leapfrog steps of size ``step_size`` (one per point) times the
    path's per-coordinate factors ``path.step_scale`` (a diagonal mass matrix from the
    reference's scales; ones from the prior: identity mass); ``state`` must carry gradients.

    With ``compiled`` (and a path that allows it; with ``mask``, its steps zero outside the
    mask) the whole transition is one compiled call
    (:func:`~pm_evidence.tempering.compiled.hmc_transition_function`), fed the same random
    numbers as the NumPy code: the same draws up to floating-point rounding.

    Each point's step size is multiplied by a fresh ``U(1 - jitter, 1 + jitter)`` draw
    (Neal 2011, §5.4.2.2). Without it, a trajectory of fixed length can come back close to its
    start on a near-Gaussian ``f_beta`` (the leapfrog map rotates each direction by an angle
    ``~ n_leapfrog * eps / sigma``), and the chain hardly moves; random lengths average that
    out. The draw does not depend on the state, so each transition is a mixture of valid
    kernels and ``f_beta`` stays invariant.

    With a boolean ``mask`` only those entries move (HMC on the conditional of the masked
    entries given the others): the momentum and gradient are zero elsewhere.

    A trajectory that reaches a non-finite position (an overflow, or a NaN momentum from a
    non-finite gradient) is not evaluated there: it stays at its start for the remaining
    leapfrog steps, and its proposal is rejected and flagged in ``nonfinite``, as is one whose
    final energy is not finite. A rejection leaves ``f_beta`` invariant, and the other points'
    moves are the same as without it.
    """
    beta = np.asarray(beta, dtype=float)
    eps = np.asarray(step_size, dtype=float)
    eps = (eps * rng.uniform(1.0 - jitter, 1.0 + jitter, size=eps.shape))[:, None]
    momentum = rng.standard_normal(state.x.shape)
    fused = hmc_transition_function(path, n_leapfrog) if compiled else None
    if fused is not None:
        log_u = np.log(rng.random(eps.shape[0]))
        if mask is not None:
            momentum = momentum * mask
        return fused(state, beta, eps[:, 0], momentum, log_u, mask)
    eps = eps * path.step_scale  # (n, dim): the diagonal preconditioning
    if mask is not None:
        momentum = momentum * mask
        eps = eps * mask  # x moves by eps * p: zero outside the mask whatever the gradient
    current_h = _kinetic(momentum) - tempered_log_density(state.log_p0, state.delta, beta)
    proposal, x = state, state.x
    diverged = np.zeros(state.x.shape[0], dtype=bool)
    move, kick = leapfrog_maps(eps, None, 1.0)  # eps already (n, dim): diag(s) and the mask

    def evaluate(x_new):
        return path.evaluate(x_new, with_grad=True)

    def gradient(s: PathState):
        return _grad(s, beta)

    with np.errstate(invalid="ignore", over="ignore"):
        p = momentum + kick(_grad(state, beta), 0.5)
        for step in range(n_leapfrog):
            # a trajectory whose position left the finite numbers is a divergence: evaluated
            # at its start instead (the model and the reference never see NaN or inf), frozen
            # there and rejected below, so the other points' moves are unchanged
            x, p, proposal, diverged = leapfrog_step(
                np, evaluate, gradient, move, kick, x, p, state.x, diverged,
                1.0 if step < n_leapfrog - 1 else 0.5,
            )  # fmt: skip
        # a non-finite gradient makes p, hence the energy, non-finite: rejected and counted
        proposal_h = _kinetic(p) - tempered_log_density(proposal.log_p0, proposal.delta, beta)
        log_ratio = np.where(diverged, np.nan, current_h - proposal_h)
    return _metropolis(rng, state, proposal, log_ratio)


def flip_step(rng, path: GeometricPath, state: PathState, beta, mask: np.ndarray, n_flips: int):
    """Metropolis flips of ``n_flips`` distinct random binary entries per point (symmetric)."""
    n = state.x.shape[0]
    binary = np.flatnonzero(mask)
    k = min(n_flips, binary.size)
    chosen = np.argsort(rng.random((n, binary.size)), axis=1)[:, :k]
    x_new = state.x.copy()
    rows = np.repeat(np.arange(n), k)
    cols = binary[chosen.ravel()]
    x_new[rows, cols] = 1.0 - x_new[rows, cols]
    proposal = path.evaluate(x_new)
    log_ratio = tempered_log_density(proposal.log_p0, proposal.delta, beta) - tempered_log_density(
        state.log_p0, state.delta, beta
    )
    return _metropolis(rng, state, proposal, log_ratio)


# Candidate states of a Gibbs block evaluated per call: ``points x entries x values`` rows are
# built and evaluated about this many at a time, so the copies stay in cache: larger chunks,
# or none, make a block step slower than single sites (measured: docs/benchmarks.rst,
# Measurements behind the defaults).
GIBBS_CANDIDATE_ROWS = 1024


def _candidate_log_f(path: GeometricPath, x, beta, block, block_levels, n_alt: int, block_lowest):
    """``log f_beta`` at every candidate of a block: point ``i`` with entry ``block[e]`` moved to
    its ``s``-th other value, ``(n, m, n_alt)``; also those values, ``(n, m, n_alt)``, and
    (for a one-entry block, evaluated in one call) the candidates' :class:`PathState`,
    ``n * n_alt`` rows (``None`` for larger blocks)."""
    n, d = x.shape
    m = block.size
    shifts = np.arange(1, n_alt + 1)
    entries = np.arange(m)[:, None]
    low = block_lowest[:, None]
    new_values = low + np.mod(x[:, block][:, :, None] - low + shifts, block_levels[:, None])
    per_point = m * n_alt
    # one call for a one-entry block (its candidates are n_alt copies of x, kept as the proposal)
    chunk = n if m == 1 else max(1, GIBBS_CANDIDATE_ROWS // per_point)
    log_f_alt = np.empty((n, m, n_alt))
    proposal = None
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        k = rows.stop - rows.start
        candidates = np.repeat(x[rows, None, :], per_point, axis=1).reshape(k, m, n_alt, d)
        candidates[:, entries, shifts - 1, block[:, None]] = new_values[rows]
        proposal = path.evaluate(candidates.reshape(k * per_point, d))
        log_f_alt[rows] = tempered_log_density(
            proposal.log_p0, proposal.delta, np.repeat(beta[rows], per_point)
        ).reshape(k, m, n_alt)
    return log_f_alt, new_values, proposal if m == 1 else None


def gibbs_step(
    rng, path: GeometricPath, state: PathState, beta, blocks, levels=None, lowest=None,
    compiled: bool = False,
):  # fmt: skip
    r"""One heat-bath (Gibbs) sweep over ``blocks`` of finite discrete entries at inverse
    temperatures ``beta``.

    Entry ``j`` takes values ``a_j + 0..L_j-1`` (``levels``, all 2, binary, by default;
    ``lowest`` ``a_j``, all 0 by default). For a block ``B`` and each ``j in B``, the
    ``L_j - 1`` other values ``a_j + (x_j - a_j + s) mod L_j``, ``s = 1..L_j-1``, are evaluated, and ``x_j`` is drawn from its exact conditional
    ``propto f_beta`` over all ``L_j`` values (for a binary entry: flipped with probability
    ``sigma(log f_beta(x^{(j)}) - log f_beta(x))``), for all ``j in B`` at once: exact Gibbs
    when the entries of ``B`` are conditionally independent given the rest under every
    ``f_beta`` (the caller's promise, or :func:`~pm_evidence.tempering.blocks.gibbs_blocks`'s
    finding; single entries always are). The candidate states of a block are evaluated in
    batched calls over ``n x |B| x max(L_j - 1)`` points, ``GIBBS_CANDIDATE_ROWS`` at a time;
    a block of several entries costs one more evaluation per point, at the new state.

    With ``compiled``, on an accelerator, the whole sweep is one call on the device
    (:func:`~pm_evidence.tempering.compiled_gibbs.gibbs_sweep_function`), fed the same
    uniforms: the same moves up to rounding.
    """
    beta = np.asarray(beta, dtype=float)
    n, d = state.x.shape
    levels = np.full(d, 2) if levels is None else np.asarray(levels)
    lowest = np.zeros(d) if lowest is None else np.asarray(lowest)
    on_device = gibbs_sweep_function(path, blocks, levels, lowest) if compiled else None
    if on_device is not None:
        return on_device(rng, state, beta)
    current = state
    moved = np.zeros(n, dtype=bool)
    nonfinite = np.zeros(n, dtype=bool)
    log_f = tempered_log_density(current.log_p0, current.delta, beta)
    for block in blocks:
        m, block_levels = block.size, levels[block]
        n_alt = int(block_levels.max()) - 1
        shifts = np.arange(1, n_alt + 1)
        log_f_alt, new_values, proposal = _candidate_log_f(
            path, current.x, beta, block, block_levels, n_alt, lowest[block]
        )
        with np.errstate(invalid="ignore"):
            diff = log_f_alt - log_f[:, None, None]
        bad = np.isnan(diff)
        nonfinite |= bad.any(axis=(1, 2))
        padded = shifts[None, :] >= block_levels[:, None]  # value s does not exist for entry
        diff = np.where(bad | padded, -np.inf, diff)
        # heat bath over {the n_alt other values, the current one (diff 0)}
        top = np.maximum(diff.max(axis=2), 0.0)
        log_norm = top + np.log(np.exp(-top) + np.exp(diff - top[..., None]).sum(axis=2))
        cumulative = np.cumsum(np.exp(diff - log_norm[..., None]), axis=2)
        u = rng.random((n, m))
        choice = (cumulative <= u[..., None]).sum(axis=2)  # == n_alt: keep the current value
        change = choice < n_alt
        if m == 1:  # the chosen candidate was evaluated already
            pick = np.minimum(choice[:, 0], n_alt - 1) + np.arange(n) * n_alt
            chosen = PathState(*[None if a is None else a[pick] for a in proposal])
            current = PathState(*select_rows(change[:, 0], tuple(chosen), tuple(current)))
            log_f = np.where(change[:, 0], log_f_alt[np.arange(n), 0, pick % n_alt], log_f)
        elif change.any():
            x_new = current.x.copy()
            picked = np.take_along_axis(new_values, np.minimum(choice, n_alt - 1)[..., None], 2)
            x_new[:, block] = np.where(change, picked[..., 0], x_new[:, block])
            current = path.evaluate(x_new)
            log_f = tempered_log_density(current.log_p0, current.delta, beta)
        moved |= change.any(axis=1)
    return current, moved, nonfinite


def _flip_log_probs(state: PathState, beta) -> np.ndarray:
    """GWG's proposal over single flips: ``log softmax(d / 2)`` with
    ``d = (1 - 2x) * grad log f_beta(x)`` (Grathwohl et al. 2021, eq. (4))."""
    d = (1.0 - 2.0 * state.x) * _grad(state, beta)
    return special.log_softmax(d / 2.0, axis=1)


def gwg_step(rng, path: GeometricPath, state: PathState, beta):
    """Gibbs-with-gradients: propose one flip ``i ~ q(i | x)`` ranked by the relaxed gradient,
    accept with ``min(1, f_beta(x') q(i | x') / (f_beta(x) q(i | x)))``; ``state`` must
    carry (relaxed) gradients."""
    beta = np.asarray(beta, dtype=float)
    n = state.x.shape[0]
    log_q = _flip_log_probs(state, beta)
    rows = np.arange(n)
    chosen = _draw_index(rng, log_q)
    x_new = state.x.copy()
    x_new[rows, chosen] = 1.0 - x_new[rows, chosen]
    proposal = path.evaluate(x_new, with_grad=True)
    log_q_back = _flip_log_probs(proposal, beta)[rows, chosen]
    with np.errstate(invalid="ignore"):
        log_ratio = (
            tempered_log_density(proposal.log_p0, proposal.delta, beta)
            - tempered_log_density(state.log_p0, state.delta, beta)
            + log_q_back
            - log_q[rows, chosen]
        )
    return _metropolis(rng, state, proposal, log_ratio)


def _draw_index(rng, log_probs: np.ndarray) -> np.ndarray:
    """One index per row from row-wise log-probabilities (Gumbel-max)."""
    return np.argmax(log_probs + rng.gumbel(size=log_probs.shape), axis=1)


def custom_step(rng, path: GeometricPath, state: PathState, beta, user_step: Callable):
    """Apply a user kernel ``step(rng, x, beta) -> x``; "accepted" means the point moved."""
    x_new = np.asarray(user_step(rng, state.x.copy(), np.asarray(beta, dtype=float)), dtype=float)
    if x_new.shape != state.x.shape:
        raise EvidenceInputError(
            f"The custom kernel returned shape {x_new.shape}; it must return x of the shape it "
            f"was given, {state.x.shape}."
        )
    new = path.evaluate(x_new)
    log_f = tempered_log_density(new.log_p0, new.delta, beta)
    nonfinite = ~np.isfinite(log_f)
    if np.any(nonfinite):  # keep the old point where the user kernel left the support
        keep = nonfinite[:, None]
        new = PathState(
            np.where(keep, state.x, new.x),
            np.where(nonfinite, state.log_p0, new.log_p0),
            np.where(nonfinite, state.delta, new.delta),
        )
    moved = np.any(new.x != state.x, axis=1)
    return new, moved, nonfinite


def compound_step(
    rng, path: GeometricPath, state: PathState, beta, step_size, move: Callable, blocks, levels,
    with_grad: bool, lowest=None, compiled: bool = False,
):  # fmt: skip
    """``move(rng, path, state, beta, step_size, compiled)`` (HMC or RWM on the continuous
    entries; HMC's transition one compiled call on an accelerator, its steps zero at the
    discrete entries), then a Gibbs sweep over the discrete entries ``blocks`` (on the device
    with ``compiled``, where :func:`gibbs_step` can); with ``with_grad`` the new points are
    evaluated with gradients for the next HMC move (on the device, for points kept there).

    The acceptance returned is that of the continuous move (what the step size adapts to); a
    point is flagged non-finite if either part met a non-finite density.
    """
    state, accepted, nonfinite = move(rng, path, state, beta, step_size, compiled)
    plain = PathState(state.x, state.log_p0, state.delta)
    state, _, nonfinite_gibbs = gibbs_step(
        rng, path, plain, beta, blocks, levels, lowest, compiled=compiled
    )
    if with_grad:  # where the points are kept on the device, evaluated there
        state = path.evaluate(state.x, with_grad=True, resident=is_on_device(state.x))
    return state, accepted, nonfinite | nonfinite_gibbs


def adapt_step_size(log_step_size: np.ndarray, accept_rate, target: float, gain: float = 1.0):
    """Robbins-Monro step on the log step size: larger steps when accepting more than
    ``target``; returns the new log step size."""
    return log_step_size + gain * (np.asarray(accept_rate) - target)

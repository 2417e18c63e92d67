r"""Samplers along the geometric path: annealing (AIS and its reverse) and simulated tempering.

They produce only what the estimators in :mod:`pm_evidence.estimators.annealed` and
:mod:`pm_evidence.estimators.tempered` need: ``Delta(x) = log f(x) - log p0(x)`` at the draws,
the AIS log weights, and the tempered sampler's running sums. Every transition is one batched
call over all chains (each chain at its own ``beta``); no Python loop over points.

A sampler takes the path and its kernel (what a plan holds), the ladder, the chains' state and
a small frozen settings record (:class:`AnnealingSamplerSettings`, :class:`TemperingSamplerSettings`), and
returns a record of what it saw (:class:`AnnealingTrace`, :class:`TemperingTrace`). Records of
consecutive pieces of one run merge (:meth:`AnnealingTrace.merge`, :meth:`TemperingTrace.merge`). The
state handed from one piece to the next includes ``points_moved``, the points (chains x
transitions) the run has moved so far: HMC takes its compiled transition from
``FUSE_AFTER_POINT_TRANSITIONS`` of them on (:func:`~pm_evidence.tempering.kernels.transition`),
so that choice, like everything else a run does, depends on the run alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pm_evidence.core.progress import long_run
from pm_evidence.core.utils import normalized_weights, renamed_module_names, warn_user
from pm_evidence.estimators.tempered import rts_log_z
from pm_evidence.tempering.compiled import ANNEALING_CHUNK_RUNGS, TEMPERING_CHUNK_SWEEPS
from pm_evidence.tempering.kernels import (
    Kernel,
    device_annealing,
    device_tempering,
    resident_chains,
    transition,
)
from pm_evidence.tempering.ladders import Ladder
from pm_evidence.tempering.path import (
    GeometricPath,
    PathState,
    state_on_device,
    state_on_host,
    tempered_log_density,
)

__all__ = [
    "AnnealingSamplerSettings",
    "AnnealingTrace",
    "TemperingChains",
    "TemperingSamplerSettings",
    "TemperingTrace",
    "anneal",
    "draw_categorical",
    "rts_initial_iterations",
    "sample_at_beta",
    "temper",
]

# old names (one name per concept), with a FutureWarning
__getattr__ = renamed_module_names(
    globals(),
    {
        "AnnealRecord": "AnnealingTrace",
        "TemperedRecord": "TemperingTrace",
        "AnnealSettings": "AnnealingSamplerSettings",
        "TemperedSettings": "TemperingSamplerSettings",
        "TemperedChains": "TemperingChains",
    },
)


def _increment(state: PathState, d_beta: float) -> np.ndarray:
    """AIS log-weight increment ``(beta_k - beta_{k-1}) Delta(x_{k-1})`` (seed 000 eq. (8))."""
    with np.errstate(invalid="ignore"):
        return np.where(d_beta == 0.0, 0.0, d_beta * np.asarray(state.delta))


# ---------------------------------------------------------------------- annealing
class AnnealingTrace(NamedTuple):
    """Output of :func:`anneal`.

    ``log_weights[i]``: chain ``i``'s final log weight. With ``store=True``, ``delta[k, i]`` is
    ``Delta`` at chain ``i``'s point after the transitions at rung ``k`` and
    ``log_weights_rungs[k, i]`` its log weight there (seed 000 eq. (8)): ``(x_k^i, w_k^i)`` is
    a weighted sample of ``p_k``. ``points_moved`` is the run's count after these chains (the
    count given to :func:`anneal` plus their transitions).
    """

    betas: np.ndarray
    log_weights: np.ndarray
    delta: np.ndarray | None
    log_weights_rungs: np.ndarray | None
    acceptance: np.ndarray  # (K,) mean acceptance of the transitions at each rung
    nonfinite: np.ndarray  # (K,) rejected non-finite proposals per rung
    n_evaluations: int
    final: PathState
    points_moved: int

    def merge(self, batch: AnnealingTrace) -> AnnealingTrace:
        """This run's chains and those of ``batch``, a later batch of the same run annealed
        along the same rungs, as one run: per-chain arrays joined (chains last), acceptance
        averaged over the chains, counts added; ``final`` and ``points_moved`` are the later
        batch's."""
        n_a, n_b = self.log_weights.size, batch.log_weights.size

        def join(x, y):
            return None if x is None else np.concatenate([x, y], axis=-1)

        return AnnealingTrace(
            self.betas,
            np.concatenate([self.log_weights, batch.log_weights]),
            join(self.delta, batch.delta),
            join(self.log_weights_rungs, batch.log_weights_rungs),
            (self.acceptance * n_a + batch.acceptance * n_b) / (n_a + n_b),
            self.nonfinite + batch.nonfinite,
            self.n_evaluations + batch.n_evaluations,
            batch.final,
            batch.points_moved,
        )


@dataclass(frozen=True)
class AnnealingSamplerSettings:
    """How :func:`anneal` runs.

    Attributes
    ----------
    n_steps : int
        Transitions per rung.
    store : bool
        Keep ``Delta`` and the log weight of every chain at every rung (ADS reads them).
    progressbar : bool
        Show a progress bar.
    description : str
        The progress bar's label.
    """

    n_steps: int = 1
    store: bool = False
    progressbar: bool = True
    description: str = "annealing"


def anneal(
    rng,
    path: GeometricPath,
    kernel: Kernel,
    ladder: Ladder,
    state: PathState,
    settings: AnnealingSamplerSettings | None = None,
    *,
    points_moved: int = 0,
) -> AnnealingTrace:
    r"""Anneal the points ``state`` (drawn from ``f_{beta_1}``) along ``ladder``'s rungs, each
    rung's transitions at its step size.

    At each rung ``k = 2..K``: ``log w += (beta_k - beta_{k-1}) Delta(x)`` at the current point,
    then ``n_steps`` transitions leaving ``f_{beta_k}`` invariant (seed 000 eq. (8); seed 001).
    With ``betas`` from 0 to 1 and ``p0`` draws this is AIS: ``E[w] = Z`` (Neal 2001). With
    ``betas`` from 1 to 0 (:meth:`~pm_evidence.tempering.ladders.Ladder.reversed`) and
    posterior draws it is reverse AIS: ``E[w] = 1 / Z`` (Burda et al. 2015). ``points_moved``:
    the points the run moved before these chains (0 for a run's first batch). Where the model
    runs on an accelerator and the kernel is HMC (or ``hmc+gibbs``), ``ANNEALING_CHUNK_RUNGS``
    rungs are one call on the device (:func:`~pm_evidence.tempering.kernels.device_annealing`),
    with the random numbers the loop would draw: the same chains up to rounding.

    Ctrl-C stops the run and raises :class:`KeyboardInterrupt` (a partial annealing run does not
    estimate ``Z``).
    """
    settings = settings or AnnealingSamplerSettings()
    betas, step_size, n_steps, store = (
        ladder.betas,
        ladder.step_size,
        settings.n_steps,
        settings.store,
    )
    n_chains, n_rungs = state.x.shape[0], betas.size
    log_w = np.zeros(n_chains)
    delta = np.empty((n_rungs, n_chains)) if store else None
    log_w_rungs = np.empty((n_rungs, n_chains)) if store else None
    if store:
        delta[0], log_w_rungs[0] = state.delta, 0.0
    acceptance = np.zeros(n_rungs)
    nonfinite = np.zeros(n_rungs, dtype=int)
    n_eval = 0
    on_device = device_annealing(kernel, path, n_steps)  # None on a CPU
    chunk = ANNEALING_CHUNK_RUNGS if on_device is not None else 1
    # a kernel without AIS's loop on the device (Gibbs sweeps alone) whose transitions are one
    # call there each: the chains kept on the device between them
    resident = on_device is None and resident_chains(kernel, path)
    if resident:
        state = state_on_device(state)
    with long_run(n_rungs - 1, settings.description, settings.progressbar) as run:
        for first in range(1, n_rungs, chunk):
            ks = range(first, min(n_rungs, first + chunk))
            if on_device is not None:  # chunk rungs in one call
                state, log_w, delta_k, log_w_k, accepted, bad = on_device(
                    rng, state, log_w, betas[ks], betas[ks] - betas[first - 1 : ks.stop - 1],
                    step_size[ks],
                )  # fmt: skip
                acceptance[ks] = accepted.mean(axis=1) / n_steps
                nonfinite[ks] = bad.sum(axis=1)
                if store:
                    delta[ks], log_w_rungs[ks] = delta_k, log_w_k
            else:  # one rung
                k = first
                log_w = log_w + _increment(state, betas[k] - betas[k - 1])
                beta_vec = np.full(n_chains, betas[k])
                step_vec = np.full(n_chains, step_size[k])
                for t in range(n_steps):
                    state, accepted, bad = transition(
                        kernel, rng, path, state, beta_vec, step_vec, points_moved + t * n_chains
                    )
                    acceptance[k] += accepted.mean() / n_steps
                    nonfinite[k] += int(bad.sum())
                if store:
                    delta[k], log_w_rungs[k] = np.asarray(state.delta), log_w
            points_moved += n_chains * n_steps * len(ks)
            n_eval += n_chains * kernel.evaluations_per_step * n_steps * len(ks)
            run.advance(len(ks))
            if run.interrupted:
                raise KeyboardInterrupt(
                    f"Annealing interrupted at rung {ks.stop - 1} of {n_rungs}; an unfinished "
                    f"annealing run has no estimate of log Z."
                )
    if on_device is not None or resident:  # the chains stayed there between calls
        state, log_w = state_on_host(state), np.asarray(log_w)
    return AnnealingTrace(
        betas, log_w, delta, log_w_rungs, acceptance, nonfinite, n_eval, state, points_moved
    )


def sample_at_beta(
    rng,
    path: GeometricPath,
    kernel: Kernel,
    state: PathState,
    beta: float,
    step_size: float,
    *,
    n_transitions: int,
    progressbar: bool = True,
    description: str = "burn-in at beta = 1",
) -> PathState:
    """``n_transitions`` transitions of every point at one fixed ``beta`` (burn-in, or draws
    of ``f_beta`` for models NUTS cannot sample); returns the last points."""
    n = state.x.shape[0]
    beta_vec, step_vec = np.full(n, float(beta)), np.full(n, float(step_size))
    resident = resident_chains(kernel, path)
    if resident:  # the points stay on the device between transitions
        state = state_on_device(state)
    with long_run(n_transitions, description, progressbar) as run:
        for t in range(n_transitions):  # a run of its own: t * n points moved before
            state, _, _ = transition(kernel, rng, path, state, beta_vec, step_vec, t * n)
            run.advance()
            if run.interrupted:
                raise KeyboardInterrupt(f"{description} interrupted; nothing to return.")
    return state_on_host(state) if resident else state


# ---------------------------------------------------------------------- simulated tempering
class TemperingChains(NamedTuple):
    """The tempered chains between pieces of a run: the state :func:`temper` starts
    from, and :attr:`TemperingTrace.chains` after it.

    ``points`` are the chains' points, ``rung`` each chain's rung (``None``: drawn from
    ``q(beta | x)``, seed 004 eq. (7), at the start), ``points_moved`` the points (chains x
    transitions) the run has moved so far (HMC's compiled transition from
    ``FUSE_AFTER_POINT_TRANSITIONS`` on).
    """

    points: PathState
    rung: np.ndarray | None = None
    points_moved: int = 0


class TemperingTrace(NamedTuple):
    """Sufficient statistics of a simulated-tempering run (memory ``O(units x K)``).

    Units are chains (or chain x time batches when there are few chains); sums are over the
    iterations of a unit. ``c_sum[u, k] = sum_t q(beta_k | x_t)`` (seed 004 eq. (9) before
    dividing by ``N``), ``rb_delta_sum[u, k] = sum_t q(beta_k | x_t) Delta(x_t)`` (for TI-RB,
    eq. (21)), ``count[u, k]`` the number of iterations with ``x_t`` drawn at rung ``k`` and
    ``count_delta_sum`` the sum of ``Delta`` over them (plain TI); the ``*_delta2_sum`` are the
    same sums of ``Delta^2`` (per-rung variances, for TI's corrected trapezoid rule). ``transitions[j, k]`` counts
    moves ``beta_j -> beta_k`` (seed 004 App. F). With ``record=True`` every iteration's
    ``Delta`` and rung are kept (``(chain, iteration)``, for MBAR). ``final``, ``final_rung``
    and ``points_moved`` are where the chains ended (:attr:`chains`).
    """

    betas: np.ndarray
    log_r: np.ndarray
    log_zhat: np.ndarray
    c_sum: np.ndarray
    rb_delta_sum: np.ndarray
    rb_delta2_sum: np.ndarray
    count: np.ndarray
    count_delta_sum: np.ndarray
    count_delta2_sum: np.ndarray
    n_iterations: np.ndarray  # (units,)
    transitions: np.ndarray
    acceptance: np.ndarray  # (K,) acceptance rate of the x-transitions at each rung
    nonfinite: np.ndarray  # (K,)
    delta_draws: np.ndarray | None
    rung_draws: np.ndarray | None
    unit_of_chain_draw: np.ndarray | None  # (chain, iteration) unit index, with record=True
    n_evaluations: int
    final: PathState
    final_rung: np.ndarray
    points_moved: int
    interrupted: bool

    @property
    def chains(self) -> TemperingChains:
        """Where the chains ended: the state a next piece of the run starts from."""
        return TemperingChains(self.final, self.final_rung, self.points_moved)

    @property
    def c_hat(self) -> np.ndarray:
        """``c_k = (1 / N) sum_t q(beta_k | x_t)`` over all units' iterations (seed 004
        eq. (9)), shape ``(K,)``."""
        return self.c_sum.sum(axis=0) / self.n_iterations.sum()

    def merge(self, later: TemperingTrace) -> TemperingTrace:
        """This piece of a run followed by ``later``, the same chains continued (started from
        :attr:`chains`, with the same ``log r`` and ``log Zhat``): sums add, draws append,
        acceptance is averaged over the iterations; where the chains ended is ``later``'s."""
        w_a, w_b = self.n_iterations.sum(), later.n_iterations.sum()

        def cat(x, y):
            return None if x is None else np.concatenate([x, y], axis=1)

        acceptance = np.where(
            np.isnan(self.acceptance), later.acceptance,
            np.where(np.isnan(later.acceptance), self.acceptance,
                     (self.acceptance * w_a + later.acceptance * w_b) / (w_a + w_b)),
        )  # fmt: skip
        return self._replace(
            c_sum=self.c_sum + later.c_sum,
            rb_delta_sum=self.rb_delta_sum + later.rb_delta_sum,
            rb_delta2_sum=self.rb_delta2_sum + later.rb_delta2_sum,
            count=self.count + later.count,
            count_delta_sum=self.count_delta_sum + later.count_delta_sum,
            count_delta2_sum=self.count_delta2_sum + later.count_delta2_sum,
            n_iterations=self.n_iterations + later.n_iterations,
            transitions=self.transitions + later.transitions,
            acceptance=acceptance,
            nonfinite=self.nonfinite + later.nonfinite,
            delta_draws=cat(self.delta_draws, later.delta_draws),
            rung_draws=cat(self.rung_draws, later.rung_draws),
            unit_of_chain_draw=cat(self.unit_of_chain_draw, later.unit_of_chain_draw),
            n_evaluations=self.n_evaluations + later.n_evaluations,
            final=later.final,
            final_rung=later.final_rung,
            points_moved=later.points_moved,
            interrupted=self.interrupted or later.interrupted,
        )


@dataclass(frozen=True)
class TemperingSamplerSettings:
    """How :func:`temper` runs.

    Attributes
    ----------
    n_sweeps : int
        Sweeps (``x`` moves, then ``beta | x``).
    n_steps : int
        ``x`` transitions per sweep.
    n_time_batches : int
        Units per chain: each chain's sweeps split into this many consecutive batches (for
        standard errors from few chains).
    record : bool
        Keep every iteration's ``Delta`` and rung (MBAR).
    progressbar : bool
        Show a progress bar.
    description : str
        The progress bar's label (and the warning's, if interrupted).
    allow_interrupt : bool
        Ctrl-C ends the run after the current sweep and keeps the sweeps completed;
        ``False``: it raises :class:`KeyboardInterrupt`.
    """

    n_sweeps: int
    n_steps: int = 1
    n_time_batches: int = 1
    record: bool = False
    progressbar: bool = True
    description: str = "tempered sampling"
    allow_interrupt: bool = True


def beta_conditional(delta: np.ndarray, betas, log_r, log_zhat) -> np.ndarray:
    r"""``q(beta_k | x)`` for every point and rung (seed 004 eq. (7)),
    ``propto exp(beta_k Delta(x) + log r_k - log Zhat_k)``; shape ``(n, K)``.

    This runs once per sweep on ``n x K`` numbers, so it works in place on one array laid out
    rung-major, ``(K, n)``, where every reduction over rungs runs across whole rows of points;
    the result is its transpose (a view).
    """
    delta = np.asarray(delta, dtype=float)
    if np.all(np.isfinite(delta)):
        logits = np.multiply.outer(betas, delta)
    else:  # 0 * (-inf) must be 0 at beta = 0 (a point outside the target's support)
        logits = tempered_log_density(0.0, delta[None, :], np.asarray(betas)[:, None])
    logits += (np.asarray(log_r) - log_zhat)[:, None]
    logits -= logits.max(axis=0)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=0)
    return logits.T


MAX_CATEGORIES_MATMUL = 128  # above this a K x K triangular product costs more than cumsum


def draw_categorical(rng, probs: np.ndarray) -> np.ndarray:
    """One index per row of ``probs (n, K)`` (rows sum to one up to rounding): the number of
    cumulative probabilities below a uniform. For few categories the running sums come from one
    matrix product, faster than ``np.cumsum`` (measured: docs/benchmarks.rst, Measurements
    behind the defaults)."""
    n_cat = probs.shape[1]
    if n_cat <= MAX_CATEGORIES_MATMUL:
        cumulative = np.tri(n_cat) @ probs.T  # (K, n): row k sums categories 0..k
    else:
        cumulative = np.cumsum(probs.T, axis=0)
    u = rng.random(probs.shape[0]) * cumulative[-1]
    return np.minimum((cumulative < u).sum(axis=0), n_cat - 1)


def temper(
    rng,
    path: GeometricPath,
    kernel: Kernel,
    ladder: Ladder,
    log_r: np.ndarray,
    log_zhat: np.ndarray,
    chains: TemperingChains,
    settings: TemperingSamplerSettings,
) -> TemperingTrace:
    r"""Simulated-tempering Gibbs sampler over ``(x, beta)`` (seed 004 §2.1, Alg. 1) on the
    rungs of ``ladder``, with prior weights ``log r_k`` and normalizer estimates ``log Zhat_k``.

    Each sweep: ``n_steps`` transitions of ``x`` leaving ``f_{beta}`` invariant at each chain's
    current rung (at that rung's step size), then ``beta | x ~ q(beta | x)`` (eq. (7)). The running
    sums of :class:`TemperingTrace` are updated after the ``x`` move. ``chains.rung=None`` draws
    the first rungs from ``q(beta | x)``.

    Where the model runs on an accelerator and the kernel is HMC (or ``hmc+gibbs``), up to
    ``TEMPERING_CHUNK_SWEEPS`` sweeps (within one time batch) are one call on the device
    (:func:`~pm_evidence.tempering.kernels.device_tempering`), with the random numbers the
    loop would draw: the same chains and sums up to rounding.

    With ``settings.allow_interrupt``, Ctrl-C ends the run after the current sweep (on the
    device, the current call's sweeps) and the sums cover the sweeps completed
    (``interrupted=True``); otherwise it raises :class:`KeyboardInterrupt`.
    """
    betas, step_size, state, rung = ladder.betas, ladder.step_size, chains.points, chains.rung
    points_moved = chains.points_moved
    n_sweeps, n_steps, n_time_batches = settings.n_sweeps, settings.n_steps, settings.n_time_batches
    record, description = settings.record, settings.description
    n_chains, n_rungs = state.x.shape[0], betas.size
    n_units = n_chains * n_time_batches
    # running sums kept rung-major, (K, units), like q from beta_conditional; transposed at
    # the end
    shape = (n_rungs, n_units)
    c_sum, rb_sum, rb2_sum = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    count, count_sum, count2_sum = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    n_iter = np.zeros(n_units)
    transitions = np.zeros((n_rungs, n_rungs))
    accepted_sum, attempts = np.zeros(n_rungs), np.zeros(n_rungs)
    nonfinite = np.zeros(n_rungs, dtype=int)
    delta_draws = np.empty((n_chains, n_sweeps)) if record else None
    rung_draws = np.empty((n_chains, n_sweeps), dtype=int) if record else None
    unit_draws = np.empty((n_chains, n_sweeps), dtype=int) if record else None
    if rung is None:
        rung = draw_categorical(rng, beta_conditional(state.delta, betas, log_r, log_zhat))
    chain_index = np.arange(n_chains)
    log_weights = np.asarray(log_r) - log_zhat
    on_device = device_tempering(kernel, path, n_steps)  # None on a CPU
    chunk = TEMPERING_CHUNK_SWEEPS if on_device is not None else 1
    resident = on_device is None and resident_chains(kernel, path)  # as in anneal
    if resident:
        state = state_on_device(state)
    n_eval, completed, interrupted, t = 0, 0, False, 0
    with long_run(n_sweeps, description, settings.progressbar) as run:
        while t < n_sweeps:
            batch = (t * n_time_batches) // n_sweeps
            end = t + 1  # a call's sweeps stay in one time batch
            while end < min(n_sweeps, t + chunk) and (end * n_time_batches) // n_sweeps == batch:
                end += 1
            if on_device is not None:
                state, new_rung, delta_s, rung_s, accepted_s, bad_s, *sums = on_device(
                    rng, state, rung, end - t, betas, step_size, log_weights
                )
                sums = [q.T for q in sums]  # rung-major, (K, n), like the CPU's
            else:
                state, new_rung, delta_s, rung_s, accepted_s, bad_s, *sums = _sweep(
                    rng, path, kernel, state, rung, ladder, log_weights, n_steps, points_moved
                )
            # one unit per chain: its columns of the sums are a slice (views, no fancy indexing)
            cols = slice(batch * n_chains, (batch + 1) * n_chains)
            units = batch * n_chains + chain_index
            for i in range(end - t):  # commit each sweep's statistics together
                rung, delta = rung_s[:, i], delta_s[:, i]
                following = rung_s[:, i + 1] if i + 1 < end - t else new_rung
                accepted_sum += np.bincount(rung, weights=accepted_s[:, i], minlength=n_rungs)
                attempts += n_steps * np.bincount(rung, minlength=n_rungs)
                nonfinite += np.bincount(rung, weights=bad_s[:, i], minlength=n_rungs).astype(int)
                finite = np.where(np.isfinite(delta), delta, 0.0)
                count[rung, units] += 1.0  # one (rung, unit) pair per chain: no repeats
                count_sum[rung, units] += finite
                count2_sum[rung, units] += finite**2
                transitions += np.bincount(
                    rung * n_rungs + following, minlength=n_rungs * n_rungs
                ).reshape(n_rungs, n_rungs)
                if record:
                    delta_draws[:, t + i], rung_draws[:, t + i] = delta, rung
                    unit_draws[:, t + i] = units
            c_sum[:, cols] += sums[0]
            rb_sum[:, cols] += sums[1]
            rb2_sum[:, cols] += sums[2]
            n_iter[cols] += end - t
            points_moved += n_chains * n_steps * (end - t)
            n_eval += n_chains * kernel.evaluations_per_step * n_steps * (end - t)
            rung, completed = new_rung, end
            run.advance(end - t)
            t = end
            if run.interrupted:
                if not settings.allow_interrupt:
                    raise KeyboardInterrupt(f"{description} interrupted; nothing to return.")
                interrupted = True
                break
    if interrupted:
        warn_user(
            f"{description} interrupted after {completed} of {n_sweeps} sweeps; the estimate "
            f"uses the sweeps completed (a shorter run: larger error).",
        )
        if record:
            delta_draws, rung_draws = delta_draws[:, :completed], rung_draws[:, :completed]
            unit_draws = unit_draws[:, :completed]
    acceptance = np.divide(accepted_sum, attempts, out=np.full(n_rungs, np.nan), where=attempts > 0)
    if on_device is not None or resident:  # the chains stayed there between calls
        state = state_on_host(state)
    return TemperingTrace(
        betas,
        log_r,
        log_zhat,
        np.ascontiguousarray(c_sum.T),
        np.ascontiguousarray(rb_sum.T),
        np.ascontiguousarray(rb2_sum.T),
        np.ascontiguousarray(count.T),
        np.ascontiguousarray(count_sum.T),
        np.ascontiguousarray(count2_sum.T),
        n_iter,
        transitions,
        acceptance,
        nonfinite,
        delta_draws,
        rung_draws,
        unit_draws,
        n_eval,
        state,
        rung,
        points_moved,
        interrupted,
    )


def _sweep(rng, path, kernel, state, rung, ladder, log_weights, n_steps: int, points_moved: int):
    """One sweep of :func:`temper` on the CPU: ``n_steps`` transitions at each chain's rung,
    then the next rungs from ``q(beta | x)``; returned as the device's sweeps are
    (:func:`~pm_evidence.tempering.compiled.tempering_function`): the state, the new rungs, the
    sweep's ``Delta``, rungs, acceptances and non-finite proposals per chain (one column), and
    ``q``, ``q Delta`` and ``q Delta^2`` rung-major, ``(K, n)``."""
    n_chains = state.x.shape[0]
    accepted_n, bad_n = np.zeros(n_chains), np.zeros(n_chains)
    for _ in range(n_steps):
        state, accepted, bad = transition(
            kernel, rng, path, state, ladder.betas[rung], ladder.step_size[rung], points_moved
        )
        points_moved += n_chains
        accepted_n += accepted
        bad_n += bad
    delta = np.asarray(state.delta)  # from the device, for chains kept there
    q = beta_conditional(delta, ladder.betas, log_weights, 0.0).T  # (K, n)
    new_rung = draw_categorical(rng, q.T)
    finite = np.where(np.isfinite(delta), delta, 0.0)
    q_delta = q * finite
    column = lambda a: a[:, None]  # noqa: E731
    return (state, new_rung, column(delta), column(rung), column(accepted_n),
            column(bad_n), q, q_delta, q_delta * finite)  # fmt: skip


def _occupancy_noise(run: TemperingTrace) -> float:
    """``max_k se(c_k)`` from the spread over units of their own ``c_k`` (seed 004 eq. (9))."""
    per_unit = run.c_sum / run.n_iterations[:, None]
    n_units = per_unit.shape[0]
    if n_units < 2:
        return 0.0
    return float(np.max(per_unit.std(axis=0, ddof=1)) / np.sqrt(n_units))


def rts_initial_iterations(
    rng,
    path: GeometricPath,
    kernel: Kernel,
    ladder: Ladder,
    log_r: np.ndarray,
    chains: TemperingChains,
    *,
    n_sweeps: int = 50,
    tol: float = 0.1,
    max_iterations: int = 20,
    progressbar: bool = True,
) -> tuple[np.ndarray, TemperingChains, list[float], int]:
    r"""The initial iterations of seed 004 §2.4, from the pilot's ``log Z_beta``
    (``ladder.log_z_pilot``) as the first ``log Zhat``.

    Repeat: draw fresh rungs uniformly at random, keep the last ``x``'s, run ``n_sweeps`` sweeps,
    and set ``log Zhat_k`` to the RTS estimate (eq. (12)); stop once
    ``max_k |r_k - c_k| < tol / K``.

    With many rungs that rule can sit below the Monte Carlo noise of ``c_k`` from ``n_sweeps``
    sweeps, and iterating further only chases noise. So we also stop once the gap is within
    that noise, ``max_k |r_k - c_k| <= 4 max_k se(c_k)`` with ``se(c_k)`` from the spread of
    the chains' own ``c_k``: ``log Zhat`` is then as good as these sweeps can tell, and the
    main run's eq. (12) corrects what is left (it is exact for any ``Zhat``; ``Zhat`` only
    sets how evenly the chains visit the rungs). Returns the final ``log Zhat``, the chains
    (their last points, ``rung=None`` so that the main run draws their rungs from
    ``q(beta | x)``, and the points moved), the history of ``max_k |r_k - c_k|`` (one entry
    per iteration) and the number of evaluations. Warns if neither rule is met within
    ``max_iterations``.
    """
    n_rungs = ladder.n_rungs
    log_zhat = ladder.log_z_pilot
    r = normalized_weights(log_r)
    history = []
    n_eval = 0
    for it in range(max_iterations):
        settings = TemperingSamplerSettings(
            n_sweeps, progressbar=progressbar, allow_interrupt=False,
            description=f"RTS initial iteration {it + 1}",
        )  # fmt: skip
        rung = rng.integers(n_rungs, size=chains.points.x.shape[0])
        run = temper(
            rng, path, kernel, ladder, log_r, log_zhat, chains._replace(rung=rung), settings
        )
        n_eval += run.n_evaluations
        c_hat = run.c_hat
        gap = float(np.max(np.abs(r - c_hat)))
        history.append(gap)
        chains = run.chains._replace(rung=None)
        log_zhat = rts_log_z(c_hat, log_r, log_zhat)
        if gap < tol / n_rungs or gap <= 4.0 * _occupancy_noise(run):
            break
    else:
        warn_user(
            f"The RTS initial iterations did not reach max_k |r_k - c_k| < {tol}/K in "
            f"{max_iterations} iterations, nor came within its Monte Carlo noise (last "
            f"{history[-1]:.3g}, rule {tol / n_rungs:.3g}); "
            f"the tempered chain may mix poorly across rungs. Use more rungs, more sweeps "
            f"(n_init_sweeps) or a reference closer to the posterior.",
        )
    return log_zhat, chains, history, n_eval

r"""Runs on a :class:`~pm_evidence.path.plan.PathPlan`: annealing, reverse annealing, tempering.

Each function takes a plan, its options (a small frozen dataclass) and a generator, and returns
a run record: the plan, the ladder used, the sampler's output and the warnings of the run. The
estimators of :mod:`pm_evidence.path.path_estimators` are follow-ups on these records, so a run is
made once and read by every estimator that can use it (AIS and ADS read an annealing run; RTS,
TI and MBAR a tempering run).

How long a run goes (one rule for both kinds of run): it grows (AIS: batches of chains;
tempering: stretches of sweeps, each sized from the standard error so far; AIS's from the
weights' Pareto-smoothed SE, ``smoothed_log_z_se``, so that one large weight does not size the
run) until the first of

1. the estimate's standard error is at most ``target_se`` (``stopped_by="target_se"``);
2. the next growth would pass ``max_evaluations`` log-density evaluations of the run
   (``"max_evaluations"``): a budget that does not depend on the machine, counted as the
   kernels count them (:attr:`~pm_evidence.tempering.kernels.Kernel.evaluations_per_step` per
   point and transition; the plan's pilot is not charged to the run);
3. a count cap: ``max_chains`` (and the ``MAX_STORED_NUMBERS`` that AIS keeps) or
   ``max_sweeps`` (``"max_chains"``, ``"max_sweeps"``);
4. ``time_limit`` seconds have passed (``"time_limit"``; off by default: it makes the result
   depend on the machine's speed);
5. AIS only: its weights, over at least ``HEAVY_TAIL_CHAINS`` chains, rest on a few chains
   and have a tail beyond what ``max_chains`` chains could make reliable
   (``"heavy_tails"``: ``_hopeless``); while its weights' k-hat is above the PSIS
   threshold (:func:`~pm_evidence.core.utils.good_pareto_k`) and their ESS below half the
   chains, a run grows at most ``HEAVY_TAIL_GROWTH`` times per batch.

The last batch or stretch is cut to end within the caps and the budget. What a run needs before
it has an estimate always runs: AIS's first batch (``first_batch`` chains), tempering's
initial iterations and ``min_sweeps // 2`` sweeps (the first stretch is ``min_sweeps`` sweeps,
shortened to fit the budget but not below half), so a budget smaller than that is passed by
that much (``n_evaluations`` above ``max_evaluations``). The SE reached, the evaluations spent
and ``stopped_by`` are on every result's diagnostics. A run that stopped at the budget with its
SE above ``target_se`` is not flagged unreliable for that: its SE is honest, only larger than
asked.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
from arviz_stats.base import array_stats

from pm_evidence.core.exceptions import EvidenceInputError, OverlapError
from pm_evidence.core.options import (
    MAX_EVALUATIONS,  # noqa: F401 (moved there; old imports)
    AnnealingOptions,
    TemperingOptions,
)
from pm_evidence.core.utils import good_pareto_k, pareto_khat, runs_with_one_blas_thread, warn_user
from pm_evidence.estimators.annealed import ais_core
from pm_evidence.estimators.tempered import rts_core
from pm_evidence.path.plan import Ladder, PathPlan, _plan_lines
from pm_evidence.path.start_allocation import StartAllocation
from pm_evidence.tempering.samplers import (
    AnnealingSamplerSettings,
    AnnealingTrace,
    TemperingChains,
    TemperingSamplerSettings,
    TemperingTrace,
    anneal,
    rts_initial_iterations,
    temper,
)

__all__ = [
    "AnnealingRun",
    "TemperingRun",
    "run_annealing",
    "run_reverse_annealing",
    "run_tempering",
    "smoothed_log_z_se",
]


MAX_STORED_NUMBERS = 10_000_000


def _annealing_rungs(length: float) -> int:
    r"""Default rungs of an annealing run (AIS) for a path of thermodynamic length ``L``.

    With rungs ``L / (K - 1)`` apart and chains in equilibrium, ``Var[log w] ~ L^2 / K``
    (Gelman & Meng 1998; Neal 2001 §4), and at a fixed number of chain-rung transitions the
    variance of ``log Z`` does not depend on ``K``; but a batch of more chains moves each
    through a rung in one vectorized call, so the wall time does. ``K = 5 L^2`` keeps
    ``Var[log w]`` near 0.2 (weights still light-tailed); at least 20, at most 5000. Many more
    rungs cost time at a given ``target_se``, and at a fixed budget give a larger error
    (measured: docs/benchmarks.rst, Measurements behind the defaults).
    """
    return int(np.clip(math.ceil(5.0 * length**2), 20, 5000))


def _reverse_annealing_rungs(length: float) -> int:
    r"""Default rungs of a reverse annealing run (RAISE): its chains start from distinct
    posterior draws, one batch that ``target_se`` cannot extend, so the ladder keeps
    ``Var[log w] ~ L^2 / K`` near 0.02 instead: ``K = 50 L^2``, at least 50, at most 5000."""
    return int(np.clip(math.ceil(50.0 * length**2), 50, 5000))


def _tempering_rungs(length: float) -> int:
    r"""Default rungs of a tempering run: neighbours 0.15 of thermodynamic length apart, so that
    ``q(beta | x)`` spreads over several rungs and the chains cross the ladder (seed 004 §2.4);
    at least 8, at most 200. RTS alone prefers fewer rungs on a short path, TI more: 8 serves
    both (measured: docs/benchmarks.rst, Measurements behind the defaults).
    """
    return int(np.clip(math.ceil(length / 0.15) + 1, 8, 200))


@dataclass(frozen=True)
class AnnealingRun:
    """An annealing run, read by :func:`~pm_evidence.path.path_estimators.ais`,
    :func:`~pm_evidence.path.path_estimators.ads` (forward) or
    :func:`~pm_evidence.path.path_estimators.raise_` (``reverse``).

    Attributes
    ----------
    plan : PathPlan
        The plan it ran on.
    ladder : Ladder
        Its rungs, step sizes and how they were chosen.
    sampler : AnnealingTrace
        The sampler's output over the chains of all batches (log weights, ``Delta`` and log
        weights at every rung, acceptance, evaluations).
    options : AnnealingOptions
    reverse : bool
        RAISE: from posterior draws down to ``p0``.
    target_se_reached : bool or None
        Whether the stopping rule was met (None: no ``target_se``).
    messages : tuple of str
        The run's own warnings.
    stopped_by : str
        Why no further batch ran: ``"target_se"``, ``"max_evaluations"``, ``"max_chains"``,
        ``"time_limit"``, ``"se_not_finite"``, ``"heavy_tails"`` or ``"fixed"`` (``n_chains``
        given, no ``target_se``, or RAISE's one batch).
    se_reached : float or None
        The AIS standard error the stopping rule read last (the ``se`` of ``ais(run)``); None
        when the run did not grow.
    start_allocation_gain : float or None
        Where the reference is a mixture: the projected reduction of the weights' relative
        variance by which the last batch chose its chains' starting components
        (:mod:`~pm_evidence.path.start_allocation`; 1: they started from the reference
        itself). None for any other reference.
    batch_sizes : tuple of int or None
        Where some batch's chains started elsewhere than from the reference itself, the sizes
        of the batches in order, whose different means AIS's SE does not count as noise
        (:func:`~pm_evidence.estimators.annealed.ais_core`); None otherwise.
    """

    plan: PathPlan
    ladder: Ladder
    sampler: AnnealingTrace
    options: AnnealingOptions
    reverse: bool = False
    target_se_reached: bool | None = None
    messages: tuple[str, ...] = ()
    stopped_by: str = "fixed"
    se_reached: float | None = None
    start_allocation_gain: float | None = None
    batch_sizes: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        """A few lines: direction, rungs, chains, stopping, and the plan's (no arrays)."""
        kind = "reverse (RAISE)" if self.reverse else "forward (AIS)"
        record = self.sampler
        return "\n".join(
            [
                f"AnnealingRun: {kind}, dim {self.plan.target.dim}, "
                f"{record.betas.size} rungs, {record.log_weights.size} chains",
                f"  ladder: {self.ladder.how}",
                f"  {record.n_evaluations:,} evaluations; mean acceptance "
                f"{float(np.mean(record.acceptance)):.3g}; stopped by {self.stopped_by}"
                + _se_text(self.se_reached, self.target_se_reached),
                *_plan_lines(self.plan),
            ]
            + [f"  message: {m}" for m in self.messages]
        )


def _se_text(se_reached: float | None, target_se_reached: bool | None) -> str:
    if se_reached is None:
        return ""
    met = {True: ", target met", False: ", target not met", None: ""}[target_se_reached]
    return f" (se {se_reached:.3g}{met})"


@dataclass(frozen=True)
class TemperingRun:
    """A simulated-tempering run, read by :func:`~pm_evidence.path.path_estimators.rts`,
    :func:`~pm_evidence.path.path_estimators.ti` and :func:`~pm_evidence.path.path_estimators.mbar`.

    Attributes
    ----------
    plan : PathPlan
        The plan it ran on.
    ladder : Ladder
        Its rungs, step sizes and how they were chosen.
    sampler : TemperingTrace
        The sampler's running sums (:class:`~pm_evidence.tempering.samplers.TemperingTrace`).
    options : TemperingOptions
    init_history : tuple of float
        ``max_k |r_k - c_k|`` after each initial iteration (seed 004 §2.4).
    n_outside_support : int
        Reference draws (the chains' starts) where the target's density is zero.
    target_se_reached : bool or None
        Whether the stopping rule was met (None: a fixed ``n_sweeps`` or no ``target_se``).
    messages : tuple of str
        The run's own warnings (initial iterations not converged, interruption).
    stopped_by : str
        Why no further stretch ran: ``"target_se"``, ``"max_evaluations"``, ``"max_sweeps"``,
        ``"time_limit"``, ``"se_not_finite"``, ``"interrupted"`` or ``"fixed"`` (``n_sweeps``
        given or no ``target_se``).
    se_reached : float or None
        The RTS standard error the stopping rule read last (the ``se`` of ``rts(run)``); None
        when the run did not grow.
    """

    plan: PathPlan
    ladder: Ladder
    sampler: TemperingTrace
    options: TemperingOptions
    init_history: tuple[float, ...]
    n_outside_support: int  # reference draws (the chains' starts) where Delta = -inf
    target_se_reached: bool | None = None
    messages: tuple[str, ...] = ()
    stopped_by: str = "fixed"
    se_reached: float | None = None

    def __repr__(self) -> str:
        """A few lines: rungs, chains, sweeps, stopping, and the plan's (no arrays)."""
        record = self.sampler
        low, high = int(np.min(record.n_iterations)), int(np.max(record.n_iterations))
        sweeps = f"{low:,}" if low == high else f"{low:,} to {high:,}"
        return "\n".join(
            [
                f"TemperingRun: dim {self.plan.target.dim}, {record.betas.size} rungs, "
                f"{record.n_iterations.size} chains, {sweeps} sweeps per chain",
                f"  ladder: {self.ladder.how}",
                f"  {record.n_evaluations:,} evaluations; mean acceptance "
                f"{float(np.mean(record.acceptance)):.3g}; {len(self.init_history)} initial "
                f"iterations; {self.n_outside_support} starts outside the support; stopped by "
                f"{self.stopped_by}" + _se_text(self.se_reached, self.target_se_reached),
                *_plan_lines(self.plan),
            ]
            + [f"  message: {m}" for m in self.messages]
        )


def _ladder(plan: PathPlan, options, default_adaptive: int, default_named: int) -> Ladder:
    named = not (isinstance(options.ladder, str) and options.ladder == "adaptive")
    default = default_named if named else default_adaptive
    return plan.ladder(options.ladder, options.n_rungs, options.beta_min, default)


@runs_with_one_blas_thread
def run_annealing(
    plan: PathPlan,
    options: AnnealingOptions | None = None,
    *,
    rng: np.random.Generator,
    progressbar: bool = True,
) -> AnnealingRun:
    r"""Annealing from ``p0`` to the posterior (AIS; Neal 2001; seed 000 eq. (8)).

    Batches of ``n_chains`` reference draws are annealed along the ladder, each rung's
    transitions at the pilot's step size, until the AIS standard error is at most
    ``target_se``, within ``max_evaluations``, ``max_chains`` and ``time_limit`` (module
    docstring: the first that binds is the run's ``stopped_by``). Every batch is stored
    (``delta`` and the log weights at every rung, for ADS). Where the reference is a mixture,
    a batch after the first may start its chains in the components where the earlier chains'
    weights were, each chain's weight carrying the factor that keeps the estimate consistent
    (:mod:`~pm_evidence.path.start_allocation`), and is sized from the variance that
    allocation projects.

    {parameters}
    """
    options = (options or AnnealingOptions()).sized(plan.target.backend.width)
    ladder = _ladder(plan, options, _annealing_rungs(plan.length), 1000)
    first = options.chains_first
    # every chain's Delta and log weight at every rung are kept (for ADS): at most
    # MAX_STORED_NUMBERS of each
    count_cap = min(options.max_chains, MAX_STORED_NUMBERS // ladder.n_rungs)
    # evaluations of one chain, as anneal counts them (the same for every chain)
    per_chain = (ladder.n_rungs - 1) * options.n_steps * plan.kernel.evaluations_per_step
    budget_cap = _budget_count(options.max_evaluations, 0, per_chain)
    max_chains = max(first, min(count_cap, budget_cap))
    cap_name = "max_evaluations" if budget_cap < count_cap else "max_chains"
    settings = AnnealingSamplerSettings(
        n_steps=options.n_steps, store=True, progressbar=progressbar, description="AIS"
    )
    start = time.perf_counter()
    run, reached, n_batch, stopped_by, se = None, None, first, "fixed", None
    allocation = StartAllocation.of(plan.path.reference)
    which = np.zeros(0, dtype=int)  # every chain's starting component (a mixture reference)
    sizes = []  # of the batches
    while True:
        state, batch_which, allocation = _batch_starts(plan, allocation, rng, n_batch)
        batch = anneal(
            rng, plan.path, plan.kernel, ladder, state, settings,
            points_moved=0 if run is None else run.points_moved,
        )  # fmt: skip
        run = batch if run is None else run.merge(batch)
        which = np.concatenate([which, batch_which])
        sizes.append(batch.log_weights.size)
        log_weights = run.log_weights + _log_factors(allocation, which)
        if options.target_se is None or options.n_chains is not None:
            break
        try:
            se = ais_core(log_weights, _batch_sizes(allocation, sizes)).se
        except OverlapError:
            se = np.inf
        reached = bool(se <= options.target_se)
        out_of_time = options.time_limit is not None and (
            time.perf_counter() - start > options.time_limit
        )
        done = log_weights.size
        ess_share, k_hat = _weights_tail(log_weights)
        stopped_by = _stop_reason(reached, done >= max_chains, cap_name, out_of_time, se)
        if stopped_by is None and _hopeless(ess_share, k_hat, done, max_chains):
            stopped_by = "heavy_tails"
        if stopped_by is not None:
            break
        sizing_se = min(se, smoothed_log_z_se(log_weights))
        needed = math.ceil(1.1 * done * (sizing_se / options.target_se) ** 2) - done
        if allocation is not None:
            allocation = allocation.after(which, run.log_weights)
            if allocation.gain > 1.0:  # the next chains' weights vary less than those so far
                needed = allocation.chains_to_reach(options.target_se, max(0, needed))
        if k_hat > good_pareto_k(done) and ess_share < HEAVY_TAIL_LOOK_AGAIN_ESS:
            needed = min(needed, (HEAVY_TAIL_GROWTH - 1) * done)  # look again before going far
        n_batch = int(min(max(needed, first // 2), max_chains - done))
    return AnnealingRun(
        plan, ladder, _factored(run, allocation, which), options, target_se_reached=reached,
        stopped_by=stopped_by, se_reached=None if se is None else float(se),
        start_allocation_gain=None if allocation is None else allocation.drawn_gain,
        batch_sizes=_batch_sizes(allocation, sizes),
    )  # fmt: skip


def _batch_starts(plan: PathPlan, allocation: StartAllocation | None, rng, n: int):
    """A batch's starting points (a ``PathState``), their components (empty where the
    reference is not a mixture) and the allocation with the batch allotted."""
    needs_grad = plan.kernel.needs_grad
    if allocation is None:
        state = plan.path.sample_reference(rng, n, with_grad=needs_grad)
        return state, np.zeros(0, dtype=int), None
    which, allocation = allocation.draw(rng, n)
    x = plan.path.reference.sample_components(rng, which)
    return plan.path.evaluate(x, with_grad=needs_grad), which, allocation


def _batch_sizes(allocation: StartAllocation | None, sizes: list) -> tuple[int, ...] | None:
    """The batches' sizes where some batch was allocated (their SE is stratified by batch)."""
    return tuple(sizes) if allocation is not None and allocation.adapted else None


def _log_factors(allocation: StartAllocation | None, which) -> np.ndarray | float:
    """Each chain's log factor of its starting component
    (:meth:`~pm_evidence.path.start_allocation.StartAllocation.log_factors`; 0 where no batch
    was allocated)."""
    if allocation is None or not allocation.adapted:
        return 0.0
    return allocation.log_factors(which)


def _factored(trace: AnnealingTrace, allocation: StartAllocation | None, which) -> AnnealingTrace:
    """``trace`` with each chain's log weights, at every rung, plus the log factor of its
    starting component (``trace`` itself where no batch was allocated)."""
    if allocation is None or not allocation.adapted:
        return trace
    factors = allocation.log_factors(which)
    rungs = None if trace.log_weights_rungs is None else trace.log_weights_rungs + factors
    return trace._replace(log_weights=trace.log_weights + factors, log_weights_rungs=rungs)


# AIS's chains from which its weights are judged (a Pareto k-hat fit then has
# min(n / 5, 3 sqrt(n)) = 95 tail draws); the Kish ESS, as a share of the chains, below which
# a few chains carry the weight; and, for a run whose weights' k-hat is above the PSIS
# threshold with an ESS below HEAVY_TAIL_LOOK_AGAIN_ESS of its chains, the factor by which it
# grows per batch at most, so that it is looked at again before it spends its budget (a
# heavy tail's ESS share falls as chains are added: 12% of 100 chains, 0.1% of 20,000 on a
# reference far narrower than the posterior).
HEAVY_TAIL_CHAINS = 1000
HEAVY_TAIL_ESS = 0.05
HEAVY_TAIL_LOOK_AGAIN_ESS = 0.5
HEAVY_TAIL_GROWTH = 10


def _weights_tail(log_weights: np.ndarray) -> tuple[float, float]:
    """The Kish ESS of AIS's weights as a share of its chains, and their Pareto k-hat."""
    u = np.exp(log_weights - np.max(log_weights))
    return float(np.sum(u) ** 2 / np.sum(u**2) / u.size), pareto_khat(log_weights)


def smoothed_log_z_se(log_weights: np.ndarray) -> float:
    r"""The delta-method SE of ``log Z`` from the weights' Pareto-smoothed tail,
    ``sd(w~) / (sqrt(n) mean(w~))`` (PSIS: Vehtari, Simpson, Gelman, Yao and Gabry 2024), which
    sizes AIS's next batch, never its stop.

    The sample variance of the weights is ruled by their largest few: one large weight in a
    batch of a few hundred chains doubles it, and the next batch sized from it overshoots (a
    45-parameter hierarchy's check, asked for an SE of 0.02: 1,865 chains measured 0.040, the
    run was sized at 8,081 chains and reached 0.012). The smoothed tail measures the variance
    the run will see on average; the run still stops on the raw weights' SE, so a batch sized
    too small only adds a batch. ``-inf`` log weights are zero weights, counted in ``n``;
    ``inf`` where it cannot be computed."""
    log_weights = np.asarray(log_weights, dtype=float).ravel()
    finite = log_weights[np.isfinite(log_weights)]
    if finite.size < 25:
        return float("inf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its notes on the tail's size and shape
        try:
            smoothed, _ = array_stats.psislw(finite - finite.max())
        except ValueError:
            return float("inf")
    weights = np.zeros(log_weights.size)
    weights[: finite.size] = np.exp(np.asarray(smoothed, dtype=float))
    mean = weights.mean()
    return float(weights.std() / (math.sqrt(weights.size) * mean)) if mean > 0 else float("inf")


def _hopeless(ess_share: float, k_hat: float, n_chains: int, max_chains: int) -> bool:
    r"""Whether ``max_chains`` chains cannot make AIS's estimate reliable: over at least
    ``HEAVY_TAIL_CHAINS`` chains, a few carry the weight (a Kish ESS below ``HEAVY_TAIL_ESS``
    of them) and the weights' Pareto k-hat is beyond ``1 - 1/log10(max_chains)`` (0.77 for
    20,000 chains), the tail index at which a reliable mean needs about ``10^{1 / (1 - k)}``
    > ``max_chains`` draws (Vehtari, Simpson, Gelman, Yao and Gabry 2024, §3.2). A run there
    stops (``stopped_by="heavy_tails"``): more chains of the same annealing do not make it
    reliable, and its result is flagged by its ESS and k-hat either way (AIS from a mixture
    whose main-mode components are misshapen: twenty times the chains for the same tiny ESS).
    k-hat alone is not enough: on the eggbox the weights of 1,000 chains can have a k-hat near
    0.9 with an ESS of most of them, and k-hat falls as chains are added; such runs keep
    their batches."""
    if n_chains < HEAVY_TAIL_CHAINS or not ess_share < HEAVY_TAIL_ESS:
        return False
    return bool(k_hat > 1.0 - 1.0 / math.log10(max_chains))


def _budget_count(budget: int | None, spent: int, per_unit: int) -> int | float:
    """How many more units (chains, sweeps) of ``per_unit`` evaluations fit in the budget."""
    if budget is None:
        return math.inf
    return max(0, (budget - spent) // max(per_unit, 1))


def _stop_reason(reached: bool, at_cap: bool, cap_name: str, out_of_time: bool, se: float):
    """Why a growing run stops now (module docstring), or ``None`` to go on."""
    if reached:
        return "target_se"
    if at_cap:
        return cap_name
    if out_of_time:
        return "time_limit"
    if not np.isfinite(se):
        return "se_not_finite"
    return None


@runs_with_one_blas_thread
def run_reverse_annealing(
    plan: PathPlan,
    options: AnnealingOptions | None = None,
    *,
    rng: np.random.Generator,
    progressbar: bool = True,
) -> AnnealingRun:
    r"""Reverse annealing from posterior draws down to ``p0`` (RAISE; Burda et al. 2015; seed
    004 §3.2): ``n_chains`` of the plan's posterior draws, chosen at random without
    replacement, annealed along the reversed ladder. One batch (the chains need distinct
    posterior draws; ``target_se`` is not used).

    {parameters}
    """
    options = options or AnnealingOptions()  # one batch, from the draws the plan holds: not sized
    if plan.posterior is None:
        raise EvidenceInputError(
            "RAISE starts from posterior draws and this plan has none; make the plan with "
            "need_posterior=True."
        )
    flat = plan.posterior.reshape(-1, plan.target.dim)
    n_chains = options.chains_first
    if flat.shape[0] < n_chains:
        raise EvidenceInputError(
            f"RAISE starts {n_chains} chains from posterior draws but only "
            f"{flat.shape[0]} are available; draw more posterior samples or lower n_chains."
        )
    ladder = _ladder(plan, options, _reverse_annealing_rungs(plan.length), 1000)
    chosen = np.sort(rng.choice(flat.shape[0], size=n_chains, replace=False))
    state = plan.path.evaluate(flat[chosen], with_grad=plan.kernel.needs_grad)
    settings = AnnealingSamplerSettings(
        n_steps=options.n_steps, progressbar=progressbar, description="RAISE"
    )
    run = anneal(rng, plan.path, plan.kernel, ladder.reversed(), state, settings)
    return AnnealingRun(plan, ladder, run, options, reverse=True)


def log_r_of(prior_r, n_rungs: int) -> np.ndarray:
    """``log r_k`` (normalized) from ``"uniform"`` or ``K`` positive weights."""
    if isinstance(prior_r, str):
        if prior_r != "uniform":
            raise EvidenceInputError(
                f"prior_r must be 'uniform' or an array of K positive weights, got {prior_r!r}."
            )
        return np.full(n_rungs, -np.log(n_rungs))
    r = np.asarray(prior_r, dtype=float)
    if r.shape != (n_rungs,) or np.any(r <= 0) or not np.all(np.isfinite(r)):
        raise EvidenceInputError(
            f"prior_r must have one positive finite weight per rung ({n_rungs}), got shape "
            f"{r.shape}."
        )
    return np.log(r / r.sum())


def _sampler_warnings(caught) -> tuple[str, ...]:
    """The samplers' UserWarnings as messages for the results; other warnings re-issued."""
    messages = []
    for record in caught:
        if record.category is UserWarning:
            messages.append(str(record.message))
        else:
            warn_user(str(record.message), record.category)
    return tuple(messages)


@runs_with_one_blas_thread
def run_tempering(
    plan: PathPlan,
    options: TemperingOptions | None = None,
    *,
    rng: np.random.Generator,
    progressbar: bool = True,
) -> TemperingRun:
    r"""Simulated tempering over ``(x, beta)`` (seed 004 §2, Alg. 1) on the plan's path.

    ``log Zhat`` starts from the pilot's ``log Z_beta`` and is refined by the initial
    iterations of §2.4; the final run keeps the sufficient statistics of RTS, TI and (with
    ``record``) MBAR. With ``n_sweeps=None`` it runs ``min_sweeps`` sweeps, then more, in
    stretches sized from the standard error so far (``se^2`` falls like ``1/sweeps``), until
    the RTS standard error is at most ``target_se``, or ``max_evaluations`` (initial
    iterations included) or ``max_sweeps`` is reached, or ``time_limit`` passes (module
    docstring; the run's ``stopped_by``). Ctrl-C during the final run keeps the sweeps
    completed.

    {parameters}
    """
    options = (options or TemperingOptions()).sized(plan.target.backend.width)
    ladder = _ladder(plan, options, _tempering_rungs(plan.length), 100)
    log_r = log_r_of(options.prior_r, ladder.n_rungs)
    kernel, path = plan.kernel, plan.path
    state = path.sample_reference(rng, options.n_chains, with_grad=kernel.needs_grad)
    n_outside = int(np.sum(state.delta == -np.inf))
    n_time_batches = 1 if options.n_chains >= 10 else int(np.ceil(20 / options.n_chains))
    start = time.perf_counter()
    reached = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log_zhat, chains, history, n_eval_init = rts_initial_iterations(
            rng, path, kernel, ladder, log_r, TemperingChains(state),
            n_sweeps=options.n_init_sweeps, tol=options.init_tol,
            max_iterations=options.max_init_iterations, progressbar=progressbar,
        )  # fmt: skip
        per_sweep = options.n_chains * options.n_steps * kernel.evaluations_per_step
        n_sweeps = options.n_sweeps
        if n_sweeps is None:  # the budget may shorten the first stretch, to min_sweeps // 2
            room = _budget_count(options.max_evaluations, n_eval_init, per_sweep)
            n_sweeps = int(min(options.min_sweeps, max(room, options.min_sweeps // 2)))
        run, stopped_by, se = None, "fixed", None
        while True:
            settings = TemperingSamplerSettings(
                n_sweeps, options.n_steps, n_time_batches, options.record, progressbar
            )
            stretch = temper(rng, path, kernel, ladder, log_r, log_zhat, chains, settings)
            run = stretch if run is None else run.merge(stretch)
            chains = run.chains
            if run.interrupted:
                stopped_by = "interrupted"
            if options.n_sweeps is not None or options.target_se is None or run.interrupted:
                break
            se = rts_core(run.c_sum, run.n_iterations, run.log_r, run.log_zhat).se
            reached = bool(se <= options.target_se)
            done = round(float(run.n_iterations.sum()) / options.n_chains)
            out_of_time = options.time_limit is not None and (
                time.perf_counter() - start > options.time_limit
            )
            spent = n_eval_init + run.n_evaluations
            budget_left = _budget_count(options.max_evaluations, spent, per_sweep)
            sweeps_left = options.max_sweeps - done
            cap_name = "max_evaluations" if budget_left < sweeps_left else "max_sweeps"
            room = min(sweeps_left, budget_left)
            stopped_by = _stop_reason(reached, room <= 0, cap_name, out_of_time, se)
            if stopped_by is not None:
                break
            needed = math.ceil(1.1 * done * (se / options.target_se) ** 2) - done
            n_sweeps = int(min(max(needed, options.min_sweeps // 2), room))
    run = run._replace(n_evaluations=run.n_evaluations + n_eval_init)
    return TemperingRun(
        plan, ladder, run, options, tuple(history), n_outside, reached,
        _sampler_warnings(caught), stopped_by, None if se is None else float(se),
    )  # fmt: skip


# The parameters and result of every run, filled into their docstrings (``{parameters}``).
_RUN_PARAMETERS = """Parameters
    ----------
    plan : PathPlan
        From :func:`~pm_evidence.make_plan`.
    options : {options}, optional
        Defaults when omitted.
    rng : numpy.random.Generator
        The run's own stream (``marginal_likelihood`` uses ``stage_rngs(seed)["{stream}"]``).
    progressbar : bool

    Returns
    -------
    {returns}"""

for _run, _options, _stream in (
    (run_annealing, "AnnealingOptions", "annealing"),
    (run_reverse_annealing, "AnnealingOptions", "reverse_annealing"),
    (run_tempering, "TemperingOptions", "tempering"),
):
    _text = _RUN_PARAMETERS.format(
        options=_options, stream=_stream, returns=_run.__annotations__["return"]
    )
    _run.__doc__ = _run.__doc__.replace("{parameters}", _text)

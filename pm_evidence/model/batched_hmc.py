r"""Posterior draws from many short HMC chains moved as one batch: the default draws of the
methods on posterior draws for small continuous models.

PyMC's NUTS moves one chain at a time through a Python loop: on a model of a few parameters,
four chains of 2,000 steps cost 2 to 5 s, almost all of it per-step overhead (measured:
docs/benchmarks.rst, "Latency of a default call"). Here ``chains`` chains move together: on
Numba every leapfrog step is one call of the model's compiled, batched log-density and gradient
(``LogDensity.terms_grad_function``, the function the path methods and the exploration compile
anyway), so a step costs about what one chain's step costs; on JAX the whole transition of
every chain runs on the device and the chains stay there between transitions. The transition
is :func:`~pm_evidence.model.hmc_chains.hmc_transition`: HMC (Neal 2011) with the metric
``M^{-1/2} = diag(s) F`` (the posterior's standard deviations ``s`` and, where its
correlations call for it, a Cholesky factor ``F``, both estimated in tuning), ``L`` leapfrog
steps of size ``eps``, accepted with probability ``min(1, exp(H_0 - H_L))`` (seed 004 §3's
kernel at ``beta = 1``); a non-finite position or energy, or an energy error above
``DIVERGENCE_ENERGY``, is a rejection, counted as a divergence.

Tuning (Stan's windowed adaptation, Carpenter et al. 2017), with statistics taken within
each chain so that chains in different modes do not inflate them:

* each chain's step size by dual averaging (Hoffman and Gelman 2014, Algorithm 5) of its
  acceptance statistic towards ``target_accept``: the mean over the trajectory's points
  ``x_1 .. x_L`` of ``min(1, exp(H_0 - H_l))``, the acceptance each point would have as the
  trajectory's end (NUTS's statistic, Hoffman and Gelman 2014, §3.2.1). With lengths drawn
  uniformly (below) every point is the end of some trajectory, so the mean is the acceptance
  over the lengths, read from one transition with far less noise than its endpoint's alone;
  adapted to the endpoint's, the noise of one chain's signal left the averaged step size
  short (kept transitions accepted at 0.91-0.96 against 0.8, a quarter more leapfrog steps
  on the funnel in a box; measured: docs/benchmarks.rst, "The step size's statistic");
* the scales ``s`` at the end of each slow window (windows doubling in length, as Stan's):
  the square root of the chains' mean within-chain variance over the window, at most
  ``VARIANCE_OVER_MEDIAN`` times their median one, regularized towards ``1e-3`` as Stan does
  (one chain's own variance is too noisy: a chain that spent a window pressed against a
  boundary of the support would get tiny steps and stall; the bound keeps a few chains that
  hop between narrow modes from setting every chain's scales to the distance between modes);
* where the draws' correlation is ill-conditioned (condition number above
  ``DENSE_CONDITION``), a dense metric: the Cholesky factor of their regularized correlation
  (Stan's dense adaptation), so that HMC moves in coordinates where they are uncorrelated;
* where the chains sit apart in the window (some coordinate's bulk R-hat above
  ``CHAINS_APART_RHAT``: chains started in different modes, each with a shape of its own) and
  it holds ``DENSE_DRAWS_PER_DIM`` draws per dimension of each chain, a dense metric per
  chain, from that chain's own covariance with Stan's regularization (:func:`chain_factors`;
  Stan adapts each chain's metric alone): one metric pooled over modes of different
  correlations fits none of them;
* the trajectory length, one for all chains: ``T = (pi / 2) sqrt(lambda_max)``,
  ``lambda_max`` the largest eigenvalue of the correlation of the window's draws standardized
  within each chain (pooled over chains), a quarter period of the slowest direction of a
  Gaussian with that correlation (where HMC's draws are independent); each transition takes
  ``L = ceil(u 2 T / eps_med)`` steps (``eps_med`` the chains' median step size,
  ``u ~ U(0, 1]`` drawn once per transition for all chains: random lengths avoid the periodic
  returns of a fixed length, Neal 2011, §5.4.2.2), at most ``max_leapfrog``.

Each chain starts at PyMC's initial point jittered by ``U(-1, 1)`` in the unconstrained space,
as PyMC's default ``init="jitter+adapt_diag"``; a start of non-finite density is replaced by a
prior draw of finite density. Given ``starts`` (``method="auto"``: particles of its exploration
from the prior, approximately posterior draws in every mode it found, in proportion to their
mass), the chains start there instead, so that tuning does not estimate the scales from chains
still on their way between modes, and the scales before the first window are their spread, at
most 1 (:func:`spread_of`). Where the kept draws' largest R-hat is above 1.01 but at most
``EXTEND_RHAT`` (chains that almost agree: slow mixing, not separate modes), the chains go on
with the tuned kernel for another ``draws`` transitions, at most ``max_extensions`` times
(``draws_extensions`` in the statistics), while R-hat falling as slow mixing makes it fall
could still reach 1.01 by the last (:func:`worth_extending`). Where some chains are stuck
far below the best one (:func:`lagging_mask`: their ``log f`` never meets its, and the mass
near them is more than ``LAGGING_GAP`` nats below the mass near it), they move to the best
chain's draws at the end of each of tuning's slow windows (:func:`moved_from_lagging`;
``draws_moved_in_tuning``), and where the kept draws still hold such chains (checked after
their first quarter, :func:`early_check_draws`, and at their end), every chain runs again
from the best chain's draws (``draws_restarted``). Where the draws show a funnel, some
coordinates' scale following another's (:mod:`pm_evidence.model.funnel_map`), the chains are
run again, from their last draws, in coordinates where it is gone (a partial non-centering
learned from the draws; where those chains still disagree, once more with the map fitted again
to their draws, ``FUNNEL_RUNS`` runs at most), and those draws, mapped back, are returned
(``draws_funnel_map`` in the statistics): one step size cannot serve a funnel's mouth and its
neck, and the first run's chains stay in the mouth. The model's periodic coordinates (an
``Interval`` variable whose density is the same at both ends, with the same slope: an orbit's
phase) are moved on circles from the first transition (:mod:`pm_evidence.model.circular_map`;
``draws_circular_map``), where the logit coordinates would join the two ends only through the
middle; where tuning's draws show such a phase following the angle of two other coordinates
(an orbit's phase and its eccentricity vector), it moves on its circle sheared by that angle
from the end of that slow window on (:mod:`pm_evidence.model.shear_map`; ``draws_shear_map``).
Draws are returned as ``(chain, draw, dim)``; their R-hat and ESS are checked by every
estimator that reads them (:func:`~pm_evidence.estimators.messages.posterior_messages`,
:func:`~pm_evidence.estimators.messages.draws_ess_messages`), as for NUTS draws, and the
sampler's own statistics (:class:`BatchedHMCStats`) go on the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.progress import interruption, long_run
from pm_evidence.core.utils import RHAT_MAX, max_rhat, rhat_by_coordinate
from pm_evidence.model.backend import stack_on_host
from pm_evidence.model.circular_map import find_circular_map
from pm_evidence.model.funnel_map import FUNNEL_OTHERS_MAX_RHAT, fit_funnel_map
from pm_evidence.model.hmc_chains import HMCState, Metric, hmc_transition
from pm_evidence.model.log_density import LogDensity
from pm_evidence.model.mapped_density import MappedDensity
from pm_evidence.model.model_checks import nan_data_names
from pm_evidence.model.shear_map import ShearMap, find_shear_map

__all__ = [
    "CHAINS_APART_RHAT",
    "DENSE_CONDITION",
    "DENSE_DRAWS_PER_DIM",
    "EARLY_CHECK_SHARE",
    "EXTEND_RHAT",
    "FUNNEL_RUNS",
    "LAGGING_GAP",
    "START_CANDIDATES",
    "VARIANCE_OVER_MEDIAN",
    "BatchedHMCSettings",
    "BatchedHMCStats",
    "adaptation_windows",
    "best_chain_starts",
    "chain_factors",
    "early_check_draws",
    "finite_prior_points",
    "lagging_chains",
    "lagging_mask",
    "moved_from_lagging",
    "sample_batched_hmc",
    "spread_of",
    "starting_points",
    "window_estimates",
    "worth_extending",
]

# L = ceil(u TRAJECTORY_FACTOR T / eps), u ~ U(0, 1]: trajectory lengths uniform on (0, 2T]
TRAJECTORY_FACTOR = 2.0
# The pooled within-chain variance is at most this many times the chains' median one: where the
# chains' variances are alike (one mode, or modes of one width) the mean is below the bound and
# stands as it is; a few chains that hop between narrow modes (the eggbox) no longer make
# every chain's steps a fraction of its mode's width, and so its trajectories many times
# longer (measured: docs/benchmarks.rst).
VARIANCE_OVER_MEDIAN = 4.0
# A dense metric where the posterior's correlation has a condition number above this (a
# diagonal metric's transitions would take over sqrt(100) = 10 times the leapfrog steps) and the
# window holds at least DENSE_DRAWS_PER_DIM draws per dimension to estimate it from (measured:
# docs/benchmarks.rst, "A dense metric for correlated posteriors").
DENSE_CONDITION = 100.0
DENSE_DRAWS_PER_DIM = 10
# Chains whose window's draws sit apart (a coordinate's bulk R-hat above this: modes, the
# funnel test's own reading of them) each get a metric of their own: in an orbit's
# period modes each mode's correlation is its own (condition numbers of 42 to 32,000 chain by
# chain on the two-planet orbit with correlated noise, 9 pooled), and one pooled metric set
# every chain's steps by the worst (measured: docs/benchmarks.rst, "A metric per chain"). Not
# below it: chains at different depths of one funnel (the funnel in a box's driver, 1.11-1.32)
# keep one metric, so that each can move through the others' depths.
CHAINS_APART_RHAT = FUNNEL_OTHERS_MAX_RHAT
# Draws whose largest R-hat is above RHAT_MAX and at most this are extended by another
# ``draws`` transitions per chain (at most ``max_extensions`` times): chains that almost agree
# mix slowly within one mode, and an estimate on them is otherwise flagged for want of a few
# hundred draws (a 45-parameter hierarchy with an LKJ prior: R-hat 1.018 at 512 draws, and the
# cross-check then had to be run to full precision, minutes instead of seconds; at one seed of
# ten, 1.019 after two extensions and 1.011 after three: AIS as the estimate then took 32 s,
# where two more extensions took about 3; measured: docs/benchmarks.rst). Chains in different
# modes give R-hat far above it, and more draws would not bring them together.
EXTEND_RHAT = 1.05
# A chain near which the mass (read as a normal's) is this far below the mass near the best
# chain, their draws' log f apart, is stuck (lagging_chains): every chain runs again from
# the best chain's draws. A mode of e^-10 of the best one's mass is a negligible share of it.
LAGGING_GAP = 10.0
# The first run's kept draws are checked for lagging chains after this share of them (1/4),
# so that a run with chains stuck where the mass is not stops there and runs again from the
# best chain's draws, instead of making the other three quarters first.
EARLY_CHECK_SHARE = 4
START_CANDIDATES = 256  # prior draws searched for starts where the jittered start is not finite
# Draws per chain where the chains are many (an accelerator: BatchedHMCSettings.sized): enough
# for each chain's halves in split R-hat.
WIDE_DRAWS = 128
# Runs in a funnel's coordinates at most: a second, with the map fitted again to the first's
# draws, where the first's chains still disagree (R-hat above RHAT_MAX).
FUNNEL_RUNS = 2


@dataclass(frozen=True)
class BatchedHMCSettings:
    """How the batched HMC sampler runs.

    Attributes
    ----------
    chains : int
        Chains moved together (each a column of every compiled call).
    tune : int
        Tuning transitions per chain (discarded).
    draws : int
        Kept transitions per chain.
    target_accept : float
        Mean acceptance probability the step size is tuned to.
    max_leapfrog : int
        The most leapfrog steps of one transition.
    max_extensions : int
        The most times the draws are extended by another ``draws`` transitions per chain where
        their R-hat is above ``RHAT_MAX`` but at most ``EXTEND_RHAT`` (0: never).
    circular_map : bool
        Move the model's periodic coordinates on circles
        (:func:`~pm_evidence.model.circular_map.find_circular_map`; module text); ``False``:
        never.
    funnel_map : bool
        Where the draws show a funnel (:func:`~pm_evidence.model.funnel_map.fit_funnel_map`),
        draw again in the coordinates that take it away (module text); ``False``: never.
    shear_map : bool
        Where tuning's draws show a phase on a circle following the angle of two other
        coordinates (:func:`~pm_evidence.model.shear_map.find_shear_map`), move it on the
        sheared circle from there on (module text); ``False``: never.
    """

    chains: int = 16
    tune: int = 400
    draws: int = 512
    target_accept: float = 0.8
    max_leapfrog: int = 128
    max_extensions: int = 4
    circular_map: bool = True
    funnel_map: bool = True
    shear_map: bool = True

    def __post_init__(self):
        if (
            isinstance(self.max_extensions, bool)
            or not isinstance(self.max_extensions, int | np.integer)
            or self.max_extensions < 0
        ):
            raise EvidenceInputError(
                f"max_extensions must be a non-negative integer, got {self.max_extensions!r}."
            )
        for name in ("chains", "tune", "draws", "max_leapfrog"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise EvidenceInputError(f"{name} must be a positive integer, got {value!r}.")
        if self.chains < 2 or self.draws < 4:
            raise EvidenceInputError(
                f"Batched HMC needs at least 2 chains and 4 draws per chain (R-hat and the "
                f"halves of every chain), got chains={self.chains}, draws={self.draws}."
            )
        if not 0.0 < self.target_accept < 1.0:
            raise EvidenceInputError(
                f"target_accept must be in (0, 1), got {self.target_accept!r}."
            )

    @classmethod
    def sized(cls, width: int = 1, **given) -> BatchedHMCSettings:
        """The defaults for a device that moves ``width`` times the CPU's chains at once
        (:attr:`~pm_evidence.model.backend.Backend.width`), with the fields ``given`` as given:
        ``16 x width`` chains of ``max(WIDE_DRAWS, 512 / width)`` draws each (512 where
        ``chains`` is given), so that an
        accelerator makes more draws in fewer sequential transitions (256 chains of 128 draws:
        32,768 draws, four times the CPU's 8,192)."""
        base = cls()
        sized = {"chains": base.chains * int(width)}
        if width > 1 and "chains" not in given:  # chains given: the CPU's draws per chain
            sized["draws"] = max(WIDE_DRAWS, base.draws // int(width))
        return cls(**{**sized, **given})


@dataclass(frozen=True)
class BatchedHMCStats:
    """What the sampler did, for the result's diagnostics.

    Attributes
    ----------
    chains, tune : int
    draws : int
        Kept transitions per chain, extensions included.
    step_size : float
        The chains' median tuned step size (in units of each chain's scales).
    mean_leapfrog : float
        Mean leapfrog steps per kept transition.
    accept_rate : float
        Mean acceptance probability over the kept transitions.
    divergences : int
        Kept transitions that diverged (non-finite or an energy error above
        ``DIVERGENCE_ENERGY``).
    evaluations : int
        Points at which the log-density and gradient were evaluated (tuning included).
    dense_metric : bool
        Whether the draws were made with a dense metric (:func:`window_estimates`).
    extensions : int
        How many times the draws were extended because their R-hat was a little above
        ``RHAT_MAX`` (:attr:`BatchedHMCSettings.max_extensions`).
    funnel_map : str
        Where the draws were made again in a funnel's coordinates, the map in words
        (:meth:`~pm_evidence.model.funnel_map.FunnelMap.describe`; the other statistics are
        then the second run's, but ``evaluations`` both runs'); ``"none"`` otherwise.
    circular_map : str
        The periodic coordinates moved on circles
        (:meth:`~pm_evidence.model.circular_map.CircularMap.describe`); ``"none"`` otherwise.
    shear_map : str
        The phases moved on sheared circles from a slow window of tuning on, each with the
        pair whose angle it follows (:meth:`~pm_evidence.model.shear_map.ShearMap.describe`);
        ``"none"`` otherwise.
    restarted : bool
        Whether the draws were made again with every chain started at the best chain's
        draws (:func:`lagging_chains`; the other statistics are then the second run's, but
        ``evaluations`` both runs').
    moved_in_tuning : int
        Chains moved to the best chain's draws at the end of a slow window of tuning, summed
        over windows and runs (:func:`moved_from_lagging`).
    """

    chains: int
    draws: int
    tune: int
    step_size: float
    mean_leapfrog: float
    accept_rate: float
    divergences: int
    evaluations: int
    dense_metric: bool = False
    extensions: int = 0
    funnel_map: str = "none"
    circular_map: str = "none"
    shear_map: str = "none"
    restarted: bool = False
    moved_in_tuning: int = 0

    def diagnostics(self) -> dict:
        """The statistics as result diagnostics (``draws_*`` keys)."""
        return {
            "draws_sampler": "batched HMC",
            "draws_chains": self.chains,
            "draws_per_chain": self.draws,
            "draws_tune": self.tune,
            "draws_step_size": self.step_size,
            "draws_mean_leapfrog": self.mean_leapfrog,
            "draws_accept_rate": self.accept_rate,
            "draws_divergences": self.divergences,
            "draws_evaluations": self.evaluations,
            "draws_dense_metric": self.dense_metric,
            "draws_extensions": self.extensions,
            "draws_funnel_map": self.funnel_map,
            "draws_circular_map": self.circular_map,
            "draws_shear_map": self.shear_map,
            "draws_restarted": self.restarted,
            "draws_moved_in_tuning": self.moved_in_tuning,
        }


def adaptation_windows(tune: int) -> tuple[int, list[int], int]:
    """Stan's tuning schedule for ``tune`` transitions: an initial fast window (step size only,
    15%), slow windows doubling from 25 transitions (the last takes what is left) where the
    scales and the trajectory length are estimated at each window's end, and a final fast
    window (10%). Short runs (under 40) have a single slow window."""
    if tune < 40:
        return 0, [tune], 0
    first, last = int(0.15 * tune), int(0.1 * tune)
    middle = tune - first - last
    windows, size = [], 25
    while middle > 0:
        if middle < 3 * size:  # too little left for this window and a doubled one
            windows.append(middle)
            break
        windows.append(size)
        middle -= size
        size *= 2
    return first, windows, last


def finite_prior_points(target: LogDensity, rng: np.random.Generator) -> np.ndarray:
    """The prior draws, of ``START_CANDIDATES``, where the model's log-density is finite
    (possibly none): starts for chains whose own start has zero density.

    Raises
    ------
    EvidenceInputError
        Where the model's data hold NaN outside its observed variables
        (``pm_evidence.model.model_checks.nan_data_names``): then no point is finite.
    """
    nan_data = nan_data_names(target.model)
    if nan_data:
        raise EvidenceInputError(
            f"The model's data hold NaN outside its observed variables: {'; '.join(nan_data)}. "
            f"A NaN in a covariate makes the log-density NaN at every point (PyMC imputes NaN "
            f"only in observed data). Drop or impute those rows before building the model."
        )
    try:
        x = target.sample_prior(rng, START_CANDIDATES)
    except EvidenceInputError:
        return np.empty((0, target.dim))
    return x[np.isfinite(target.log_density(x))]


def starting_points(target: LogDensity, rng: np.random.Generator, chains: int) -> np.ndarray:
    """``(chains, dim)`` starts: the model's initial point plus ``U(-1, 1)`` jitter (PyMC's
    ``jitter+adapt_diag``); where that has non-finite density, a prior draw of finite density.

    Raises
    ------
    EvidenceInputError
        Where no start of finite density is found.
    """
    x = target.initial_point_flat() + rng.uniform(-1.0, 1.0, size=(chains, target.dim))
    bad = ~np.isfinite(target.log_density(x))
    if bad.any():
        finite = finite_prior_points(target, rng)
        if finite.shape[0] == 0:
            raise EvidenceInputError(
                f"The posterior draws cannot start: the model's log-density is not finite at "
                f"its initial point (jittered), nor at any of {START_CANDIDATES} prior draws. "
                f"Check the model's support against the data (e.g. an upper bound below the "
                f"largest observation), or use a method that needs no posterior draws: "
                f"method='ais', reference='prior'."
            )
        x[bad] = finite[np.arange(int(bad.sum())) % finite.shape[0]]
    return x


class _DualAveraging:
    """Hoffman and Gelman (2014), Algorithm 5, on each chain's log step size."""

    GAMMA, T0, KAPPA = 0.05, 10.0, 0.75

    def __init__(self, eps: np.ndarray, target_accept: float):
        self.mu, self.delta = np.log(10.0 * eps), target_accept
        self.log_eps, self.log_eps_bar = np.log(eps), np.zeros_like(eps)
        self.h_bar, self.t = np.zeros_like(eps), 0

    def update(self, accept: np.ndarray) -> np.ndarray:
        self.t += 1
        w = 1.0 / (self.t + self.T0)
        self.h_bar = (1.0 - w) * self.h_bar + w * (self.delta - accept)
        self.log_eps = self.mu - math.sqrt(self.t) / self.GAMMA * self.h_bar
        eta = self.t**-self.KAPPA
        self.log_eps_bar = eta * self.log_eps + (1.0 - eta) * self.log_eps_bar
        return np.exp(self.log_eps)

    @property
    def final(self) -> np.ndarray:
        return np.exp(self.log_eps_bar)


def _initial_step_size(rng, state: HMCState, metric: Metric) -> np.ndarray:
    """Hoffman and Gelman (2014), Algorithm 4, for each chain: double or halve its step size
    until the acceptance of one leapfrog step crosses 1/2 (``state`` is not moved)."""
    c = state.x.shape[0]

    def accept(e):
        return hmc_transition(rng, state.copy(), e, metric, 1)[0]

    eps, done = np.ones(c), np.zeros(c, dtype=bool)
    direction = np.where(accept(eps) > 0.5, 1.0, -1.0)
    for _ in range(50):
        new = np.where(done, eps, eps * 2.0**direction)
        crossed = ((accept(new) > 0.5) != (direction > 0)) & ~done
        # halving: the first step size accepted above 1/2; doubling: the last one
        eps = np.where(crossed & (direction < 0), new, np.where(done | crossed, eps, new))
        done |= crossed
        if done.all():
            break
    return eps


def window_estimates(window: np.ndarray) -> tuple[Metric, float]:
    """The metric and the trajectory length from a window's draws ``(transitions, chains, dim)``.

    The scales are the same for every chain: ``s^2 = n / (n + 5) v + 10^-3 5 / (n + 5)`` (Stan's
    regularization, ``n`` transitions), ``v = min(mean_c v_c, VARIANCE_OVER_MEDIAN median_c
    v_c)`` with ``v_c`` chain ``c``'s own variance. ``R`` is the correlation of the draws
    standardized within each chain (so that chains in different modes do not inflate it).

    With a diagonal metric the step size is set by ``R``'s smallest eigenvalue and the
    trajectory by its largest, so a transition takes about ``sqrt(kappa)`` leapfrog steps,
    ``kappa`` its condition number. Where ``kappa > DENSE_CONDITION`` and the window holds at
    least ``DENSE_DRAWS_PER_DIM`` draws per dimension, the metric is dense: ``F`` the Cholesky
    factor of ``R_reg = N / (N + 5) R + 5 / (N + 5) I`` (``N`` the window's draws, Stan's
    regularization of a dense metric), so that HMC moves in coordinates where the posterior's
    correlation is about ``I`` (Stan's dense adaptation). The trajectory length is
    ``(pi / 2) sqrt(lambda_max)``, ``lambda_max`` the largest eigenvalue of ``R`` in the
    metric's coordinates (``F^-1 R F^-T``; ``R`` itself for a diagonal metric), a quarter period
    of the slowest direction.

    Where the chains sit apart in the window (some coordinate's bulk R-hat above
    ``CHAINS_APART_RHAT``: modes) and it holds ``DENSE_DRAWS_PER_DIM`` draws per dimension
    of each chain, each chain ``c`` moves with a factor of its own,
    :func:`chain_factors`, whatever the pooled condition number, and the length is the
    chains' median one. Returns ``(metric, length)``."""
    n = window.shape[0]
    variances = np.var(window, axis=0)  # (chains, dim)
    within = np.minimum(  # the chains' mean variance, at most VARIANCE_OVER_MEDIAN median ones
        np.mean(variances, axis=0), VARIANCE_OVER_MEDIAN * np.median(variances, axis=0)
    )
    var = (n / (n + 5.0)) * within + 1e-3 * (5.0 / (n + 5.0))
    scale = np.broadcast_to(np.sqrt(var), window.shape[1:])  # (chains, dim)
    dim = window.shape[-1]
    if dim == 1:
        return Metric(scale), 0.5 * math.pi
    z = ((window - window.mean(axis=0)) / scale).reshape(-1, dim)
    corr = np.corrcoef(z, rowvar=False)
    if not np.all(np.isfinite(corr)):
        return Metric(scale), 0.5 * math.pi
    if n >= DENSE_DRAWS_PER_DIM * dim and window.shape[1] > 1 and _chains_apart(window):
        factors, lam = chain_factors(window / scale)
        return Metric(scale, factors), 0.5 * math.pi * math.sqrt(max(lam, 1.0))
    eigenvalues = np.linalg.eigvalsh(corr)
    lam = float(eigenvalues[-1])
    draws = z.shape[0]
    condition = lam / max(float(eigenvalues[0]), np.finfo(float).tiny)
    if condition > DENSE_CONDITION and draws >= DENSE_DRAWS_PER_DIM * dim:
        regularized = (draws / (draws + 5.0)) * corr + (5.0 / (draws + 5.0)) * np.eye(dim)
        factor = np.linalg.cholesky(regularized)
        inverse = np.linalg.inv(factor)
        lam = float(np.max(np.linalg.eigvalsh(inverse @ corr @ inverse.T)))
        return Metric(scale, factor), 0.5 * math.pi * math.sqrt(max(lam, 1.0))
    return Metric(scale), 0.5 * math.pi * math.sqrt(max(lam, 1.0))


def _chains_apart(window: np.ndarray) -> bool:
    """Whether some coordinate's bulk R-hat over the window ``(transitions, chains, dim)``
    is above ``CHAINS_APART_RHAT`` (constant coordinates count as agreeing)."""
    rhat = rhat_by_coordinate(np.swapaxes(window, 0, 1), method="z_scale")
    return bool(np.any(np.nan_to_num(rhat, nan=1.0) > CHAINS_APART_RHAT))


def chain_factors(z: np.ndarray) -> tuple[np.ndarray, float]:
    r"""One metric factor per chain from a window's draws ``z (n, chains, dim)`` in the
    pooled scales' units, and the chains' median largest eigenvalue in their factor's
    coordinates: each chain's covariance ``C_c`` regularized as Stan regularizes a dense
    metric, which Stan adapts chain by chain,

    .. math::
        S_c = \frac{n}{n + 5} C_c + 10^{-3} \frac{5}{n + 5} I, \qquad F_c F_c^T = S_c,

    so that ``diag(s) F_c`` whitens the chain's own mode (the regularization towards a small
    multiple of ``I`` keeps its narrow directions narrow)."""
    n, chains, dim = z.shape
    factors, lams = np.empty((chains, dim, dim)), np.empty(chains)
    for c in range(chains):
        cov = np.atleast_2d(np.cov(z[:, c], rowvar=False))
        factors[c] = np.linalg.cholesky(
            (n / (n + 5.0)) * cov + 1e-3 * (5.0 / (n + 5.0)) * np.eye(dim)
        )
        inverse = np.linalg.inv(factors[c])
        lams[c] = np.max(np.linalg.eigvalsh(inverse @ cov @ inverse.T))
    return factors, float(np.median(lams))


def _step(
    rng, state: HMCState, eps, metric: Metric, length: float, settings, along: bool = True
) -> tuple:  # fmt: skip
    """One transition of every chain, its number of leapfrog steps drawn as the module text
    says: one length for every chain (one batched call per leapfrog step), from the median
    chain's step size (a chain with a longer step moves further). Returns ``(acceptance
    probabilities, divergent, trajectory acceptance, steps)`` (:func:`hmc_transition`)."""
    jittered = rng.uniform(0.0, 1.0) * TRAJECTORY_FACTOR * length / float(np.median(eps))
    n_steps = int(min(settings.max_leapfrog, max(1, math.ceil(jittered))))
    return (*hmc_transition(rng, state, eps, metric, n_steps, along), n_steps)


@dataclass
class _Tally:
    """What the kept transitions did, summed (tuning counts in ``evaluations`` only)."""

    evaluations: int = 0
    accept: float = 0.0  # the chains' mean acceptance probability, summed over transitions
    leapfrog: int = 0
    divergences: int = 0
    moved: int = 0  # chains moved to the best chain's draws in tuning (moved_from_lagging)
    log_f: list = field(default_factory=list)  # each kept transition's log f, (chains,)


def _advance(run, description: str) -> None:
    """One step of the progress bar; Ctrl-C stops the sampler."""
    run.advance()
    if run.interrupted:
        raise interruption(f"{description} interrupted; nothing to return.")


def _kept(rng, state, eps, metric, length, settings, tally: _Tally, run, description, n=None):
    """``n`` (default ``settings.draws``) transitions of every chain with the tuned kernel: the
    draws ``(chain, draw, dim)``, their statistics added to ``tally``."""
    kept = []
    for _ in range(settings.draws if n is None else n):
        accept, diverged, _, n_steps = _step(rng, state, eps, metric, length, settings, along=False)
        tally.evaluations += settings.chains * n_steps
        kept.append(state.x)  # on the device where the transitions run there: one copy at the end
        tally.log_f.append(state.log_f)
        tally.accept += float(np.mean(accept))
        tally.leapfrog += n_steps
        tally.divergences += int(diverged.sum())
        _advance(run, description)
    return np.ascontiguousarray(np.swapaxes(stack_on_host(kept), 0, 1))


def worth_extending(kept: np.ndarray, most_draws: int) -> bool:
    r"""Whether the draws ``(chain, draw, dim)`` are worth extending towards at most
    ``most_draws`` per chain: their largest R-hat ``R`` above ``RHAT_MAX`` but at most
    ``EXTEND_RHAT``, chains that agree almost (slow mixing within one mode, which more draws
    cure), not chains held in different modes (which they do not), and

    .. math::
        (R - 1) \frac{n}{n_\text{most}} \le \text{RHAT\_MAX} - 1,

    ``n`` the draws per chain: where the chains mix slowly within one mode, ``R - 1`` falls
    about as ``1 / n`` (the between-chain variance of the chains' means, over the
    within-chain variance), so an ``R`` that even this fall cannot bring to ``RHAT_MAX`` by
    ``most_draws`` is not worth the draws. At the first check (512 draws of at most
    ``5 x 512``) the bound is ``EXTEND_RHAT``'s; after an extension that did not lower ``R``
    (chains that sit apart a little: a second mode that one chain holds) it stops the
    extensions, each as costly as the kept draws."""
    rhat, _ = max_rhat(kept)
    # 1e-12: at the first check, R = EXTEND_RHAT exactly stays "reachable" despite rounding
    reachable = (rhat - 1.0) * kept.shape[1] / most_draws <= RHAT_MAX - 1.0 + 1e-12
    return bool(RHAT_MAX < rhat <= EXTEND_RHAT and reachable)


def lagging_chains(kept: np.ndarray, log_f: np.ndarray) -> bool:
    """Whether the draws ``(chain, draw, dim)`` hold chains stuck far below the best one, from
    their ``log f`` ``(chain, draw)``: some chain of :func:`lagging_mask`."""
    return bool(np.any(lagging_mask(kept, log_f)))


def lagging_mask(kept: np.ndarray, log_f: np.ndarray) -> np.ndarray:
    r"""Which chains ``(chains,)`` of the draws ``(chain, draw, dim)`` are stuck far below the
    best one, from their ``log f`` ``(chain, draw)``. The best chain has the highest median
    ``log f``; a chain lags where both

    * its draws' ``log f`` never meets the best chain's (its 95th percentile below the best
      chain's 5th): chains of one stationary distribution share the distribution of
      ``log f``, whatever modes they sit in;
    * the mass near it is more than ``LAGGING_GAP`` nats below the mass near the best chain,
      each read as a normal's, ``m_c = \overline{\log f_c} + \tfrac12 \log |\Sigma_c|``
      (``Sigma_c`` the chain's covariance): a mode lower in ``f`` but as much wider (a mode
      pressed against a bound of the support, in the unconstrained coordinates) holds as much
      mass and is not lagging.

    Chains started where a narrow mode is missing (the two-planet orbit's joint mode, where
    the exploration's particles held one planet or none) drift in regions of ``f`` tens of
    nats lower and stay there; no tuning brings them to the mode, and R-hat, which weighs
    one chain among sixteen lightly, misses a lone one. Never where a chain holds fewer draws
    than twice the dimension (its covariance is not estimated)."""
    chains, n, dim = kept.shape
    if chains < 2 or n < 2 * dim:
        return np.zeros(chains, dtype=bool)
    median = np.median(log_f, axis=1)
    best = int(np.argmax(median))
    low, high = np.percentile(log_f, [5.0, 95.0], axis=1)
    log_det = np.array([np.linalg.slogdet(np.atleast_2d(np.cov(k, rowvar=False)))[1] for k in kept])
    mass = np.mean(log_f, axis=1) + 0.5 * log_det
    return (high < low[best]) & (mass < mass[best] - LAGGING_GAP)  # NaN mass: not lagging


def best_chain_starts(kept: np.ndarray, log_f: np.ndarray) -> np.ndarray:
    """One start per chain from the draws ``(chain, draw, dim)`` of the chain with the highest
    median ``log f`` (``log_f (chain, draw)``): its draws spaced evenly over its second
    half."""
    best = kept[int(np.argmax(np.median(log_f, axis=1)))]
    n = best.shape[0]
    return best[np.linspace(n // 2, n - 1, kept.shape[0]).astype(int)]


def moved_from_lagging(
    state: HMCState, window: np.ndarray, log_f: np.ndarray
) -> tuple[np.ndarray, HMCState, int]:
    """At the end of a slow window of tuning, the lagging chains (:func:`lagging_mask` of the
    window's draws ``(transitions, chains, dim)`` and their ``log f (transitions, chains)``)
    moved to the best chain's draws (:func:`best_chain_starts`). Returns the window with
    their draws replaced by the best chain's (the metric is then estimated where the chains
    go on, not where they were stuck), the state (evaluated again where chains moved) and
    how many chains moved.

    Tuning's transitions are discarded and its kernel changes anyway, so a chain may be
    moved there without biasing the kept draws; moved after the kept transitions instead
    (:func:`sample_batched_hmc`'s run from the best chain), every chain is run again, tuning
    included, after a full run's transitions spent where the mass is not."""
    kept, kept_log_f = np.swapaxes(window, 0, 1), np.asarray(log_f).T
    lagging = lagging_mask(kept, kept_log_f)
    if not lagging.any():
        return window, state, 0
    best = int(np.argmax(np.median(kept_log_f, axis=1)))
    x = np.where(lagging[:, None], best_chain_starts(kept, kept_log_f), stack_on_host([state.x])[0])
    window = window.copy()
    window[:, lagging] = window[:, [best]]
    return window, HMCState(state.target, x), int(lagging.sum())


def sample_batched_hmc(
    target: LogDensity,
    rng: np.random.Generator,
    settings: BatchedHMCSettings = BatchedHMCSettings(),
    *,
    progressbar: bool = True,
    starts: np.ndarray | None = None,
) -> tuple[np.ndarray, BatchedHMCStats]:
    """Posterior draws ``(chain, draw, dim)`` of ``target`` from ``settings.chains`` HMC chains
    moved as one batch (module text), and the sampler's statistics.

    Raises
    ------
    EvidenceInputError
        For a model with discrete variables, or where no chain can start.
    KeyboardInterrupt
        On Ctrl-C (nothing is returned).
    """
    target.require_continuous("batched HMC posterior sampling")
    c, dim = settings.chains, target.dim
    given = starts is not None  # posterior draws: the first scales are their spread
    if not given:
        starts = starting_points(target, rng, c)
    elif np.shape(starts) != (c, dim) or not np.all(np.isfinite(starts)):
        raise EvidenceInputError(
            f"Batched HMC's starts must be finite points of shape ({c}, {dim}), got shape "
            f"{np.shape(starts)}."
        )
    description = f"Batched HMC ({c} chains)"
    circle = find_circular_map(target, starts) if settings.circular_map else None
    space, names = _Space(target, _identity), target.coordinate_names
    if circle is not None:  # the chains move y; R-hat and the draws returned read x(y)
        space = _Space(MappedDensity(target, circle), circle.to_model)
        starts, names = circle.to_map(starts), circle.sampler_names(names)
        if settings.shear_map:
            space = replace(space, shear_planes=circle.planes())
    first_scale = spread_of(starts) if given else None
    kept, stats, log_f, space = _sample(
        space, rng, settings, starts, progressbar, description, first_scale, check_early=True
    )
    if lagging_chains(kept, log_f):  # again, every chain from the best chain's draws
        restarts = best_chain_starts(kept, log_f)
        kept, again, _, space = _sample(
            space, rng, settings, restarts, progressbar, f"{description} from the best chain",
            spread_of(restarts),
        )  # fmt: skip
        stats = replace(
            again, evaluations=stats.evaluations + again.evaluations, restarted=True,
            moved_in_tuning=stats.moved_in_tuning + again.moved_in_tuning,
        )  # fmt: skip
    sampled, in_model = space.target, space.in_model
    funnel = fit_funnel_map(kept) if settings.funnel_map else None
    for run in range(FUNNEL_RUNS):  # again, in the funnel's coordinates, from the last draws
        if funnel is None:
            break
        funnel_space = _Space(
            MappedDensity(sampled, funnel), lambda y, funnel=funnel: in_model(funnel.to_model(y))
        )
        mapped, mapped_stats, _, _ = _sample(
            funnel_space, rng, settings, funnel.to_map(kept[:, -1]), progressbar,
            f"{description} in funnel coordinates",
        )  # fmt: skip
        kept, stats = funnel.to_model(mapped), replace(
            mapped_stats, evaluations=stats.evaluations + mapped_stats.evaluations,
            funnel_map=funnel.describe(names), restarted=stats.restarted,
            moved_in_tuning=stats.moved_in_tuning + mapped_stats.moved_in_tuning,
        )  # fmt: skip
        # where the chains still disagree, the map fitted to draws that reached further into
        # the neck (the first draws' slopes are read from the mouth alone)
        again = run + 1 < FUNNEL_RUNS and max_rhat(in_model(kept))[0] > RHAT_MAX
        funnel = fit_funnel_map(kept) if again else None
    if circle is not None:
        stats = replace(stats, circular_map=circle.describe(target.coordinate_names))
    if space.shear is not None:
        stats = replace(stats, shear_map=space.shear.describe(target.coordinate_names))
    return in_model(kept), stats


def _identity(x: np.ndarray) -> np.ndarray:
    return x


@dataclass(frozen=True)
class _Space:
    """What the chains move on: ``target`` (the model's density or a
    :class:`~pm_evidence.model.mapped_density.MappedDensity` of it), ``in_model`` (its points
    as the model's), the phases' planes a shear is looked for in (``shear_planes (k, 2)``;
    ``None``: not looked for) and the shear once found."""

    target: object
    in_model: object
    shear_planes: np.ndarray | None = None
    shear: ShearMap | None = None

    def sheared(self, window: np.ndarray) -> _Space | None:
        """This space with the shear the tuning draws ``window (transitions, chains, dim)``
        call for (:func:`~pm_evidence.model.shear_map.find_shear_map`), or ``None``."""
        if self.shear_planes is None or self.shear is not None:
            return None
        circles = set(self.shear_planes.ravel().tolist())
        others = np.asarray([k for k in range(window.shape[-1]) if k not in circles], dtype=int)
        shear = find_shear_map(window, self.shear_planes, others)
        if shear is None:
            return None
        return replace(
            self, target=MappedDensity(self.target, shear), shear=shear,
            in_model=lambda y, before=self.in_model: before(shear.to_model(y)),
        )  # fmt: skip


def spread_of(starts: np.ndarray) -> np.ndarray:
    """The metric's scales before tuning's first estimate, from ``starts (chains, dim)`` that
    are posterior draws (``method="auto"``: its exploration's particles): their standard
    deviation over the chains in each coordinate, at most 1, and 1 where it is 0 or not
    finite.

    With scales of 1 until the first slow window, a posterior narrower than 1 costs tuning
    ``1 / scale`` leapfrog steps a transition (capped by ``max_leapfrog``), its step size
    following the narrowest coordinate while its trajectory is a quarter period of a unit
    scale: on a radial-velocity orbit whose period has a posterior SD of 0.004 (logit), two
    thirds of the draws' evaluations were tuning's (measured: docs/benchmarks.rst, "The metric
    before tuning's first window"). A posterior wider than 1 costs no such steps, and
    the spread of 16 points is a noisy scale (across a funnel, the mouth's): so the spread
    only narrows the unit scales."""
    sd = np.std(np.asarray(starts, dtype=float), axis=0)
    return np.where(np.isfinite(sd) & (sd > 0), np.minimum(sd, 1.0), 1.0)


def _sample(
    space: _Space, rng, settings, starts, progressbar: bool, description: str,
    first_scale: np.ndarray | None = None, check_early: bool = False,
):  # fmt: skip
    """:func:`sample_batched_hmc`'s chains from ``starts`` on ``space.target`` (the model's
    :class:`~pm_evidence.model.log_density.LogDensity`, or a
    :class:`~pm_evidence.model.mapped_density.MappedDensity` of it): tuning, the kept draws and
    their extensions, decided by the R-hat of the draws as the model's points
    (``space.in_model``: the sampler's coordinates to the model's). At the end of each slow
    window of tuning, the chains move on to a sheared space where the window's draws call for
    it (:meth:`_Space.sheared`; the same density values, so tuning goes on from the same
    points in the new coordinates). ``first_scale (dim,)``: the metric's scales
    before tuning's first estimate (:func:`spread_of`; 1 where not given). With
    ``check_early``, the run stops after :func:`early_check_draws` kept transitions where
    they hold lagging chains (:func:`lagging_chains`), for the caller to run again. Returns
    ``(draws, stats, the draws' log f (chain, draw), the space they are in)``."""
    c, dim = settings.chains, space.target.dim
    state = HMCState(space.target, np.array(starts, dtype=float))
    scale = np.ones(dim) if first_scale is None else first_scale
    metric = Metric(np.broadcast_to(scale, (c, dim)).copy())
    eps = _initial_step_size(rng, state, metric)
    length = 0.5 * math.pi  # before the first window: a quarter period of a unit scale
    averaging = _DualAveraging(eps, settings.target_accept)
    first, windows, _ = adaptation_windows(settings.tune)  # the last window: step size only
    ends = np.cumsum([first, *windows])  # a slow window ends at each (tuning transitions)
    tally = _Tally()
    window: list[np.ndarray] = []
    window_log_f: list[np.ndarray] = []
    with long_run(settings.tune + settings.draws, description, progressbar) as run:
        for t in range(settings.tune):
            _, _, along, n_steps = _step(rng, state, eps, metric, length, settings)
            tally.evaluations += c * n_steps
            eps = averaging.update(along)
            if first <= t < ends[-1]:
                window.append(state.x)  # a transition replaces state.x, never changes it
                window_log_f.append(state.log_f)
            if t + 1 in ends[1:]:  # the end of a slow window: new scales, restart averaging
                draws, state, moved = moved_from_lagging(
                    state, stack_on_host(window), stack_on_host(window_log_f)
                )
                tally.moved += moved
                tally.evaluations += c if moved else 0  # the moved state evaluated again
                sheared = space.sheared(draws)
                if sheared is not None:  # the same points in the sheared coordinates
                    space, to_map = sheared, sheared.shear.to_map
                    state = HMCState(space.target, to_map(stack_on_host([state.x])[0]))
                    tally.evaluations += c
                    draws = to_map(draws)
                metric, length = window_estimates(draws)
                window, window_log_f = [], []
                eps = _initial_step_size(rng, state, metric)
                averaging = _DualAveraging(eps, settings.target_accept)
            _advance(run, description)
        eps = averaging.final
        early = early_check_draws(settings.draws, dim) if check_early else settings.draws
        kept = _kept(rng, state, eps, metric, length, settings, tally, run, description, early)
        if early < settings.draws:
            log_f = _stacked_log_f(tally)
            if lagging_chains(kept, log_f):  # the caller runs again
                return kept, _stats(settings, kept, tally, metric, eps, 0), log_f, space
            more = _kept(
                rng, state, eps, metric, length, settings, tally, run, description,
                settings.draws - early,
            )  # fmt: skip
            kept = np.concatenate([kept, more], axis=1)
    extensions = 0
    most_draws = settings.draws * (1 + settings.max_extensions)
    while extensions < settings.max_extensions and worth_extending(
        space.in_model(kept), most_draws
    ):
        extensions += 1
        with long_run(settings.draws, f"{description}: more draws (R-hat)", progressbar) as run:
            more = _kept(rng, state, eps, metric, length, settings, tally, run, description)
        kept = np.concatenate([kept, more], axis=1)
    stats = _stats(settings, kept, tally, metric, eps, extensions)
    return kept, stats, _stacked_log_f(tally), space


def _stacked_log_f(tally: _Tally) -> np.ndarray:
    """The kept transitions' ``log f`` as ``(chain, draw)``."""
    return np.ascontiguousarray(stack_on_host(tally.log_f).T)


def _stats(settings, kept, tally: _Tally, metric, eps, extensions: int) -> BatchedHMCStats:
    """The statistics of a run whose kept draws are ``kept (chain, draw, dim)``."""
    n_kept = kept.shape[1]
    return BatchedHMCStats(
        chains=settings.chains, draws=n_kept, tune=settings.tune,
        step_size=float(np.median(eps)), mean_leapfrog=tally.leapfrog / n_kept,
        accept_rate=tally.accept / n_kept, divergences=tally.divergences,
        evaluations=tally.evaluations, dense_metric=metric.dense, extensions=extensions,
        moved_in_tuning=tally.moved,
    )  # fmt: skip


def early_check_draws(draws: int, dim: int) -> int:
    """The kept transitions after which a first run's draws are checked for lagging chains
    (:func:`lagging_chains`) before the rest are made: ``draws / EARLY_CHECK_SHARE``, at
    least twice the dimension (the chains' covariances are estimated), at most ``draws``.
    Where the check fires, the rest of the first run would be spent where the mass is not:
    every chain runs again from the best chain's draws at once."""
    return int(min(draws, max(draws // EARLY_CHECK_SHARE, 2 * dim)))

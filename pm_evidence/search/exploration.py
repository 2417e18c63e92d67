r"""Exploration from the prior: where the posterior's mass is, found without NUTS.

NUTS chains start near a mode and stay there; a reference fitted to their draws, and every
estimator that reads them, inherits what they missed. This stage finds the posterior's mass from
the other end: adaptive tempered sequential Monte Carlo (SMC) from the prior ``p0`` along the
power posteriors ``f_beta = p0 L^beta`` (seed 004 eq. (2) with the prior as reference; Del
Moral, Doucet & Jasra 2006), with moves that jump between modes (seed 004's claim: tempering
crosses between modes that a single chain cannot).

At each rung, from ``beta`` to the next ``beta'`` chosen by the conditional-ESS rule
(:func:`~pm_evidence.tempering.pilot.next_beta`): the particles are reweighted by
``exp((beta' - beta) L)``, resampled (systematic), then moved by

* independent Metropolis-Hastings (IMH) moves from a Gaussian mixture ``q`` (up to
  ``n_jumps``, until the particles have made ``JUMPS_PER_PARTICLE`` accepted jumps each:
  :mod:`pm_evidence.search.jumps`),
  accepted with probability ``min(1, f_beta'(x') q(x) / (f_beta'(x) q(x')))``: a particle can
  move to any mode another particle holds, in one step, so the particles' shares of the modes
  follow ``f_beta'`` even where local moves cannot cross (SMC with independent proposals, as in
  Chopin 2002 and South, Pettitt & Drovandi 2019). Each half of the particles (split at
  random) jumps by the mixture fitted to the other half (:func:`~pm_evidence.search.mixtures.fit_gaussian_mixture`: EM, the
  number of components chosen by BIC), so that ``q`` does not depend on the particle it moves;
* ``n_moves`` transitions of the path's local kernel (HMC for continuous models), tuned to its
  target acceptance rate (as the pilot does, :mod:`pm_evidence.tempering.pilot`; at
  ``beta = 0``, where the particles are exact prior draws, first by ``PRIOR_TUNING_MOVES``
  moves of ``PRIOR_TUNING_PARTICLES`` of them).

Both leave ``f_beta'`` invariant, so the particles at ``beta = 1`` are (approximately) posterior
draws, covering every mode the particles reached, in their right proportions. The mixture
fitted to them at ``beta = 1``, with the components of the last rungs that it does not cover
(modes the final resamplings emptied) and a normal at each local mode climbed from a visited
point where the posterior is far denser than the mixture (:func:`~pm_evidence.search.climbing.climbed_modes`: a mode only a
few particles reached, or the mode of one term of a log-sum-exp of the log-density,
:func:`~pm_evidence.search.climbing.term_modes`: a mode none reached), is then adapted by population Monte Carlo
(:func:`~pm_evidence.search.mixtures.adapt_components`: weights, means and covariances set by importance sampling from the
mixture itself, so that the resampling's noise in the particles' shares does not become the
reference's). It (:attr:`Exploration.mixture`) is the record of the modes found, with their
weights; :meth:`Exploration.reference` is AIS's reference in ``method="auto"``
(:func:`~pm_evidence.marginal.marginal_likelihood`), and :func:`~pm_evidence.search.coverage.compare_coverage` compares it
with NUTS draws. The SMC estimate ``log Z = sum_j log mean_i
exp((beta_{j+1} - beta_j) L(x_i))`` (seed 000 eq. (8) with resampling) comes with it.

The final fit pools the last rung's particles with ``n_final_sweeps`` further sweeps at ``beta =
1``. Where that fit is a poor reference (its reweighting ESS below
:attr:`ExplorationOptions.second_pass_ess`), the same fit is made to the last rung's particles
alone and the better of the two kept: the sweeps usually move the particles into the
posterior's proportions after the last rung's large step, but on periodic signals they
sometimes turned a fit of ESS 0.84 into one of 0.002 (measured: docs/benchmarks.rst,
"Exploration: a second pass").

A second pass
    Where the final mixture is a poor reference (the importance-sampling ESS of its adaptation
    below :attr:`ExplorationOptions.second_pass_ess`), the particles at ``beta = 1`` did not
    follow the posterior: on periodic signals the narrow mode that holds the mass takes over
    only near ``beta = 1``, a few particles or a climb find it, and the shares and shapes of
    the mixture's components are far off. The whole tempering is then run again, its jumps at
    every rung proposing also from the first pass's final mixture (fixed, so independent of
    the particles they move: the moves still leave ``f_beta`` invariant), with the starting
    number of particles throughout (no copying at a multimodal rung). Every mode found is
    then proposed from ``beta = 0`` on, and the particles' share of it follows ``f_beta`` as
    persistent proposals do in nested and persistent samplers. The reference is the
    components of both passes adapted together (:attr:`Exploration.n_passes`): the second pass,
    drawn to the modes the first found, can hold fewer mirror images of them than the first.
    Where that mixture is still a poor reference, its components are at the right modes with
    the wrong shapes more often than not (narrow modes that few particles fit): a Laplace
    component is added at the mode of each of its heaviest components and the mixture adapted
    again (:func:`~pm_evidence.search.climbing.laplace_polished`,
    :attr:`Exploration.n_laplace_modes`), kept where it raises the reweighting ESS. A caller
    that may not need the mixture's shape can have the second pass deferred where the first
    found one mode (``defer_second_pass``; :func:`completed` makes it later): ``method="auto"``
    does, since its cross-check starts from the posterior draws' mixture wherever they visited
    every mode the exploration found.

Which modes it cannot find
    A mode whose share of ``f_beta`` stays below about ``1 / n_particles`` at every ``beta``
    where local moves could still enter it is found by chance only: a narrow, high mode that
    takes over only near ``beta = 1`` (a first-order phase transition). Exploration raises the
    chance (many particles, jumps); one particle that visits such a mode, at any rung, is
    enough for :func:`~pm_evidence.search.climbing.climbed_modes` to add it; :func:`~pm_evidence.search.coverage.occupancy_jumps` reports where a mode's
    share changed abruptly between rungs. The higher the dimension, the more rarely a particle
    visits such a mode, until none does (measured: docs/benchmarks.rst, Measurements behind
    the defaults). Where such a mode is a term of a log-sum-exp of the
    log-density (a mixture, ``pt.logaddexp``), :func:`~pm_evidence.search.climbing.term_modes` finds it by a
    search of that term alone, from anywhere. Otherwise no sampler certifies that no mode is
    missing.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.progress import long_run
from pm_evidence.core.utils import (
    CountedCalls,
    one_blas_thread,
    pareto_khat,
    renamed_module_names,
)
from pm_evidence.model.backend import rows_changed
from pm_evidence.model.log_density import LogDensity
from pm_evidence.references import (
    MixtureReference,
    PriorReference,
    Reference,
)
from pm_evidence.search.climbing import (  # moved there: the old imports keep working
    CLIMB_WEIGHT_SHARE,  # noqa: F401 (moved; old imports)
    MAX_CLIMBS,  # noqa: F401 (moved; old imports)
    MAX_MODE_CANDIDATES,  # noqa: F401 (moved; old imports)
    TERM_SEARCH_ITERATIONS,  # noqa: F401 (moved; old imports)
    TERM_SEARCH_STARTS,  # noqa: F401 (moved; old imports)
    climb,
    climbed_modes,
    kept_candidates,
    laplace_covariance,
    laplace_polished,
    term_modes,
    with_term_modes,
)
from pm_evidence.search.coverage import (  # moved there: the old imports keep working
    MISSED_SHARE,  # noqa: F401 (moved; old imports)
    ModeCoverage,
    compare_coverage,
    occupancy_jumps,
)
from pm_evidence.search.jumps import cross_fitted_jumps, mixture_density
from pm_evidence.search.missed_mass import MissedMass, deferred_for_missed_mass
from pm_evidence.search.mixtures import (  # moved there: the old imports keep working
    ADAPTED_ESS,  # noqa: F401 (moved; old imports)
    OUTLIER_LEVEL,  # noqa: F401 (moved; old imports)
    adapt_components,
    as_reference,
    fit_gaussian_mixture,
    flattened,
    is_one_mode,
    pooled,
    weighed_by_importance,
    with_lost_components,
    with_mirror_images,
)
from pm_evidence.tempering.kernels import (
    adapt_step_size,
    make_kernel,
    resident_chains,
    transition,
)
from pm_evidence.tempering.path import GeometricPath, PathState, state_on_device, state_on_host
from pm_evidence.tempering.pilot import smc_step, take

__all__ = [
    "Exploration",
    "ExplorationOptions",
    "ModeCoverage",
    "adapt_components",
    "climb",
    "climbed_modes",
    "compare_coverage",
    "completed",
    "cross_fitted_jumps",
    "explore",
    "fit_gaussian_mixture",
    "found_one_mode",
    "laplace_covariance",
    "occupancy_jumps",
    "term_modes",
]

# old names (one name per concept), with a FutureWarning
__getattr__ = renamed_module_names(
    globals(),
    {
        "Coverage": "ModeCoverage",
        "MAX_CANDIDATES": "MAX_MODE_CANDIDATES",
    },
)

# The mixture's number of components is kept from one rung to the next while at least this
# share of the jumps was accepted, and searched for again (by BIC) below it. A fit that suits
# the particles has its jumps accepted about half of the time (the fit's own noise), one that
# misses modes far less: 0.3 searches where it pays and not on every rung of a unimodal
# posterior (each search is two to three EM fits; measured: docs/benchmarks.rst, Measurements
# behind the defaults). The fit at beta = 1 always searches.
JUMP_ACCEPTANCE_TO_KEEP = 0.3


# The particles start as exact draws of the prior, so moves at beta = 0 only tune HMC's step
# size from its first guess; this many moves of this many of the particles do so, where moving
# all of them was a sizeable share of the exploration's gradient evaluations (measured:
# docs/benchmarks.rst, Measurements behind the defaults).
PRIOR_TUNING_PARTICLES = 64
PRIOR_TUNING_MOVES = 10

# The exploration's reference gets a component at a mirror image of a component under the model's
# relabelling group (:meth:`Exploration.reference`) where its density at the image of the
# component's mean is below 1 / MIRROR_DENSITY_RATIO of that at the mean: an image it misses.
MIRROR_DENSITY_RATIO = 1000.0


# The most particles of an exploration on a CPU (ExplorationOptions.max_particles).
MAX_PARTICLES = 2048
# The most particles a half's mixture for the jumps is fitted to (:func:`sweep`): the CPU's
# largest half. On an accelerator, with 16 times the particles, a half's fit by EM on the host
# took 48-62 ms with its number of components given and 270-335 ms with a BIC search, at 16,384
# points of 12 parameters, against 1.9 and 16 ms at 1,024 (docs/benchmarks.rst, "The host's work on
# an accelerator"): two a rung, some seconds of a run with the device waiting. A random subset
# of that size (a half is a random permutation) fits the mixture a CPU's run fits.
JUMP_FIT_POINTS = MAX_PARTICLES // 2


@dataclass(frozen=True)
class ExplorationOptions:
    """Settings of :func:`explore`.

    Attributes
    ----------
    n_particles : int or None
        Particles. A mode is found when its share of some ``f_beta`` reaches about
        ``1 / n_particles`` where the moves can enter it. ``None`` (default):
        ``8192 / dim^1.5`` within ``[512, 2048]``, times the device's width (16 on a GPU;
        :meth:`particles_for`), i.e.
        2,048 up to 2 parameters, 1,576 for 3, 1,024 for 4 and 512 from 7: in few dimensions
        too few particles lose modes at the first rungs, before the modes have formed, while
        in many dimensions more particles cost much time for the same result; in exchange, a
        narrow mode in 3 parameters is visited less often (see the module docstring; measured:
        docs/benchmarks.rst, Measurements behind the defaults).
    max_particles : int or None
        The particles are copied up to this many (``None``: ``MAX_PARTICLES``, 2,048, times the
        device's width, :meth:`most_particles`) at the first rung where they look multimodal
        (both halves' mixtures have several components and the jumps between them are
        accepted less than 30% of the time), so that each mode holds more of them and the
        resampling's noise empties fewer. A unimodal posterior keeps its starting number, and
        so does a second pass: its jumps propose every mode the first pass found, at every
        rung, so its resampling cannot empty one for good (measured: docs/benchmarks.rst,
        "Exploration: a second pass").
    n_moves : int
        Local kernel transitions per rung (HMC for continuous models).
    n_jumps : int
        Most independent Metropolis-Hastings moves per rung from the mixtures fitted to the
        particles; they stop earlier once the particles have made ``JUMPS_PER_PARTICLE``
        accepted jumps each on average.
    ess_fraction : float
        The conditional ESS kept by each step of ``beta`` (smaller steps where the particles'
        weights change fast, as across a phase transition).
    max_components : int
        Most components of the fitted mixtures (chosen by BIC from 1 up to this, and at most
        one per ``5 dim`` particles so that every covariance is estimable).
    max_rungs : int
        Cap on the rungs; beyond it the exploration stops with an error naming the ``beta``.
    n_final_sweeps : int
        Further sweeps (jumps and moves) at ``beta = 1`` whose particles are pooled with the
        last ones for the final mixture (``(1 + n_final_sweeps) n_particles`` correlated
        draws); where that fit is a poor reference, the fit to the last ones alone is tried
        too, and the better one kept (module text).
    n_reweighting_draws : int
        Draws from the final mixture (for each of up to three iterations) whose importance
        weights set its components' weights, means and covariances (:func:`~pm_evidence.search.mixtures.adapt_components`,
        with one component too); 0 keeps the fit to the particles. The updates raise the
        importance-sampling ESS of a fit to the particles toward that of a fit to NUTS draws,
        and so cut the evaluations AIS from it needs (measured: docs/benchmarks.rst,
        Measurements behind the defaults).
    second_pass_ess : float
        A second pass of the whole tempering is made where the final mixture's
        ``reweighting_ess`` is below this fraction: the particles at ``beta = 1`` then did not
        follow the posterior (a narrow mode that took over near ``beta = 1`` and was found only
        by the climbs from visited points, or the shares of the modes far off), so the mixture
        fitted to them is a poor reference. The second pass proposes, in every rung's jumps,
        also from the first pass's final mixture (``memory``): every mode found is proposed
        from ``beta = 0`` on, and its particles' share follows ``f_beta`` at every rung. The
        components of both passes' mixtures are then adapted together, so that no mode either
        pass found is lost (measured: docs/benchmarks.rst). 0 never makes one.
    reference_df : float or None
        Degrees of freedom of the Student-t components of :meth:`Exploration.reference`
        where the mixture has several components (the same locations and scale matrices as
        the normal components); ``None``: normal components. A one-component fit stays a
        normal. Why: a mode on the edge of a bounded variable (a half or a quarter of a mode,
        cut by the bound) becomes, in the unconstrained space, a skewed mode with an
        exponential tail toward the bound (the interval or log transform's Jacobian), which no
        normal component's tail covers. Student-t components make the heaviest weights at
        the bounds far lighter and the error smaller there, and change little elsewhere
        (measured: docs/benchmarks.rst, Measurements behind the defaults).
    heavy_reference_df : float or None
        Degrees of freedom of the reference's components where importance sampling from
        components with ``reference_df`` gives weights whose Pareto k-hat is at least
        ``FINITE_VARIANCE_K`` (0.5: no finite variance) and from these a smaller one
        (``None``: ``reference_df`` always). Heavier
        tails cost AIS chains and rungs everywhere (several times the chains and
        evaluations), so they are taken only where the lighter ones leave the weights
        heavy-tailed, as on the eggbox (measured: docs/benchmarks.rst).
    """

    n_particles: int | None = None
    max_particles: int | None = None
    n_moves: int = 2
    n_jumps: int = 10
    ess_fraction: float = 0.5
    max_components: int = 32
    max_rungs: int = 1000
    n_final_sweeps: int = 3
    n_reweighting_draws: int = 4096
    second_pass_ess: float = 0.1
    reference_df: float | None = 5.0
    heavy_reference_df: float | None = 2.0

    def __post_init__(self):
        _check_df("reference_df", self.reference_df, "5.0", "for normal components")
        _check_df("heavy_reference_df", self.heavy_reference_df, "2.0", "to keep reference_df")

    def particles_for(self, dim: int, width: int = 1) -> int:
        """The particles to start with in ``dim`` dimensions: ``n_particles``, or by default
        ``8192 / dim^1.5`` within ``[512, MAX_PARTICLES]``, times ``width`` where the model runs
        on an accelerator (:attr:`~pm_evidence.model.backend.Backend.width`); within ``[512,
        max_particles]`` where that is given."""
        if self.n_particles is not None:
            return self.n_particles
        if self.max_particles is not None:
            n = 8192 / max(dim, 1) ** 1.5 * int(width)
            return int(np.clip(n, 512, max(512, self.max_particles)))
        return int(np.clip(8192 / max(dim, 1) ** 1.5, 512, MAX_PARTICLES)) * int(width)

    def most_particles(self, width: int = 1) -> int:
        """The most particles the copying at a multimodal rung makes: ``max_particles``, or by
        default ``MAX_PARTICLES`` times ``width``."""
        return MAX_PARTICLES * int(width) if self.max_particles is None else self.max_particles


def _check_df(name: str, df: float | None, default: str, none_means: str) -> None:
    """Refuse degrees of freedom that are not a positive finite number or None."""
    if df is not None and not (np.isfinite(df) and df > 0):
        raise EvidenceInputError(
            f"ExplorationOptions({name}={df!r}): the degrees of freedom of the reference's "
            f"Student-t components must be a positive finite number (default {default}), or "
            f"None {none_means}."
        )


@dataclass(frozen=True)
class Exploration:
    """What :func:`explore` found.

    Attributes
    ----------
    particles : numpy.ndarray
        ``(n_particles, dim)`` flat unconstrained points at ``beta = 1``, equally weighted.
    mixture : pm_evidence.references.MixtureReference
        The Gaussian mixture fitted at ``beta = 1`` (to ``particles`` and the draws of the
        final sweeps): the modes found and their weights.
    betas : numpy.ndarray
        The rungs, from 0 to 1.
    log_z : float
        The SMC estimate of ``log Z`` (seed 000 eq. (8) with resampling).
    jump_acceptance : numpy.ndarray
        Acceptance rate of the independent (jump) moves at each rung.
    occupancy : numpy.ndarray
        ``(n_rungs, n_components)``: the share of the particles nearest each component of
        ``mixture`` at each rung (after the moves), for :func:`~pm_evidence.search.coverage.occupancy_jumps`.
    n_evaluations : int
        Log-density evaluations (a gradient evaluation counts as one).
    reweighting_ess : float
        The Kish ESS, as a fraction of the draws, of the importance weights that set the
        mixture's weights (:func:`~pm_evidence.search.mixtures.adapt_components`); NaN where ``n_reweighting_draws`` is 0.
    n_climbed_modes : int
        Components added at local modes climbed from points the particles visited but the
        final mixture does not cover (:func:`~pm_evidence.search.climbing.climbed_modes`): modes the resampling lost, such
        as a narrow mode taking over near ``beta = 1``.
    reference_df : float or None
        Degrees of freedom of :meth:`reference`'s components where the mixture has several
        (:attr:`ExplorationOptions.reference_df`); ``None``: normal components.
    n_term_modes : int
        Components added at the modes of the terms of the log-density's log-sum-exps
        (:func:`~pm_evidence.search.climbing.term_modes`): narrow modes that no particle visited.
    n_passes : int
        Passes of the tempering made (2 where the first one's mixture was a poor reference:
        :attr:`ExplorationOptions.second_pass_ess`); ``n_evaluations`` counts all of them.
    reference_k_hat : float
        Pareto k-hat of importance sampling from :meth:`reference` (without mirror images), by
        which its components' degrees of freedom were chosen
        (:attr:`ExplorationOptions.heavy_reference_df`); NaN where no choice was made.
    n_laplace_modes : int
        Laplace components added at the modes of the heaviest components where the mixture of
        both passes was still a poor reference
        (:func:`~pm_evidence.search.climbing.laplace_polished`; 0 where none was added or
        they did not raise ``reweighting_ess``).
    weights_estimated : bool
        Whether the mixture's weights are the posterior masses of its components, set by
        importance sampling (:func:`~pm_evidence.search.mixtures.weighed_by_importance`). Where
        its weights had too few effective draws for that (a poor mixture in many dimensions),
        they are the particles' shares, with ``1 / K`` for a component added at a climbed mode:
        a guess, of which AIS's reference keeps a defensive share (:meth:`reference`: on the
        funnel the climbed mode is the neck, which AIS misses without it) and which
        :func:`~pm_evidence.search.coverage.compare_coverage` does not read as mass (in 45
        dimensions, two climbed copies of one point where no particle and no posterior draw went
        held half the weight, the draws were judged to have missed half the mass, and the stages
        after took minutes; measured: docs/benchmarks.rst).
    second_pass_deferred : bool
        Whether the second pass its first pass asked for was left for :func:`completed` to
        make (``explore(..., defer_second_pass=True)`` on a first pass that found one mode:
        :func:`found_one_mode`, or whose particles missed mass: ``missed_mass``).
    missed_mass : pm_evidence.search.missed_mass.MissedMass or None
        Where the second pass was deferred because the first pass's particles missed mass
        its mixture found, that test (:func:`~pm_evidence.search.missed_mass.missed_mass`:
        importance draws from the mixture, their ``log Z`` and the components' shares of the
        mass); ``None`` elsewhere.
    """

    particles: np.ndarray
    mixture: MixtureReference
    betas: np.ndarray
    log_z: float
    jump_acceptance: np.ndarray
    occupancy: np.ndarray
    n_evaluations: int
    reweighting_ess: float = np.nan
    n_climbed_modes: int = 0
    reference_df: float | None = None
    n_term_modes: int = 0
    n_passes: int = 1
    n_laplace_modes: int = 0
    reference_k_hat: float = np.nan
    weights_estimated: bool = True
    second_pass_deferred: bool = False
    missed_mass: MissedMass | None = None

    @property
    def particle_shares(self) -> np.ndarray:
        """``(K,)``: each component's mean responsibility at the particles at ``beta = 1``
        (posterior draws): its share of the posterior mass where ``weights_estimated`` is
        False, and 0 for a climbed mode no particle visited."""
        return self.mixture.responsibilities(self.particles).mean(axis=0)

    @property
    def unvisited(self) -> np.ndarray:
        """``(K,)`` bool: the components the particles did not visit, their share below a fifth
        of their weight (a climbed mode at its guessed ``1 / K``)."""
        return self.particle_shares < self.mixture.weights / 5

    @property
    def n_modes(self) -> int:
        """Components of the mixture fitted at ``beta = 1``."""
        return self.mixture.n_components

    def reference(self, group=None, mixture: MixtureReference | None = None) -> Reference:
        """The reference for a path or an importance sampler: the mixture fitted at
        ``beta = 1``, its components Student-t's with ``reference_df`` degrees of freedom
        (same locations and scale matrices; normals where ``reference_df`` is ``None``), or,
        with one component, that normal (the reference
        :func:`~pm_evidence.path.plan.auto_reference` fits to NUTS draws, and its compiled
        transitions).

        ``group``: the model's relabelling symmetry (a
        ``pm_evidence.model.modes.SymmetryGroup`` of more than one element, as the
        posterior plan's symmetry search found it): the mixture then gets a component at each
        mirror image of a component that it misses
        (:func:`~pm_evidence.search.mixtures.with_mirror_images`, ``MIRROR_DENSITY_RATIO``),
        so that it covers every image of each mode found, whether the exploration found one of
        them or all (an exploration that found 2 of ``|G|`` images leaves AIS from its
        mixture alone ``log(|G| / 2)`` low). Averaging the mixture over the group,
        ``(1/|G|) sum_g q(g x)``, does the same at ``|G|`` times the cost of every
        evaluation.

        Where importance sampling could not weigh the mixture (``weights_estimated`` False),
        the components no particle visited hold at most ``DEFENSIVE_SHARE`` of it together.

        ``mixture``: another mixture to make the reference of, in place of the exploration's
        own (:func:`~pm_evidence.search.mixtures.with_draws_outside`: with components where
        posterior draws found mass the exploration missed).
        """
        mixture = self._defended(self.mixture) if mixture is None else mixture
        if group is None or group.size < 2:
            return self._as_reference(mixture)
        return self._as_reference(with_mirror_images(mixture, group.actions, MIRROR_DENSITY_RATIO))

    def _defended(self, m: MixtureReference) -> MixtureReference:  # m: the exploration's own
        """``m`` where importance sampling set its weights; else with the components the
        particles did not visit (their share below a fifth of the weight: climbed modes at their
        guessed ``1 / K``) holding ``DEFENSIVE_SHARE`` of the weight together where they held
        more, the others scaled up to the rest: a defensive share (Hesterberg 1995) that keeps
        AIS's chains at a climbed mode (the funnel's neck) without spending half of them where
        the posterior has no mass (two climbed copies of one point in 45 dimensions)."""
        if self.weights_estimated or m.n_components == 1:
            return m
        guessed = self.unvisited
        held = float(m.weights[guessed].sum())
        if held <= DEFENSIVE_SHARE or guessed.all():
            return m
        weights = m.weights.copy()
        weights[guessed] *= DEFENSIVE_SHARE / held
        weights[~guessed] *= (1.0 - DEFENSIVE_SHARE) / weights[~guessed].sum()
        return MixtureReference(weights, m.means, m.chols, m.df)

    def _as_reference(self, m: MixtureReference) -> Reference:
        return as_reference(m, self.reference_df, "normal_explored")


# Where importance sampling could not weigh the exploration's mixture, the components the
# particles did not visit hold at most this share of AIS's reference together (Exploration's
# reference; measured: docs/benchmarks.rst).
DEFENSIVE_SHARE = 0.1


def _multimodal(fits: list[MixtureReference], acceptance: float) -> bool:
    """Whether a rung's particles look multimodal: both halves' fits have several components
    and the jumps between them were accepted less than ``JUMP_ACCEPTANCE_TO_KEEP`` of the
    time (a single skewed mode fitted by two overlapping normals is jumped across easily)."""
    return min(f.n_components for f in fits) > 1 and acceptance < JUMP_ACCEPTANCE_TO_KEEP


def explore(
    target: LogDensity,
    rng: np.random.Generator,
    options: ExplorationOptions | None = None,
    *,
    progressbar: bool = False,
    defer_second_pass: bool = False,
) -> Exploration:
    """Adaptive tempered SMC from the prior with jump moves (see the module docstring).

    Its linear algebra (mixture fits, Cholesky factors, triangular solves of at most 50
    dimensions) runs with one BLAS thread (:func:`~pm_evidence.core.utils.one_blas_thread`).

    Parameters
    ----------
    target : LogDensity
        A continuous model with a proper prior PyMC can draw from.
    rng : numpy.random.Generator
    options : ExplorationOptions, optional
    progressbar : bool
    defer_second_pass : bool
        Where the first pass found one mode (:func:`found_one_mode`) and its mixture is a
        poor reference (``reweighting_ess`` below ``options.second_pass_ess``), return it with
        ``second_pass_deferred`` set instead of making the second pass, for a caller that
        reads the mixture's modes, and its shape only sometimes: :func:`completed` makes the
        pass where the shape is needed. A second pass can move the particles' shares between
        modes and add modes only it finds; it does not change the one mode a first pass found,
        whose mixture is poor because one mode in many dimensions is hard to fit. The same
        where the first pass found several modes and its particles missed mass the mixture
        found (:func:`~pm_evidence.search.missed_mass.missed_mass`,
        kept as :attr:`Exploration.missed_mass`): the caller's posterior draws then start
        where that mass is, and a second pass, drawn to the modes the first found, left its
        particles where they were on a two-planet orbit (measured: docs/benchmarks.rst).
        Where they did not, the mixture gets components at the modes climbed from some of the
        particles (:func:`~pm_evidence.search.missed_mass.deferred_for_missed_mass`: a narrow
        mode no particle visited, with a wide basin, as an orbit's period) and the test is
        made again; the pass is deferred where it then finds the mass missed, and made as
        before where it does not.

    Returns
    -------
    Exploration

    Raises
    ------
    EvidenceInputError
        For a model with discrete variables or a prior that cannot be a reference (improper,
        or restricted by a transform such as ``ordered``): the message says so.
    RuntimeError
        When ``beta = 1`` is not reached within ``max_rungs`` rungs.
    """
    options = options or ExplorationOptions()
    if options.n_jumps < 1 or options.particles_for(target.dim) < 4:
        raise EvidenceInputError(
            f"The exploration needs n_jumps >= 1 (its moves between modes) and n_particles >= "
            f"4; got n_jumps={options.n_jumps}, n_particles={options.n_particles}."
        )
    if target.has_discrete:
        raise EvidenceInputError("Exploration from the prior is for continuous models.")
    with one_blas_thread():
        first, rungs = _explore(target, rng, options, progressbar)
        if not first.reweighting_ess < options.second_pass_ess:
            explored = first
        elif defer_second_pass and found_one_mode(first):
            explored = dataclasses.replace(first, second_pass_deferred=True)
        elif defer_second_pass:
            path = GeometricPath(target, PriorReference(target))
            first = deferred_for_missed_mass(
                first, functools.partial(_log_f, path), functools.partial(_log_f_and_grad, path),
                rng, options.n_reweighting_draws, rungs,
            )  # fmt: skip
            if first.second_pass_deferred:
                explored = first
            else:
                explored = _second_pass(target, rng, options, progressbar, first)
        else:
            explored = _second_pass(target, rng, options, progressbar, first)
        return _with_tails(target, rng, options, explored)


def completed(
    target: LogDensity,
    rng: np.random.Generator,
    exploration: Exploration,
    options: ExplorationOptions | None = None,
    *,
    progressbar: bool = False,
) -> Exploration:
    """``exploration`` with the second pass that :func:`explore` deferred made, its reference's
    tails chosen again (``exploration`` itself where no pass was deferred). ``options`` are
    the ones ``exploration`` was made with."""
    if not exploration.second_pass_deferred:
        return exploration
    options = options or ExplorationOptions()
    first = dataclasses.replace(
        exploration, second_pass_deferred=False, reference_df=options.reference_df,
        reference_k_hat=np.nan,
    )  # fmt: skip
    with one_blas_thread():
        return _with_tails(
            target, rng, options, _second_pass(target, rng, options, progressbar, first)
        )


def found_one_mode(exploration: Exploration) -> bool:
    """Whether a pass found one mode: the components of its mixture, those added at climbed
    modes and at a term's modes included, joined by overlaps
    (:func:`~pm_evidence.search.mixtures.is_one_mode`)."""
    return is_one_mode(exploration.mixture)


def _second_pass(target, rng, options: ExplorationOptions, progressbar: bool, first):
    """After a ``first`` pass whose mixture is a poor reference: the second pass, its
    components and the first's adapted together, and the Laplace components where both
    together are still a poor reference."""
    second, rungs = _explore(target, rng, options, progressbar, memory=first.mixture)
    united = _united(target, rng, options, first, second, rungs)
    if not united.reweighting_ess < options.second_pass_ess:
        return united
    return _polished(target, rng, options, united, rungs)


# A Pareto k-hat at or above this: importance weights without a finite variance (Vehtari,
# Simpson, Gelman, Yao and Gabry 2024, §3), where _with_tails takes the heavier tails.
FINITE_VARIANCE_K = 0.5


def _with_tails(target, rng, options: ExplorationOptions, exploration) -> Exploration:
    """``exploration`` with the degrees of freedom of its reference's components chosen by the
    Pareto k-hat of importance sampling from it (``n_reweighting_draws`` draws): the default
    ``reference_df``, or ``heavy_reference_df`` where the weights from the default have a
    k-hat of at least ``FINITE_VARIANCE_K`` (weights without a finite variance: Vehtari et
    al. 2024, §3) and those from the heavier tails a smaller one
    (:attr:`Exploration.reference_k_hat` holds the k-hat of the one chosen). AIS's weights
    from a reference are heavier-tailed than importance sampling's from it (its chains drift
    into the tails the reference lacks: on the eggbox, into the box's edges), so the lighter
    tails are kept only where importance sampling's weights have a finite variance. On the
    multimodal zoo the heavier tails are taken on the eggbox, on one frequency of a periodic
    signal (where the narrow mode is misshapen rather than its tails too light) and at some
    seeds of the three-component mixture; the shells, the trap and the mirror model keep the
    default. Where the heaviest weights lie is no guide: on the eggbox most of them lie inside
    some component's 99% ellipsoid (measured: docs/benchmarks.rst)."""
    heavy, n = options.heavy_reference_df, options.n_reweighting_draws
    if (
        heavy is None or options.reference_df is None or n == 0
        or exploration.mixture.n_components < 2
    ):  # fmt: skip
        return exploration
    log_f = CountedLogDensity(GeometricPath(target, PriorReference(target)))
    k_hat = _importance_k_hat(exploration.reference(), log_f, rng, n)
    chosen = exploration.reference_df
    if not k_hat < FINITE_VARIANCE_K:
        heavier = dataclasses.replace(exploration, reference_df=heavy)
        k_heavy = _importance_k_hat(heavier.reference(), log_f, rng, n)
        if k_heavy < k_hat:
            chosen, k_hat = heavy, k_heavy
    return dataclasses.replace(
        exploration,
        reference_df=chosen,
        reference_k_hat=k_hat,
        n_evaluations=exploration.n_evaluations + log_f.evaluations,
    )


def _importance_k_hat(reference, log_f, rng, n: int) -> float:
    """Pareto k-hat of the importance weights ``f / q`` of ``n`` draws from ``q``."""
    x = reference.sample(rng, n)
    return pareto_khat(log_f(x) - reference.logpdf(x))


def _polished(target, rng, options: ExplorationOptions, exploration, rungs) -> Exploration:
    """``exploration`` with Laplace components at the modes of its heaviest components
    (:func:`~pm_evidence.search.climbing.laplace_polished`), adapted, where that raises the
    reweighting ESS: after both passes, for a mixture still a poor reference."""
    path = GeometricPath(target, PriorReference(target))
    mixture, added, n_eval = laplace_polished(
        exploration.mixture, functools.partial(_log_f, path),
        functools.partial(_log_f_and_grad, path),
        rng, options.n_reweighting_draws,
    )  # fmt: skip
    if not added:
        return exploration
    log_f = CountedLogDensity(path)
    adapted, ess = adapt_components(mixture, log_f, rng, options.n_reweighting_draws)
    n_eval += log_f.evaluations
    if not ess > exploration.reweighting_ess:
        return dataclasses.replace(exploration, n_evaluations=exploration.n_evaluations + n_eval)
    estimated = weighed_by_importance(mixture, adapted, ess)
    mixture = adapted
    return dataclasses.replace(
        exploration,
        mixture=mixture,
        reweighting_ess=ess,
        weights_estimated=estimated,
        occupancy=np.array([mixture.occupancy(q.means, q.weights) for q in rungs]),
        n_evaluations=exploration.n_evaluations + n_eval,
        n_laplace_modes=added,
    )


def _log_f(path, x):
    """``log f`` at ``beta = 1`` at the rows of ``x``."""
    at = path.evaluate(x)
    return at.log_p0 + at.delta


def _united(target, rng, options: ExplorationOptions, first, second, rungs) -> Exploration:
    """The second pass with the components of both passes' mixtures, adapted together
    (:func:`~pm_evidence.search.mixtures.adapt_components`): a mode either pass found stays in
    the reference, since the second pass, drawn to the modes the first found, can lose mirror
    images the first held (three unordered frequencies: the first pass held 2 of the 3! = 6,
    the second 1)."""
    log_f = CountedLogDensity(GeometricPath(target, PriorReference(target)))
    union = adapted = pooled(first.mixture, second.mixture)
    ess = np.nan
    if options.n_reweighting_draws > 0:
        adapted, ess = adapt_components(union, log_f, rng, options.n_reweighting_draws)
    estimated = weighed_by_importance(union, adapted, ess)
    union = adapted
    return dataclasses.replace(
        second,
        mixture=union,
        reweighting_ess=ess,
        weights_estimated=estimated,
        occupancy=np.array([union.occupancy(q.means, q.weights) for q in rungs]),
        n_evaluations=first.n_evaluations + second.n_evaluations + log_f.evaluations,
        n_climbed_modes=first.n_climbed_modes + second.n_climbed_modes,
        n_term_modes=first.n_term_modes + second.n_term_modes,
        n_passes=2,
    )


def _log_f_and_grad(path, x):
    """``log f`` at ``beta = 1`` and its gradient at the rows of ``x``."""
    at = path.evaluate(x, with_grad=True)
    return at.log_p0 + at.delta, at.grad_log_p0 + at.grad_delta


class CountedLogDensity(CountedCalls):
    """``log f`` at ``beta = 1`` on a path, counting the points it was evaluated at
    (``evaluations``)."""

    def __init__(self, path):
        super().__init__(functools.partial(_log_f, path))
        self.path = path


@dataclass(frozen=True)
class Walk:
    """The particles between two steps of the exploration: what a step reads and returns.

    Attributes
    ----------
    state : PathState
        The particles.
    log_step : float
        The log of the local kernel's step size, tuned to its target acceptance.
    moved : int
        Points the local kernel has moved (the kernels fuse after a number of them).
    candidates : tuple
        ``(x, log f, log w)`` of the visited points with the largest importance weights
        against their rung's mixture (``pm_evidence.search.climbing.kept_candidates``).
    n_eval : int
        Log-density evaluations so far.
    """

    state: PathState
    log_step: float
    moved: int
    candidates: tuple
    n_eval: int


def local_moves(rng, path, kernel, walk: Walk, beta: float, n_moves: int, fitted=None) -> Walk:
    """``n_moves`` transitions of the local kernel at ``beta``, its step size tuned after each;
    with ``fitted`` (the rung's mixture), the visited points are kept as candidates."""
    state, log_step, moved, candidates = walk.state, walk.log_step, walk.moved, walk.candidates
    n = state.x.shape[0]
    beta_vec = np.full(n, beta)
    for _ in range(n_moves):
        state, accepted, _ = transition(
            kernel, rng, path, state, beta_vec, np.full(n, np.exp(log_step)), moved
        )
        moved += n
        log_step = adapt_step_size(log_step, accepted.mean(), kernel.target_accept)
        if fitted is not None:
            log_q = mixture_density(path, fitted, state.x)
            candidates = kept_candidates(candidates, state, fitted, log_q)
    n_eval = walk.n_eval + n * n_moves * kernel.evaluations_per_step
    return Walk(state, log_step, moved, candidates, n_eval)


def sweep(rng, path, kernel, options: ExplorationOptions, walk: Walk, beta: float, rate: float,
          k: int, remembered, memory=None) -> tuple[Walk, float, tuple]:  # fmt: skip
    """One rung's moves at ``beta``: jumps from the mixtures fitted to the other half of the
    particles (:func:`~pm_evidence.search.jumps.cross_fitted_jumps`), then ``options.n_moves``
    local moves. Returns the walk, the jumps' acceptance and the two halves' mixtures.

    The number of components is searched for again (by BIC) when the jumps of the rung before
    were often rejected (``rate`` below ``JUMP_ACCEPTANCE_TO_KEEP``: the mixture then misses
    part of the particles' shape); otherwise ``k`` components are fitted, to at most
    ``JUMP_FIT_POINTS`` of a half's particles (a random subset: more only where an accelerator
    moves 16 times the CPU's particles).
    """
    search = not rate >= JUMP_ACCEPTANCE_TO_KEEP

    def fit(x):  # x: a half of the particles, in random order
        points = x[:JUMP_FIT_POINTS]
        return flattened(fit_gaussian_mixture(points, rng, options.max_components, k, search))

    # where the model's values are cheaper without its gradient (the path does not take them
    # from the gradient function: LogDensity.values_apart), repeated jumps evaluate their
    # proposals without it, and the gradient is taken once, after them, where a particle moved
    gradient_once = kernel.needs_grad and not path.via_gradient
    state, rate, q, n_jumps = cross_fitted_jumps(
        rng, path, walk.state, beta, kernel.needs_grad, fit, options.n_jumps, remembered,
        memory, gradient_once=gradient_once, fit_points=JUMP_FIT_POINTS,
    )  # fmt: skip
    n_eval = walk.n_eval + state.x.shape[0] * n_jumps
    if gradient_once and n_jumps > 1:
        n_eval += int(rows_changed(state.x, walk.state.x).sum())
    fitted = pooled(*q)
    log_q = mixture_density(path, fitted, state.x)
    candidates = kept_candidates(walk.candidates, state, fitted, log_q)
    jumped = Walk(state, walk.log_step, walk.moved, candidates, n_eval)
    return local_moves(rng, path, kernel, jumped, beta, options.n_moves, fitted), rate, q


def tune_at_prior(rng, path, kernel, walk: Walk) -> Walk:
    """The local kernel's step size tuned at ``beta = 0`` by ``PRIOR_TUNING_MOVES`` moves of
    ``PRIOR_TUNING_PARTICLES`` of the particles (exact prior draws: they need no moving)."""
    n = walk.state.x.shape[0]
    tuning = take(walk.state, np.arange(min(n, PRIOR_TUNING_PARTICLES)))
    tuned = local_moves(
        rng, path, kernel, dataclasses.replace(walk, state=tuning), 0.0, PRIOR_TUNING_MOVES
    )
    return dataclasses.replace(tuned, state=walk.state)


@dataclass(frozen=True)
class _FinalFit:
    """A pass's final mixture with what it took: its reweighting ESS, the modes added by term
    searches and climbs, whether its weights were estimated, and its evaluations."""

    mixture: MixtureReference
    reweighting_ess: float
    n_term_modes: int
    n_climbed: int
    weights_estimated: bool
    n_evaluations: int


def _final_fit(target, rng, path, options, k, pool, pool_log_f, candidates, last_rungs):
    """The mixture fitted to the points ``pool`` at ``beta = 1`` (a list of arrays, with their
    ``log f``), with the components of ``last_rungs`` it lost, the modes of the log-density's
    terms and those climbed from ``candidates``, adapted by importance sampling
    (:func:`~pm_evidence.search.mixtures.adapt_components`)."""
    points, log_f_points = np.concatenate(pool), np.concatenate(pool_log_f)
    mixture = fit_gaussian_mixture(points, rng, options.max_components, k)
    mixture = with_lost_components(mixture, last_rungs)
    log_f_and_grad = functools.partial(_log_f_and_grad, path)
    mixture, n_term_modes, n_eval = with_term_modes(
        target, rng, mixture, (points, log_f_points), log_f_and_grad
    )
    mixture, n_climbed, climb_evaluations = climbed_modes(
        mixture, candidates, (points, log_f_points), log_f_and_grad
    )
    n_eval += climb_evaluations
    reweighting_ess, adapted = np.nan, mixture
    if options.n_reweighting_draws > 0:
        log_f = CountedLogDensity(path)
        adapted, reweighting_ess = adapt_components(
            mixture, log_f, rng, options.n_reweighting_draws
        )
        n_eval += log_f.evaluations
    estimated = weighed_by_importance(mixture, adapted, reweighting_ess)
    return _FinalFit(adapted, reweighting_ess, n_term_modes, n_climbed, estimated, n_eval)


def _explore(
    target, rng, options: ExplorationOptions, progressbar: bool, memory=None
) -> tuple[Exploration, list]:
    """One pass of the tempering (:func:`explore`) and the mixtures fitted at its rungs;
    ``memory``: an earlier pass's final mixture, proposed in every rung's jumps
    (:func:`~pm_evidence.search.jumps.cross_fitted_jumps`)."""
    path = GeometricPath(target, PriorReference(target))
    kernel = make_kernel("auto", target)
    n, dim = options.particles_for(target.dim, target.backend.width), target.dim
    # copied up to this many where the particles look multimodal; not in a second pass, whose
    # jumps propose every mode the first found from the first rung on (``memory``)
    most = options.most_particles(target.backend.width) if memory is None else n
    state = path.sample_reference(rng, n, with_grad=kernel.needs_grad)
    spread = float(np.median(np.std(state.x, axis=0)))
    log_step = float(np.log((spread if np.isfinite(spread) and spread > 0 else 1.0) / dim**0.25))
    walk = Walk(state, log_step, 0, (np.empty((0, dim)), np.empty(0), np.empty(0)), n)
    beta, log_z = 0.0, 0.0
    betas, acceptance, mixtures, k, rate = [0.0], [], [], 1, np.nan
    remembered = None
    walk = tune_at_prior(rng, path, kernel, walk)
    resident = resident_chains(kernel, path)
    if resident:  # the particles stay on the device from here to the final fit's pool
        walk = dataclasses.replace(walk, state=state_on_device(walk.state))

    with long_run(None, "exploration from the prior (rungs)", progressbar) as bar:
        while True:
            walk, rate, fits = sweep(
                rng, path, kernel, options, walk, beta, rate, k, remembered, memory
            )
            k, remembered = fits[0].n_components, pooled(*fits)
            acceptance.append(rate)
            mixtures.append(fits[0])
            if beta >= 1.0:
                break
            if len(betas) >= options.max_rungs:
                raise RuntimeError(
                    f"The exploration needed more than {options.max_rungs} rungs to reach "
                    f"beta = 1 (at beta = {beta:.3g})."
                )
            state = walk.state
            if not np.isfinite(np.asarray(state.delta)).any():
                raise RuntimeError(
                    "Every particle of the exploration lies where the likelihood is zero."
                )
            if _multimodal(fits, rate) and state.x.shape[0] < most:
                # more particles per mode from here on: each particle copied (an equally
                # weighted resampling), the copies set apart by the next rung's moves
                copies = max(1, most // state.x.shape[0])
                state = take(state, np.repeat(np.arange(state.x.shape[0]), copies))
            state, beta, log_increment = smc_step(rng, state, beta, options.ess_fraction)
            walk = dataclasses.replace(walk, state=state)
            log_z += log_increment
            betas.append(beta)
            bar.advance()
            if bar.interrupted:
                raise KeyboardInterrupt("Interrupted during the exploration; nothing to return.")
        # more draws at beta = 1 for the final fit: a covariance from 512 points is noisy in
        # 20 dimensions (measured: docs/benchmarks.rst, Measurements behind the defaults)
        pool, pool_log_f = [], []
        for final in range(options.n_final_sweeps + 1):
            if final:
                walk, rate, fits = sweep(
                    rng, path, kernel, options, walk, 1.0, rate, k, remembered, memory
                )
            pool.append(np.asarray(walk.state.x))  # to the host: the final fit's points
            pool_log_f.append(np.asarray(walk.state.log_p0) + np.asarray(walk.state.delta))
    state = state_on_host(walk.state) if resident else walk.state
    candidates, n_eval = walk.candidates, walk.n_eval
    last_rungs = mixtures[-2:-4:-1]
    fit = _final_fit(target, rng, path, options, k, pool, pool_log_f, candidates, last_rungs)
    n_eval += fit.n_evaluations
    if fit.reweighting_ess < options.second_pass_ess and len(pool) > 1:
        # the final sweeps can turn a good fit into a poor one: then the fit to the last
        # rung's particles alone, where it is the better reference
        before = _final_fit(
            target, rng, path, options, k, pool[:1], pool_log_f[:1], candidates, last_rungs
        )
        n_eval += before.n_evaluations
        fit = before if before.reweighting_ess > fit.reweighting_ess else fit
    mixture, reweighting_ess = fit.mixture, fit.reweighting_ess
    n_term_modes, n_climbed, estimated = fit.n_term_modes, fit.n_climbed, fit.weights_estimated
    occupancy = np.array([mixture.occupancy(q.means, q.weights) for q in mixtures])
    exploration = Exploration(
        state.x,
        mixture,
        np.asarray(betas),
        log_z,
        np.asarray(acceptance),
        occupancy,
        n_eval,
        reweighting_ess,
        n_climbed,
        options.reference_df,
        n_term_modes,
        weights_estimated=estimated,
    )
    return exploration, mixtures

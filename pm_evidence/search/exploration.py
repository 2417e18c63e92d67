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
  ``n_jumps``, until the particles have made ``JUMPS_PER_PARTICLE`` accepted jumps each),
  accepted with probability ``min(1, f_beta'(x') q(x) / (f_beta'(x) q(x')))``: a particle can
  move to any mode another particle holds, in one step, so the particles' shares of the modes
  follow ``f_beta'`` even where local moves cannot cross (SMC with independent proposals, as in
  Chopin 2002 and South, Pettitt & Drovandi 2019). Each half of the particles (split at
  random) jumps by the mixture fitted to the other half (:func:`fit_gaussian_mixture`: EM, the
  number of components chosen by BIC), so that ``q`` does not depend on the particle it moves;
* ``n_moves`` transitions of the path's local kernel (HMC for continuous models), tuned to its
  target acceptance rate (as the pilot does, :mod:`pm_evidence.tempering.pilot`; at
  ``beta = 0``, where the particles are exact prior draws, first by ``PRIOR_TUNING_MOVES``
  moves of ``PRIOR_TUNING_PARTICLES`` of them).

Both leave ``f_beta'`` invariant, so the particles at ``beta = 1`` are (approximately) posterior
draws, covering every mode the particles reached, in their right proportions. The mixture
fitted to them at ``beta = 1``, with the components of the last rungs that it does not cover
(modes the final resamplings emptied) and a normal at each local mode climbed from a visited
point where the posterior is far denser than the mixture (:func:`climbed_modes`: a mode only a
few particles reached, or the mode of one term of a log-sum-exp of the log-density,
:func:`term_modes`: a mode none reached), is then adapted by population Monte Carlo
(:func:`adapt_components`: weights, means and covariances set by importance sampling from the
mixture itself, so that the resampling's noise in the particles' shares does not become the
reference's). It (:attr:`Exploration.mixture`) is the record of the modes found, with their
weights; :meth:`Exploration.reference` is AIS's reference in ``method="auto"``
(:func:`~pm_evidence.marginal.marginal_likelihood`), and :func:`compare_coverage` compares it
with NUTS draws. The SMC estimate ``log Z = sum_j log mean_i
exp((beta_{j+1} - beta_j) L(x_i))`` (seed 000 eq. (8) with resampling) comes with it.

Which modes it cannot find
    A mode whose share of ``f_beta`` stays below about ``1 / n_particles`` at every ``beta``
    where local moves could still enter it is found by chance only: a narrow, high mode that
    takes over only near ``beta = 1`` (a first-order phase transition). Exploration raises the
    chance (many particles, jumps); one particle that visits such a mode, at any rung, is
    enough for :func:`climbed_modes` to add it; :func:`occupancy_jumps` reports where a mode's
    share changed abruptly between rungs. On ``pm_evidence.zoo.multimodal.unequal_modes`` in
    5-D (a mode of prior mass ~1e-8 holding 30% of the posterior) no particle ever visits the
    narrow mode, in 3-D one does on 1 seed of 8 with the default particles (2 of 6 with
    2,048), in 2-D on every seed tried. Where such a mode is a term of a log-sum-exp of the
    log-density (a mixture, ``pt.logaddexp``, as there), :func:`term_modes` finds it by a
    search of that term alone, from anywhere. Otherwise no sampler certifies that no mode is
    missing.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.progress import long_run
from pm_evidence.core.utils import one_blas_thread, renamed_module_names
from pm_evidence.model.log_density import LogDensity
from pm_evidence.references import (
    MixtureReference,
    MultivariateNormalReference,
    PriorReference,
    Reference,
)
from pm_evidence.tempering.kernels import adapt_step_size, make_kernel, transition
from pm_evidence.tempering.path import GeometricPath, PathState, tempered_log_density
from pm_evidence.tempering.pilot import smc_step, take

__all__ = [
    "Exploration",
    "ExplorationOptions",
    "ModeCoverage",
    "adapt_components",
    "climb",
    "climbed_modes",
    "compare_coverage",
    "explore",
    "fit_gaussian_mixture",
    "laplace_covariance",
    "occupancy_jumps",
    "term_modes",
]

# old names (issue 34: one name per concept), with a FutureWarning
__getattr__ = renamed_module_names(
    globals(),
    {
        "Coverage": "ModeCoverage",
        "MAX_CANDIDATES": "MAX_MODE_CANDIDATES",
    },
)

# The mixture's number of components is kept from one rung to the next while at least this
# share of the jumps was accepted, and searched for again (by BIC) below it. A single normal
# fitted to 256 particles of a 20-D normal posterior has its jumps accepted 0.45-0.55 of the
# time (the fit's own noise), one covering two modes 7 sd apart in 10-D 0.39-0.53, the
# eggbox's 18 modes 0.02-0.08: 0.3 searches where it pays and not on every rung of a
# unimodal posterior (each search is two to three EM fits). The fit at beta = 1 always searches.
JUMP_ACCEPTANCE_TO_KEEP = 0.3

# The points the particles visited with the largest importance weights against the mixture
# fitted at their rung (at most this many) are kept as candidates for modes the final mixture
# lacks (:func:`climbed_modes`).
MAX_MODE_CANDIDATES = 64
# A visited point whose importance weight against the final mixture is at least this share of
# the final particles' total weight is climbed (at most MAX_CLIMBS of them, the largest
# weights against their rung's mixture first), and a component is added at its mode where the
# mode's weight is too.
CLIMB_WEIGHT_SHARE = 0.1
MAX_CLIMBS = 8

# Each term search (:func:`term_modes`) starts from the best, under its surrogate, of this many
# of the final particles, and stops after this many L-BFGS iterations.
TERM_SEARCH_STARTS = 64
TERM_SEARCH_ITERATIONS = 200

# adapt_components stops once its mixture's importance weights have a Kish ESS of at least this
# fraction of the draws (chi-square divergence 1 / ESS - 1 <= 0.05 from the posterior): on the
# Pima logistic regression the normal fitted to the particles had 0.985 and the updates gained
# 0.001 for 8,192 more evaluations; on the peaked 20-D model it had 0.88 and they gained 0.06.
ADAPTED_ESS = 0.95

# The particles start as exact draws of the prior, so moves at beta = 0 only tune HMC's step
# size from its first guess; this many moves of this many of the particles do so (before:
# 10 moves of all of them, 10,240 of the 118,000 gradient evaluations of the exploration on
# the 20-D peaked model, pm_evidence.zoo.testing.peaked_normal_mean).
PRIOR_TUNING_PARTICLES = 64
PRIOR_TUNING_MOVES = 10

# A rung's jumps are repeated until the particles have made this many accepted jumps each, on
# average (at most ExplorationOptions.n_jumps jumps).
JUMPS_PER_PARTICLE = 3.0


@dataclass(frozen=True)
class ExplorationOptions:
    """Settings of :func:`explore`.

    Attributes
    ----------
    n_particles : int or None
        Particles. A mode is found when its share of some ``f_beta`` reaches about
        ``1 / n_particles`` where the moves can enter it. ``None`` (default):
        ``8192 / dim^1.5`` within ``[512, max_particles]`` (:meth:`particles_for`), i.e.
        2,048 up to 2 parameters, 1,576 for 3, 1,024 for 4 and 512 from 7: on the eggbox (2
        parameters, 18 modes) 512 particles lost 1-6 modes at the first rungs on 3 seeds out
        of 4, before the modes had formed, and 2,048 none on 4 seeds; in 20 dimensions 2,048
        cost 3.6 times the exploration, and on the 6-parameter Pima logistic regression the
        1,365 particles of ``8192 / dim`` made ``auto`` 1.73 times as slow as before the
        exploration (2.2 times the exploration's evaluations of 557 particles, for the same
        result); in exchange, a narrow mode in 3 parameters is visited less often (see the
        module docstring).
    max_particles : int
        The particles are copied up to this many at the first rung where they look multimodal
        (both halves' mixtures have several components and the jumps between them are
        accepted less than 30% of the time), so that each mode holds more of them and the
        resampling's noise empties fewer. A unimodal posterior keeps its starting number.
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
        draws).
    n_reweighting_draws : int
        Draws from the final mixture (for each of up to three iterations) whose importance
        weights set its components' weights, means and covariances (:func:`adapt_components`,
        with one component too); 0 keeps the fit to the particles. On
        ``pm_evidence.zoo.testing.peaked_normal_mean`` (20 parameters, one mode) the normal fitted
        to the particles had an importance-sampling ESS of 0.88 of the draws (a normal fitted
        to 2,000 NUTS draws: 0.98), and AIS from it needed 34,000 evaluations to reach SE
        0.005; after the updates from 4,096 draws the ESS was 0.94 and AIS needed 16,000-18,000
        (2,048 draws: ESS 0.89).
    reference_df : float or None
        Degrees of freedom of the Student-t components of :meth:`Exploration.reference`
        where the mixture has several components (the same locations and scale matrices as
        the normal components); ``None``: normal components. A one-component fit stays a
        normal. Why: a mode on the edge of a bounded variable (a half or a quarter of a mode,
        cut by the bound) becomes, in the unconstrained space, a skewed mode with an
        exponential tail toward the bound (the interval or log transform's Jacobian), which no
        normal component's tail covers. On the eggbox, AIS from the normal mixture came back
        -0.003, -0.030, +0.139 (SE 0.154) and -0.016 off on seeds 1-4, its weights' Pareto
        k-hat up to 0.93 at the importance-sampling stage and the heaviest weights all at
        the box's edges; from the same mixture with Student-t components of 5 degrees of
        freedom, within 0.012 on seeds 1-6 (3 degrees of freedom: within 0.024). The weights'
        k-hat stays high (0.67-1.15, so these results stay flagged), but the heaviest weights
        are far lighter. On the 2-D and 10-D Gaussian shells and the three-component mixture
        the errors stayed within 0.014 (and within 3 SE) with either.
    """

    n_particles: int | None = None
    max_particles: int = 2048
    n_moves: int = 2
    n_jumps: int = 10
    ess_fraction: float = 0.5
    max_components: int = 32
    max_rungs: int = 1000
    n_final_sweeps: int = 3
    n_reweighting_draws: int = 4096
    reference_df: float | None = 5.0

    def __post_init__(self):
        if self.reference_df is not None and not (
            np.isfinite(self.reference_df) and self.reference_df > 0
        ):
            raise EvidenceInputError(
                f"ExplorationOptions(reference_df={self.reference_df!r}): the degrees of freedom "
                f"of the reference's Student-t components must be a positive finite number "
                f"(default 5.0), or None for normal components."
            )

    def particles_for(self, dim: int) -> int:
        """The particles to start with in ``dim`` dimensions: ``n_particles``, or by default
        ``8192 / dim^1.5`` within ``[512, max_particles]``."""
        if self.n_particles is not None:
            return self.n_particles
        return int(np.clip(8192 / max(dim, 1) ** 1.5, 512, max(512, self.max_particles)))


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
        ``mixture`` at each rung (after the moves), for :func:`occupancy_jumps`.
    n_evaluations : int
        Log-density evaluations (a gradient evaluation counts as one).
    reweighting_ess : float
        The Kish ESS, as a fraction of the draws, of the importance weights that set the
        mixture's weights (:func:`adapt_components`); NaN where ``n_reweighting_draws`` is 0.
    n_climbed_modes : int
        Components added at local modes climbed from points the particles visited but the
        final mixture does not cover (:func:`climbed_modes`): modes the resampling lost, such
        as a narrow mode taking over near ``beta = 1``.
    reference_df : float or None
        Degrees of freedom of :meth:`reference`'s components where the mixture has several
        (:attr:`ExplorationOptions.reference_df`); ``None``: normal components.
    n_term_modes : int
        Components added at the modes of the terms of the log-density's log-sum-exps
        (:func:`term_modes`): narrow modes that no particle visited.
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

    @property
    def n_modes(self) -> int:
        """Components of the mixture fitted at ``beta = 1``."""
        return self.mixture.n_components

    def reference(self) -> Reference:
        """The reference for a path or an importance sampler: the mixture fitted at
        ``beta = 1``, its components Student-t's with ``reference_df`` degrees of freedom
        (same locations and scale matrices; normals where ``reference_df`` is ``None``), or,
        with one component, that normal (the reference
        :func:`~pm_evidence.path.plan.auto_reference` fits to NUTS draws, and its compiled
        transitions)."""
        m = self.mixture
        if m.n_components == 1:
            return MultivariateNormalReference(m.means[0], m.chols[0], name="normal_explored")
        if self.reference_df is None:
            return m
        return MixtureReference(m.weights, m.means, m.chols, df=self.reference_df)


def fit_gaussian_mixture(
    x: np.ndarray,
    rng: np.random.Generator,
    max_components: int = 32,
    start: int = 1,
    search: bool = True,
) -> MixtureReference:
    """A Gaussian mixture fitted to points ``x (n, dim)`` by EM, its number of components chosen
    by BIC (scikit-learn's ``GaussianMixture``, full covariances).

    At most ``max_components`` and at most one component per ``5 dim`` points (every covariance
    then rests on enough points); a single component is the mean and covariance of ``x``.
    Candidates: ``start`` components (the number chosen at the previous rung of an exploration;
    k-means++ initialisation), half as many, then twice as many while BIC falls, each
    initialised by splitting every component of the last fit in two along its principal axis
    (means ``mu +- sqrt(lambda_1) v_1``): well-separated modes are split apart where a
    Euclidean k-means, blind to the components' shapes, can merge them. ``search=False`` fits
    ``start`` components only.
    """
    n, dim = x.shape
    most = int(max(1, min(max_components, n // (5 * dim))))
    k = int(min(max(start, 1), most))
    if k == 1 and (most == 1 or not search):
        return MixtureReference.single(x)
    from sklearn.mixture import GaussianMixture

    # one scale for every axis (the geometric mean of the spreads): EM's covariance floor
    # (reg_covar) is then relative to the points' spread, and the shape, which the split
    # along principal axes reads, is kept
    center, spread = np.mean(x, axis=0), np.std(x, axis=0)
    scale = float(np.exp(np.mean(np.log(spread[spread > 0])))) if np.any(spread > 0) else 1.0
    z = (x - center) / scale

    def fit(k: int, split_of=None):
        init = {} if split_of is None else _split_init(split_of)
        model = GaussianMixture(
            k, covariance_type="full", reg_covar=1e-6, max_iter=30, init_params="k-means++",
            random_state=int(rng.integers(2**31 - 1)), **init,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning: the BIC judges the fit
            model.fit(z)
        return model

    fits = {k: fit(k)}
    if search and k > 1:
        fits[k // 2] = fit(k // 2)
    best = min(fits, key=lambda j: fits[j].bic(z))
    while search and best == max(fits) and 2 * best <= most:
        fits[2 * best] = fit(2 * best, split_of=fits[best])
        if fits[2 * best].bic(z) >= fits[best].bic(z):
            break
        best = 2 * best
    model = fits[best]
    means = model.means_ * scale + center
    covariances = model.covariances_ * scale**2
    return MixtureReference.from_components(model.weights_, means, covariances)


def _split_init(model) -> dict:
    """EM's starting values for twice the components of a fitted ``GaussianMixture``: each
    component split along its principal axis into two of half its weight."""
    values, vectors = np.linalg.eigh(model.covariances_)
    offset = np.sqrt(values[:, -1])[:, None] * vectors[:, :, -1]
    means = np.concatenate([model.means_ + offset, model.means_ - offset])
    covariances = np.concatenate([model.covariances_, model.covariances_])
    weights = np.concatenate([model.weights_, model.weights_]) / 2
    return {
        "weights_init": weights,
        "means_init": means,
        "precisions_init": np.linalg.inv(covariances),
    }


def _jump(rng, path, state: PathState, beta: float, q: MixtureReference, with_grad):
    """One independent Metropolis-Hastings move of every particle from ``q``."""
    proposal = path.evaluate(q.sample(rng, state.x.shape[0]), with_grad=with_grad)
    log_target_new = tempered_log_density(proposal.log_p0, proposal.delta, beta)
    log_target_old = tempered_log_density(state.log_p0, state.delta, beta)
    log_ratio = log_target_new - log_target_old + q.logpdf(state.x) - q.logpdf(proposal.x)
    with np.errstate(invalid="ignore"):
        accept = np.log(rng.random(log_ratio.size)) < np.where(
            np.isfinite(log_target_new), log_ratio, -np.inf
        )
    merged = PathState(
        *(None if a is None else np.where(accept.reshape(-1, *[1] * (a.ndim - 1)), b, a)
          for a, b in zip(state, proposal, strict=True))
    )  # fmt: skip
    return merged, float(accept.mean())


def _multimodal(fits: list[MixtureReference], acceptance: float) -> bool:
    """Whether a rung's particles look multimodal: both halves' fits have several components
    and the jumps between them were accepted less than ``JUMP_ACCEPTANCE_TO_KEEP`` of the
    time (a single skewed mode fitted by two overlapping normals is jumped across easily)."""
    return min(f.n_components for f in fits) > 1 and acceptance < JUMP_ACCEPTANCE_TO_KEEP


def _flattened(q: MixtureReference) -> MixtureReference:
    """``q`` with weights halfway between its own and equal ones: the jumps' proposal.

    A mode that holds few particles (the resampling's noise) gets a small weight in the
    mixture fitted to them, so few jumps would propose it and its share would recover slowly;
    with at least ``1 / (2 K)`` of the proposals each, it refills in a few jumps. The
    Metropolis-Hastings ratio corrects for whatever weights ``q`` has.
    """
    if q.n_components == 1:
        return q
    return dataclasses.replace(q, weights=0.5 * q.weights + 0.5 / q.n_components)


def _pooled(*mixtures: MixtureReference) -> MixtureReference:
    """One mixture of the components of ``mixtures``, each mixture an equal share."""
    n = len(mixtures)
    return MixtureReference(
        np.concatenate([m.weights / n for m in mixtures]),
        np.concatenate([m.means for m in mixtures]),
        np.concatenate([m.chols for m in mixtures]),
        mixtures[0].df,
    )


def _with_lost_components(
    mixture: MixtureReference, earlier: list[MixtureReference]
) -> MixtureReference:
    """``mixture`` with the components of earlier rungs' mixtures that none of its components
    covers (their mean beyond the chi-square ``1 - OUTLIER_LEVEL`` quantile of every component
    kept so far), taken from the latest rung back, each with weight ``1 / K``.

    A mode that the resampling emptied at a late rung is still a component of the mixtures
    fitted at the rungs before (wider, at a smaller ``beta``); :func:`adapt_components` then
    weighs and fits it by importance sampling, or gives it a negligible weight where the
    posterior has no mass.
    """
    limit = stats.chi2.ppf(1 - OUTLIER_LEVEL, mixture.dim)
    kept = mixture
    for fitted in earlier:
        for mean, chol in zip(fitted.means, fitted.chols, strict=True):
            if np.min(kept.mahalanobis_sq(mean)) > limit:
                weights = np.append(kept.weights, 1.0 / mixture.n_components)
                kept = MixtureReference(
                    weights / weights.sum(),
                    np.concatenate([kept.means, mean[None]]),
                    np.concatenate([kept.chols, chol[None]]),
                    mixture.df,
                )
    return kept


def _kept_candidates(candidates, state: PathState, fitted: MixtureReference):
    """``candidates (x, log_f, log_w)`` with the points of ``state`` added and the
    ``MAX_MODE_CANDIDATES`` of largest ``log_w = log f - log q`` kept: ``log f = log p0 + Delta``
    the posterior density, ``q`` the mixture ``fitted`` at the points' rung. ``log_w`` is a
    point's importance weight for the posterior against what the particles had covered: large
    where the posterior is denser than the fit expects, as at a mode few particles visited."""
    log_f = state.log_p0 + state.delta
    log_w = log_f - fitted.logpdf(state.x)
    fresh = np.isfinite(log_w)
    x = np.concatenate([candidates[0], state.x[fresh]])
    log_f = np.concatenate([candidates[1], log_f[fresh]])
    log_w = np.concatenate([candidates[2], log_w[fresh]])
    kept = np.argsort(log_w)[::-1][:MAX_MODE_CANDIDATES]
    return x[kept], log_f[kept], log_w[kept]


def climb(log_f_and_grad, start: np.ndarray, max_iterations: int | None = None):
    """The local maximum of ``log f`` that L-BFGS reaches from ``start``: the point, its
    ``log f`` and the evaluations. ``log_f_and_grad``: ``x (n, dim) -> (log f (n,), gradient
    (n, dim))``; a non-finite ``log f`` counts as ``-inf`` with a zero gradient."""
    from scipy import optimize

    n_eval = 0

    def negative(point):
        nonlocal n_eval
        n_eval += 1
        value, grad = log_f_and_grad(point[None])
        if not np.isfinite(value[0]):
            return np.inf, np.zeros_like(point)
        return -float(value[0]), -grad[0]

    options = {} if max_iterations is None else {"maxiter": max_iterations}
    with np.errstate(all="ignore"):
        found = optimize.minimize(negative, start, jac=True, method="L-BFGS-B", options=options)
    return found.x, -float(found.fun), n_eval


def laplace_covariance(mode: np.ndarray, log_f_and_grad) -> np.ndarray | None:
    """``(-H)^{-1}`` at ``mode``, ``H`` the Hessian of ``log f`` by central differences of its
    gradient (one batched call of ``2 dim`` points); ``None`` where ``-H`` is not positive
    definite (not a mode)."""
    dim = mode.size
    h = 1e-5 * np.maximum(1.0, np.abs(mode))
    steps = np.diag(h)
    _, grads = log_f_and_grad(np.concatenate([mode + steps, mode - steps]))
    hessian = (grads[:dim] - grads[dim:]) / (2 * h[:, None])
    precision = -(hessian + hessian.T) / 2
    try:
        chol = np.linalg.cholesky(precision)
    except np.linalg.LinAlgError:
        return None
    inverse = np.linalg.solve(chol, np.eye(dim))
    return inverse.T @ inverse


def climbed_modes(
    mixture: MixtureReference,
    candidates: tuple[np.ndarray, np.ndarray, np.ndarray],
    pool: tuple[np.ndarray, np.ndarray],
    log_f_and_grad,
) -> tuple[MixtureReference, int, int]:
    r"""``mixture`` with a normal component added at each local mode, climbed from a visited
    point, where the posterior holds more than ``mixture`` expects.

    A mode that takes over the posterior's mass only near ``beta = 1`` (a narrow, high mode:
    a first-order phase transition) can be visited by a few particles at the rungs before and
    then lost to the resampling, or never reached by enough of them for the final fit to give
    it a component. At such a point the importance weight ``w = f / q`` (``f`` the posterior
    density, ``q`` the mixture) is a large share of the total weight of the final particles
    (``pool``: their points and ``log f``), at least ``CLIMB_WEIGHT_SHARE``: ``q`` lacks mass
    there. Each such point among ``candidates`` is climbed to its local mode by L-BFGS; a mode
    whose own weight is also that large gets a component ``N(mode, (-H)^{-1})`` (the Laplace
    approximation, ``H`` the Hessian of ``log f``) of weight ``1 / K``, and
    :func:`adapt_components` then sets that weight to its posterior mass by importance
    sampling. A mode the mixture already fits has ``w`` near ``Z``, about ``1 / m`` of the
    total weight of ``m`` final particles, and is left alone. At most ``MAX_CLIMBS`` points are
    climbed, in the order of the candidates' priority.

    Parameters
    ----------
    mixture : MixtureReference
    candidates : (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        Points ``(n, dim)``, their ``log f`` and the order in which to climb them (largest
        first).
    pool : (numpy.ndarray, numpy.ndarray)
        The final particles ``(m, dim)`` and their ``log f``.
    log_f_and_grad : callable
        ``x (n, dim) -> (log f (n,), gradient (n, dim))``.

    Returns
    -------
    MixtureReference, int, int
        The mixture, the number of components added and the log-density evaluations.
    """
    x, log_f, priority = candidates
    pool_x, pool_log_f = pool
    n_eval, added = 0, 0

    def log_total(q):
        """``log`` of the final particles' total weight ``sum f / q``."""
        return special.logsumexp(pool_log_f - q.logpdf(pool_x))

    def heavier(points, log_f_points, q, total):
        """Where ``w = f / q`` is at least ``CLIMB_WEIGHT_SHARE`` of ``exp(total)``."""
        with np.errstate(invalid="ignore"):
            return log_f_points - q.logpdf(points) >= total + np.log(CLIMB_WEIGHT_SHARE)

    total = log_total(mixture)
    keep = np.flatnonzero(heavier(x, log_f, mixture, total))
    for i in keep[np.argsort(priority[keep])[::-1]][:MAX_CLIMBS]:
        start = x[i]
        if not heavier(start[None], log_f[i : i + 1], mixture, total)[0]:
            continue  # a mode climbed from an earlier point covers it
        mode, mode_log_f, evaluations = climb(log_f_and_grad, start)
        n_eval += evaluations
        if not (np.all(np.isfinite(mode)) and np.isfinite(mode_log_f)):
            continue
        if not heavier(mode[None], np.array([mode_log_f]), mixture, total)[0]:
            continue
        covariance = laplace_covariance(mode, log_f_and_grad)
        n_eval += 2 * mode.size
        if covariance is None:
            continue
        weights = np.append(mixture.weights, 1.0 / mixture.n_components)
        covariances = mixture.chols @ np.swapaxes(mixture.chols, -1, -2)
        mixture = MixtureReference.from_components(
            weights / weights.sum(),
            np.concatenate([mixture.means, mode[None]]),
            np.concatenate([covariances, covariance[None]]),
            mixture.df,
        )
        total = log_total(mixture)
        added += 1
    return mixture, added, n_eval


def term_modes(
    log_f_with_terms, term_counts: tuple[int, ...], starts: np.ndarray
) -> tuple[np.ndarray, int]:
    r"""One local maximum per term of each log-sum-exp of the log-density, each found with that
    log-sum-exp replaced by the term (the others kept).

    A narrow, high mode that takes over the posterior only near ``beta = 1`` (a first-order
    phase transition; Skilling 2006's spike on a broad background) has a basin far too small
    for any particle to visit: in ``pm_evidence.zoo.multimodal.unequal_modes`` in 5-D, about
    1e-8 of the prior's mass, for 30% of the posterior's. Where the density is written as a
    sum of terms, ``log f = log sum_k exp(t_k(x)) + ...`` (a mixture, ``pt.logaddexp``), the
    surrogate ``t_k + ...`` has the ``k``-th term's mode as its own, whatever the other terms
    do, and L-BFGS finds it from any start in that term's basin, which is the whole space for
    a normal term. The points found are candidates for :func:`climbed_modes`, which climbs
    ``log f`` itself from them and adds a component where the posterior holds more than the
    mixture expects; a point where the term does not dominate the sum is left alone there.

    Parameters
    ----------
    log_f_with_terms : callable
        ``(x (n, dim), choice) -> (log f (n,), gradient (n, dim))`` with the ``j``-th
        log-sum-exp replaced by its term ``choice[j]`` (``-1``: kept), as
        :meth:`~pm_evidence.LogDensity.log_density_with_terms`.
    term_counts : tuple of int
        The number of terms of each log-sum-exp.
    starts : numpy.ndarray
        ``(m, dim)`` points; each search starts from the one where its surrogate is largest.

    Returns
    -------
    numpy.ndarray, int
        The maxima found ``(n, dim)`` (one per term, fewer where a search failed) and the
        log-density evaluations.
    """
    found, n_eval = [], 0
    for j, n_terms in enumerate(term_counts):
        for k in range(n_terms):
            choice = np.full(len(term_counts), -1)
            choice[j] = k
            values, _ = log_f_with_terms(starts, choice)
            n_eval += starts.shape[0]
            if not np.isfinite(values).any():
                continue
            start = starts[np.argmax(np.where(np.isfinite(values), values, -np.inf))]
            point, log_f, evaluations = climb(
                lambda x, choice=choice: log_f_with_terms(x, choice), start, TERM_SEARCH_ITERATIONS
            )
            n_eval += evaluations
            if np.all(np.isfinite(point)) and np.isfinite(log_f):
                found.append(point)
    return np.reshape(found, (-1, starts.shape[1])), n_eval


def _with_term_modes(target, rng, mixture, pool, log_f_and_grad):
    """``mixture`` with a component at each mode of a log-sum-exp's term (:func:`term_modes`,
    started from ``TERM_SEARCH_STARTS`` of the final particles ``pool``) where the posterior
    holds more than it expects (:func:`climbed_modes`); the components added and the
    evaluations. A model without a log-sum-exp costs nothing."""
    if not target.term_counts:
        return mixture, 0, 0
    points = pool[0][rng.choice(pool[0].shape[0], min(TERM_SEARCH_STARTS, pool[0].shape[0]), False)]
    found, n_eval = term_modes(target.log_density_with_terms, target.term_counts, points)
    log_f = log_f_and_grad(found)[0]
    candidates = (found, log_f, log_f - mixture.logpdf(found))
    mixture, added, climb_evaluations = climbed_modes(mixture, candidates, pool, log_f_and_grad)
    return mixture, added, n_eval + found.shape[0] + climb_evaluations


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


def _cross_fitted_jumps(
    rng,
    path,
    state: PathState,
    beta: float,
    with_grad: bool,
    fit,
    n_jumps: int,
    remembered: MixtureReference | None = None,
):
    """Independent Metropolis-Hastings moves of every particle, each half of the particles
    (split at random) proposed from the mixture fitted to the other half.

    A mixture fitted to all the particles and used to move them favours leaving the sparse
    regions: there the fit hugs the few particles, so ``q`` at a particle exceeds ``q`` at a
    fresh proposal nearby, and the acceptance ratio ``q(x) / q(x')`` rises. On the eggbox this
    drained the modes at the box's edges (their mass stretched into the far tails of the
    unconstrained space) from 37% to 3% of the particles. Fitted to the other half (once, at
    the rung's start), ``q`` is independent of the particles it moves, and every move leaves
    ``f_beta`` invariant exactly.

    The moves are repeated, up to ``n_jumps`` times, until the particles have made
    ``JUMPS_PER_PARTICLE`` accepted jumps each on average: a jump costs one evaluation,
    and where the mixture fits the modes poorly (accepted 5-20% of the time on the eggbox)
    one jump per rung left the particles' shares of the modes off by factors of ten. Where
    both proposals have one component (a unimodal posterior) one jump is made. Each half's
    proposal also holds, with half the weight, the mixtures of the rung before
    (``remembered``): a mode that the last resampling emptied is still proposed, and refilled.

    ``fit(x) -> MixtureReference``. Returns the moved state, the mean acceptance rate, the
    first half's mixture and the number of jumps made.
    """
    halves = np.array_split(rng.permutation(state.x.shape[0]), 2)
    mixtures = [fit(state.x[half]) for half in halves]
    if all(q.n_components == 1 for q in mixtures):
        # one jump from the fitted normals where both halves' fits are single normals (a
        # unimodal posterior): the jumps then only refresh the particles within one mode,
        # which the local moves also do
        proposals, n_jumps = mixtures, 1
    else:
        proposals = [m if remembered is None else _pooled(m, remembered) for m in mixtures]

    rates = []
    while len(rates) < n_jumps and sum(rates) < JUMPS_PER_PARTICLE:
        accepted = 0.0
        for moving, q in zip(halves, reversed(proposals), strict=True):
            part, rate = _jump(rng, path, take(state, moving), beta, q, with_grad)
            state = _put(state, moving, part)
            accepted += rate * moving.size
        rates.append(accepted / state.x.shape[0])
    return state, float(np.mean(rates)), mixtures, len(rates)


def adapt_components(
    mixture: MixtureReference,
    log_f,
    rng: np.random.Generator,
    n_draws: int,
    n_iterations: int = 3,
) -> tuple[MixtureReference, float]:
    r"""The mixture adapted to the posterior by population Monte Carlo: its weights set to the
    posterior mass of each component, and its means and covariances to the posterior's
    moments there, estimated by importance sampling from the mixture itself.

    The Rao-Blackwellized updates of Cappe, Douc, Guillin, Marin & Robert (2008, eqs. 6-8):
    with ``x_i ~ q``, self-normalized importance weights ``u_i`` proportional to
    ``f(x_i) / q(x_i)`` and responsibilities ``r_ik = w_k q_k(x_i) / q(x_i)``,

    .. math::

        w_k' = \sum_i u_i r_{ik}, \qquad
        \mu_k' = \frac{\sum_i u_i r_{ik} x_i}{w_k'}, \qquad
        \Sigma_k' = \frac{\sum_i u_i r_{ik} (x_i - \mu_k')(x_i - \mu_k')^T}{w_k'},

    repeated ``n_iterations`` times. The particles' shares (the weights EM gives) carry the
    SMC's resampling noise and, where the moves mix slowly between modes, its drift; a mode
    holding a tenth of its share in the reference gives the AIS chains started there ten times
    the mean weight. The updates read the target at fresh draws, so they also weigh mass the
    fit to the particles missed (a mode the last rungs lost, whose wider component from an
    earlier rung was added; the boundary modes of the eggbox, exponential tails in the
    unconstrained space).

    Each mixture is judged by the Kish effective sample size of its own weights, and the best
    one returned (an update fitted to a few heavy weights can make the next worse); the updates
    stop once that ESS is at least ``ADAPTED_ESS`` (0.95) of the draws. Guards: an
    iteration whose weights have an ESS below ``10 K`` (``K`` components) is not used for an
    update; a component's mean and covariance are updated only where
    its own weights ``u_i r_ik`` have an ESS of at least ``5 (dim + 1)`` and the new covariance
    is positive definite; every weight stays above ``1e-3 / K``.

    Parameters
    ----------
    mixture : MixtureReference
    log_f : callable
        ``log_f(x (n, dim)) -> (n,)``: the unnormalized log posterior density.
    rng : numpy.random.Generator
    n_draws : int
        Draws per iteration (each one evaluation of ``log_f``).
    n_iterations : int

    Returns
    -------
    MixtureReference, float
        The mixture with the largest ESS among those drawn from (``mixture`` itself when no
        update improved it) and that ESS as a fraction of ``n_draws``.
    """
    k, dim = mixture.n_components, mixture.dim
    best, best_ess = mixture, np.nan
    for iteration in range(n_iterations):
        x = mixture.sample(rng, n_draws)
        log_qk = mixture.component_logpdfs(x)
        log_q = special.logsumexp(log_qk, axis=1)
        log_u = np.nan_to_num(np.asarray(log_f(x), dtype=float) - log_q, nan=-np.inf)
        if not np.isfinite(log_u).any():
            break
        u = np.exp(log_u - special.logsumexp(log_u))
        ess_fraction = float(1.0 / np.sum(u**2) / n_draws)
        if not ess_fraction <= best_ess:
            best, best_ess = mixture, ess_fraction
        if ess_fraction * n_draws < 10 * k or iteration == n_iterations - 1:
            break
        if ess_fraction >= ADAPTED_ESS:
            break  # nearly flat weights: little left to gain, for n_draws evaluations
        ur = u[:, None] * np.exp(log_qk - log_q[:, None])  # (n, K)
        shares = ur.sum(axis=0)
        weights = np.maximum(shares, 1e-3 / k)
        means, chols = mixture.means.copy(), mixture.chols.copy()
        for j in range(k):
            if shares[j] <= 0 or shares[j] ** 2 / np.sum(ur[:, j] ** 2) < 5 * (dim + 1):
                continue
            mean = ur[:, j] @ x / shares[j]
            centred = x - mean
            cov = (ur[:, j, None] * centred).T @ centred / shares[j]
            try:
                chols[j] = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:
                continue
            means[j] = mean
        mixture = MixtureReference(weights / weights.sum(), means, chols, mixture.df)
    return best, best_ess


def occupancy_jumps(exploration: Exploration, threshold: float = 0.2) -> list[tuple[float, int]]:
    """Rungs where a component's share of the particles changed by more than ``threshold``
    from the rung before: ``(beta, component)`` pairs (an abrupt change of which mode holds
    the mass, the mark of a phase transition)."""
    change = np.abs(np.diff(exploration.occupancy, axis=0))
    rungs, components = np.nonzero(change > threshold)
    return [
        (float(exploration.betas[r + 1]), int(c)) for r, c in zip(rungs, components, strict=True)
    ]


def explore(
    target: LogDensity,
    rng: np.random.Generator,
    options: ExplorationOptions | None = None,
    *,
    progressbar: bool = False,
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
        return _explore(target, rng, options, progressbar)


def _explore(target, rng, options: ExplorationOptions, progressbar: bool) -> Exploration:
    path = GeometricPath(target, PriorReference(target))
    kernel = make_kernel("auto", target)
    n, dim = options.particles_for(target.dim), target.dim
    state = path.sample_reference(rng, n, with_grad=kernel.needs_grad)
    spread = float(np.median(np.std(state.x, axis=0)))
    log_step = float(np.log((spread if np.isfinite(spread) and spread > 0 else 1.0) / dim**0.25))
    n_eval, moved = n, 0
    beta, log_z = 0.0, 0.0
    betas, acceptance, mixtures, k, rate = [0.0], [], [], 1, np.nan
    remembered = None
    candidates = (np.empty((0, dim)), np.empty(0), np.empty(0))

    def sweep(state, beta, rate, k, n_moves, remembered):
        """Jumps, then local moves, at ``beta``; returns the state, the jumps' acceptance, the
        two halves' mixtures and the evaluations."""
        nonlocal log_step, moved
        # the number of components is searched for again when the jumps of the rung before
        # were often rejected (the mixture then misses part of the particles' shape)
        search = not rate >= JUMP_ACCEPTANCE_TO_KEEP

        def fit(x):
            q = fit_gaussian_mixture(x, rng, options.max_components, k, search)
            return _flattened(q)

        nonlocal candidates
        state, rate, q, n_jumps = _cross_fitted_jumps(
            rng, path, state, beta, kernel.needs_grad, fit, options.n_jumps, remembered
        )
        fitted = _pooled(*q)
        candidates = _kept_candidates(candidates, state, fitted)
        n = state.x.shape[0]
        beta_vec = np.full(n, beta)
        for _ in range(n_moves):
            state, accepted, _ = transition(
                kernel, rng, path, state, beta_vec, np.full(n, np.exp(log_step)), moved
            )
            moved += n
            log_step = adapt_step_size(log_step, accepted.mean(), kernel.target_accept)
            candidates = _kept_candidates(candidates, state, fitted)
        return state, rate, q, n * (n_jumps + n_moves * kernel.evaluations_per_step)

    tuning = take(state, np.arange(min(n, PRIOR_TUNING_PARTICLES)))
    at_prior = np.zeros(tuning.x.shape[0])
    for _ in range(PRIOR_TUNING_MOVES):
        step = np.full(at_prior.size, np.exp(log_step))
        tuning, accepted, _ = transition(kernel, rng, path, tuning, at_prior, step, moved)
        moved += at_prior.size
        log_step = adapt_step_size(log_step, accepted.mean(), kernel.target_accept)
    n_eval += PRIOR_TUNING_MOVES * at_prior.size * kernel.evaluations_per_step

    with long_run(None, "exploration from the prior (rungs)", progressbar) as bar:
        while True:
            state, rate, fits, evaluations = sweep(
                state, beta, rate, k, options.n_moves, remembered
            )
            k, n_eval, remembered = fits[0].n_components, n_eval + evaluations, _pooled(*fits)
            acceptance.append(rate)
            mixtures.append(fits[0])
            if beta >= 1.0:
                break
            if len(betas) >= options.max_rungs:
                raise RuntimeError(
                    f"The exploration needed more than {options.max_rungs} rungs to reach "
                    f"beta = 1 (at beta = {beta:.3g})."
                )
            if not np.isfinite(state.delta).any():
                raise RuntimeError(
                    "Every particle of the exploration lies where the likelihood is zero."
                )
            if _multimodal(fits, rate) and state.x.shape[0] < options.max_particles:
                # more particles per mode from here on: each particle copied (an equally
                # weighted resampling), the copies set apart by the next rung's moves
                copies = max(1, options.max_particles // state.x.shape[0])
                state = take(state, np.repeat(np.arange(state.x.shape[0]), copies))
            state, beta, log_increment = smc_step(rng, state, beta, options.ess_fraction)
            log_z += log_increment
            betas.append(beta)
            bar.advance()
            if bar.interrupted:
                raise KeyboardInterrupt("Interrupted during the exploration; nothing to return.")
        # more draws at beta = 1 for the final fit: a covariance from 512 points is noisy in
        # 20 dimensions (AIS from it needed 2.3 times the evaluations of one from 4,000 NUTS
        # draws on pm_evidence.zoo.testing.peaked_normal_mean)
        pool, pool_log_f = [state.x], [state.log_p0 + state.delta]
        for _ in range(options.n_final_sweeps):
            state, rate, fits, evaluations = sweep(state, 1.0, rate, k, options.n_moves, remembered)
            pool.append(state.x)
            pool_log_f.append(state.log_p0 + state.delta)
            n_eval += evaluations
    mixture = fit_gaussian_mixture(np.concatenate(pool), rng, options.max_components, k)
    mixture = _with_lost_components(mixture, mixtures[-2:-4:-1])

    def log_f_and_grad(x):
        at = path.evaluate(x, with_grad=True)
        return at.log_p0 + at.delta, at.grad_log_p0 + at.grad_delta

    pool = (np.concatenate(pool), np.concatenate(pool_log_f))
    mixture, n_term_modes, climb_evaluations = _with_term_modes(
        target, rng, mixture, pool, log_f_and_grad
    )
    n_eval += climb_evaluations
    mixture, n_climbed, climb_evaluations = climbed_modes(mixture, candidates, pool, log_f_and_grad)
    n_eval += climb_evaluations
    reweighting_ess = np.nan
    if options.n_reweighting_draws > 0:

        def log_f(x):
            nonlocal n_eval
            n_eval += x.shape[0]
            at = path.evaluate(x)
            return at.log_p0 + at.delta

        mixture, reweighting_ess = adapt_components(
            mixture, log_f, rng, options.n_reweighting_draws
        )
    occupancy = np.array([mixture.occupancy(q.means, q.weights) for q in mixtures])
    return Exploration(
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
    )


# A mode holding at least this share of the exploration's particles, and visited by fewer
# than a fifth of that share of the posterior draws, was missed by them; the reverse check
# counts the draws farther from every component than its 1 - OUTLIER_LEVEL quantile.
MISSED_SHARE = 0.02
OUTLIER_LEVEL = 1e-4


@dataclass(frozen=True)
class ModeCoverage:
    """Where an exploration and posterior draws (NUTS) put the posterior's mass.

    Attributes
    ----------
    exploration_shares, draw_shares : numpy.ndarray
        ``(K,)``: the weights ``w_k`` of the exploration's mixture (each component's posterior
        mass, set by importance sampling where it has several: :func:`adapt_components`), and
        the draws' mean responsibility ``r_k(x) = w_k q_k(x) / q(x)`` of each component (for
        draws from a posterior equal to the mixture, ``E[r_k] = w_k``).
    missed_by_draws : float
        The exploration's share in components the draws missed (below a fifth of the
        exploration's share, for components of at least ``MISSED_SHARE``).
    missed_by_exploration : float
        The share of the draws outside every component (squared Mahalanobis distance beyond
        the chi-square ``1 - OUTLIER_LEVEL`` quantile of each).
    """

    exploration_shares: np.ndarray
    draw_shares: np.ndarray
    missed_by_draws: float
    missed_by_exploration: float


def compare_coverage(exploration: Exploration, draws: np.ndarray, orbit=None) -> ModeCoverage:
    """Compare the mass an exploration found with the mass posterior draws visited.

    Parameters
    ----------
    exploration : Exploration
    draws : numpy.ndarray
        Flat posterior draws ``(..., dim)``.
    orbit : callable, optional
        ``orbit(x) -> (|G|, ..., dim)``, every image of the draws under a symmetry of the
        posterior (label switching, ``pm_evidence.model.modes``): a mirror mode counts as
        visited when the reference is averaged over the group.

    Returns
    -------
    ModeCoverage
    """
    mixture = exploration.mixture
    flat = np.asarray(draws, dtype=float).reshape(-1, mixture.dim)
    points = flat if orbit is None else np.asarray(orbit(flat)).reshape(-1, mixture.dim)
    # the mixture's weights, not the particles' shares: a mode few particles reached (one
    # climbed to, climbed_modes) has its posterior mass as its weight
    explored = mixture.weights
    # mean responsibilities, not the share of draws nearest each component: a broad component
    # spread over the modes the draws visited (EM's, between the two mirror modes of
    # pm_evidence.zoo.testing.label_switching_mixture, weight 0.01-0.05) is nearest to no draw, but
    # its responsibility there is a fair part of its weight
    visited = mixture.responsibilities(points).mean(axis=0)
    missed = (explored >= MISSED_SHARE) & (visited < explored / 5)
    limit = stats.chi2.ppf(1 - OUTLIER_LEVEL, mixture.dim)
    distances = mixture.mahalanobis_sq(flat)
    outside = float(np.mean(np.all(distances > limit, axis=-1)))
    return ModeCoverage(explored, visited, float(explored[missed].sum()), outside)

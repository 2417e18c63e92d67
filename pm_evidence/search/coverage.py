"""Where an exploration and posterior draws put the posterior's mass
(:func:`compare_coverage`), and where a mode's share changed abruptly between rungs
(:func:`occupancy_jumps`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import stats

from pm_evidence.core.utils import log_mean_exp, log_sum_exp
from pm_evidence.references import MixtureReference, Reference
from pm_evidence.search.mixtures import outside_every_component

__all__ = [
    "MIN_OUTSIDE_DRAWS",
    "MISSED_SHARE",
    "ModeCoverage",
    "compare_coverage",
    "found_outside_ratio",
    "held_and_missed",
    "occupancy_jumps",
    "outside_mass_share",
    "unshared_mass",
]


class Explored(Protocol):
    """What this module reads of an exploration
    (:class:`~pm_evidence.search.exploration.Exploration` has it): its mixture, and each
    mixture component's share of the particles at each rung."""

    mixture: MixtureReference
    betas: np.ndarray  # (R,) the rungs' inverse temperatures
    occupancy: np.ndarray  # (R, K) each component's share of the particles at each rung
    weights_estimated: bool  # whether mixture.weights are posterior masses (importance sampling)
    particle_shares: np.ndarray  # (K,) each component's mean responsibility at the particles


def occupancy_jumps(exploration: Explored, threshold: float = 0.2) -> list[tuple[float, int]]:
    """Rungs where a component's share of the particles changed by more than ``threshold``
    from the rung before: ``(beta, component)`` pairs (an abrupt change of which mode holds
    the mass, the mark of a phase transition)."""
    change = np.abs(np.diff(exploration.occupancy, axis=0))
    rungs, components = np.nonzero(change > threshold)
    return [
        (float(exploration.betas[r + 1]), int(c)) for r, c in zip(rungs, components, strict=True)
    ]


# Components holding at least this share of the exploration's mass together, each visited by
# fewer than a fifth of its share of the posterior draws, were missed by them; the reverse
# check counts the draws farther from every component than its 1 - OUTLIER_LEVEL quantile.
MISSED_SHARE = 0.02


@dataclass(frozen=True)
class ModeCoverage:
    """Where an exploration and posterior draws put the posterior's mass.

    Attributes
    ----------
    exploration_shares, draw_shares : numpy.ndarray
        ``(K,)``: the weights ``w_k`` of the exploration's mixture (each component's posterior
        mass, set by importance sampling where it has several:
        :func:`~pm_evidence.search.mixtures.adapt_components`; where that could not set them,
        ``weights_estimated`` False, the particles' mean responsibility of each component), and
        the draws' mean responsibility ``r_k(x) = w_k q_k(x) / q(x)`` of each component (for
        draws from a posterior equal to the mixture, ``E[r_k] = w_k``).
    missed_by_draws : float
        The posterior mass of the components the draws missed (each visited at below a fifth
        of the exploration's share), all of them together, as a share of ``Z``:
        ``MISSED_SHARE`` or more of it is a miss, however many components it is split over.
        The exploration's shares are of the mass it found, ``Z_e``; where the draws found mass
        ``M`` outside every component, the missed components hold
        ``missed_weight Z_e / (Z_e + M)`` of ``Z`` (``M`` weighed where an ``rng`` was given:
        :func:`found_outside_ratio`; else ``M = 0``).
    missed_by_exploration : float
        The posterior mass of the region the draws visited outside every component (squared
        Mahalanobis distance beyond the chi-square ``1 - OUTLIER_LEVEL`` quantile of each),
        as a share of ``Z`` (:func:`~pm_evidence.search.coverage.outside_mass_share`), where the log-density and ``log Z``
        were given; else the share of the draws there.
    draws_outside : float
        The share of the draws outside every component.
    missed_weight : float
        ``exploration_shares`` summed over the components the draws missed: their share of
        the mass the exploration found.
    """

    exploration_shares: np.ndarray
    draw_shares: np.ndarray
    missed_by_draws: float
    missed_by_exploration: float
    draws_outside: float = 0.0
    missed_weight: float = np.nan


def compare_coverage(
    exploration: Explored,
    draws: np.ndarray,
    orbit=None,
    *,
    log_density: Callable[[np.ndarray], np.ndarray] | None = None,
    log_z: float | None = None,
    shares: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
) -> ModeCoverage:
    """Compare the mass an exploration found with the mass posterior draws visited.

    Parameters
    ----------
    exploration : pm_evidence.search.exploration.Exploration
        Or anything with its ``mixture`` (:class:`Explored`).
    draws : numpy.ndarray
        Flat posterior draws ``(..., dim)``.
    orbit : callable, optional
        ``orbit(x) -> (|G|, ..., dim)``, every image of the draws under a symmetry of the
        posterior (label switching, ``pm_evidence.model.modes``): a mirror mode counts as
        visited when the reference is averaged over the group.
    log_density : callable, optional
        ``log f`` at points ``(n, dim)``; with ``log_z`` (an estimate of ``log Z``), what the
        draws found outside every component is weighed by its posterior mass
        (:func:`~pm_evidence.search.coverage.outside_mass_share`), not counted by draws: MCMC chains stuck at local maxima
        that hold a negligible part of the mass are many draws but no mass.
    log_z : float, optional
    shares : numpy.ndarray, optional
        ``(K,)``: each component's share of the posterior mass where the mixture's weights are
        not (``weights_estimated`` False) and the particles missed mass, by importance
        sampling (:func:`~pm_evidence.search.missed_mass.missed_mass`); in place of the
        particles' shares.
    rng : numpy.random.Generator, optional
        With ``log_density`` and ``log_z``, where the draws missed components holding at least
        ``MISSED_SHARE`` of the exploration's shares and some draws lie outside every
        component: the mass they found there is weighed (:func:`found_outside_ratio`), and
        ``missed_by_draws`` is the missed components' share of the exploration's mass and
        that mass together.

    Returns
    -------
    ModeCoverage
    """
    mixture = exploration.mixture
    flat = np.asarray(draws, dtype=float).reshape(-1, mixture.dim)
    points = flat if orbit is None else np.asarray(orbit(flat)).reshape(-1, mixture.dim)
    # the mixture's weights, not the particles' shares: a mode few particles reached (one
    # climbed to, climbed_modes) has its posterior mass as its weight; where importance
    # sampling could not set them, the particles' mean responsibilities (posterior draws, as
    # the draws compared): a climbed mode's weight 1 / K is then a guess, not a mass
    if exploration.weights_estimated:
        explored = mixture.weights
    else:
        explored = exploration.particle_shares if shares is None else np.asarray(shares)
    # mean responsibilities, not the share of draws nearest each component: a broad component
    # spread over the modes the draws visited (EM's, between the two mirror modes of
    # pm_evidence.zoo.testing.label_switching_mixture, with a small weight; measured:
    # docs/benchmarks.rst, Measurements behind the defaults) is nearest to no draw, but
    # its responsibility there is a fair part of its weight
    visited = mixture.responsibilities(points).mean(axis=0)
    # every component the draws visited at under a fifth of its share, judged by the share they
    # hold together: the mass of one mode can be split over several small components, and a
    # posterior's minor modes can hold a fifth of its mass with none of them at 2% (a
    # periodic signal's side frequencies; measured: docs/benchmarks.rst, "The multimodal zoo
    # at defaults")
    missed = visited < explored / 5
    is_outside = outside_every_component(mixture, flat)
    outside = float(np.mean(is_outside))
    missed_weight = float(explored[missed].sum())
    if log_density is None or log_z is None or outside == 0:
        return ModeCoverage(explored, visited, missed_weight, outside, outside, missed_weight)
    chains = np.asarray(draws, dtype=float).reshape(-1, *np.shape(draws)[-2:])
    missed_mass = outside_mass_share(
        chains, is_outside.reshape(chains.shape[:2]), log_density, log_z
    )
    missed_share = missed_weight
    if rng is not None and missed_weight >= MISSED_SHARE:
        # the exploration's shares are of the mass Z_e it found; Z is Z_e plus the mass M
        # the draws found outside it (a two-planet orbit: M about e^7 Z_e, where the
        # components the draws missed held 88% of Z_e and 0.1% of Z)
        found = found_outside_ratio(mixture, flat[is_outside], log_density, log_z, rng)
        missed_share = missed_weight / (1.0 + found)
    return ModeCoverage(explored, visited, missed_share, missed_mass, outside, missed_weight)


# Importance draws, in FOUND_BATCHES batches, that weigh the mass the posterior draws found
# outside the exploration's mixture (found_outside_ratio).
FOUND_DRAWS = 4096
FOUND_BATCHES = 4


def found_outside_ratio(
    mixture: MixtureReference,
    outside_draws: np.ndarray,
    log_density: Callable[[np.ndarray], np.ndarray],
    log_z: float,
    rng: np.random.Generator,
    n_draws: int = FOUND_DRAWS,
) -> float:
    r"""A lower bound on ``M / Z_e``: the posterior mass ``M`` outside every component of the
    exploration's ``mixture`` that posterior draws found, over the mass ``Z_e`` the
    exploration found (``log_z``: its estimate of ``log Z``).

    ``M`` by importance sampling from ``q``, a normal moment-matched to the draws outside
    (``outside_draws (n, dim)``; 0 where there are at most ``dim + 1`` of them), ``n_draws``
    draws ``x_i ~ q`` in ``FOUND_BATCHES`` batches ``B_b``:

    .. math::
        \hat M = \min_b \frac{1}{|B_b|} \sum_{i \in B_b}
        \frac{f(x_i)}{q(x_i)}\, [x_i \text{ outside every component}]

    (seed 000 §3). Each batch's mean is unbiased for ``M``, so by Markov's inequality the
    smallest of four exceeds ``t M`` with probability at most ``t^{-4}``; with heavy-tailed
    weights each is low far more often than high. A lower bound, because what it decides
    must not err the other way: the components the draws missed hold ``missed_weight Z_e /
    (Z_e + M)`` of ``Z``, and too large an ``M`` would let an estimate on draws that missed a
    mode stand. Reciprocal importance sampling at the draws (as
    :func:`outside_mass_share` weighs them) is high, not low: on a two-planet orbit it gave
    ``M / Z_e = e^{9.8}``, this ``e^{5.9}`` to ``e^{6.7}`` at four streams, and the earlier runs'
    ``log Z`` ``e^{7.4}`` (measured: docs/benchmarks.rst)."""
    points = np.asarray(outside_draws, dtype=float)
    if points.shape[0] <= mixture.dim + 1:
        return 0.0
    try:
        q = MixtureReference.single(points)
    except (np.linalg.LinAlgError, ValueError):  # a singular covariance
        return 0.0
    x = q.sample(rng, n_draws)
    log_u = np.asarray(log_density(x), dtype=float) - q.logpdf(x)
    log_u = np.where(outside_every_component(mixture, x) & ~np.isnan(log_u), log_u, -np.inf)
    batches = np.array_split(log_u, FOUND_BATCHES)
    log_m = min(log_mean_exp(b) for b in batches)
    return float(np.exp(log_m - log_z))


# A chain's draws outside every component are weighed (outside_mass_share) where it has at least
# this many of them (and more than the dimension plus one, to fit a covariance).
MIN_OUTSIDE_DRAWS = 20


def outside_mass_share(
    chains: np.ndarray,
    outside: np.ndarray,
    log_density: Callable[[np.ndarray], np.ndarray],
    log_z: float,
) -> float:
    r"""The posterior mass, as a share of ``Z``, of the region a chain's draws visited outside
    every component of the exploration's mixture: the largest over the chains.

    For each chain with at least ``MIN_OUTSIDE_DRAWS`` draws ``x_i`` outside (and more than
    ``dim + 1``), the mass ``m = \int_A f`` of the region ``A`` they sample (a chain in a
    local mode samples ``f`` restricted to it) by reciprocal importance sampling (Gelfand and
    Dey 1994; seed 000 §3):

    .. math::
        \hat m = \Big(\frac1n \sum_i \frac{q(x_i)}{f(x_i)}\Big)^{-1},

    ``q`` a normal with the draws' mean and half their covariance (lighter tails than ``f``
    there, so that the ratio's variance stays finite). The share is ``\hat m / Z`` with ``Z``
    from ``log_z``, at most 1. The largest chain's share, not their sum: chains stuck in the same
    local mode each estimate the same mass. A share of the draws is not a share of the mass:
    on one sinusoid of unknown frequency (``pm_evidence.zoo.periodic``) chains stuck at
    local maxima holding under ``1e-9`` of the mass can be a third of the draws. Chains with
    too few draws outside count by their share of all draws.
    """
    n_chains, n_draws, dim = chains.shape
    share = 0.0
    for chain, out in zip(chains, outside, strict=True):
        x = chain[out]
        if x.shape[0] < max(MIN_OUTSIDE_DRAWS, dim + 2):
            share = max(share, x.shape[0] / (n_chains * n_draws))
            continue
        mean = x.mean(axis=0)
        cov = 0.5 * np.atleast_2d(np.cov(x, rowvar=False)) + 1e-12 * np.eye(dim)
        try:
            log_q = stats.multivariate_normal(mean, cov, allow_singular=False).logpdf(x)
        except (np.linalg.LinAlgError, ValueError):
            share = max(share, x.shape[0] / (n_chains * n_draws))
            continue
        log_f = np.asarray(log_density(x), dtype=float)
        log_ratio = np.atleast_1d(log_q) - log_f
        log_ratio = np.where(np.isfinite(log_ratio), log_ratio, np.inf)
        log_mass = -(log_sum_exp(log_ratio) - np.log(log_ratio.size))
        share = max(share, float(np.exp(min(0.0, log_mass - log_z))))
    return share


def unshared_mass(
    first: Reference,
    second: Reference,
    log_density: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    n_draws: int = 4096,
) -> float:
    r"""The posterior mass outside every component of one of two explorations' mixtures, as
    seen from the other: the larger of the two ways, as a share of ``Z``.

    For ``x_i ~ a`` with self-normalized importance weights ``u_i \propto f(x_i) / a(x_i)``,
    ``sum_i u_i [x_i inside a, outside b]`` estimates the posterior mass that ``a``'s
    components hold and ``b``'s do not, a point being outside a mixture where its squared
    Mahalanobis distance to every component is beyond the chi-square ``1 - OUTLIER_LEVEL``
    quantile; then the same with ``a`` and ``b`` swapped. Mass in the tails beyond both (on the
    eggbox, at the box's edges: 4% of it) is no sign of different modes and is not counted.
    Two explorations that found the same modes give a share near 0; where each found one of
    ``|G|`` mirror images of the mode that holds the mass, ``1 - 1/|G|``.

    Why it is needed: AIS from each mixture estimates the mass that mixture covers, so two
    explorations that each missed the same amount of mass agree on a wrong ``log Z``. With a
    symmetry the relabelling search does not detect, each may find one mirror image of the
    main mode, and both give ``log Z - log |G|`` (on three unordered frequencies of
    ``pm_evidence.zoo.periodic``, ``log 6`` low). The images they found then differ (unless
    both found the same one), and this share is far above ``MISSED_SHARE``.

    Parameters
    ----------
    first, second : MixtureReference, MultivariateNormalReference or MultivariateStudentTReference
        The references AIS started from (mirror images added where the group is known; a
        normal or Student-t reference is a mixture of one component:
        :func:`~pm_evidence.search.mixtures.as_mixture`).
    log_density : callable
        ``log f`` at points ``(n, dim)`` (unnormalized).
    rng : numpy.random.Generator
    n_draws : int
        Draws from each mixture (one evaluation of ``log f`` each).
    """
    shares = [
        held_and_missed(first, second, log_density, rng, n_draws),
        held_and_missed(second, first, log_density, rng, n_draws),
    ]
    return float(np.nan if np.isnan(shares).all() else np.nanmax(shares))


def held_and_missed(
    a: Reference,
    b: Reference,
    log_density: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    n_draws: int = 4096,
    log_z: float | None = None,
) -> float:
    r"""The posterior mass that ``a``'s components hold and ``b``'s do not, as a share of
    ``Z``: ``sum_i u_i [x_i inside a, outside b]`` over ``x_i ~ a`` (one way of
    :func:`unshared_mass`; inside and outside as there), NaN where no draw has a finite weight.

    Without ``log_z``, ``u_i \propto f(x_i) / a(x_i)`` are self-normalized: the share of the
    mass ``a`` covers, which is the share of ``Z`` where ``a`` covers the posterior (two
    mirror images of equal mass). With ``log_z`` (an estimate of ``log Z``),
    ``u_i = f(x_i) / (n a(x_i) Z)``: the share of that ``Z``, at most 1. A mixture that missed
    the mode holding the mass covers only the minor modes, whose self-normalized share can be
    near 1 while their share of ``Z`` is ``e^{-25}``."""
    x = a.sample(rng, n_draws)
    log_u = np.asarray(log_density(x), dtype=float) - a.logpdf(x)
    log_u = np.where(np.isnan(log_u), -np.inf, log_u)
    if not np.isfinite(log_u).any():
        return float("nan")
    held = ~outside_every_component(a, x)  # not the tails beyond a's own
    missed = outside_every_component(b, x)
    if log_z is None:
        u = np.exp(log_u - log_sum_exp(log_u))
        return float(u @ (held & missed))
    inside = log_u[held & missed]
    if inside.size == 0:
        return 0.0
    return float(min(1.0, np.exp(log_sum_exp(inside) - np.log(n_draws) - log_z)))

"""Where an exploration and posterior draws (NUTS) put the posterior's mass
(:func:`compare_coverage`), and where a mode's share changed abruptly between rungs
(:func:`occupancy_jumps`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

from pm_evidence.search.mixtures import OUTLIER_LEVEL

if TYPE_CHECKING:
    from pm_evidence.search.exploration import Exploration

__all__ = [
    "MISSED_SHARE",
    "ModeCoverage",
    "compare_coverage",
    "occupancy_jumps",
]


def occupancy_jumps(exploration: Exploration, threshold: float = 0.2) -> list[tuple[float, int]]:
    """Rungs where a component's share of the particles changed by more than ``threshold``
    from the rung before: ``(beta, component)`` pairs (an abrupt change of which mode holds
    the mass, the mark of a phase transition)."""
    change = np.abs(np.diff(exploration.occupancy, axis=0))
    rungs, components = np.nonzero(change > threshold)
    return [
        (float(exploration.betas[r + 1]), int(c)) for r, c in zip(rungs, components, strict=True)
    ]


# A mode holding at least this share of the exploration's particles, and visited by fewer
# than a fifth of that share of the posterior draws, was missed by them; the reverse check
# counts the draws farther from every component than its 1 - OUTLIER_LEVEL quantile.
MISSED_SHARE = 0.02


@dataclass(frozen=True)
class ModeCoverage:
    """Where an exploration and posterior draws (NUTS) put the posterior's mass.

    Attributes
    ----------
    exploration_shares, draw_shares : numpy.ndarray
        ``(K,)``: the weights ``w_k`` of the exploration's mixture (each component's posterior
        mass, set by importance sampling where it has several: :func:`~pm_evidence.search.mixtures.adapt_components`), and
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
    exploration : pm_evidence.search.exploration.Exploration
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
    # pm_evidence.zoo.testing.label_switching_mixture, with a small weight; measured:
    # docs/benchmarks.rst, Measurements behind the defaults) is nearest to no draw, but
    # its responsibility there is a fair part of its weight
    visited = mixture.responsibilities(points).mean(axis=0)
    missed = (explored >= MISSED_SHARE) & (visited < explored / 5)
    limit = stats.chi2.ppf(1 - OUTLIER_LEVEL, mixture.dim)
    distances = mixture.mahalanobis_sq(flat)
    outside = float(np.mean(np.all(distances > limit, axis=-1)))
    return ModeCoverage(explored, visited, float(explored[missed].sum()), outside)

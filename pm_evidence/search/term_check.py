r"""A check of an estimate against the modes of the terms of the log-density's log-sum-exps.

Every method but ``method="auto"``'s exploration (:mod:`pm_evidence.search.exploration`) reads NUTS
draws or a reference fitted to them, and inherits the modes NUTS missed. A narrow, high mode
that no chain visits (a first-order phase transition: ``pm_evidence.zoo.multimodal.
unequal_modes``, whose narrow mode holds 30% of the posterior and about 1e-8 of the prior's
mass) is then left out of the estimate with nothing to show for it: every evaluation the method
made is one it would have made on the model without that mode. Where the log-density is written
as a sum of terms (``pt.logaddexp``, ``pt.logsumexp``, ``pm.Mixture``), each term's mode is
found from anywhere by :func:`~pm_evidence.search.climbing.term_modes`; this module climbs the
model's own log-density from each, keeps the local modes no draw visited (none within the
``1 - OUTLIER_LEVEL`` chi-square quantile of the mode's Laplace covariance, mirror images
included) and estimates their mass by the Laplace approximation,

    ``log M = log f(mode) + (d / 2) log(2 pi) + (1 / 2) log det Sigma``,

``Sigma = (-H)^{-1}`` at the mode. An estimate ``Z`` that left them out misses the share
``M / (Z + M)`` of the evidence; at least ``MISSED_SHARE`` of it puts a warning on the result
(``reliable`` is then ``False``), naming the mode and the way out (``method="auto"``, whose
exploration covers it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pm_evidence.core.utils import log_sum_exp, warn_user
from pm_evidence.references import MultivariateNormalReference
from pm_evidence.search.climbing import TERM_SEARCH_STARTS, climb, laplace_covariance, term_modes
from pm_evidence.search.coverage import MISSED_SHARE
from pm_evidence.search.mixtures import OUTLIER_LEVEL

__all__ = ["UnvisitedModes", "unvisited_term_modes", "with_unvisited_warning"]

# Most L-BFGS iterations of a climb of the log-density from a term's mode.
CLIMB_ITERATIONS = 500


@dataclass(frozen=True)
class UnvisitedModes:
    """Local modes of the log-density, found by a search of its terms, that no draw visited.

    Attributes
    ----------
    modes : numpy.ndarray
        ``(k, dim)`` flat unconstrained points.
    log_masses : numpy.ndarray
        ``(k,)`` their Laplace log masses (the module docstring).
    n_evaluations : int
        Log-density evaluations of the search and the climbs.
    """

    modes: np.ndarray
    log_masses: np.ndarray
    n_evaluations: int = 0

    def missed_share(self, log_z: float) -> float:
        """``M / (Z + M)``, ``M`` the modes' total mass: the share of the evidence an estimate
        ``log_z`` that left them out misses (0 where there are none)."""
        if self.log_masses.size == 0 or not np.isfinite(log_z):
            return 0.0
        log_m = log_sum_exp(self.log_masses)
        return float(np.exp(log_m - np.logaddexp(log_z, log_m)))


def unvisited_term_modes(
    target, draws: np.ndarray, rng: np.random.Generator, orbit=None
) -> UnvisitedModes:
    """The modes of the terms of ``target``'s log-sum-exps that the posterior ``draws`` did not
    visit, with their Laplace masses (none where the model has no log-sum-exp).

    Parameters
    ----------
    target : LogDensity
    draws : numpy.ndarray
        Flat posterior draws ``(..., dim)``: the searches start from ``TERM_SEARCH_STARTS`` of
        them.
    rng : numpy.random.Generator
        Picks the starts.
    orbit : callable, optional
        ``orbit(x) -> (|G|, ..., dim)``: every mirror image of the draws under a relabelling
        symmetry (``pm_evidence.model.modes``); a mode a mirror image visited counts as visited.
    """
    dim = target.dim
    none = UnvisitedModes(np.empty((0, dim)), np.empty(0))
    if target.has_discrete or not target.term_counts:
        return none
    flat = np.asarray(draws, dtype=float).reshape(-1, dim)
    if flat.shape[0] == 0:
        return none
    starts = flat[rng.choice(flat.shape[0], min(TERM_SEARCH_STARTS, flat.shape[0]), False)]
    points, n_eval = term_modes(target.log_density_with_terms, target.term_counts, starts)
    visitors = flat if orbit is None else np.asarray(orbit(flat)).reshape(-1, dim)
    limit = stats.chi2.ppf(1 - OUTLIER_LEVEL, dim)
    keep_all = np.full(len(target.term_counts), -1)

    def log_f_and_grad(x):
        """The model's own log-density, by the term search's function (no other compile)."""
        return target.log_density_with_terms(x, keep_all)

    modes, log_masses = [], []
    for point in points:
        mode, log_f, evaluations = climb(log_f_and_grad, point, CLIMB_ITERATIONS)
        n_eval += evaluations
        if not (np.all(np.isfinite(mode)) and np.isfinite(log_f)):
            continue
        if any(np.allclose(mode, seen, atol=1e-6, rtol=1e-6) for seen in modes):
            continue
        covariance = laplace_covariance(mode, log_f_and_grad)
        n_eval += 2 * dim
        if covariance is None:
            continue
        laplace = MultivariateNormalReference(mode, np.linalg.cholesky(covariance))
        peak = laplace.logpdf(mode)  # -(d/2) log(2 pi) - (1/2) log det Sigma
        # a squared Mahalanobis distance m2 <= limit is a log density >= peak - limit / 2
        if np.any(laplace.logpdf(visitors) >= peak - limit / 2):
            continue  # a draw (or its mirror image) is in this mode
        modes.append(mode)
        log_masses.append(log_f - peak)
    return UnvisitedModes(np.reshape(modes, (-1, dim)), np.asarray(log_masses), n_eval)


def with_unvisited_warning(ev, unvisited: UnvisitedModes, constrained=None):
    """``ev`` with a warning where the modes its draws did not visit hold at least
    ``MISSED_SHARE`` of the evidence it would then miss, and that share in its diagnostics
    (``unvisited_mode_share``); ``constrained``: a function of flat points that names the
    modes' values in the warning."""
    share = unvisited.missed_share(ev.log_z)
    diagnostics = {**ev.diagnostics, "unvisited_mode_share": share}
    if share < MISSED_SHARE:
        return dataclasses.replace(ev, diagnostics=diagnostics)
    where = ""
    if constrained is not None:
        values = constrained(unvisited.modes[0])
        where = (
            " (the largest near "
            + ", ".join(
                f"{name}={np.round(np.asarray(v), 3).tolist()}" for name, v in values.items()
            )
            + ")"
        )
    message = (
        f"The posterior draws missed a mode: a search of the terms of the model's log-sum-exps "
        f"(pt.logaddexp, pt.logsumexp, pm.Mixture) found {unvisited.modes.shape[0]} local "
        f"mode(s) of the posterior that no draw visited{where}, holding about {share:.0%} of "
        f"the evidence by the Laplace approximation, which this estimate leaves out. "
        f"method='auto' explores from the prior and covers such modes."
    )
    warn_user(message)
    return dataclasses.replace(ev, diagnostics=diagnostics, warnings=(*ev.warnings, message))

"""Local modes the exploration's particles did not hold: the visited points kept as
candidates, the L-BFGS climb to a local maximum (:func:`climb`), the Laplace covariance there
(:func:`laplace_covariance`), a component added at each mode the posterior holds more mass at
than the mixture (:func:`climbed_modes`), and the modes of the terms of a log-sum-exp of the
log-density (:func:`term_modes`).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from pm_evidence.core.utils import log_sum_exp
from pm_evidence.model.backend import rows_on_host
from pm_evidence.references import (
    MixtureReference,
)
from pm_evidence.tempering.path import PathState

__all__ = [
    "MAX_MODE_CANDIDATES",
    "NegativeLogDensity",
    "climb",
    "climbed_into",
    "climbed_modes",
    "heavier",
    "kept_candidates",
    "laplace_covariance",
    "laplace_polished",
    "pool_log_weight",
    "spread_climbed_modes",
    "term_modes",
    "with_component",
    "with_term_modes",
]


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


# spread_climbed_modes climbs from this many of the final particles, each for at most
# SPREAD_CLIMB_ITERATIONS L-BFGS iterations. A narrow period mode of an orbit with correlated
# noise (rv_gp, 200 observations) was reached from 3 of 64 particles spread over the period's
# prior, each climb 144-163 evaluations; 64 climbs took 13,833 evaluations, a tenth of a second
# pass (measured: docs/benchmarks.rst, "Climbs from spread particles").
SPREAD_CLIMBS = 64
SPREAD_CLIMB_ITERATIONS = 200


# laplace_polished climbs from the heaviest components of the mixture that together hold this
# share of the posterior mass (by importance sampling from the mixture), at most
# MAX_POLISHED of them.
POLISHED_SHARE = 0.99
MAX_POLISHED = 16


# Each term search (:func:`term_modes`) starts from the best, under its surrogate, of this many
# of the final particles, and stops after this many L-BFGS iterations.
TERM_SEARCH_STARTS = 64


TERM_SEARCH_ITERATIONS = 200


def kept_candidates(candidates, state: PathState, fitted: MixtureReference, log_q=None):
    """``candidates (x, log_f, log_w)`` with the points of ``state`` added and the
    ``MAX_MODE_CANDIDATES`` of largest ``log_w = log f - log q`` kept: ``log f = log p0 + Delta``
    the posterior density, ``q`` the mixture ``fitted`` at the points' rung (``log_q``: its
    density at the points, where the caller has it). ``log_w`` is a point's importance weight
    for the posterior against what the particles had covered: large where the posterior is
    denser than the fit expects, as at a mode few particles visited. Of particles kept on the
    device only the rows kept come to the host."""
    log_f = np.asarray(state.log_p0) + np.asarray(state.delta)
    log_w = log_f - (fitted.logpdf(state.x) if log_q is None else log_q)
    fresh = np.flatnonzero(np.isfinite(log_w))
    log_f = np.concatenate([candidates[1], log_f[fresh]])
    log_w = np.concatenate([candidates[2], log_w[fresh]])
    kept = np.argsort(log_w)[::-1][:MAX_MODE_CANDIDATES]
    earlier = candidates[0].shape[0]
    old, new = kept < earlier, kept >= earlier
    x = np.empty((kept.size, candidates[0].shape[1]))
    x[old] = candidates[0][kept[old]]
    x[new] = rows_on_host(state.x, fresh[kept[new] - earlier])
    return x, log_f[kept], log_w[kept]


class NegativeLogDensity:
    """``x -> (-log f(x), -grad log f(x))`` for one point, as L-BFGS minimizes it, counting its
    calls (``calls``); a non-finite ``log f`` counts as ``-inf`` with a zero gradient."""

    def __init__(self, log_f_and_grad):
        self.log_f_and_grad = log_f_and_grad
        self.calls = 0

    def __call__(self, point: np.ndarray) -> tuple[float, np.ndarray]:
        self.calls += 1
        value, grad = self.log_f_and_grad(point[None])
        if not np.isfinite(value[0]):
            return np.inf, np.zeros_like(point)
        return -float(value[0]), -grad[0]


def climb(log_f_and_grad, start: np.ndarray, max_iterations: int | None = None):
    """The local maximum of ``log f`` that L-BFGS reaches from ``start``: the point, its
    ``log f`` and the evaluations. ``log_f_and_grad``: ``x (n, dim) -> (log f (n,), gradient
    (n, dim))``; a non-finite ``log f`` counts as ``-inf`` with a zero gradient."""
    negative = NegativeLogDensity(log_f_and_grad)
    options = {} if max_iterations is None else {"maxiter": max_iterations}
    with np.errstate(all="ignore"):
        found = optimize.minimize(negative, start, jac=True, method="L-BFGS-B", options=options)
    return found.x, -float(found.fun), negative.calls


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
    :func:`~pm_evidence.search.mixtures.adapt_components` then sets that weight to its posterior mass by importance
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
    n_eval, added = 0, 0
    total = pool_log_weight(mixture, pool)
    keep = np.flatnonzero(heavier(x, log_f, mixture, total))
    for i in keep[np.argsort(priority[keep])[::-1]][:MAX_CLIMBS]:
        start = x[i]
        if not heavier(start[None], log_f[i : i + 1], mixture, total)[0]:
            continue  # a mode climbed from an earlier point covers it
        mixture, found, evaluations = climbed_into(mixture, start, total, log_f_and_grad)
        n_eval += evaluations
        if found:
            total = pool_log_weight(mixture, pool)
            added += 1
    return mixture, added, n_eval


def climbed_into(mixture, start, total: float, log_f_and_grad, max_iterations=None):
    """``mixture`` with the Laplace component ``N(mode, (-H)^{-1})`` added at the local mode
    L-BFGS reaches from ``start`` (:func:`climb`, at most ``max_iterations``) where the
    mixture lacks mass there (:func:`heavier` against the final particles' ``total``): the
    mixture, whether a component was added, and the evaluations."""
    mode, mode_log_f, n_eval = climb(log_f_and_grad, start, max_iterations)
    if not (np.all(np.isfinite(mode)) and np.isfinite(mode_log_f)):
        return mixture, False, n_eval
    if not heavier(mode[None], np.array([mode_log_f]), mixture, total)[0]:
        return mixture, False, n_eval
    covariance = laplace_covariance(mode, log_f_and_grad)
    n_eval += 2 * mode.size
    if covariance is None:
        return mixture, False, n_eval
    return with_component(mixture, mode, covariance), True, n_eval


def pool_log_weight(q: MixtureReference, pool: tuple[np.ndarray, np.ndarray]) -> float:
    """``log`` of the final particles' total importance weight ``sum f / q`` (``pool``: their
    points and ``log f``)."""
    return log_sum_exp(pool[1] - q.logpdf(pool[0]))


def heavier(points, log_f_points, q: MixtureReference, total: float) -> np.ndarray:
    """Where ``w = f / q`` is at least ``CLIMB_WEIGHT_SHARE`` of ``exp(total)`` (the final
    particles' total weight, :func:`pool_log_weight`): ``q`` lacks mass there."""
    with np.errstate(invalid="ignore"):
        return log_f_points - q.logpdf(points) >= total + np.log(CLIMB_WEIGHT_SHARE)


def with_component(mixture: MixtureReference, mean: np.ndarray, covariance: np.ndarray):
    """``mixture`` with a normal component ``N(mean, covariance)`` of weight ``1 / K`` added
    (``K`` its components before), the weights normalized again."""
    weights = np.append(mixture.weights, 1.0 / mixture.n_components)
    covariances = mixture.chols @ np.swapaxes(mixture.chols, -1, -2)
    return MixtureReference.from_components(
        weights / weights.sum(),
        np.concatenate([mixture.means, mean[None]]),
        np.concatenate([covariances, covariance[None]]),
        mixture.df,
    )


def spread_climbed_modes(
    mixture: MixtureReference,
    starts: np.ndarray,
    pool: tuple[np.ndarray, np.ndarray],
    log_f_and_grad,
) -> tuple[MixtureReference, int, int]:
    r"""``mixture`` with a normal component added at each local mode, climbed from any of
    ``starts``, where the posterior holds more than ``mixture`` expects.

    :func:`climbed_modes` climbs only from points where the posterior is already far denser
    than the mixture: a narrow mode some particle visited. A narrow mode that no particle
    visited, whose basin (the points from which L-BFGS reaches it) is wide, is found by
    climbing from points spread over that basin: on an orbit, the period's mode is narrow,
    but a climb reaches it from anywhere within half an alias spacing (``P^2 / (2 T)`` for a
    baseline ``T``), the phase, amplitude and the rest following; the particles of a pass
    that did not see the planet spread their periods over the prior, and a few percent of
    them lie in that basin. Each start is climbed for at most ``SPREAD_CLIMB_ITERATIONS``
    L-BFGS iterations; a mode where the importance weight ``w = f / q`` is at least
    ``CLIMB_WEIGHT_SHARE`` of the total weight of the final particles (``pool``), as in
    :func:`climbed_modes`, gets the Laplace component ``N(mode, (-H)^{-1})`` of weight
    ``1 / K``, and a later climb to the same mode is then covered by it.

    Parameters
    ----------
    mixture : MixtureReference
    starts : numpy.ndarray
        ``(m, dim)`` points to climb from.
    pool : (numpy.ndarray, numpy.ndarray)
        The final particles ``(n, dim)`` and their ``log f``.
    log_f_and_grad : callable
        ``x (n, dim) -> (log f (n,), gradient (n, dim))``.

    Returns
    -------
    MixtureReference, int, int
        The mixture, the number of components added and the log-density evaluations.
    """
    n_eval, added = 0, 0
    total = pool_log_weight(mixture, pool)
    for start in starts:
        mixture, found, evaluations = climbed_into(
            mixture, start, total, log_f_and_grad, SPREAD_CLIMB_ITERATIONS
        )
        n_eval += evaluations
        if found:
            total = pool_log_weight(mixture, pool)
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


def with_term_modes(target, rng, mixture, pool, log_f_and_grad):
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


def laplace_polished(
    mixture: MixtureReference,
    log_f,
    log_f_and_grad,
    rng: np.random.Generator,
    n_draws: int,
) -> tuple[MixtureReference, int, int]:
    r"""``mixture`` with a Laplace component ``N(mode, (-H)^{-1})`` at the local mode of each
    of its heaviest components: for a mixture whose components sit at the right modes with the
    wrong shapes.

    With ``x_i ~ q`` (``n_draws`` of them), self-normalized importance weights ``u_i`` and
    responsibilities ``r_ik``, a component's posterior share is ``s_k = sum_i u_i r_ik``. From
    the heaviest components, together ``POLISHED_SHARE`` of the shares (at most
    ``MAX_POLISHED``), L-BFGS climbs from the draw of largest ``u_i r_ik``; at each mode
    reached (one per mode: a mode within ``dim`` squared Mahalanobis units of one already
    found is skipped) a component with the Laplace covariance
    (:func:`laplace_covariance`) is added with weight ``1 / K``;
    :func:`~pm_evidence.search.mixtures.adapt_components` then sets the weights. A narrow
    mode's shape is set by the posterior's curvature there, which few particles fit well:
    on three frequencies of a periodic signal the particles' components can sit at the right
    modes with an importance-sampling ESS of a fraction of a percent (log weights spread over
    nats within a mode), where the Laplace components of the modes climbed give an ESS of
    about half the draws.

    Returns
    -------
    MixtureReference, int, int
        The mixture, the number of components added and the log-density evaluations.
    """
    x = mixture.sample(rng, n_draws)
    log_u = np.nan_to_num(np.asarray(log_f(x), dtype=float) - mixture.logpdf(x), nan=-np.inf)
    n_eval = n_draws
    if not np.isfinite(log_u).any():
        return mixture, 0, n_eval
    u = np.exp(log_u - log_sum_exp(log_u))
    weighted = u[:, None] * mixture.responsibilities(x)  # (n, K)
    shares = weighted.sum(axis=0)
    order = np.argsort(shares)[::-1]
    heavy = order[: np.searchsorted(np.cumsum(shares[order]), POLISHED_SHARE) + 1]
    modes, covariances = [], []
    for k in heavy[:MAX_POLISHED]:
        mode, mode_log_f, evaluations = climb(log_f_and_grad, x[np.argmax(weighted[:, k])])
        n_eval += evaluations
        if not (np.all(np.isfinite(mode)) and np.isfinite(mode_log_f)):
            continue
        found = zip(modes, covariances, strict=True)
        if any(mahalanobis_sq(mode, m, c) < mode.size for m, c in found):
            continue  # a mode found from another component
        covariance = laplace_covariance(mode, log_f_and_grad)
        n_eval += 2 * mode.size
        if covariance is not None:
            modes.append(mode)
            covariances.append(covariance)
    if not modes:
        return mixture, 0, n_eval
    weights = np.append(mixture.weights, np.full(len(modes), 1.0 / mixture.n_components))
    polished = MixtureReference.from_components(
        weights / weights.sum(),
        np.concatenate([mixture.means, np.array(modes)]),
        np.concatenate([mixture.chols @ np.swapaxes(mixture.chols, -1, -2), covariances]),
        mixture.df,
    )
    return polished, len(modes), n_eval


def mahalanobis_sq(x: np.ndarray, mean: np.ndarray, covariance: np.ndarray) -> float:
    """``(x - mean)^T covariance^{-1} (x - mean)``."""
    centred = x - mean
    return float(centred @ np.linalg.solve(covariance, centred))
